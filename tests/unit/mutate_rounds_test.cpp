// mutate()'s rounds: after its fixes a round runs again only the rules they concern (RuleInfo's
// reads_parts and fix_settles). Held here to the reference that runs every fixable rule in every
// round (MutateOptions::rerun_all): the same object, patch, rules and diagnostics for every object
// of the tests, the examples and the shared corpus, under the default config and under one that
// gives every fix what it needs.

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

#include "engine/config.h"
#include "engine/json_parse.h"
#include "engine/load.h"
#include "engine/mutate.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

// A config with a default for every namespace in `namespaces`: a PriorityClass, a GPU product and
// a Kueue queue, so the fixes that need one have it.
engine::Config fixes_everywhere(const std::set<std::string>& namespaces) {
  std::string map_class, map_product, map_queue, list;
  for (const auto& ns : namespaces) {
    map_class += "\"" + ns + "\": gpu-high, ";
    map_product += "\"" + ns + "\": NVIDIA-H100-80GB-HBM3, ";
    map_queue += "\"" + ns + "\": team-queue, ";
    list += "\"" + ns + "\", ";
  }
  const std::string yaml = "rules:\n"
                           "  gpu-priority-class-missing: {params: {defaults: {" + map_class + "}}}\n"
                           "  gpu-product-affinity-missing: {params: {defaultProducts: {" + map_product + "}}}\n"
                           "  kueue-queue-name-missing: {params: {kueueNamespaces: [" + list + "], defaultQueues: {" + map_queue + "}}}\n";
  auto c = engine::load_config(yaml, "fixes.yaml", test::registry());
  REQUIRE(c.has_value());
  return std::move(*c);
}

std::string messages(const std::vector<engine::Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) out += std::to_string(d.pos.line) + ":" + d.message + "\n";
  return out;
}

// Whether the two results are the same, with what differs in `why`.
bool same(const engine::MutateResult& a, const engine::MutateResult& b, std::string& why) {
  if (!engine::identical(a.object, b.object)) why = "object:\n" + a.object.dump(1) + "\nreference:\n" + b.object.dump(1);
  else if (!engine::identical(a.patch, b.patch)) why = "patch " + a.patch.dump() + "\nreference " + b.patch.dump();
  else if (a.rules != b.rules) why = "rules differ";
  else if (messages(a.diagnostics) != messages(b.diagnostics)) why = "diagnostics:\n" + messages(a.diagnostics) + "reference:\n" + messages(b.diagnostics);
  else return true;
  return false;
}

