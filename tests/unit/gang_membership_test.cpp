// rules/gang/membership.h: how a pod template and a workload join a gang.

#include <doctest/doctest.h>

#include "rules/gang/membership.h"
#include "tests/support/support.h"

using namespace gpuguard;
using gpuguard::rules::gang::Via;

namespace {

std::optional<rules::gang::Membership> workload(const std::string& yaml, bool kubeflow = false, bool kuberay = false) {
  auto objs = test::load_objects(yaml);
  REQUIRE(objs.size() == 1);
  return rules::gang::workload_membership(objs[0], kubeflow, kuberay);
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("gang membership of pod templates and workloads") {
  // Pod templates: the Volcano annotation (either key) and the coscheduling label.
  auto objs = test::load_objects(
      "apiVersion: batch/v1\nkind: Job\nspec: {template: {metadata: {annotations: {scheduling.volcano.sh/group-name: pg}}, "
      "spec: {schedulerName: volcano}}}\n");
  auto t = engine::pod_templates(objs[0]);
  REQUIRE(t.size() == 1);
  auto m = rules::gang::template_membership(t[0]);
  REQUIRE(m);
  CHECK(m->via == Via::volcano);
  CHECK(m->group == "pg");
  CHECK(rules::gang::scheduler_name(t[0]) == "volcano");

  objs = test::load_objects("apiVersion: v1\nkind: Pod\nmetadata: {labels: {scheduling.x-k8s.io/pod-group: g}}\nspec: {}\n");
  t = engine::pod_templates(objs[0]);
  m = rules::gang::template_membership(t[0]);
  REQUIRE(m);
  CHECK(m->via == Via::coscheduling);
  CHECK(rules::gang::scheduler_name(t[0]) == "default-scheduler");

  // Annotations as a label (or a label as an annotation) do not count; neither do empty values.
  objs = test::load_objects(
      "apiVersion: v1\nkind: Pod\nmetadata: {labels: {scheduling.k8s.io/group-name: g}, annotations: {scheduling.x-k8s.io/pod-group: \"\"}}\n"
      "spec: {}\n");
  CHECK_FALSE(rules::gang::template_membership(engine::pod_templates(objs[0])[0]));

  // Workloads.
  CHECK(workload("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec: {tasks: []}\n")->via == Via::volcano_job);
  CHECK(workload("apiVersion: batch/v1\nkind: Job\nmetadata: {labels: {kueue.x-k8s.io/queue-name: q}}\nspec: {template: {spec: {}}}\n")->via ==
        Via::kueue);
  CHECK(workload("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {runPolicy: {schedulingPolicy: {}}}\n")->via ==
        Via::scheduling_policy);
  CHECK_FALSE(workload("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {}\n"));
  CHECK(workload("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {}\n", true));
  CHECK(workload("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {labels: {volcano.sh/queue-name: q}}\nspec: {}\n")->via ==
        Via::ray_batch_scheduler);
  CHECK_FALSE(workload("apiVersion: ray.io/v1\nkind: RayCluster\nspec: {}\n"));
  CHECK(workload("apiVersion: ray.io/v1\nkind: RayCluster\nspec: {}\n", false, true));
  // schedulerName volcano alone: Volcano's own PodGroup has minMember 1, no gang.
  CHECK_FALSE(workload("apiVersion: apps/v1\nkind: StatefulSet\nspec: {template: {spec: {schedulerName: volcano}}}\n"));
  CHECK(workload("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {annotations: {scheduling.volcano.sh/group-min-member: \"2\"}}\n"
                 "spec: {template: {spec: {schedulerName: volcano}}}\n")
            ->via == Via::volcano_min_member);
  // Odd input: never throws.
  CHECK_FALSE(workload("apiVersion: batch/v1\nkind: Job\nmetadata: {labels: [x], annotations: 7}\nspec: {template: {metadata: 3, spec: {}}}\n"));
  // ray.io/scheduler-name is read by no KubeRay since v1.3.
  CHECK_FALSE(workload("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {labels: {ray.io/scheduler-name: volcano}}\nspec: {}\n"));
}

TEST_CASE("KAI Scheduler gangs the kinds its pod-grouper groups, when every GPU template goes to it") {
  auto kai = [](const std::string& yaml, std::string_view name = "kai-scheduler") {
    auto objs = test::load_objects(yaml);
    REQUIRE(objs.size() == 1);
    const engine::ResourceMatcher gpus(engine::default_gpu_resources());
    return rules::gang::workload_membership(objs[0], false, false, name, &gpus);
  };
  const std::string pytorch =
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec:\n  pytorchReplicaSpecs:\n"
      "    Master: {replicas: 1, template: {spec: {schedulerName: kai-scheduler, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}}\n"
      "    Worker: {replicas: 2, template: {spec: {schedulerName: %s, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}}\n";
  auto with = [&](const std::string& worker) {
    std::string y = pytorch;
    y.replace(y.find("%s"), 2, worker);
    return y;
  };
  auto m = kai(with("kai-scheduler"));
  REQUIRE(m);
  CHECK(m->via == Via::kai);
  CHECK_FALSE(kai(with("default-scheduler")));         // one GPU template goes elsewhere
  CHECK_FALSE(kai(with("kai-scheduler"), ""));         // KAI not considered
  CHECK(kai(with("my-kai"), "my-kai") == std::nullopt);  // the Master still names kai-scheduler
  // KAI does not gang a batch Job, a StatefulSet or a PaddleJob.
  CHECK_FALSE(kai("apiVersion: batch/v1\nkind: Job\nspec: {parallelism: 2, template: {spec: {schedulerName: kai-scheduler, containers: []}}}\n"));
  CHECK_FALSE(kai("apiVersion: apps/v1\nkind: StatefulSet\nspec: {replicas: 2, template: {spec: {schedulerName: kai-scheduler, containers: []}}}\n"));
  CHECK_FALSE(kai("apiVersion: kubeflow.org/v1\nkind: PaddleJob\nspec: {paddleReplicaSpecs: {Worker: {replicas: 2, template: {spec: "
                  "{schedulerName: kai-scheduler, containers: []}}}}}\n"));
  // A LeaderWorkerSet, and a Ray cluster by KubeRay's KAI queue label.
  CHECK(kai("apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec: {leaderWorkerTemplate: {size: 2, workerTemplate: "
            "{spec: {schedulerName: kai-scheduler, containers: []}}}}\n")
            ->via == Via::kai);
  CHECK(kai("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {labels: {kai.scheduler/queue: q}}\nspec: {headGroupSpec: {template: {spec: {containers: []}}}}\n"));
}

}  // TEST_SUITE
