// The topology rules' helpers, and the fixes that depend on the cluster state (a Namespace's
// annotation, a LocalQueue named `default`), which the per-object mutated fixtures cannot show.

#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "engine/inventory.h"
#include "engine/mutate.h"
#include "rules/topology/common.h"
#include "rules/topology/gang_member.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;
using namespace gpuguard::rules::topology;

namespace {

std::shared_ptr<Inventory> state_of(const std::string& yaml) {
  auto base = std::make_shared<Inventory>(std::set<KindRef>{
      {"", "Namespace"}, {"kueue.x-k8s.io", "LocalQueue"}, {"kueue.x-k8s.io", "ClusterQueue"}, {"kueue.x-k8s.io", "ResourceFlavor"}});
  uint32_t id = 0;
  for (auto& o : gpuguard::test::load_objects(yaml)) {
    o.id = id++;
    const std::string ns = o.cluster_scoped() ? "" : (o.namespace_.empty() ? "default" : o.namespace_);
    base->add(std::make_shared<Object>(std::move(o)), ns);
  }
  return base;
}

MutateResult mutate_with(const std::string& object, const std::shared_ptr<Inventory>& base, const std::string& rule,
                         const std::string& config_yaml = "") {
  Config config = default_config(gpuguard::test::registry());
  if (!config_yaml.empty()) {
    auto c = load_config(config_yaml, "test", gpuguard::test::registry());
    REQUIRE(c.has_value());
    config = std::move(*c);
  }
  MutateOptions mo;
  mo.base = base;
  mo.only_rules = {rule};
  auto objs = gpuguard::test::load_objects(object);
  REQUIRE(objs.size() == 1);
  return mutate(objs[0], gpuguard::test::registry(), config, mo);
}

const char* kGpuPod =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a}\nspec:\n  containers:\n"
    "  - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n";

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("glob_match: `*` matches any run, also inside a pattern") {
  CHECK(glob_match("rdma/*", "rdma/hca_shared_devices_a"));
  CHECK(glob_match("*/sriov*", "intel.com/sriov_netdevice"));
  CHECK(glob_match("*/sriov*", "openshift.io/sriov"));
  CHECK_FALSE(glob_match("*/sriov*", "nvidia.com/gpu"));
  CHECK_FALSE(glob_match("rdma/*", "rdma"));
  CHECK(glob_match("nvidia.com/hostdev", "nvidia.com/hostdev"));
  CHECK_FALSE(glob_match("nvidia.com/hostdev", "nvidia.com/hostdevx"));
}

TEST_CASE("gang_membership: the signals and the label that selects the gang") {
  auto first = [](const std::string& yaml) {
    auto objs = gpuguard::test::load_objects(yaml);
    REQUIRE(objs.size() == 1);
    const auto& ts = pod_templates(objs[0]);
    REQUIRE(!ts.empty());
    return gang_membership(objs[0], ts.back());
  };
  auto cos = first("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {scheduling.x-k8s.io/pod-group: pg}}\nspec: {containers: []}\n");
  REQUIRE(cos);
  CHECK(cos->label_key == "scheduling.x-k8s.io/pod-group");
  CHECK(cos->label_value == "pg");
  // Volcano's annotation cannot be selected; the job label the pod carries can.
  auto vc = first("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {scheduling.k8s.io/group-name: job-1-pg}\n"
                  "  labels: {volcano.sh/job-name: job-1}\nspec: {containers: []}\n");
  REQUIRE(vc);
  CHECK(vc->group == "job-1-pg");
  CHECK(vc->label_key == "volcano.sh/job-name");
  CHECK(vc->label_value == "job-1");
  auto bare = first("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {scheduling.k8s.io/group-name: g}\nspec: {containers: []}\n");
  REQUIRE(bare);
  CHECK(bare->label_key.empty());
  auto kf = first("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: llm}\nspec:\n  pytorchReplicaSpecs:\n"
                  "    Worker: {replicas: 2, template: {spec: {containers: []}}}\n");
  REQUIRE(kf);
  CHECK(kf->label_key == "training.kubeflow.org/job-name");
  CHECK(kf->label_value == "llm");
  auto js = first("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {generateName: ring-}\nspec:\n  replicatedJobs:\n"
                  "  - {name: w, template: {spec: {template: {spec: {containers: []}}}}}\n");
  REQUIRE(js);  // a member, but its name (and so the label's value) is not known yet
  CHECK(js->label_key.empty());
  CHECK_FALSE(first("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: []}}}\n"));
}

