// deviceclass-extended-resource-conflict: DeviceClasses that map the same extended resource, a MIG or
// VFIO class mapped to nvidia.com/gpu, and NVIDIA's DRA driver serving GPUs beside the device plugin.

#include <algorithm>
#include <map>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

constexpr std::string_view kNvidiaGpu = "nvidia.com/gpu";

// What kind of NVIDIA device a class selects, from its name and its selectors' CEL equality on the
// driver's attribute `type` (NVIDIA/k8s-dra-driver-gpu chart: gpu.nvidia.com `type == 'gpu'`,
// mig.nvidia.com `type == 'mig'`, vfio.gpu.nvidia.com `type == 'vfio'`).
std::string device_type(const Object& cls) {
  std::string type;
  const Node sels = path(cls.root(), {"spec", "selectors"});
  if (sels.is_array())
    for (Node s : sels)
      if (auto e = string_at(member(s, "cel"), "expression")) {
        CelTerm t = cel_attribute_equality(*e, "type");
        if (t.value) type = *t.value;
      }
  if (type.empty() && cls.name == "mig.nvidia.com") type = "mig";
  if (type.empty() && cls.name == "vfio.gpu.nvidia.com") type = "vfio";
  return type;
}

// A container of the pod template whose image contains `image`.
bool has_image(Node pod_spec, std::string_view image, std::string_view container_name = {}) {
  const Node cs = member(pod_spec, "containers");
  if (!cs.is_array()) return false;
  for (Node c : cs) {
    const auto img = string_at(c, "image");
    if (!img || img->find(image) == std::string_view::npos) continue;
    if (container_name.empty() || string_at(c, "name") == std::optional<std::string_view>(container_name)) return true;
  }
  return false;
}

// Whether two DaemonSets' nodeSelectors keep them apart: a key both set to different values.
bool apart(Node a, Node b) {
  if (!a.is_object() || !b.is_object()) return false;
  for (const auto& [k, v] : a.items()) {
    const Node w = member(b, k);
    if (v.is_string() && w.is_string() && v.str() != w.str()) return true;
  }
  return false;
}

