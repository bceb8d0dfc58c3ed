#pragma once
// The priority classes a workload names, wherever its kind writes them: pod templates'
// `spec.priorityClassName`, Volcano PodGroup and Job `spec.priorityClassName`, Kubeflow
// `spec.runPolicy.schedulingPolicy.priorityClass`, KubeRay's `ray.io/priority-class-name` label and
// Kueue's `kueue.x-k8s.io/priority-class` label (a WorkloadPriorityClass, not a PriorityClass).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/object.h"

namespace gpuguard::rules::priority {

enum class ClassKind : uint8_t {
  pod,       // a scheduling.k8s.io PriorityClass
  workload,  // a kueue.x-k8s.io WorkloadPriorityClass
};

struct NamedClass {
  std::string name;
  std::string pointer;  // JSON pointer of the field or label that names it
  ClassKind kind = ClassKind::pod;
  // "the pod template", "the PodGroup", "runPolicy.schedulingPolicy.priorityClass", ...: a literal
  // (priority-class-unknown keeps one per name, 100,000 of them for as many objects).
  std::string_view where;
};

// Every non-empty priority class name the object writes, in document order.
[[nodiscard]] std::vector<NamedClass> named_priority_classes(const engine::Object& obj);

// The PriorityClass the object's controller gives pods whose template names none: a Volcano Job's
// `spec.priorityClassName`, KubeRay's `ray.io/priority-class-name` label (Volcano batch scheduler).
[[nodiscard]] std::optional<std::string> inherited_pod_priority_class(const engine::Object& obj);

// The built-in classes every cluster has: system-node-critical and system-cluster-critical.
[[nodiscard]] bool is_builtin_priority_class(std::string_view name);
// Their values (2000001000, 2000000000); nullopt for other names.
[[nodiscard]] std::optional<int64_t> builtin_priority_value(std::string_view name);

inline constexpr int64_t kHighestUserDefinablePriority = 1000000000;
inline constexpr std::string_view kSystemPriorityClassPrefix = "system-";

}  // namespace gpuguard::rules::priority
