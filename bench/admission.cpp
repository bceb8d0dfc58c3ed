// bench/admission: in-process evaluation of one AdmissionReview, without HTTP or TLS: the
// webhook's own handler (decode → evaluate against the cluster state → encode), timed per call.
// Prints p50 and p99 in microseconds for /validate and /mutate (target: p99 ≤ 100 µs).
//
//   bench_admission STATE_DIR REVIEW_JSON [CALLS [validate|mutate|both [CONFIG]]]
//
// CONFIG: a gpuguard config file instead of the defaults (every rule off: what the rules cost).
// BENCH_EVICT_KIB=N: before each call, write N KiB of another buffer (untimed), so that the call
// finds the caches as a server does after TLS, the kernel and the load generator have run between
// two requests; 0 or unset: calls back to back, with everything a call touches still cached.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
volatile unsigned char evict_sink = 0;  // BENCH_EVICT_KIB's writes are not dead
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_admission STATE_DIR REVIEW_JSON [CALLS [validate|mutate]]\n");
    return 2;
  }
  const int calls = argc > 3 ? std::atoi(argv[3]) : 20000;
  std::string_view only = argc > 4 ? argv[4] : "";  // one endpoint (for a profiler), or both
  if (only == "both") only = "";
  const engine::Registry registry = rules::make_registry();
  std::shared_ptr<const engine::Config> config;
  if (argc > 5) {
    auto loaded = engine::load_config_file(argv[5], registry);
    if (!loaded) {
      for (const auto& d : loaded.error()) std::fprintf(stderr, "%s: %s\n", argv[5], d.message.c_str());
      return 2;
    }
    config = std::make_shared<const engine::Config>(std::move(*loaded));
  } else {
    config = std::make_shared<const engine::Config>(engine::default_config(registry));
  }
  const char* evict_env = std::getenv("BENCH_EVICT_KIB");
  std::vector<unsigned char> evict(evict_env ? static_cast<size_t>(std::atol(evict_env)) * 1024 : 0);
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
      for (size_t b = 0; b < evict.size(); b += 64) evict[b] = static_cast<unsigned char>(evict[b] + i);
      if (!evict.empty()) evict_sink = evict[static_cast<size_t>(i) % evict.size()];
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
                evict.empty() ? "" : (" (" + std::to_string(evict.size() / 1024) + " KiB written before each)").c_str());
  }
  return 0;
}
