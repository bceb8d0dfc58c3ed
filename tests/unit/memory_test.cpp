// engine/memory.h: the allocator's settings for the linter (the defaults) and for the webhook
// (use_server_memory), checked in a child process so this one keeps its own.

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/memory.h"

#ifdef GPUGUARD_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

using namespace gpuguard::engine;

namespace {

#ifdef GPUGUARD_JEMALLOC
ssize_t read_decay(const std::string& name) {
  ssize_t value = -2;
  size_t size = sizeof value;
  return mallctl(name.c_str(), &value, &size, nullptr, 0) == 0 ? value : -2;
}

// Runs `body` in a child process; its exit code (0: every expectation held, else the failed one's number).
int in_child(int (*body)()) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}
#endif

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("allocator: the linter keeps freed pages, the webhook gives them back after a second") {
#ifndef GPUGUARD_JEMALLOC
    MESSAGE("built without jemalloc (the sanitizer build): nothing to check");
#else
    if (std::getenv("MALLOC_CONF")) {
      MESSAGE("MALLOC_CONF is set in the environment: the defaults are not the program's");
      return;
    }
    CHECK(in_child([] {
            // An arena made before the switch (another thread's), one made after.
            std::thread([] { std::make_unique<std::vector<int>>(1000); }).join();
            if (read_decay("arenas.dirty_decay_ms") != -1) return 1;  // the linter's default: kept
            if (read_decay("arena.0.dirty_decay_ms") != -1) return 2;
            use_server_memory();
            if (read_decay("arenas.dirty_decay_ms") != kServerDirtyDecayMs) return 3;
            unsigned arenas = 0;
            size_t size = sizeof arenas;
            if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return 4;
            int set = 0;
            for (unsigned i = 0; i < arenas; ++i) {
              const ssize_t d = read_decay("arena." + std::to_string(i) + ".dirty_decay_ms");
              if (d == -2) continue;  // no arena at this index yet
              if (d != kServerDirtyDecayMs) return 5;
              ++set;
            }
            if (set < 1) return 6;
            std::thread([] { std::make_unique<std::vector<int>>(1000); }).join();
            return read_decay("arenas.dirty_decay_ms") == kServerDirtyDecayMs ? 0 : 7;
          }) == 0);
#endif
  }

  TEST_CASE("allocator: a thread switched to another's arena allocates from it") {
    const unsigned mine = current_arena();
    unsigned before = 0, after = 0;
    std::thread([&] {
      // A new thread is given an arena of its own where there are several (jemalloc: 4 per core).
      before = current_arena();
      use_arena(mine);
      after = current_arena();
      auto block = std::make_unique<std::vector<int>>(1000);  // allocates from it
      CHECK(block->size() == 1000);
    }).join();
    CHECK(after == mine);
#ifdef GPUGUARD_JEMALLOC
    if (std::thread::hardware_concurrency() > 1 && !std::getenv("MALLOC_CONF")) CHECK(before != mine);
#else
    CHECK(before == 0);  // glibc's malloc: nothing to tell, nothing to switch
    CHECK(mine == 0);
#endif
  }
}
