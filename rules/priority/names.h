#pragma once
// The priority classes a workload names, wherever its kind writes them: pod templates'
// `spec.priorityClassName`, Volcano PodGroup and Job `spec.priorityClassName`, Kubeflow
// `spec.runPolicy.schedulingPolicy.priorityClass`, KubeRay's `ray.io/priority-class-name` label,
// Kueue's `kueue.x-k8s.io/priority-class` label (a WorkloadPriorityClass, not a PriorityClass) and,
// for pods that go to KAI Scheduler, the label `priorityClassName` on the workload or a pod template
// (rules/schedulers.h).

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

// Every non-empty priority class name the object writes, in document order; `kai` is KAI
// Scheduler's name ("": KAI's label is nobody's reference).
[[nodiscard]] std::vector<NamedClass> named_priority_classes(const engine::Object& obj, std::string_view kai = {});

// The PriorityClass the object's controller or gang scheduler gives its pods (or their gang) when
// a template names none: a Volcano Job's `spec.priorityClassName` (copied to the pods), KubeRay's
// `ray.io/priority-class-name` label (copied by KubeRay's Volcano batch scheduler to the Volcano
// PodGroup, by whose class Volcano orders and preempts the cluster: since KubeRay v1.5 no longer to
// the pods' spec.priorityClassName; not read when the cluster goes to KAI, `kai`).
[[nodiscard]] std::optional<std::string> inherited_pod_priority_class(const engine::Object& obj, std::string_view kai = {});

// Where KAI's label names the class (the NamedClass::where of those entries).
inline constexpr std::string_view kKaiLabelWhere = "the KAI label priorityClassName";

// The built-in classes every cluster has: system-node-critical and system-cluster-critical.
[[nodiscard]] bool is_builtin_priority_class(std::string_view name);
// Their values (2000001000, 2000000000); nullopt for other names.
[[nodiscard]] std::optional<int64_t> builtin_priority_value(std::string_view name);

inline constexpr int64_t kHighestUserDefinablePriority = 1000000000;
inline constexpr std::string_view kSystemPriorityClassPrefix = "system-";

}  // namespace gpuguard::rules::priority
