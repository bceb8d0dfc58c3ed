#include "rules/priority/names.h"

#include "engine/node.h"
#include "engine/podspec.h"
#include "engine/positions.h"
#include "rules/schedulers.h"

namespace gpuguard::rules::priority {

using namespace engine;

namespace {

constexpr std::string_view kKueueLabel = "kueue.x-k8s.io/priority-class";
constexpr std::string_view kRayLabel = "ray.io/priority-class-name";
constexpr std::string_view kKueueWhere = "the Kueue label kueue.x-k8s.io/priority-class";
constexpr std::string_view kRayWhere = "the KubeRay label ray.io/priority-class-name";

std::optional<std::string> non_empty(Node v) {
  if (!v.is_string() || v.str().empty()) return std::nullopt;
  return std::string(v.str());
}

}  // namespace

std::vector<NamedClass> named_priority_classes(const Object& obj, std::string_view kai) {
  std::vector<NamedClass> out;
  if (!obj.is_kubernetes_object()) return out;
  const std::string labels = "/metadata/labels/";
  if (auto n = non_empty(obj.label(kKueueLabel)))
    out.push_back({*n, labels + pointer_escape(kKueueLabel), ClassKind::workload, kKueueWhere});
  if (obj.gvk.group == "ray.io")
    if (auto n = non_empty(obj.label(kRayLabel)))
      out.push_back({*n, labels + pointer_escape(kRayLabel), ClassKind::pod, kRayWhere});
  const Node spec = member(obj.root(), "spec");
  if (spec.is_object()) {
    if (obj.is("scheduling.volcano.sh", "PodGroup")) {
      if (auto n = non_empty(member(spec, "priorityClassName")))
        out.push_back({*n, "/spec/priorityClassName", ClassKind::pod, "the PodGroup"});
    } else if (obj.is("batch.volcano.sh", "Job")) {
      if (auto n = non_empty(member(spec, "priorityClassName")))
        out.push_back({*n, "/spec/priorityClassName", ClassKind::pod, "the Volcano Job"});
    } else if (obj.gvk.group == "kubeflow.org") {
      if (auto n = non_empty(path(spec, {"runPolicy", "schedulingPolicy", "priorityClass"})))
        out.push_back({*n, "/spec/runPolicy/schedulingPolicy/priorityClass", ClassKind::pod,
                       "runPolicy.schedulingPolicy.priorityClass"});
    }
  }
  const std::string kai_label = pointer_escape(sched::kKaiPriorityLabel);
  bool kai_any = false;
  for (const auto& t : pod_templates(obj)) kai_any = kai_any || sched::kai_template(obj, t, kai);
  if (kai_any)
    if (auto n = non_empty(obj.label(sched::kKaiPriorityLabel)))
      out.push_back({*n, labels + kai_label, ClassKind::pod, kKaiLabelWhere});
  for (const auto& t : pod_templates(obj)) {
    if (!t.pointer.empty() && sched::kai_template(obj, t, kai))
      if (auto n = non_empty(member(member(t.metadata(), "labels"), sched::kKaiPriorityLabel)))
        out.push_back({*n, t.pointer + labels + kai_label, ClassKind::pod, kKaiLabelWhere});
    if (auto n = non_empty(member(t.spec, "priorityClassName")))
      out.push_back({*n, t.spec_pointer() + "/priorityClassName", ClassKind::pod,
                     t.pointer.empty() ? "the pod" : "the pod template"});
  }
  return out;
}

std::optional<std::string> inherited_pod_priority_class(const Object& obj, std::string_view kai) {
  if (obj.is("batch.volcano.sh", "Job")) return non_empty(path(obj.root(), {"spec", "priorityClassName"}));
  if (obj.gvk.group == "ray.io") {
    for (const auto& t : pod_templates(obj))
      if (sched::kai_template(obj, t, kai)) return std::nullopt;  // KubeRay's KAI plugin does not read the label
    return non_empty(obj.label(kRayLabel));
  }
  return std::nullopt;
}

std::optional<int64_t> builtin_priority_value(std::string_view name) {
  if (name == "system-node-critical") return 2000001000;
  if (name == "system-cluster-critical") return 2000000000;
  return std::nullopt;
}

bool is_builtin_priority_class(std::string_view name) { return builtin_priority_value(name).has_value(); }

}  // namespace gpuguard::rules::priority
