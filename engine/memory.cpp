#include "engine/memory.h"

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#ifdef GPUGUARD_JEMALLOC
#include <jemalloc/jemalloc.h>

#include <string>
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

#ifdef GPUGUARD_JEMALLOC
// jemalloc's options, read once at start-up (before main; MALLOC_CONF in the environment still
// overrides each), set for the linter's one pass over its input; the webhook changes them for
// itself (use_server_memory).
// - Freed pages stay with the process (`dirty_decay_ms:-1`): later allocations reuse them instead
//   of faulting in fresh pages, which the kernel must zero first (on this VM about 12 % of a
//   100,000-object lint went to zeroing). 100,000 objects: page faults 6.8 k → 2.4 k, 3.85–4.2 s →
//   3.4–3.6 s with one thread, 3.3 → 2.8 s with two, peak RSS 301 → 333 MiB (target 400).
// - Transparent huge pages for the arenas where the kernel allows them (`madvise` or `always` in
//   /sys/kernel/mm/transparent_hugepage/enabled; nothing changes with `never`): on a virtual machine
//   the first touch of each 4 KiB page is a costly fault. 10,000 objects: 8.7 k page faults → 2.0 k,
//   system time 0.08 → 0.03 s, peak RSS 43 → 51 MiB (bench/HISTORY.md).
extern "C" {
// NOLINTNEXTLINE(readability-identifier-naming,cppcoreguidelines-avoid-non-const-global-variables): jemalloc's name
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:0,thp:always,metadata_thp:auto";
}
#endif

namespace gpuguard::engine {

void release_free_memory() {
#ifdef GPUGUARD_JEMALLOC
  // MALLCTL_ARENAS_ALL: every arena.
  static const std::string purge = "arena." + std::to_string(MALLCTL_ARENAS_ALL) + ".purge";
  mallctl(purge.c_str(), nullptr, nullptr, nullptr, 0);
#elif defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void use_server_memory() {
#if defined(__linux__)
  // Applies to this process and is inherited by its children; fails only on kernels before 3.15,
  // where nothing is to be done.
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
#endif
#ifdef GPUGUARD_JEMALLOC
  // Dirty pages go back to the system a second after they were freed (muzzy ones at once, as
  // malloc_conf says): a webhook that has served a burst returns to its baseline soon, and its RSS
  // is what its memory limit counts. The arenas made from here on take the default; those already
  // made are set one by one (an index without an arena yet answers an error, and takes the default
  // when it is made).
  ssize_t decay_ms = kServerDirtyDecayMs;
  mallctl("arenas.dirty_decay_ms", nullptr, nullptr, &decay_ms, sizeof decay_ms);
  unsigned arenas = 0;
  size_t size = sizeof arenas;
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) == 0)
    for (unsigned i = 0; i < arenas; ++i) {
      const std::string name = "arena." + std::to_string(i) + ".dirty_decay_ms";
      mallctl(name.c_str(), nullptr, nullptr, &decay_ms, sizeof decay_ms);
    }
#endif
}

unsigned current_arena() {
  unsigned arena = 0;
#ifdef GPUGUARD_JEMALLOC
  size_t size = sizeof arena;
  if (mallctl("thread.arena", &arena, &size, nullptr, 0) != 0) arena = 0;
#endif
  return arena;
}

void use_arena([[maybe_unused]] unsigned arena) {
#ifdef GPUGUARD_JEMALLOC
  mallctl("thread.arena", nullptr, nullptr, &arena, sizeof arena);
#endif
}

}  // namespace gpuguard::engine
