#pragma once
// What other schedulers and controllers do with a workload, for the rules that ask for a property
// (one zone, a gang, a priority) and must accept each scheduler's own way of giving it. Header only.
//
// KAI Scheduler (NVIDIA/KAI-Scheduler @72de64fc, v0.13.0-rc1+142; the pod-grouper and scheduler
// files named below, read at that commit):
// - It takes the pods whose `schedulerName` is its name, `kai-scheduler` by default
//   (`DefaultSchedulerName`, pkg/common/constants/constants.go; the pod-grouper skips other pods,
//   pkg/podgrouper/pod_controller.go).
// - Its pod-grouper makes the PodGroups (pkg/podgrouper/podgrouper/hub/hub.go picks a grouper per
//   top-owner kind): a Kubeflow PyTorchJob, TFJob, MPIJob, JAXJob or XGBoostJob is one PodGroup of
//   minMember = its replicas or `runPolicy.schedulingPolicy.minAvailable`
//   (plugins/kubeflow/distributed_common.go); a JobSet one per replicated job (the default
//   `startupPolicyOrder` InOrder) or one for all (plugins/jobset/jobset_grouper.go); a
//   LeaderWorkerSet one per group of minMember = size (LeaderCreated; under LeaderReady the leader
//   alone first, then the group: plugins/leaderworkerset/lws_grouper.go); a RayCluster, RayJob or
//   RayService one of minMember = head + minimum workers (plugins/ray/ray_grouper.go). A batch Job,
//   a CronJob's Jobs and a Deployment get one PodGroup *per pod* (plugins/job/job_grouper.go,
//   plugins/deployment/deployment_grouper.go; docs/batch/README.md: "scheduled separately"); a
//   StatefulSet, a ReplicaSet, a PaddleJob and any kind without a grouper one PodGroup of
//   minMember 1 (plugins/defaultgrouper/default_grouper.go).
// - Priority: the label `priorityClassName` on an owner, else on the pod, else the pod's
//   `spec.priorityClassName`; a name that is not a PriorityClass is logged and skipped, and the
//   kind's default class is used (`train`; `inference` for a Deployment; `build` for a Notebook)
//   (calcPodGroupPriorityClass, calcPriorityClassWithDefaults in default_grouper.go; docs/priority).
// - Topology: the top owner's annotations `kai.scheduler/topology` (a Topology's name) and
//   `kai.scheduler/topology-required-placement` / `-preferred-placement` (a level's node label) go to
//   the PodGroup (default_grouper.go GetPodGroupMetadata). Without `kai.scheduler/topology` no
//   constraint applies (getJobTopology, pkg/scheduler/plugins/topology/job_filtering.go); with a
//   required level, the PodGroup's pending pods are kept in the domain of its running ones
//   (getRelevantDomainsWithAllocatedPods, same file). Preferred is a score only (docs/topology).

#include <optional>
#include <string>
#include <string_view>

#include "engine/node.h"
#include "engine/object.h"
#include "engine/podspec.h"
#include "engine/positions.h"

