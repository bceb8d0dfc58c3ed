// bench/admission: in-process evaluation of one AdmissionReview, without HTTP or TLS: the
// webhook's own handler (decode → evaluate against the cluster state → encode), timed per call.
// Prints p50 and p99 in microseconds for /validate and /mutate (target: p99 ≤ 100 µs).
//
//   bench_admission STATE_DIR REVIEW_JSON [CALLS [validate|mutate|both [CONFIG]]]
//
// CONFIG: a gpuguard config file instead of the defaults (every rule off: what the rules cost).
// BENCH_EVICT_KIB=N: before each call, read N KiB of another buffer (untimed), which pushes out of
// the caches what the last call left there, as TLS, the kernel and the load generator do in a
// server between two requests (with N past the last-level cache: nothing is left, an upper bound on
// what a server sees); 0 or unset: calls back to back, with everything a call touches still cached.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/state.h"
#include "rules/registry.h"
#include "webhook/admission.h"

using namespace gpuguard;

namespace {

volatile unsigned evict_sink = 0;  // BENCH_EVICT_KIB's reads are not dead

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_admission STATE_DIR REVIEW_JSON [CALLS [validate|mutate|both [CONFIG]]]\n");
    return 2;
  }
  const int calls = argc > 3 ? std::atoi(argv[3]) : 20000;
  if (calls < 1) {
    std::fprintf(stderr, "bench_admission: CALLS must be a positive number, got \"%s\"\n", argv[3]);
    return 2;
  }
  std::string_view only = argc > 4 ? argv[4] : "";  // one endpoint (for a profiler), or both
  if (only != "" && only != "validate" && only != "mutate" && only != "both") {
    std::fprintf(stderr, "bench_admission: the endpoint must be validate, mutate or both, got \"%s\"\n", argv[4]);
    return 2;
  }
  if (only == "both") only = "";
  size_t evict_kib = 0;
  if (const char* env = std::getenv("BENCH_EVICT_KIB"); env && *env) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end != '\0' || errno != 0 || env[0] == '-' || v > (1ULL << 24)) {  // at most 16 GiB
      std::fprintf(stderr, "bench_admission: BENCH_EVICT_KIB must be a number of KiB up to 16777216, got \"%s\"\n", env);
      return 2;
    }
    evict_kib = static_cast<size_t>(v);
  }
  const engine::Registry registry = rules::make_registry();
  std::shared_ptr<const engine::Config> config;
  if (argc > 5) {
    auto loaded = engine::load_config_file(argv[5], registry);
    if (!loaded) {
      for (const auto& d : loaded.error())
        std::fprintf(stderr, "%s:%u:%u: %s\n", d.file.empty() ? argv[5] : d.file.c_str(), d.pos.line, d.pos.col, d.message.c_str());
      return 2;
    }
    config = std::make_shared<const engine::Config>(std::move(*loaded));
  } else {
    config = std::make_shared<const engine::Config>(engine::default_config(registry));
  }
  std::vector<unsigned char> evict(evict_kib * 1024);
  for (size_t b = 0; b < evict.size(); ++b) evict[b] = static_cast<unsigned char>(b);  // real pages, not the zero page
  engine::StateLoad state = engine::load_state({argv[1]}, registry, *config);
  std::shared_ptr<const engine::Inventory> inventory = state.inventory;
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string body = ss.str();
  webhook::Admission admission(registry, config);
  for (auto [endpoint, name] : {std::pair{webhook::Endpoint::validate, "validate"}, std::pair{webhook::Endpoint::mutate, "mutate"}}) {
    if (!only.empty() && only != name) continue;
    std::vector<double> us;
    us.reserve(static_cast<size_t>(calls));
    for (int i = 0; i < calls; ++i) {
      if (!evict.empty()) {
        unsigned sum = 0;
        for (size_t b = 0; b < evict.size(); b += 64) sum += evict[b];
        evict_sink = sum;
      }
      webhook::Outcome outcome;
      auto t0 = std::chrono::steady_clock::now();
      webhook::Answer a = admission.handle(endpoint, body, "application/json", inventory, outcome);
      auto t1 = std::chrono::steady_clock::now();
      if (a.status != 200) {
        std::fprintf(stderr, "%s: HTTP %d: %s\n", name, a.status, a.body.c_str());
        return 1;
      }
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      if (i == 0 && std::getenv("BENCH_PRINT")) std::fprintf(stderr, "%s\n", a.body.c_str());
    }
    std::sort(us.begin(), us.end());
    std::printf("/%-9s %zu objects of state: p50 %.1f µs, p99 %.1f µs over %d calls%s\n", name, state.objects,
                us[us.size() / 2], us[us.size() * 99 / 100], calls,
                evict.empty() ? "" : (" (" + std::to_string(evict.size() / 1024) + " KiB read before each)").c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_admission: %s\n", e.what());
    return 1;
  }
}