TEST_CASE("gpu-product-affinity-missing: the fix takes the product from the Namespace's annotation") {
  auto base = state_of("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  annotations: {gpuguard.io/gpu-product: NVIDIA-L40S}\n");
  auto m = mutate_with(kGpuPod, base, "gpu-product-affinity-missing",
                       "rules: {gpu-product-affinity-missing: {params: {defaultProducts: {team-a: NVIDIA-H100-80GB-HBM3}}}}\n");
  CHECK(m.diagnostics.empty());
  const json want = {{"key", "nvidia.com/gpu.product"}, {"operator", "In"}, {"values", {"NVIDIA-L40S"}}};
  CHECK(m.object["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] ==
        json::array({{{"matchExpressions", json::array({want})}}}));
  // Without annotation and config default there is a finding and no fix.
  CHECK(mutate_with(kGpuPod, state_of("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n"), "gpu-product-affinity-missing")
            .patch.empty());
}

TEST_CASE("kueue-queue-name-missing: a LocalQueue named default is Kueue's to apply, unless its defaulting is off") {
  auto base = state_of("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: default, namespace: team-a}\n"
                       "spec: {clusterQueue: cq}\n");
  CHECK(mutate_with(kGpuPod, base, "kueue-queue-name-missing").patch.empty());
  auto m = mutate_with(kGpuPod, base, "kueue-queue-name-missing", "rules: {kueue-queue-name-missing: {params: {kueueDefaulting: false}}}\n");
  CHECK(m.diagnostics.empty());
  CHECK(m.object["metadata"]["labels"] == json({{"kueue.x-k8s.io/queue-name", "default"}}));
  // Another LocalQueue only: managed, but no queue to choose without defaultQueues.
  auto other = state_of("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: gpu, namespace: team-a}\n"
                        "spec: {clusterQueue: cq}\n");
  CHECK(mutate_with(kGpuPod, other, "kueue-queue-name-missing").patch.empty());
  auto chosen = mutate_with(kGpuPod, other, "kueue-queue-name-missing",
                            "rules: {kueue-queue-name-missing: {params: {defaultQueues: {team-a: gpu}}}}\n");
  CHECK(chosen.object["metadata"]["labels"] == json({{"kueue.x-k8s.io/queue-name", "gpu"}}));
}

TEST_CASE("rdma-zone-affinity-missing: RDMA NICs through DRA claims, which only lint and audit see") {
  // tests/rules/rdma-zone-affinity-missing/lint-only/dra.yaml: the findings are on its `# expect:`
  // lines. It is not a disallowed fixture because the webhook, whose cluster state holds no DRA
  // claims, does not see them (and must not deny those pods).
  const auto path = gpuguard::test::source_dir() / "tests" / "rules" / "rdma-zone-affinity-missing" / "lint-only" / "dra.yaml";
  const std::string text = gpuguard::test::read_file(path);
  std::set<uint32_t> expected;
  {
    std::istringstream lines(text);
    std::string line;
    for (uint32_t n = 1; std::getline(lines, line); ++n)
      if (line.find("# expect: rdma-zone-affinity-missing") != std::string::npos) expected.insert(n);
  }
  REQUIRE(expected.size() == 3);
  gpuguard::test::LintOptions o;
  o.only_rules = {"rdma-zone-affinity-missing"};
  const auto r = gpuguard::test::lint(text, o);
  CHECK(r.diagnostics.empty());
  std::set<uint32_t> got;
  for (const auto& f : r.findings) {
    got.insert(f.pos.line);
    CHECK(f.message.find("uses RDMA (DRA Resource") == 0);
  }
  CHECK(got == expected);
  // The same pods without their claims in the input (the webhook's view): nothing.
  std::string pods_only;
  for (const auto& obj : gpuguard::test::load_objects(text))
    if (obj.gvk.group != "resource.k8s.io") pods_only += "---\n" + obj.body().dump() + "\n";
  CHECK(gpuguard::test::lint(pods_only, o).findings.empty());
  // One message in full: the claim, the class that makes it RDMA, and the gang's fix.
  bool mpi = false;
  for (const auto& f : r.findings)
    if (f.object.kind() == "MPIJob") {
      mpi = true;
      CHECK(f.message.find("uses RDMA (DRA ResourceClaimTemplate gpu-nic: class dranet.net (rdmaDeviceClasses)) but nothing requires") == 0);
      CHECK(f.fix.has_value());
    }
  CHECK(mpi);
}

}  // TEST_SUITE
