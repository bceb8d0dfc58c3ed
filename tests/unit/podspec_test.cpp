#include <doctest/doctest.h>

#include <thread>

#include "engine/podspec.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;

namespace {
const std::vector<PodTemplate>& templates_of(const std::string& yaml, std::vector<Object>& keep) {
  keep = gpuguard::test::load_objects(yaml);
  REQUIRE(keep.size() == 1);
  return pod_templates(keep[0]);
}
}  // namespace

TEST_SUITE("unit") {

TEST_CASE("pod templates of every workload kind") {
  std::vector<Object> k;
  struct Case {
    const char* yaml;
    std::vector<std::string> pointers;
    std::vector<std::optional<int64_t>> replicas;
  };
  const Case cases[] = {
      {"apiVersion: v1\nkind: Pod\nspec: {containers: []}\n", {""}, {1}},
      {"apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 3, template: {spec: {}}}\n", {"/spec/template"}, {3}},
      {"apiVersion: apps/v1\nkind: StatefulSet\nspec: {template: {spec: {}}}\n", {"/spec/template"}, {1}},
      {"apiVersion: apps/v1\nkind: DaemonSet\nspec: {template: {spec: {}}}\n", {"/spec/template"}, {std::nullopt}},
      {"apiVersion: batch/v1\nkind: Job\nspec: {parallelism: 4, template: {spec: {}}}\n", {"/spec/template"}, {4}},
      {"apiVersion: batch/v1\nkind: CronJob\nspec: {jobTemplate: {spec: {template: {spec: {}}}}}\n",
       {"/spec/jobTemplate/spec/template"}, {1}},
      {"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nspec: {tasks: [{name: ps, replicas: 2, template: {spec: {}}}, "
       "{name: worker, replicas: 4, template: {spec: {}}}]}\n",
       {"/spec/tasks/0/template", "/spec/tasks/1/template"}, {2, 4}},
      {"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {pytorchReplicaSpecs: {Master: {replicas: 1, template: {spec: {}}}, "
       "Worker: {replicas: 3, template: {spec: {}}}}}\n",
       {"/spec/pytorchReplicaSpecs/Master/template", "/spec/pytorchReplicaSpecs/Worker/template"}, {1, 3}},
      // Written Worker first: in key order all the same, as the JSON of the same job has them.
      {"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {pytorchReplicaSpecs: {Worker: {replicas: 3, template: {spec: {}}}, "
       "Master: {replicas: 1, template: {spec: {}}}}}\n",
       {"/spec/pytorchReplicaSpecs/Master/template", "/spec/pytorchReplicaSpecs/Worker/template"}, {1, 3}},
      {"apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nspec: {mpiReplicaSpecs: {Launcher: {template: {spec: {}}}}}\n",
       {"/spec/mpiReplicaSpecs/Launcher/template"}, {1}},
      {"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nspec: {replicatedJobs: [{name: w, replicas: 2, template: "
       "{spec: {parallelism: 4, template: {spec: {}}}}}]}\n",
       {"/spec/replicatedJobs/0/template/spec/template"}, {8}},
      {"apiVersion: ray.io/v1\nkind: RayCluster\nspec: {headGroupSpec: {template: {spec: {}}}, workerGroupSpecs: "
       "[{groupName: gpu, replicas: 2, numOfHosts: 2, template: {spec: {}}}]}\n",
       {"/spec/headGroupSpec/template", "/spec/workerGroupSpecs/0/template"}, {1, 4}},
      {"apiVersion: ray.io/v1\nkind: RayJob\nspec: {rayClusterSpec: {headGroupSpec: {template: {spec: {}}}}}\n",
       {"/spec/rayClusterSpec/headGroupSpec/template"}, {1}},
      {"apiVersion: ray.io/v1\nkind: RayService\nspec: {rayClusterConfig: {workerGroupSpecs: [{minReplicas: 1, template: {spec: {}}}]}}\n",
       {"/spec/rayClusterConfig/workerGroupSpecs/0/template"}, {1}},
      {"apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec: {replicas: 2, leaderWorkerTemplate: {size: 4, "
       "leaderTemplate: {spec: {}}, workerTemplate: {spec: {}}}}\n",
       {"/spec/leaderWorkerTemplate/leaderTemplate", "/spec/leaderWorkerTemplate/workerTemplate"}, {2, 6}},
      {"apiVersion: v1\nkind: ConfigMap\ndata: {}\n", {}, {}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.yaml);
    const auto& ts = templates_of(c.yaml, k);
    REQUIRE(ts.size() == c.pointers.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      CHECK(ts[i].pointer == c.pointers[i]);
      CHECK(ts[i].replicas == c.replicas[i]);
    }
  }
}

TEST_CASE("containers: init containers, native sidecars, ephemeral on request") {
  std::vector<Object> k;
  const auto& ts = templates_of(
      "apiVersion: v1\nkind: Pod\nspec:\n  initContainers: [{name: setup}, {name: proxy, restartPolicy: Always}]\n"
      "  containers: [{name: main}]\n  ephemeralContainers: [{name: debug}]\n",
      k);
  auto cs = containers(ts[0]);
  REQUIRE(cs.size() == 3);
  CHECK(cs[0].kind == Container::Kind::init);
  CHECK(cs[1].kind == Container::Kind::sidecar);
  CHECK(cs[2].pointer == "/spec/containers/0");
  CHECK(describe(cs[1]) == "sidecar container \"proxy\"");
  CHECK(containers(ts[0], true).size() == 4);
}

TEST_CASE("GPU resource matcher: names and prefixes") {
  ResourceMatcher m(default_gpu_resources());
  CHECK(m.matches("nvidia.com/gpu"));
  CHECK(m.matches("nvidia.com/gpu.shared"));
  CHECK(m.matches("nvidia.com/mig-1g.10gb"));
  CHECK_FALSE(m.matches("nvidia.com/mig-"));
  CHECK_FALSE(m.matches("nvidia.com/gpux"));
  CHECK_FALSE(m.matches("cpu"));
}

}  // TEST_SUITE

