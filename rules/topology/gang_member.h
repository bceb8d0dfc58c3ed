#pragma once
// Gang membership of a pod template: which gang (group of pods scheduled and run together) the
// pods of a template belong to, and a label every member pod carries, so a rule can select the
// gang (e.g. in a pod-affinity term). Kept apart from the rules so it can be merged with the gang
// rules' own helper.
//
// Signals, in order (facts/kubernetes-and-queues.md §4, §5):
// - scheduler-plugins coscheduling: the pod *label* `scheduling.x-k8s.io/pod-group` (PodGroupLabel).
// - Volcano: the pod *annotation* `scheduling.k8s.io/group-name` (set by the Volcano job
//   controller, by training-operator with `--gang-scheduler-name=volcano`, and by KubeRay). An
//   annotation cannot be selected, so the selectable label is the job's own label where the pod
//   carries one.
// - Controllers' job labels on the pods they create: Volcano `volcano.sh/job-name`
//   (`JobNameKey`, volcano-sh/apis `pkg/apis/batch/v1alpha1/labels.go`), Kubeflow
//   `training.kubeflow.org/job-name` (`JobNameLabel`, training-operator `pkg/apis/kubeflow.org/v1/common_types.go`),
//   JobSet `jobset.sigs.k8s.io/jobset-name` (`JobSetNameKey`, jobset `api/jobset/v1alpha2/jobset_types.go`).
// - The workload kind itself: a Volcano Job, a Kubeflow training job or a JobSet is one gang; its
//   controller puts the job label above on every pod, with the workload's name as the value.

#include <optional>
#include <string>
#include <string_view>

#include "engine/object.h"
#include "engine/podspec.h"

namespace gpuguard::rules::topology {

inline constexpr std::string_view kCoschedulingLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kVolcanoJobLabel = "volcano.sh/job-name";
inline constexpr std::string_view kKubeflowJobLabel = "training.kubeflow.org/job-name";
inline constexpr std::string_view kJobSetLabel = "jobset.sigs.k8s.io/jobset-name";

struct GangMembership {
  std::string via;          // what makes it a member, for messages ("coscheduling label scheduling.x-k8s.io/pod-group")
  std::string group;        // the gang's name
  std::string label_key;    // a label every member pod carries; "" when none is known
  std::string label_value;
};

namespace gang_detail {

inline std::optional<std::string> string_in(engine::Node metadata, std::string_view field, std::string_view key) {
  auto v = engine::string_at(engine::member(metadata, field), key);
  if (!v || v->empty()) return std::nullopt;
  return std::string(*v);
}

}  // namespace gang_detail

// The gang the pods of template `t` of `obj` belong to, if any.
[[nodiscard]] inline std::optional<GangMembership> gang_membership(const engine::Object& obj, const engine::PodTemplate& t) {
  using gang_detail::string_in;
  const engine::Node md = t.metadata();
  if (auto pg = string_in(md, "labels", kCoschedulingLabel))
    return GangMembership{"coscheduling label " + std::string(kCoschedulingLabel), *pg, std::string(kCoschedulingLabel), *pg};
  // A job label the pod already carries (pods created by the controllers, or templates that set it).
  auto job_label = [&]() -> std::optional<std::pair<std::string, std::string>> {
    for (std::string_view key : {kVolcanoJobLabel, kKubeflowJobLabel, kJobSetLabel})
      if (auto v = string_in(md, "labels", key)) return std::make_pair(std::string(key), *v);
    return std::nullopt;
  }();
  // The label the workload's controller puts on every pod it creates.
  auto kind_label = [&]() -> std::optional<std::pair<std::string, std::string>> {
    std::string_view key;
    if (obj.is("batch.volcano.sh", "Job")) key = kVolcanoJobLabel;
    else if (obj.gvk.group == "kubeflow.org" && obj.gvk.kind.ends_with("Job")) key = kKubeflowJobLabel;
    else if (obj.is("jobset.x-k8s.io", "JobSet")) key = kJobSetLabel;
    else return std::nullopt;
    return std::make_pair(std::string(key), obj.name);  // name "" under generateName: not selectable
  }();
  auto make = [](std::string via, std::string group, const std::optional<std::pair<std::string, std::string>>& label) {
    GangMembership g{std::move(via), std::move(group), "", ""};
    if (label && !label->second.empty()) {
      g.label_key = label->first;
      g.label_value = label->second;
    }
    return g;
  };
  if (auto vg = string_in(md, "annotations", kVolcanoGroupAnnotation))
    return make("Volcano annotation " + std::string(kVolcanoGroupAnnotation), *vg, job_label ? job_label : kind_label);
  if (job_label) return make("label " + job_label->first, job_label->second, job_label);
  if (kind_label) {
    const std::string what = obj.is("batch.volcano.sh", "Job") ? "Volcano Job" : obj.gvk.kind;
    return make(what + " " + (obj.name.empty() ? obj.generate_name + "*" : obj.name) + ", whose pods carry " + kind_label->first,
                obj.name, kind_label);
  }
  return std::nullopt;
}

}  // namespace gpuguard::rules::topology