class DeviceClassExtendedResourceConflict final : public Rule {
 public:
  DeviceClassExtendedResourceConflict() {
    info_.id = "deviceclass-extended-resource-conflict";
    info_.severity = Severity::warning;
    info_.category = "dra";
    info_.seed = "9.1";
    info_.summary =
        "DeviceClasses mapping the same extendedResourceName, a MIG or VFIO class mapped to nvidia.com/gpu, or NVIDIA's "
        "DRA driver serving GPUs beside the device plugin";
    info_.rationale =
        "A DeviceClass's `extendedResourceName` (KEP-5004, DRAExtendedResource: alpha in 1.34, beta and on by default "
        "in 1.36) lets a pod's `limits: {nvidia.com/gpu: 1}` be served through Dynamic Resource Allocation: the "
        "scheduler makes a claim of that class for it. Three things go wrong:\n\n"
        "- two classes with the same `extendedResourceName`: \"It should be unique among all the device classes in "
        "a cluster. If two device classes have the same name, then the class created later is picked to satisfy a "
        "pod's extended resource requests. If two classes are created at the same time, then the name of the class "
        "lexicographically sorted first is picked\" (kubernetes/api `resource/v1/types.go` @10b39a39). Which "
        "devices a pod gets then depends on which class was created last, and changes when one is recreated;\n"
        "- a MIG or VFIO class mapped to `nvidia.com/gpu`: a pod asking for one GPU may be given a MIG slice (or a "
        "GPU bound to vfio-pci for a VM), a seventh of the GPU it asked for. NVIDIA's chart maps only "
        "`gpu.nvidia.com` (`type == 'gpu'`) to `nvidia.com/gpu`, and per-profile classes to `nvidia.com/mig-<profile>` "
        "(`demo/specs/extended-resources/mig-1g-12gb.yaml`);\n"
        "- NVIDIA's DRA driver allocating GPUs (its kubelet plugin's `gpus` container: `resources.gpus.enabled`) on "
        "nodes where the NVIDIA device plugin also runs: both hand out the same GPUs, and neither knows of the "
        "other's allocations. NVIDIA's chart refuses to install so (`templates/validation.yaml`: \"this DRA driver "
        "cannot be deployed alongside the standard GPU device plugin on the same node\") unless "
        "`gpuResourcesEnabledOverride=true` is set; KEP-5004 lists one node serving a name from both as a non-goal. "
        "Reported when the input holds the driver's kubelet-plugin DaemonSet with its `gpus` container and a device "
        "plugin DaemonSet (image `k8s-device-plugin`) or a GPU Operator ClusterPolicy whose `devicePlugin` is not "
        "disabled, unless the two DaemonSets' `nodeSelector`s set one label to different values (node affinity is "
        "not compared). The ComputeDomain half of the driver coexists with the device plugin (NVIDIA's IMEX demo "
        "uses both) and is not reported.\n\n"
        "The first and last need the whole cluster, so they speak only with a complete inventory (`gpuguard lint "
        "--complete`, the webhook's cluster state); the second is checked on each DeviceClass.";
    info_.remediation =
        "Keep one class per extended resource name; map `nvidia.com/gpu` only from a class that selects whole GPUs "
        "(`device.attributes['gpu.nvidia.com'].type == 'gpu'`) and MIG classes to `nvidia.com/mig-<profile>`; run "
        "either the device plugin or the DRA driver's GPU half on a node: disable the device plugin "
        "(GPU Operator: `devicePlugin.enabled: false`), or keep them on separate node pools by label.";
    info_.checks = {KindRef{std::string(kResourceGroup), "DeviceClass"}, KindRef{"apps", "DaemonSet"},
                    KindRef{"nvidia.com", "ClusterPolicy"}};
    info_.reads = info_.checks;
    info_.needs_complete = true;
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "facts/modern-stack.md §1 — extended-resource mapping (KEP-5004) and the timeline table; the tie-break "
        "re-read in kubernetes/api `resource/v1/types.go` @10b39a39 (DeviceClassSpec.ExtendedResourceName).",
        "NVIDIA/k8s-dra-driver-gpu @22407113: `deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml` "
        "(`type == 'gpu'`, extendedResourceName nvidia.com/gpu on resource.k8s.io/v1), `deviceclass-mig.yaml`, "
        "`deviceclass-vfio-gpu.yaml`, `kubeletplugin.yaml` (the `gpus` container only with resources.gpus.enabled), "
        "`validation.yaml` (gpuResourcesEnabledOverride), `demo/specs/extended-resources/`.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(# gpuguard lint --complete
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: mig.nvidia.com
spec:
  selectors:
    - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"}
  extendedResourceName: nvidia.com/gpu
)";
    info_.example_good = R"(# gpuguard lint --complete
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
    - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}
  extendedResourceName: nvidia.com/gpu
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is(kResourceGroup, "DeviceClass")) return;
    const auto ern = string_at(member(obj.root(), "spec"), "extendedResourceName");
    if (ern != std::optional<std::string_view>(kNvidiaGpu)) return;
    const std::string type = device_type(obj);
    if (type != "mig" && type != "vfio") return;
    ctx.report("/spec/extendedResourceName",
               "DeviceClass " + obj.name + " selects " + (type == "mig" ? "MIG slices" : "GPUs bound to vfio-pci") +
                   " and maps them to nvidia.com/gpu: a pod asking for nvidia.com/gpu may get " +
                   (type == "mig" ? "a slice of a GPU" : "a GPU meant for a VM") +
                   " instead of a whole GPU" +
                   (type == "mig" ? " (map MIG classes to nvidia.com/mig-<profile>)" : " (give VFIO classes no extendedResourceName)"));
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    // Classes by extended resource name.
    std::map<std::string, std::vector<const Object*>> by_name;
    for (const Object* c : inv.list(kResourceGroup, "DeviceClass"))
      if (auto e = string_at(member(c->root(), "spec"), "extendedResourceName"); e && !e->empty())
        by_name[std::string(*e)].push_back(c);
    for (auto& [name, classes] : by_name) {
      if (classes.size() < 2) continue;
      std::sort(classes.begin(), classes.end(), [](const Object* a, const Object* b) { return a->name < b->name; });
      for (const Object* c : classes) {
        if (!ctx.in_focus(*c)) continue;
        std::string others;
        size_t n = 0;
        for (const Object* o : classes)
          if (o != c) {
            ++n;
            others.append(others.empty() ? "" : n + 1 == classes.size() ? " and " : ", ").append(o->name);
          }
        std::string msg;
        msg.reserve(name.size() + others.size() + c->name.size() + 200);
        msg.append("DeviceClass ").append(c->name).append(" maps ").append(name).append(", as ").append(others);
        msg.append(n > 1 ? " do" : " does").append(": the class created later serves pods' ").append(name);
        msg.append(" requests (ties: the first by name), so which devices a pod gets depends on creation order");
        ctx.report(*c, "/spec/extendedResourceName", std::move(msg));
      }
    }
    // NVIDIA's DRA driver's GPU half beside the device plugin.
    std::vector<const Object*> dra, plugins;
    for (const Object* ds : inv.list("apps", "DaemonSet")) {
      const Node spec = path(ds->root(), {"spec", "template", "spec"});
      if (has_image(spec, "dra-driver", "gpus")) dra.push_back(ds);
      else if (has_image(spec, "k8s-device-plugin")) plugins.push_back(ds);
    }
    if (dra.empty()) return;
    const Object* policy = nullptr;
    for (const Object* cp : inv.list("nvidia.com", "ClusterPolicy"))
      if (bool_at(path(cp->root(), {"spec", "devicePlugin"}), "enabled") != std::optional<bool>(false)) policy = cp;
    for (const Object* d : dra) {
      const Node dsel = path(d->root(), {"spec", "template", "spec", "nodeSelector"});
      const Object* other = nullptr;
      for (const Object* p : plugins)
        if (!apart(dsel, path(p->root(), {"spec", "template", "spec", "nodeSelector"}))) other = p;
      std::string what;
      if (other) what = "the device plugin DaemonSet " + other->namespace_ + "/" + other->name;
      else if (policy) what = "the GPU Operator's device plugin (ClusterPolicy " + policy->name + ", devicePlugin not disabled)";
      else continue;
      const Object* subject = ctx.in_focus(*d) ? d : other && ctx.in_focus(*other) ? other : policy && ctx.in_focus(*policy) ? policy : nullptr;
      if (!subject) continue;
      std::string msg = "NVIDIA's DRA driver allocates GPUs (DaemonSet " + d->namespace_ + "/" + d->name +
                        ", container gpus) on the nodes where " + what +
                        " also hands them out: each gives pods GPUs the other has allocated (NVIDIA's chart refuses this "
                        "unless gpuResourcesEnabledOverride=true); run one of them per node";
      ctx.report(*subject, subject == policy ? "/spec/devicePlugin" : "/spec/template/spec", std::move(msg));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_deviceclass_extended_resource_conflict() {
  return std::make_unique<DeviceClassExtendedResourceConflict>();
}

}  // namespace gpuguard::rules
