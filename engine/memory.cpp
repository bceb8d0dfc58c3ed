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
// overrides each). Dirty pages go back to the system one second after they were freed instead of
// ten, so a webhook that has served a burst returns to its baseline soon; muzzy pages at once (the
// webhook's RSS is what its memory limit counts). Transparent huge pages for the arenas where the
// kernel allows them (`madvise` or `always` in /sys/kernel/mm/transparent_hugepage/enabled;
// nothing changes with `never`): a lint run touches most of its memory once, and on a virtual
// machine the first touch of each 4 KiB page is a costly fault. Over bench_gen's 10,000 objects:
// 8.7 k page faults → 2.0 k, system time 0.08 → 0.03 s, peak RSS 43 → 51 MiB (README, Performance).
// The webhook turns them off for itself (use_small_pages).
extern "C" {
// NOLINTNEXTLINE(readability-identifier-naming,cppcoreguidelines-avoid-non-const-global-variables): jemalloc's name
const char* malloc_conf = "dirty_decay_ms:1000,muzzy_decay_ms:0,thp:always,metadata_thp:auto";
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

void use_small_pages() {
#if defined(__linux__)
  // Applies to this process and is inherited by its children; fails only on kernels before 3.15,
  // where nothing is to be done.
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
#endif
}

}  // namespace gpuguard::engine
