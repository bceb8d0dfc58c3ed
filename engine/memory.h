#pragma once
// The process's allocator: jemalloc when the build links it (GPUGUARD_JEMALLOC, the default), else
// glibc's malloc. The engine allocates millions of small nodes for a large run (JSON trees, position
// indexes, findings) and frees them from other threads than made them (`lint --jobs`, the webhook's
// pool); jemalloc does both about a quarter faster and keeps RSS the same (README, Performance).

namespace gpuguard::engine {

// Gives the pages of freed memory back to the system now (after a large run's peak, when the
// webhook's pool shrinks): jemalloc purges every arena, glibc trims its heaps.
void release_free_memory();

// For a long-lived process (the webhook): no transparent huge pages from here on. jemalloc asks for
// them (engine/memory.cpp), which suits a linter's one pass over its memory; a server keeps RSS
// that huge pages would round up (a loaded webhook with a 10,000-object state: 29 MiB without,
// 62 MiB with them).
void use_small_pages();

}  // namespace gpuguard::engine
