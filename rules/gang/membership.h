#pragma once
// Gang membership of a pod template and of a workload (header only, so that other rule packs can
// include it without a new translation unit).
//
// How a pod joins a gang (facts/kubernetes-and-queues.md §2–§5):
// - Volcano: the pod *annotation* `scheduling.k8s.io/group-name` (or `scheduling.volcano.sh/group-name`)
//   names its PodGroup; the Volcano scheduler (`schedulerName: volcano`) reads it (`getJobID` in
//   volcano `pkg/scheduler/api/job_info.go`).
// - scheduler-plugins coscheduling: the pod *label* `scheduling.x-k8s.io/pod-group` names a
//   `scheduling.x-k8s.io` PodGroup (`PodGroupLabel`, `pkg/util/podgroup.go`).
// - Kueue: the workload label `kueue.x-k8s.io/queue-name` (all-or-nothing admission of the workload).
// - Kubeflow training jobs: `runPolicy.schedulingPolicy` (the operator creates the PodGroup and
//   labels or annotates the pods itself).
// - A Volcano Job (`batch.volcano.sh` Job) is a gang by construction: its controller creates a
//   PodGroup with `minMember = spec.minAvailable` for it.
// - KubeRay: the RayCluster labels `ray.io/gang-scheduling-enabled` (YuniKorn, scheduler-plugins),
//   `volcano.sh/queue-name` (Volcano), `kai.scheduler/queue` (KAI). Not `ray.io/scheduler-name`:
//   it chose the batch scheduler per cluster up to KubeRay v1.2 (`schedulermanager.go`), nothing
//   reads it at v1.3.2, v1.4.2 or v1.5.0, and v1.6 dropped the constant (ray-project/kuberay
//   `ray-operator/controllers/ray/utils/constant.go` at v1.2.2, v1.3.2, v1.5.0, v1.6.2, v1.7.0).
// - KAI Scheduler: pods with its `schedulerName` of a kind its pod-grouper gangs (rules/schedulers.h).
// - Volcano's own PodGroup for a plain workload (`schedulerName: volcano` without a group
//   annotation) has `minMember: 1` unless the owner carries `scheduling.volcano.sh/group-min-member`
//   (`getMinMemberFromUpperRes` in volcano `pkg/controllers/podgroup/pg_controller_handler.go`).

#include <optional>
#include <string>
#include <string_view>

#include "engine/json.h"
#include "engine/node.h"
#include "engine/object.h"
#include "engine/podspec.h"
#include "rules/schedulers.h"

