// quota-gpu-key-ignored: ResourceQuota keys for GPUs that the quota system never counts.

#include "engine/dra.h"
#include "engine/inventory.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

constexpr std::string_view kDevicesSuffix = ".deviceclass.resource.k8s.io/devices";
constexpr std::string_view kImplicitPrefix = "requests.deviceclass.resource.kubernetes.io/";

// A DRA quota key, decided in finish (it depends on the DeviceClasses and the Kubernetes version).
struct DraKey {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string key;
  std::string device_class;  // the class the evaluator reads from the key
  std::string prefix;        // "requests." or "limits." before the class, or ""
  bool implicit = false;     // requests.deviceclass.resource.kubernetes.io/<class>
};

struct State final : RuleState {
  engine::Records<DraKey> keys;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(keys, static_cast<State&>(later).keys); }
};

class QuotaGpuKeyIgnored final : public Rule {
 public:
  QuotaGpuKeyIgnored() {
    info_.id = "quota-gpu-key-ignored";
    info_.severity = Severity::warning;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A ResourceQuota limits GPUs with a `limits.<gpu>` or bare `<gpu>` key, which quota ignores";
    info_.rationale =
        "The quota system tracks extended resources only in the form `requests.<name>`: the pod "
        "evaluator records a GPU only as `requests.nvidia.com/gpu` (\"As overcommit is not supported "
        "by extended resources for now, only quota objects in format of \\\"requests.resourceName\\\" "
        "is allowed\"). The API server accepts `limits.nvidia.com/gpu` and a bare `nvidia.com/gpu` "
        "in `spec.hard` without complaint, and then never counts anything against them. A quota that "
        "uses only those keys does not limit GPUs at all: the team can take every GPU in the cluster.\n\n"
        "The seed's own template (9.5) sets `limits.nvidia.com/gpu: 32` next to "
        "`requests.nvidia.com/gpu: 32`; the second line does the work, the first does nothing.\n\n"
        "**Dynamic Resource Allocation.** Devices of ResourceClaims are counted under "
        "`<class>.deviceclass.resource.k8s.io/devices`, without a prefix: the claim evaluator takes every key that "
        "ends in `.deviceclass.resource.k8s.io/devices` and charges a claim to `<its class>` + that suffix "
        "(kubernetes `pkg/quota/v1/evaluator/core/resource_claims.go`: MatchingResources by `strings.HasSuffix`, "
        "V1ResourceByDeviceClass; current source in the code index, commit not pinned). So "
        "`requests.gpu.nvidia.com.deviceclass.resource.k8s.io/devices` (or `limits.…`) is accepted and read as the "
        "count of a class named `requests.gpu.nvidia.com`, which no claim uses: it never caps anything (unless such a "
        "class exists). With a complete inventory, a `<class>.deviceclass.resource.k8s.io/devices` key for a "
        "DeviceClass that does not exist counts nothing either, and before Kubernetes 1.36 (config "
        "`kubernetesVersion`; the DRAExtendedResource gate is off) the implicit key "
        "`requests.deviceclass.resource.kubernetes.io/<class>` of a GPU class is not counted for claims.";
    info_.remediation =
        "Limit GPUs with `requests.nvidia.com/gpu` (and the same form for MIG and shared resources, "
        "e.g. `requests.nvidia.com/mig-1g.10gb`). Remove the `limits.` and bare keys, or keep them "
        "knowing they are inert.";
    info_.checks = {KindRef{"", "ResourceQuota"}};
    info_.reads = {KindRef{std::string(kResourceGroup), "DeviceClass"}};
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.1 — kubernetes `pkg/quota/v1/evaluator/core/pods.go` "
        "@05e7cb29 matches an extended resource only with the `requests.` prefix, and "
        "`podComputeUsageHelper` records extended resources only as `requests.<name>`; "
        "`ValidateResourceQuotaResourceName` accepts any name containing `/`, so `limits.nvidia.com/gpu` "
        "is accepted and silently ignored. Documentation: "
        "https://kubernetes.io/docs/concepts/policy/resource-quotas/#quota-for-extended-resources",
    };
    info_.example_bad = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    limits.nvidia.com/gpu: 32
)";
    info_.example_good = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 32
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    const bool gate = dra_extended_resource_on(ctx.settings().kubernetes_version);
    for (const auto& k : static_cast<State*>(ctx.state())->keys) {
      const bool exists = inv.find(kResourceGroup, "DeviceClass", "", k.device_class) != nullptr;
      std::string msg;
      msg.reserve(400 + 3 * k.key.size());
      if (k.implicit) {
        if (gate) continue;
        msg.append("`").append(k.key).append("` has no effect on Kubernetes ").append(ctx.settings().kubernetes_version);
        msg.append(" (kubernetesVersion): the quota system counts claims under the implicit key only with DRAExtendedResource, "
                   "beta and on from 1.36; use `").append(k.device_class).append(kDevicesSuffix).append("`");
      } else if (!k.prefix.empty()) {
        if (exists) continue;  // a class really named so
        const std::string cls = k.device_class.substr(k.prefix.size());
        msg.append("`").append(k.key).append("` has no effect: the quota system counts a claim's devices as `<class>");
        msg.append(kDevicesSuffix).append("` with no prefix, so it reads this key as the devices of a DeviceClass named ");
        msg.append(k.device_class).append(", which no claim uses, and this quota does not limit ").append(cls).append(" devices; use `");
        msg.append(cls).append(kDevicesSuffix).append("`");
      } else {
        if (exists || !inv.complete()) continue;
        msg.append("`").append(k.key).append("` counts the devices of DeviceClass ").append(k.device_class);
        msg.append(", which does not exist in the cluster: no claim is ever charged to it, so it caps nothing");
      }
      ctx.report(k.ref, k.pointer, k.pos, std::move(msg));
    }
  }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is("", "ResourceQuota")) return;
    const Node hard = path(obj.root(), {"spec", "hard"});
    if (!hard || !hard.is_object()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    for (const auto [key, value] : hard.items()) {
      if (key.ends_with(kDevicesSuffix) || (key.starts_with(kImplicitPrefix) && key.size() > kImplicitPrefix.size())) {
        DraKey k;
        k.key = std::string(key);
        k.implicit = !key.ends_with(kDevicesSuffix);
        k.device_class = k.implicit ? k.key.substr(kImplicitPrefix.size()) : k.key.substr(0, k.key.size() - kDevicesSuffix.size());
        if (!k.implicit)
          for (std::string_view p : {"requests.", "limits."})
            if (k.device_class.starts_with(p)) k.prefix = std::string(p);
        // The implicit key and the prefixed forms matter for GPU classes; a plain key for any class.
        const std::string_view named = std::string_view(k.device_class).substr(k.prefix.size());
        if ((k.implicit || !k.prefix.empty()) && !device_class_matches(named, ctx.settings().gpu_device_classes)) continue;
        k.ref = ctx.ref();
        k.pointer = pointer_join("/spec/hard", key);
        k.pos = ctx.position_of(k.pointer);
        static_cast<State*>(ctx.state())->keys.push_back(std::move(k));
        continue;
      }
      std::string resource;
      std::string form;
      if (key.starts_with("limits.") && gpus.matches(key.substr(7))) {
        resource = key.substr(7);
        form = "`" + std::string(key) + "`";
      } else if (gpus.matches(key)) {
        resource = key;
        form = "`" + std::string(key) + "` (without the requests. prefix)";
      } else {
        continue;
      }
      const std::string tracked = "requests." + resource;
      std::string msg = form + " has no effect: the quota system counts " + resource + " only as `" + tracked + "`";
      if (member(hard, tracked))
        msg += ", which this quota already sets; remove this key";
      else
        msg += ", so this quota does not limit " + resource + " at all; use `" + tracked + ": " + brief(value) + "`";
      ctx.report(pointer_join("/spec/hard", key), msg);
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_quota_gpu_key_ignored() { return std::make_unique<QuotaGpuKeyIgnored>(); }

}  // namespace gpuguard::rules