engine::MutateResult run(const engine::Object& obj, const engine::Config& config, bool rerun_all, engine::MutateOptions mo = {}) {
  mo.rerun_all = rerun_all;
  return engine::mutate(obj, test::registry(), config, mo);
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("mutate: a round runs only the rules its fixes concern, with the result of running every rule") {
  const engine::Config config = fixes_everywhere({"team-a"});
  std::string why;
  auto mutate_both = [&](const std::string& yaml) {
    auto objs = test::load_objects(yaml);
    REQUIRE(objs.size() == 1);
    const auto reference = run(objs[0], config, true);
    const auto fast = run(objs[0], config, false);
    CHECK_MESSAGE(same(fast, reference, why), why);
    return std::make_pair(fast, reference);
  };
  const std::string head = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train\n  namespace: team-a\n";
  const std::string container = "  containers:\n    - name: train\n      image: nvcr.io/nvidia/pytorch:24.06-py3\n"
                                "      resources:\n        limits:\n          nvidia.com/gpu: 1\n";

  // The toleration and the priority class: two fixes that settle, and neither rule reads what the
  // other writes. The reference evaluates again to find that out.
  {
    auto [fast, reference] = mutate_both(head + "  labels: {kueue.x-k8s.io/queue-name: team-queue}\nspec:\n" +
                                         "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n" + container);
    CHECK(fast.rules == std::vector<std::string>{"gpu-priority-class-missing", "gpu-toleration-missing"});
    CHECK(reference.evaluations == 2);
    CHECK(fast.evaluations == 1);
  }
  // With the queue label too: gpu-product-affinity-missing reads it (Kueue's flavors may pin the
  // model), so the next round runs that rule again.
  {
    auto [fast, reference] = mutate_both(head + "spec:\n" + container);
    CHECK(fast.rules == std::vector<std::string>{"kueue-queue-name-missing", "gpu-priority-class-missing",
                                                 "gpu-product-affinity-missing", "gpu-toleration-missing"});
    CHECK(fast.evaluations == 2);
  }
  // A request without a limit: the fix writes the container's resources, which every rule reads,
  // so the next round runs every rule, as the reference does.
  {
    auto [fast, reference] = mutate_both(head + "spec:\n" +
                                         "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
                                         "  priorityClassName: gpu-high\n"
                                         "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
                                         "  containers:\n    - name: train\n      image: nvcr.io/nvidia/pytorch:24.06-py3\n"
                                         "      resources:\n        requests:\n          nvidia.com/gpu: 1\n");
    CHECK(fast.rules == std::vector<std::string>{"kueue-queue-name-missing", "gpu-request-limit-mismatch"});
    CHECK(fast.evaluations == 2);
    CHECK(reference.evaluations == 2);
  }
  // A fix that does not settle on its own (rdma-zone-affinity-missing: its topologyKey pins only
  // when zoneLabels lists it) is checked by another round.
  {
    auto [fast, reference] = mutate_both(head + "  labels: {scheduling.x-k8s.io/pod-group: train, kueue.x-k8s.io/queue-name: team-queue}\n"
                                         "spec:\n  schedulerName: scheduler-plugins-scheduler\n"
                                         "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
                                         "  priorityClassName: gpu-high\n"
                                         "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
                                         "  containers:\n    - name: train\n      image: nvcr.io/nvidia/pytorch:24.06-py3\n"
                                         "      resources:\n        limits:\n          nvidia.com/gpu: 8\n"
                                         "          rdma/rdma_shared_device_a: 1\n");
    CHECK(fast.rules == std::vector<std::string>{"rdma-zone-affinity-missing"});
    CHECK(fast.evaluations == 2);
    // Where zoneLabels leaves out the fix's topologyKey, the fix never settles: both say so.
    auto narrow = engine::load_config("rules: {rdma-zone-affinity-missing: {params: {zoneLabels: [kubernetes.io/hostname]}}}\n",
                                      "narrow.yaml", test::registry());
    REQUIRE(narrow.has_value());
    auto objs = test::load_objects(head + "  labels: {scheduling.x-k8s.io/pod-group: train}\n"
                                   "spec:\n  schedulerName: scheduler-plugins-scheduler\n" + container +
                                   "          rdma/rdma_shared_device_a: 1\n");
    const auto unsettled = run(objs[0], *narrow, false);
    CHECK(same(unsettled, run(objs[0], *narrow, true), why));
    CHECK(unsettled.evaluations == 8);
    REQUIRE(unsettled.diagnostics.size() == 1);
    CHECK(unsettled.diagnostics[0].message.find("did not settle after 8 rounds") != std::string::npos);
  }
  // A round that settles the fixes but is the last one allowed: the reference would need another
  // to see that, and so does mutate (no patch, the fixes did not settle).
  {
    auto objs = test::load_objects(head + "  labels: {kueue.x-k8s.io/queue-name: team-queue}\nspec:\n" +
                                   "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n" + container);
    engine::MutateOptions one;
    one.max_rounds = 1;
    const auto fast = run(objs[0], config, false, one);
    CHECK(same(fast, run(objs[0], config, true, one), why));
    CHECK(fast.patch.empty());
    REQUIRE(fast.diagnostics.size() == 1);
    CHECK(fast.diagnostics[0].message.find("did not settle after 1 rounds") != std::string::npos);
    one.max_rounds = 2;
    CHECK(run(objs[0], config, false, one).patch.size() == 2);
  }
}

TEST_CASE("mutate: every object of the tests, the examples and the corpus mutates as the every-rule reference does") {
  size_t objects = 0, patched = 0, saved = 0;
  for (const auto& file : test::test_files(".yaml")) {
    const std::string rel = file.lexically_relative(test::source_dir()).generic_string();
    if (rel.find("tests/hostile/") != std::string::npos || rel.find("tests/extreme/") != std::string::npos) continue;
    if (fs::file_size(file) > (1u << 20)) continue;
    std::vector<engine::Object> objs;
    std::vector<engine::Diagnostic> diags;
    engine::load_text(test::read_file(file), std::make_shared<engine::SourceFile>(engine::SourceFile{file.string(), 0}),
                      engine::LoadOptions{}, [&](engine::Object&& o) { objs.push_back(std::move(o)); }, diags);
    std::set<std::string> namespaces{"default"};
    for (const auto& o : objs) namespaces.insert(o.namespace_);
    const engine::Config configs[] = {engine::default_config(test::registry()), fixes_everywhere(namespaces)};
    for (size_t k = 0; k < objs.size(); ++k) {
      const engine::Object& o = objs[k];
      if (!o.is_kubernetes_object()) continue;
      ++objects;
      // Each config alone, and the second with the file's other objects as the complete state.
      for (int variant = 0; variant < 3; ++variant) {
        const engine::Config& config = configs[variant == 0 ? 0 : 1];
        engine::MutateOptions mo;
        if (variant == 2) {
          mo.base = test::state_without(objs, k, config, true);
          mo.complete = true;
        }
        const auto reference = run(o, config, true, mo);
        const auto fast = run(o, config, false, mo);
        std::string why;
        CHECK_MESSAGE(same(fast, reference, why), rel << " " << o.display_name() << ": " << why);
        if (!reference.patch.empty()) ++patched;
        saved += static_cast<size_t>(reference.evaluations - fast.evaluations);
      }
    }
  }
  MESSAGE(objects << " objects, " << patched << " patches, " << saved << " evaluations saved");
  CHECK(objects > 500);
  CHECK(patched > 100);
  CHECK(saved > 50);
}

}  // TEST_SUITE
