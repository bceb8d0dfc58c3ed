#pragma once
// Queue resolution shared by the queue rules (and reusable by others): which queue a workload
// names (Kueue label, Volcano fields and annotations), a Kueue ClusterQueue's cohort in either
// API version, and the flavor resources of a ClusterQueue (facts/kubernetes-and-queues.md §2, §3).

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/object.h"
#include "engine/podspec.h"

namespace gpuguard::rules::queue {

inline constexpr std::string_view kKueueGroup = "kueue.x-k8s.io";
inline constexpr std::string_view kKueueQueueLabel = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kVolcanoSchedulingGroup = "scheduling.volcano.sh";
inline constexpr std::string_view kVolcanoBatchGroup = "batch.volcano.sh";
// Queues a running Volcano always has: `default` (created at start, its deletion is refused by the
// queue webhook) and `root` (the hierarchy's root).
inline constexpr std::string_view kVolcanoDefaultQueue = "default";
inline constexpr std::string_view kVolcanoRootQueue = "root";

// A queue a workload names, and where it names it.
struct QueueName {
  std::string name;
  std::string pointer;   // JSON pointer of the field, label or annotation ("" when defaulted)
  bool defaulted = false;  // not written: the controller's default (Volcano's `default`)
};

// The Kueue LocalQueue a job names: the `kueue.x-k8s.io/queue-name` label on the object (a
// non-empty string), or nothing. Kueue's own objects never carry it.
[[nodiscard]] std::optional<QueueName> kueue_queue_name(const engine::Object& obj);

[[nodiscard]] bool is_volcano_podgroup(const engine::Object& obj);
[[nodiscard]] bool is_volcano_job(const engine::Object& obj);
[[nodiscard]] bool is_volcano_queue(const engine::Object& obj);
[[nodiscard]] bool is_cluster_queue(const engine::Object& obj);
[[nodiscard]] bool is_local_queue(const engine::Object& obj);
// Whether the object is of a kind that holds pod templates (engine::pod_template_kinds()): the
// workloads that Kueue's integrations and Volcano run.
[[nodiscard]] bool is_workload(const engine::Object& obj);

// The Volcano Queue a workload submits to:
// - PodGroup (scheduling.volcano.sh) and Volcano Job: `spec.queue`, `default` when absent or empty;
// - Pod: the annotation `scheduling.volcano.sh/queue-name`;
// - RayCluster / RayJob / RayService: the label `volcano.sh/queue-name` (KubeRay's Volcano path);
// - Kubeflow training jobs: `spec.runPolicy.schedulingPolicy.queue`.
// Nothing for other objects or when none is written (except the defaulted kinds above).
[[nodiscard]] std::optional<QueueName> volcano_queue_name(const engine::Object& obj);

// A ClusterQueue's cohort: `spec.cohort` in v1beta1, `spec.cohortName` in v1beta2 (the field of
// the other version is pruned by the API server); for any other version either field.
struct CohortRef {
  std::string name;     // "" when the queue is in no cohort
  std::string field;    // the field of this version ("cohort" or "cohortName")
  std::string misplaced;  // the other version's field, when it is written (and pruned)
};
[[nodiscard]] CohortRef cluster_queue_cohort(const engine::Object& cq);

// Volcano's DRA device-count key in a Queue's capability/deserved/guarantee (capacity plugin,
// v1.15): `deviceclass/<DeviceClass>`. The default GPU classes are NVIDIA DRA driver's.
inline constexpr std::string_view kVolcanoDeviceClassPrefix = "deviceclass/";
[[nodiscard]] const std::vector<std::string>& default_gpu_device_classes();
// Whether a Volcano Queue resource name caps GPUs: a GPU resource (`gpus`), or the device count of
// a DeviceClass in `classes` (`deviceclass/gpu.nvidia.com`: the rule's parameter) or in
// `settings_classes` (the config's top-level `gpuDeviceClasses` with the defaults, which every
// DRA-aware rule reads). The consumable-capacity keys (`<dim>.deviceclass/<class>`) cap a
// dimension, not the devices, and do not count.
[[nodiscard]] bool volcano_gpu_key(std::string_view name, const engine::ResourceMatcher& gpus,
                                   const std::vector<std::string>& classes,
                                   const std::vector<std::string>& settings_classes);

// Kueue's Cohort (cluster-scoped; kueue.x-k8s.io v1beta2 and v1beta1, and v1alpha1 before Kueue 0.13).
[[nodiscard]] bool is_kueue_cohort(const engine::Object& obj);
// A Cohort's parent: `spec.parentName` (v1beta1, v1beta2), `spec.parent` (v1alpha1); "" when none.
struct CohortParent {
  std::string name;
  std::string field;  // "parentName" or "parent"
};
[[nodiscard]] CohortParent cohort_parent(const engine::Object& cohort);

// One `resources[]` entry of a ClusterQueue (or Cohort) flavor.
struct FlavorResource {
  engine::Node body;                   // the entry: {name, nominalQuota, borrowingLimit, lendingLimit}
  std::string pointer;                 // "/spec/resourceGroups/0/flavors/1/resources/2"
  std::string flavor;
  std::string resource;
};
[[nodiscard]] std::vector<FlavorResource> flavor_resources(const engine::Object& cq);

// The resources a ClusterQueue covers: every `coveredResources` entry of every resource group.
[[nodiscard]] std::set<std::string, std::less<>> covered_resources(const engine::Object& cq);

}  // namespace gpuguard::rules::queue
