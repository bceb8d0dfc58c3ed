// bench/admission: in-process evaluation of one AdmissionReview, without HTTP or TLS: the
// webhook's own handler (decode → evaluate against the cluster state → encode), timed per call.
// Prints p50 and p99 in microseconds for /validate and /mutate (target: p99 ≤ 100 µs).
//
//   bench_admission STATE_DIR REVIEW_JSON [CALLS [validate|mutate]]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "engine/state.h"
#include "rules/registry.h"
#include "webhook/admission.h"

using namespace gpuguard;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_admission STATE_DIR REVIEW_JSON [CALLS [validate|mutate]]\n");
    return 2;
  }
  const int calls = argc > 3 ? std::atoi(argv[3]) : 20000;
  const std::string_view only = argc > 4 ? argv[4] : "";  // one endpoint (for a profiler), or both
  const engine::Registry registry = rules::make_registry();
  auto config = std::make_shared<const engine::Config>(engine::default_config(registry));
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
    std::printf("/%-9s %zu objects of state: p50 %.1f µs, p99 %.1f µs over %d calls\n", name, state.objects,
                us[us.size() / 2], us[us.size() * 99 / 100], calls);
  }
  return 0;
}