namespace gpuguard::rules::gang {

using json = engine::json;

inline constexpr std::string_view kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kVolcanoGroupAnnotationAlt = "scheduling.volcano.sh/group-name";
inline constexpr std::string_view kVolcanoMinMemberAnnotation = "scheduling.volcano.sh/group-min-member";
inline constexpr std::string_view kCoschedulingLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kKueueQueueLabel = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kDefaultScheduler = "default-scheduler";

enum class Via : uint8_t {
  volcano,          // a Volcano group annotation on the pod template
  coscheduling,     // the scheduler-plugins pod-group label on the pod template
  volcano_min_member,  // schedulerName volcano and the owner's group-min-member annotation
  volcano_job,      // a batch.volcano.sh Job: a gang by construction
  kueue,            // the Kueue queue label
  scheduling_policy,   // a Kubeflow job's runPolicy.schedulingPolicy
  ray_batch_scheduler, // a KubeRay batch-scheduler label
  kai,              // pods that go to KAI Scheduler, of a kind its pod-grouper gangs
};

struct Membership {
  Via via = Via::volcano;
  std::string group;     // the PodGroup's name where the pod names it ("" otherwise)
  std::string evidence;  // what says so, for messages ("annotation scheduling.k8s.io/group-name=train")
};

namespace detail {

inline std::optional<std::string> string_in(engine::Node metadata, std::string_view map, std::string_view key) {
  engine::Node m = engine::member(metadata, map);
  if (!m.is_object()) return std::nullopt;
  auto v = engine::string_at(m, key);
  if (!v || v->empty()) return std::nullopt;
  return std::string(*v);
}

inline bool is_kubeflow_job(const engine::Object& obj) {
  if (obj.gvk.group != "kubeflow.org") return false;
  const std::string& k = obj.gvk.kind;
  return k == "PyTorchJob" || k == "TFJob" || k == "MPIJob" || k == "JAXJob" || k == "XGBoostJob" || k == "PaddleJob";
}

}  // namespace detail

[[nodiscard]] inline bool is_volcano_podgroup(const engine::Object& o) { return o.is("scheduling.volcano.sh", "PodGroup"); }
[[nodiscard]] inline bool is_coscheduling_podgroup(const engine::Object& o) { return o.is("scheduling.x-k8s.io", "PodGroup"); }
[[nodiscard]] inline bool is_podgroup(const engine::Object& o) { return is_volcano_podgroup(o) || is_coscheduling_podgroup(o); }

// The scheduler a pod template asks for ("default-scheduler" when it names none).
[[nodiscard]] inline std::string scheduler_name(const engine::PodTemplate& t) {
  auto s = engine::string_at(t.spec, "schedulerName");
  return s && !s->empty() ? std::string(*s) : std::string(kDefaultScheduler);
}

// The gang a pod template's own metadata puts its pods in: a Volcano group annotation, or the
// coscheduling label. Nothing else is visible on a template.
[[nodiscard]] inline std::optional<Membership> template_membership(const engine::PodTemplate& t) {
  const engine::Node md = t.metadata();
  for (std::string_view key : {kVolcanoGroupAnnotation, kVolcanoGroupAnnotationAlt})
    if (auto g = detail::string_in(md, "annotations", key))
      return Membership{Via::volcano, *g, "annotation " + std::string(key) + "=" + *g};
  if (auto g = detail::string_in(md, "labels", kCoschedulingLabel))
    return Membership{Via::coscheduling, *g, "label " + std::string(kCoschedulingLabel) + "=" + *g};
  return std::nullopt;
}

// Whether a workload is gang scheduled, by any of the mechanisms above: its kind, its own labels or
// spec, or the metadata of one of its pod templates. `kubeflow_operator_gang` / `kuberay_batch_scheduler`
// say that the operator was started with `--gang-scheduler-name` / `--batch-scheduler`, which gangs
// every job of those kinds without any mark on the object; `kai` is KAI Scheduler's name ("" when
// KAI is not considered) and `gpus` the GPU resources (KAI must take every GPU template's pods).
[[nodiscard]] inline std::optional<Membership> workload_membership(const engine::Object& obj,
                                                                    bool kubeflow_operator_gang = false,
                                                                    bool kuberay_batch_scheduler = false,
                                                                    std::string_view kai = {},
                                                                    const engine::ResourceMatcher* gpus = nullptr) {
  if (obj.is("batch.volcano.sh", "Job")) return Membership{Via::volcano_job, obj.name, "a Volcano Job"};
  const engine::Node md = obj.metadata();
  if (auto q = detail::string_in(md, "labels", kKueueQueueLabel))
    return Membership{Via::kueue, "", "label " + std::string(kKueueQueueLabel) + "=" + *q};
  if (detail::is_kubeflow_job(obj)) {
    if (engine::path(obj.root(), {"spec", "runPolicy", "schedulingPolicy"}).is_object())
      return Membership{Via::scheduling_policy, obj.name, "runPolicy.schedulingPolicy"};
    if (kubeflow_operator_gang) return Membership{Via::scheduling_policy, obj.name, "the training operator's --gang-scheduler-name"};
  }
  if (obj.gvk.group == "ray.io") {
    for (std::string_view key : {"ray.io/gang-scheduling-enabled", "volcano.sh/queue-name", "kai.scheduler/queue"})
      if (auto v = detail::string_in(md, "labels", key))
        return Membership{Via::ray_batch_scheduler, obj.name, "label " + std::string(key) + "=" + *v};
    if (kuberay_batch_scheduler) return Membership{Via::ray_batch_scheduler, obj.name, "the KubeRay operator's --batch-scheduler"};
  }
  if (!kai.empty() && sched::kai_grouping(obj) == sched::KaiGrouping::gang &&
      sched::kai_scheduled(obj, kai, gpus ? *gpus : engine::ResourceMatcher(engine::default_gpu_resources())))
    return Membership{Via::kai, obj.name, "pods that go to KAI Scheduler (schedulerName " + std::string(kai) + "), whose pod-grouper gangs a " + obj.gvk.kind};
  const bool owner_min_member = detail::string_in(md, "annotations", kVolcanoMinMemberAnnotation).has_value();
  for (const auto& t : engine::pod_templates(obj)) {
    if (auto m = template_membership(t)) return m;
    if (auto q = detail::string_in(t.metadata(), "labels", kKueueQueueLabel))
      return Membership{Via::kueue, "", "label " + std::string(kKueueQueueLabel) + "=" + *q};
    if (owner_min_member && scheduler_name(t) == "volcano")
      return Membership{Via::volcano_min_member, "", "schedulerName volcano and annotation " + std::string(kVolcanoMinMemberAnnotation)};
  }
  return std::nullopt;
}

}  // namespace gpuguard::rules::gang
