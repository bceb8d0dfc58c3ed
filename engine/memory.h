#pragma once
// The process's allocator: jemalloc when the build links it (GPUGUARD_JEMALLOC, the default), else
// glibc's malloc. The engine allocates millions of small nodes for a large run (JSON trees, position
// indexes, findings) and frees them from other threads than made them (`lint --jobs`, the webhook's
// pool); jemalloc does both about a quarter faster and keeps RSS the same (bench/HISTORY.md).

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

// The allocator's arena of the calling thread, and a switch of the calling thread to another
// thread's: the threads of `lint --jobs` allocate from the arena of the thread that started them,
// so the pages one of them frees (a parsed document's tree) are reused by the others (the next
// document's, the rules' findings) instead of each thread's arena faulting in fresh ones, which on
// a virtual machine is costly. 10,000 objects with two threads: page faults 3.7 k → 2.8 k, 9 % less
// time. With glibc's malloc both do nothing (current_arena answers 0).
[[nodiscard]] unsigned current_arena();
void use_arena(unsigned arena);

}  // namespace gpuguard::engine
