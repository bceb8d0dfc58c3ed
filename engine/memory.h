#pragma once
// The process's allocator: jemalloc when the build links it (GPUGUARD_JEMALLOC, the default), else
// glibc's malloc. The engine allocates millions of small nodes for a large run (JSON trees, position
// indexes, findings) and frees them from other threads than made them (`lint --jobs`, the webhook's
// pool); jemalloc does both about a quarter faster and keeps RSS the same (README, Performance).

namespace gpuguard::engine {

// Gives the pages of freed memory back to the system now (after a large run's peak, when the
// webhook's pool shrinks): jemalloc purges every arena, glibc trims its heaps.
void release_free_memory();

}  // namespace gpuguard::engine