namespace gpuguard::rules::sched {

inline constexpr std::string_view kKaiDefaultScheduler = "kai-scheduler";
inline constexpr std::string_view kKaiQueueLabel = "kai.scheduler/queue";
inline constexpr std::string_view kKaiPriorityLabel = "priorityClassName";
inline constexpr std::string_view kKaiTopology = "kai.scheduler/topology";
inline constexpr std::string_view kKaiRequiredPlacement = "kai.scheduler/topology-required-placement";
inline constexpr std::string_view kKaiPreferredPlacement = "kai.scheduler/topology-preferred-placement";

// The parameter the rules that know KAI take for its scheduler name.
inline constexpr std::string_view kKaiSchedulerParam = "kaiScheduler";
inline constexpr std::string_view kKaiSchedulerParamDoc =
    "KAI Scheduler's name (its `schedulerName`); \"\" when KAI does not run in the cluster";

namespace detail {

inline bool is_kubeflow_job(const engine::Object& obj) {
  if (obj.gvk.group != "kubeflow.org") return false;
  const std::string& k = obj.gvk.kind;
  return k == "PyTorchJob" || k == "TFJob" || k == "MPIJob" || k == "JAXJob" || k == "XGBoostJob" || k == "PaddleJob";
}

inline bool non_empty_string(engine::Node n) { return n.is_string() && !n.str().empty(); }

}  // namespace detail

// The scheduler a pod template names ("" when none).
[[nodiscard]] inline std::string_view template_scheduler(const engine::PodTemplate& t) {
  return engine::string_at(t.spec, "schedulerName").value_or("");
}

// Whether the template's pods go to KAI: it names KAI's scheduler, or (a Ray object) KubeRay's KAI
// batch scheduler is asked for by its queue label: that plugin sets the pods' schedulerName
// (ray-project/kuberay v1.7.0 batchscheduler/kai-scheduler/kai_scheduler.go AddMetadataToChildResource).
[[nodiscard]] inline bool kai_template(const engine::Object& obj, const engine::PodTemplate& t, std::string_view kai) {
  if (kai.empty()) return false;
  if (template_scheduler(t) == kai) return true;
  return obj.gvk.group == "ray.io" && detail::non_empty_string(obj.label(kKaiQueueLabel));
}

// Whether KAI schedules the workload: every pod template that requests GPUs goes to KAI (every
// template when none does), and at least one template exists.
[[nodiscard]] inline bool kai_scheduled(const engine::Object& obj, std::string_view kai, const engine::ResourceMatcher& gpus) {
  if (kai.empty()) return false;
  const auto& templates = engine::pod_templates(obj);
  if (templates.empty()) return false;
  bool any_gpu = false;
  for (const auto& t : templates) any_gpu = any_gpu || engine::requests_gpu(t, gpus);
  for (const auto& t : templates)
    if ((!any_gpu || engine::requests_gpu(t, gpus)) && !kai_template(obj, t, kai)) return false;
  return true;
}

// How KAI's pod-grouper groups a kind's pods.
enum class KaiGrouping : uint8_t {
  gang,         // one PodGroup for the workload (or for each JobSet replicated job / LWS group), minMember = its pods
  one_group,    // one PodGroup of minMember 1 for all the workload's pods
  per_pod,      // one PodGroup per pod
};

[[nodiscard]] inline KaiGrouping kai_grouping(const engine::Object& obj) {
  if (detail::is_kubeflow_job(obj)) return obj.gvk.kind == "PaddleJob" ? KaiGrouping::one_group : KaiGrouping::gang;
  if (obj.is("jobset.x-k8s.io", "JobSet") || obj.is("leaderworkerset.x-k8s.io", "LeaderWorkerSet") || obj.gvk.group == "ray.io")
    return KaiGrouping::gang;
  if (obj.is("batch", "Job") || obj.is("batch", "CronJob") || obj.is("apps", "Deployment") || obj.is("", "Pod"))
    return KaiGrouping::per_pod;
  return KaiGrouping::one_group;
}

// The class KAI takes from its label: on the workload, else on the template ("" when neither).
[[nodiscard]] inline std::string kai_priority_label(const engine::Object& obj, const engine::PodTemplate& t) {
  if (auto v = engine::string_at(member(obj.metadata(), "labels"), kKaiPriorityLabel); v && !v->empty()) return std::string(*v);
  if (auto v = engine::string_at(member(t.metadata(), "labels"), kKaiPriorityLabel); v && !v->empty()) return std::string(*v);
  return "";
}

// LeaderWorkerSet (kubernetes-sigs/lws @060ab4da, v0.10.0+11): `spec.leaderWorkerTemplate.size`
// (default 1) pods a group, `spec.replicas` (default 1) groups, `spec.startupPolicy` LeaderCreated
// (default) or LeaderReady (api/leaderworkerset/v1/leaderworkerset_types.go).
inline constexpr std::string_view kLwsExclusiveTopology = "leaderworkerset.sigs.k8s.io/exclusive-topology";
inline constexpr std::string_view kLwsSubGroupExclusiveTopology = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology";

[[nodiscard]] inline bool is_lws(const engine::Object& obj) { return obj.is("leaderworkerset.x-k8s.io", "LeaderWorkerSet"); }

[[nodiscard]] inline int64_t lws_size(const engine::Object& obj) {
  const engine::Node n = engine::path(obj.root(), {"spec", "leaderWorkerTemplate", "size"});
  return engine::as_int(n).value_or(1);
}

[[nodiscard]] inline bool lws_leader_ready(const engine::Object& obj) {
  return engine::string_at(member(obj.root(), "spec"), "startupPolicy") == std::optional<std::string_view>("LeaderReady");
}

// KAI Scheduler's GPU sharing (NVIDIA/KAI-Scheduler @72de64fc; the files named are the same at the
// v0.13.0 tag): a pod asks for a share of a GPU by its annotations `gpu-fraction` (a part of one
// GPU's memory), `gpu-memory` (MiB), with `gpu-fraction-num-devices` (that share on several GPUs),
// `gpu-fraction-container-name` (the container that gets it, the first regular container by
// default) and `mps` (pkg/common/constants/constants.go). `RequestsGPUFraction` (pkg/common/
// resources/gpu_sharing.go) is either of the first two being present, whatever its value.
inline constexpr std::string_view kKaiGpuFraction = "gpu-fraction";
inline constexpr std::string_view kKaiGpuMemory = "gpu-memory";
inline constexpr std::string_view kKaiGpuFractionNumDevices = "gpu-fraction-num-devices";
inline constexpr std::string_view kKaiGpuFractionContainerName = "gpu-fraction-container-name";
inline constexpr std::string_view kKaiMps = "mps";

// The KAI GPU-share annotation a pod template carries (`gpu-fraction` first, then `gpu-memory`),
// or a null node.
[[nodiscard]] inline engine::Node kai_gpu_share(const engine::PodTemplate& t) {
  const engine::Node annotations = member(t.metadata(), "annotations");
  if (!annotations.is_object()) return {};
  for (const std::string_view key : {kKaiGpuFraction, kKaiGpuMemory})
    for (const auto entry : annotations.items())
      if (entry.key == key) return entry.value;
  return {};
}

// KAI's queues (pkg/apis/scheduling/v2/queue_types.go): `scheduling.run.ai/v2` Queue, cluster-scoped.
// The pod-grouper takes a workload's queue from the label `kai.scheduler/queue` on the top owner,
// else on the pod, else from the label `project` (suffixed `-<node pool>` when the pod has
// `kai.scheduler/node-pool`), else `default-queue` (CalcPodGroupQueue in default_grouper.go,
// DefaultQueueName in plugins/constants/constants.go).
inline constexpr std::string_view kKaiQueueGroup = "scheduling.run.ai";
inline constexpr std::string_view kKaiDefaultQueue = "default-queue";
inline constexpr std::string_view kKaiPreemptibilityLabel = "kai.scheduler/preemptibility";

[[nodiscard]] inline bool is_kai_queue(const engine::Object& obj) { return obj.is(kKaiQueueGroup, "Queue"); }

// Whether a controller owns the object: KAI reads its queue, priority and preemptibility labels on
// the top owner first, which an owned object does not show.
[[nodiscard]] inline bool controlled(const engine::Object& obj) {
  const engine::Node owners = member(obj.metadata(), "ownerReferences");
  if (!owners.is_array()) return false;
  for (const engine::Node o : owners)
    if (engine::bool_at(o, "controller") == std::optional<bool>(true)) return true;
  return false;
}

// The KAI queue a label names: on the workload (the top owner), else on the pod template; its JSON
// pointer; nothing when neither carries a non-empty `kai.scheduler/queue`.
struct KaiQueueLabel {
  std::string name;
  std::string pointer;
};
[[nodiscard]] inline std::optional<KaiQueueLabel> kai_queue_label(const engine::Object& obj, const engine::PodTemplate& t) {
  if (auto v = engine::string_at(member(obj.metadata(), "labels"), kKaiQueueLabel); v && !v->empty())
    return KaiQueueLabel{std::string(*v), engine::pointer_join("/metadata/labels", kKaiQueueLabel)};
  if (auto v = engine::string_at(member(t.metadata(), "labels"), kKaiQueueLabel); v && !v->empty())
    return KaiQueueLabel{std::string(*v), engine::pointer_join(t.pointer + "/metadata/labels", kKaiQueueLabel)};
  return std::nullopt;
}

}  // namespace gpuguard::rules::sched