TEST_SUITE("unit") {

TEST_CASE("pod requests add up as the scheduler adds them") {
  std::vector<Object> k;
  const auto& ts = templates_of(
      "apiVersion: v1\nkind: Pod\nspec:\n"
      "  initContainers:\n"
      "  - {name: sidecar, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: 1, cpu: 1}}}\n"
      "  - {name: init, resources: {limits: {nvidia.com/gpu: 4}}}\n"
      "  containers:\n"
      "  - {name: a, resources: {limits: {nvidia.com/gpu: 2}, requests: {cpu: 500m}}}\n"
      "  - {name: b, resources: {requests: {cpu: 1, nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}}\n",
      k);
  auto r = pod_requests(ts[0]);
  // Regular containers and the sidecar: 2 + 1 + 1 = 4 GPUs; the init container with the sidecar
  // running beside it needs 4 + 1 = 5, which wins.
  CHECK(r.get("nvidia.com/gpu") == Quantity::from_int(5));
  CHECK(r.get("cpu") == *Quantity::parse("2500m"));
  auto g = pod_gpus(ts[0], ResourceMatcher(default_gpu_resources()));
  REQUIRE(g.size() == 1);
  CHECK(requests_gpu(ts[0], ResourceMatcher(default_gpu_resources())));
  CHECK(requests_gpu(k[0], ResourceMatcher(default_gpu_resources())));
}

TEST_CASE("a template's GPUs are added up once per set of GPU patterns, and kept with it") {
  std::vector<Object> k;
  const auto& ts = templates_of(
      "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n"
      "  - {name: a, resources: {limits: {nvidia.com/gpu: 2, nvidia.com/mig-1g.10gb: 1}}}\n"
      "  - {name: b, resources: {limits: {nvidia.com/gpu.shared: bad}}}\n",
      k);
  const ResourceMatcher all(default_gpu_resources());
  const ResourceMatcher same(default_gpu_resources());  // another config with the same patterns
  const ResourceMatcher whole({"nvidia.com/gpu"});
  const ResourceMatcher shared({"nvidia.com/gpu.shared"});
  const GpuAmounts& first = pod_gpus(ts[0], all);
  CHECK(first.size() == 2);
  CHECK(&pod_gpus(ts[0], same) == &first);
  const GpuAmounts& only_whole = pod_gpus(ts[0], whole);
  CHECK(&only_whole != &first);
  REQUIRE(only_whole.size() == 1);
  CHECK(only_whole.at("nvidia.com/gpu") == Quantity::from_int(2));
  CHECK(&pod_gpus(ts[0], all) == &first);  // the first set's sum is kept beside the second's
  // An amount that does not parse adds nothing, but still asks for the resource.
  CHECK(pod_gpus(ts[0], shared).empty());
  CHECK(requests_gpu(ts[0], shared));
  CHECK_FALSE(requests_gpu(ts[0], ResourceMatcher({"amd.com/gpu"})));

  // Threads asking at once for a set not yet made get one and the same sum.
  const ResourceMatcher mig({"nvidia.com/mig-*"});
  std::vector<const GpuAmounts*> seen(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = &pod_gpus(ts[0], mig); });
  for (auto& t : threads) t.join();
  for (const auto* s : seen) CHECK(s == seen[0]);
  CHECK(seen[0]->size() == 1);
}

