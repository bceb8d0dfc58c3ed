// The helpers the quota and priority rules share: a LimitRange item's GPU amounts after the API's
// defaulting (rules/quota/common.h), and the classes a workload names (rules/priority/names.h).

#include <doctest/doctest.h>

#include "rules/priority/names.h"
#include "rules/quota/common.h"
#include "tests/support/support.h"

using namespace gpuguard;
using engine::Quantity;

namespace {
engine::Object one(const std::string& yaml) {
  auto objs = test::load_objects(yaml);
  REQUIRE(objs.size() == 1);
  return objs[0];
}
Quantity q(int64_t v) { return Quantity::from_int(v); }
}  // namespace

TEST_SUITE("unit") {

TEST_CASE("LimitRange GPU amounts follow SetDefaults_LimitRangeItem: max → default → defaultRequest, then min") {
  auto lr = one(
      "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l}\nspec:\n  limits:\n"
      "  - {type: Pod, max: {nvidia.com/gpu: 8}}\n"
      "  - type: Container\n"
      "    max: {nvidia.com/gpu: 8, nvidia.com/mig-1g.10gb: 2}\n"
      "    min: {nvidia.com/gpu.shared: 1, cpu: 1}\n"
      "    default: {nvidia.com/mig-1g.10gb: 1}\n");
  auto g = rules::quota::container_gpu_limits(lr, engine::ResourceMatcher(engine::default_gpu_resources()));
  REQUIRE(g.size() == 3);  // Container items only, GPU resources only, sorted by name
  CHECK(g[0].resource == "nvidia.com/gpu");
  CHECK(g[0].item == 1);
  CHECK(g[0].eff_default == q(8));
  CHECK(g[0].default_from == "max");
  CHECK(g[0].eff_request == q(8));
  CHECK(g[0].request_from == "max");
  CHECK(g[0].pointer("max") == "/spec/limits/1/max/nvidia.com~1gpu");
  CHECK(g[1].resource == "nvidia.com/gpu.shared");
  CHECK_FALSE(g[1].eff_default.has_value());
  CHECK(g[1].eff_request == q(1));
  CHECK(g[1].request_from == "min");
  CHECK(g[2].resource == "nvidia.com/mig-1g.10gb");
  CHECK(g[2].eff_default == q(1));
  CHECK(g[2].default_from == "default");
  CHECK(g[2].eff_request == q(1));
}

TEST_CASE("tracked GPU quota keys are the requests. ones") {
  auto rq = one("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\n"
                "spec: {hard: {requests.nvidia.com/gpu: 4, limits.nvidia.com/gpu: 8, nvidia.com/gpu: 8, requests.cpu: 2}}\n");
  auto t = rules::quota::tracked_gpus(rq, engine::ResourceMatcher(engine::default_gpu_resources()));
  REQUIRE(t.size() == 1);
  CHECK(t.at("nvidia.com/gpu") == q(4));
}

TEST_CASE("quota and LimitRange projections are kept with the object, one per set of GPU resource patterns") {
  auto rq = one("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\n"
                "spec: {hard: {requests.nvidia.com/gpu: 4, requests.example.com/accel: 2}}\n");
  const engine::ResourceMatcher nvidia(engine::default_gpu_resources());
  const engine::ResourceMatcher other(std::vector<std::string>{"example.com/*"});
  const auto& first = rules::quota::tracked_gpus(rq, nvidia);
  CHECK(&rules::quota::tracked_gpus(rq, engine::ResourceMatcher(engine::default_gpu_resources())) == &first);
  const auto& by_other = rules::quota::tracked_gpus(rq, other);  // a reloaded config's patterns
  REQUIRE(by_other.size() == 1);
  CHECK(by_other.at("example.com/accel") == q(2));
  CHECK(&rules::quota::tracked_gpus(rq, nvidia) == &first);
  REQUIRE(first.size() == 1);
  CHECK(first.at("nvidia.com/gpu") == q(4));
  // A copy of the object has its own (the body it points into is its own).
  engine::Object copy = rq;
  CHECK(&rules::quota::tracked_gpus(copy, nvidia) != &first);

  auto lr = one("apiVersion: v1\nkind: LimitRange\nmetadata: {name: l}\nspec: {limits: [{type: Container, max: {nvidia.com/gpu: 8}}]}\n");
  const auto& limits = rules::quota::container_gpu_limits(lr, nvidia);
  REQUIRE(limits.size() == 1);
  CHECK(&rules::quota::container_gpu_limits(lr, nvidia) == &limits);
  CHECK(rules::quota::container_gpu_limits(lr, other).empty());
}

TEST_CASE("the priority classes a workload names, and the one its controller gives the pods") {
  using rules::priority::ClassKind;
  auto vcjob = one("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: j\n"
                   "  labels: {kueue.x-k8s.io/priority-class: prod}\n"
                   "spec:\n  priorityClassName: high\n  tasks:\n  - name: w\n    template: {spec: {priorityClassName: low, containers: []}}\n"
                   "  - name: v\n    template: {spec: {priorityClassName: \"\", containers: []}}\n");
  auto n = rules::priority::named_priority_classes(vcjob);
  REQUIRE(n.size() == 3);
  CHECK(n[0].name == "prod");
  CHECK(n[0].kind == ClassKind::workload);
  CHECK(n[0].pointer == "/metadata/labels/kueue.x-k8s.io~1priority-class");
  CHECK(n[1].name == "high");
  CHECK(n[1].pointer == "/spec/priorityClassName");
  CHECK(n[2].name == "low");
  CHECK(n[2].pointer == "/spec/tasks/0/template/spec/priorityClassName");
  CHECK(rules::priority::inherited_pod_priority_class(vcjob) == std::optional<std::string>("high"));

  auto pt = one("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\n"
                "spec: {runPolicy: {schedulingPolicy: {priorityClass: urgent}}}\n");
  auto k = rules::priority::named_priority_classes(pt);
  REQUIRE(k.size() == 1);
  CHECK(k[0].pointer == "/spec/runPolicy/schedulingPolicy/priorityClass");
  CHECK_FALSE(rules::priority::inherited_pod_priority_class(pt).has_value());

  auto rc = one("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: r\n  labels: {ray.io/priority-class-name: ray-high}\nspec: {}\n");
  CHECK(rules::priority::inherited_pod_priority_class(rc) == std::optional<std::string>("ray-high"));
  // KubeRay's KAI plugin does not read ray.io/priority-class-name.
  auto rc_kai = one("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: r\n  labels: {ray.io/priority-class-name: ray-high, "
                    "kai.scheduler/queue: q}\nspec: {headGroupSpec: {template: {spec: {containers: []}}}}\n");
  CHECK_FALSE(rules::priority::inherited_pod_priority_class(rc_kai, "kai-scheduler").has_value());
  CHECK(rules::priority::inherited_pod_priority_class(rc_kai, "") == std::optional<std::string>("ray-high"));

  // KAI's label priorityClassName, on the workload and on a template that goes to KAI.
  auto kai = one("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  labels: {priorityClassName: inference}\n"
                 "spec: {template: {metadata: {labels: {priorityClassName: build}}, spec: {schedulerName: kai-scheduler, containers: []}}}\n");
  auto kn = rules::priority::named_priority_classes(kai, "kai-scheduler");
  REQUIRE(kn.size() == 2);
  CHECK(kn[0].name == "inference");
  CHECK(kn[0].pointer == "/metadata/labels/priorityClassName");
  CHECK(kn[0].where == rules::priority::kKaiLabelWhere);
  CHECK(kn[1].name == "build");
  CHECK(kn[1].pointer == "/spec/template/metadata/labels/priorityClassName");
  CHECK(rules::priority::named_priority_classes(kai, "").empty());        // KAI not considered
  CHECK(rules::priority::named_priority_classes(kai, "volcano").empty());  // the pods go elsewhere
  CHECK(rules::priority::is_builtin_priority_class("system-node-critical"));
  CHECK_FALSE(rules::priority::is_builtin_priority_class("system-gpu"));
}

}  // TEST_SUITE
