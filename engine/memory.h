#pragma once
// The process's allocator: jemalloc when the build links it (GPUGUARD_JEMALLOC, the default), else
// glibc's malloc. The engine allocates millions of small nodes for a large run (JSON trees, position
// indexes, findings) and frees them from other threads than made them (`lint --jobs`, the webhook's
// pool); jemalloc does both about a quarter faster and keeps RSS the same (README, Performance).

namespace gpuguard::engine {

// Gives the pages of freed memory back to the system now (after a large run's peak, when the
// webhook's pool shrinks): jemalloc purges every arena, glibc trims its heaps.
void release_free_memory();

// For a long-lived process (the webhook), called before it serves: no transparent huge pages from
// here on, and freed pages go back to the system after kServerDirtyDecayMs. The defaults
// (engine/memory.cpp) suit the linter's one pass over its memory: huge pages, and freed pages kept
// for reuse. A server would hold RSS that huge pages round up (a loaded webhook with a
// 10,000-object state: 29 MiB without, 62 MiB with them) and never give back what a burst freed.
void use_server_memory();
inline constexpr long kServerDirtyDecayMs = 1000;

}  // namespace gpuguard::engine
