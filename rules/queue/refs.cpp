#include "rules/queue/refs.h"

#include "engine/dra.h"

#include "engine/node.h"
#include "engine/kinds.h"
#include "engine/positions.h"

namespace gpuguard::rules::queue {

using engine::Object;

namespace {

// The queue a non-empty string field names; its pointer is made (by `pointer()`) only when it does.
template <typename Pointer>
std::optional<QueueName> string_field(engine::Node j, Pointer&& pointer) {
  if (!j.is_string() || j.str().empty()) return std::nullopt;
  return QueueName{std::string(j.str()), std::string(pointer()), false};
}

bool is_kubeflow_job(const Object& obj) {
  static constexpr std::string_view kKinds[] = {"PyTorchJob", "TFJob", "MPIJob", "JAXJob", "XGBoostJob", "PaddleJob"};
  if (obj.gvk.group != "kubeflow.org") return false;
  for (auto k : kKinds)
    if (obj.gvk.kind == k) return true;
  return false;
}

}  // namespace

bool is_volcano_podgroup(const Object& obj) { return obj.is(kVolcanoSchedulingGroup, "PodGroup"); }
bool is_volcano_job(const Object& obj) { return obj.is(kVolcanoBatchGroup, "Job"); }
bool is_volcano_queue(const Object& obj) { return obj.is(kVolcanoSchedulingGroup, "Queue"); }
bool is_cluster_queue(const Object& obj) { return obj.is(kKueueGroup, "ClusterQueue"); }
bool is_local_queue(const Object& obj) { return obj.is(kKueueGroup, "LocalQueue"); }

bool is_workload(const Object& obj) {
  for (const auto& k : engine::pod_template_kinds())
    if (obj.is(k.group, k.kind)) return true;
  return false;
}

std::optional<QueueName> kueue_queue_name(const Object& obj) {
  if (!obj.is_kubernetes_object() || obj.gvk.group == kKueueGroup) return std::nullopt;
  return string_field(obj.label(kKueueQueueLabel), [] { return engine::pointer_join("/metadata/labels", kKueueQueueLabel); });
}

std::optional<QueueName> volcano_queue_name(const Object& obj) {
  if (is_volcano_podgroup(obj) || is_volcano_job(obj)) {
    if (auto q = string_field(engine::path(obj.root(), {"spec", "queue"}), [] { return "/spec/queue"; })) return q;
    return QueueName{std::string(kVolcanoDefaultQueue), "", true};
  }
  if (obj.is("", "Pod")) {
    constexpr std::string_view kAnnotation = "scheduling.volcano.sh/queue-name";
    return string_field(obj.annotation(kAnnotation), [&] { return engine::pointer_join("/metadata/annotations", kAnnotation); });
  }
  if (obj.gvk.group == "ray.io") {
    constexpr std::string_view kLabel = "volcano.sh/queue-name";
    return string_field(obj.label(kLabel), [&] { return engine::pointer_join("/metadata/labels", kLabel); });
  }
  if (is_kubeflow_job(obj))
    return string_field(engine::path(obj.root(), {"spec", "runPolicy", "schedulingPolicy", "queue"}),
                        [] { return "/spec/runPolicy/schedulingPolicy/queue"; });
  return std::nullopt;
}

CohortRef cluster_queue_cohort(const Object& cq) {
  CohortRef out;
  auto text = [&](std::string_view key) -> std::string {
    auto s = engine::string_at(engine::member(cq.root(), "spec"), key);
    return s ? std::string(*s) : std::string();
  };
  const std::string v1 = text("cohort");
  const std::string v2 = text("cohortName");
  if (cq.gvk.version == "v1beta1") {
    out.field = "cohort";
    out.name = v1;
    if (!v2.empty()) out.misplaced = "cohortName";
  } else if (cq.gvk.version == "v1beta2") {
    out.field = "cohortName";
    out.name = v2;
    if (!v1.empty()) out.misplaced = "cohort";
  } else {
    out.field = v1.empty() ? "cohortName" : "cohort";
    out.name = v1.empty() ? v2 : v1;
  }
  return out;
}

const std::vector<std::string>& default_gpu_device_classes() { return engine::default_gpu_device_classes(); }

bool volcano_gpu_key(std::string_view name, const engine::ResourceMatcher& gpus, const std::vector<std::string>& classes,
                     const std::vector<std::string>& settings_classes) {
  if (gpus.matches(name)) return true;
  if (!name.starts_with(kVolcanoDeviceClassPrefix)) return false;
  const std::string_view device_class = name.substr(kVolcanoDeviceClassPrefix.size());
  return engine::device_class_matches(device_class, classes) || engine::device_class_matches(device_class, settings_classes);
}

bool is_kueue_cohort(const Object& obj) { return obj.is(kKueueGroup, "Cohort"); }

CohortParent cohort_parent(const Object& cohort) {
  CohortParent out;
  out.field = cohort.gvk.version == "v1alpha1" ? "parent" : "parentName";
  if (auto s = engine::string_at(engine::member(cohort.root(), "spec"), out.field)) out.name = std::string(*s);
  return out;
}

std::vector<FlavorResource> flavor_resources(const Object& cq) {
  std::vector<FlavorResource> out;
  const engine::Node groups = engine::path(cq.root(), {"spec", "resourceGroups"});
  if (!groups.is_array()) return out;
  size_t g = 0;
  for (const engine::Node group : groups) {
    const std::string gp = engine::pointer_join("/spec/resourceGroups", g++);
    const engine::Node flavors = engine::member(group, "flavors");
    if (!flavors.is_array()) continue;
    size_t f = 0;
    for (const engine::Node flavor : flavors) {
      const std::string fp = engine::pointer_join(engine::pointer_join(gp, "flavors"), f++);
      const engine::Node resources = engine::member(flavor, "resources");
      if (!resources.is_array()) continue;
      auto fname = engine::string_at(flavor, "name");
      size_t r = 0;
      for (const engine::Node res : resources) {
        const size_t at = r++;
        auto rname = engine::string_at(res, "name");
        if (!rname) continue;
        out.push_back(FlavorResource{res, engine::pointer_join(engine::pointer_join(fp, "resources"), at),
                                     fname ? std::string(*fname) : std::string(), std::string(*rname)});
      }
    }
  }
  return out;
}

std::set<std::string, std::less<>> covered_resources(const Object& cq) {
  std::set<std::string, std::less<>> out;
  const engine::Node groups = engine::path(cq.root(), {"spec", "resourceGroups"});
  if (!groups.is_array()) return out;
  for (const engine::Node g : groups) {
    const engine::Node covered = engine::member(g, "coveredResources");
    if (!covered.is_array()) continue;
    for (const engine::Node r : covered)
      if (r.is_string()) out.emplace(r.str());
  }
  return out;
}

}  // namespace gpuguard::rules::queue