TEST_CASE("zero GPUs is not a GPU workload") {
  std::vector<Object> k;
  const auto& ts = templates_of("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: a, resources: {limits: {nvidia.com/gpu: 0, cpu: 1}}}\n", k);
  CHECK_FALSE(requests_gpu(ts[0], ResourceMatcher(default_gpu_resources())));
  CHECK(pod_gpus(ts[0], ResourceMatcher(default_gpu_resources())).empty());
}

}  // TEST_SUITE

TEST_SUITE("unit") {

TEST_CASE("pod templates are made once per object and read its document") {
  auto objs = gpuguard::test::load_objects(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers: [{name: setup}]\n"
      "  containers: [{name: a}, {name: b}]\n  ephemeralContainers: [{name: debug}]\n");
  REQUIRE(objs.size() == 1);
  const Object& obj = objs[0];
  const auto& first = pod_templates(obj);
  REQUIRE(first.size() == 1);
  CHECK(&pod_templates(obj) == &first);  // the same view for every rule that asks
  CHECK(first[0].tmpl == obj.root());
  CHECK(containers(first[0]).size() == 3);
  CHECK(containers(first[0], true).size() == 4);
  CHECK(containers(first[0], true).back().name == "debug");

  // Several threads asking at once get one and the same view.
  std::vector<Object> more = gpuguard::test::load_objects("apiVersion: apps/v1\nkind: Deployment\nspec: {template: {spec: {containers: [{name: c}]}}}\n");
  REQUIRE(more.size() == 1);
  std::vector<const std::vector<PodTemplate>*> seen(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = &pod_templates(more[0]); });
  for (auto& t : threads) t.join();
  for (const auto* s : seen) CHECK(s == seen[0]);

  // A copy or a moved object makes its own, reading the document it shares.
  Object copy = obj;
  const auto& of_copy = pod_templates(copy);
  CHECK(&of_copy != &first);
  CHECK(of_copy[0].tmpl == copy.root());
  CHECK(copy.root() == obj.root());
  Object moved = std::move(copy);
  const auto& of_moved = pod_templates(moved);
  CHECK(of_moved[0].tmpl == moved.root());
  CHECK(containers(of_moved[0])[1].body == path(moved.root(), {"spec", "containers"}).at(0));
  // An object from JSON: its templates read the document made of its body.
  Object from_json = gpuguard::engine::object_from_json(obj.body());
  CHECK(pod_templates(from_json)[0].tmpl == from_json.root());
  CHECK(containers(pod_templates(from_json)[0], true).back().name == "debug");
  // Assigning over an object drops what it had made.
  Object target = gpuguard::test::load_objects("apiVersion: v1\nkind: Pod\nspec: {containers: []}\n")[0];
  CHECK(containers(pod_templates(target)[0]).empty());
  target = obj;
  CHECK(containers(pod_templates(target)[0]).size() == 3);
  CHECK(pod_templates(target)[0].tmpl == target.root());
}

}  // TEST_SUITE
