// gpu-toleration-missing: a GPU pod that does not tolerate the GPU nodes' taint.

#include <algorithm>

#include "engine/dra.h"
#include "engine/podspec.h"
#include "engine/kinds.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class GpuTolerationMissing final : public Rule {
 public:
  GpuTolerationMissing() {
    info_.id = "gpu-toleration-missing";
    info_.severity = Severity::info;
    info_.category = "scheduling";
    info_.seed = "9.3";
    info_.summary = "A GPU pod template does not tolerate the taint that keeps other pods off GPU nodes";
    info_.rationale =
        "Shared clusters taint their GPU nodes (by default `nvidia.com/gpu:NoSchedule`) so that pods "
        "without GPUs do not take the CPU and memory that GPU jobs need. A pod that requests a GPU must "
        "then tolerate the taint, or it stays Pending with `node(s) had untolerated taint`.\n\n"
        "Where the API server runs the ExtendedResourceToleration admission plugin, it adds an "
        "`Exists`/`NoSchedule` toleration keyed by each extended resource the pod requests, before any "
        "webhook sees the pod; such a pod already tolerates `nvidia.com/gpu` and the rule is silent. "
        "The rule matters where the plugin is off, or where the taint has another key.\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.rationale.append(
        " NVIDIA's DRA driver taints no node itself, but GPU node pools keep their taint under DRA: the driver's "
        "own demo clusters taint the GPU node group `nvidia.com/gpu:NoSchedule` (NVIDIA/k8s-dra-driver-gpu "
        "`demo/clusters/eks/eksctl.yaml` @20b6961d; the GKE install gives the kubelet plugin that toleration, "
        "`demo/clusters/gke/install-dra-driver-gpu.sh` @faca4fbc), and its demo pods tolerate it "
        "(`demo/specs/quickstart/gpu-test-count.yaml` @4066752a). A DRA pod requests no extended resource, so "
        "ExtendedResourceToleration adds nothing for it: the rule applies to it whether or not the plugin runs.");
    info_.remediation =
        "Add `tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]` (with your "
        "taint's key and effect), or enable the ExtendedResourceToleration admission plugin. The fix "
        "(and the mutating webhook) adds exactly that toleration, as the plugin would.";
    info_.checks = pod_template_kinds();
    info_.reads = dra_kinds();
    info_.facts = {
        "facts/webhook.md §7 — the API server's compiled-in plugins run before the webhooks "
        "(`AllOrderedPlugins` in kubernetes `pkg/kubeapiserver/options/plugins.go`), and where "
        "ExtendedResourceToleration is enabled pods requesting `nvidia.com/gpu` already carry an "
        "`Exists`/`NoSchedule` toleration keyed by the resource name, so the fix adds nothing then.",
        "Toleration matching (key, or empty key with `Exists`; effect, or empty effect; `Exists`, or "
        "`Equal` with the same value) follows `Toleration.ToleratesTaint` in kubernetes "
        "`pkg/apis/core/v1/helper` / `k8s.io/api/core/v1/toleration.go`.",
    };
    info_.params = {
        ParamSpec{"taintKey", ParamType::string, "nvidia.com/gpu", "key of the taint on GPU nodes", std::nullopt, std::nullopt},
        ParamSpec{"taintValue", ParamType::string, "", "its value (\"\" when the taint has none)", std::nullopt, std::nullopt},
        ParamSpec{"taintEffect", ParamType::string, "NoSchedule", "its effect: NoSchedule, PreferNoSchedule or NoExecute",
                  std::nullopt, std::nullopt},
    };
    info_.has_fix = true;
    info_.reads_parts = kPartTolerations;  // its fix adds the toleration it looks for
    info_.fix_settles = true;
    info_.example_bad = R"(apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: nvcr.io/nvidia/pytorch:24.06-py3
      resources:
        limits:
          nvidia.com/gpu: 1
)";
    info_.example_good = R"(apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  tolerations:
    - key: nvidia.com/gpu
      operator: Exists
      effect: NoSchedule
  containers:
    - name: train
      image: nvcr.io/nvidia/pytorch:24.06-py3
      resources:
        limits:
          nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }

  std::optional<std::string> validate_params(const Params& p) const override {
    const std::string effect = p.string("taintEffect");
    if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute")
      return "taintEffect must be NoSchedule, PreferNoSchedule or NoExecute, got \"" + effect + "\"";
    if (p.string("taintKey").empty()) return "taintKey must not be empty";
    return std::nullopt;
  }

  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<DraHeldState>(); }
  void finish(FinishContext& ctx) const override { report_held(ctx, static_cast<DraHeldState*>(ctx.state())->held); }

  void check(const Object& obj, CheckContext& ctx) const override {
    const std::string key = ctx.params().string("taintKey");
    const std::string value = ctx.params().string("taintValue");
    const std::string effect = ctx.params().string("taintEffect");
    for (const auto& t : pod_templates(obj)) {
      std::vector<PodClaim> claims;  // GPUs through DRA, perhaps: the finding waits for finish
      if (!requests_gpu(t, ctx.settings().gpu_resources)) {
        claims = pod_claims(t.spec);
        if (claims.empty()) continue;
      }
      const Node tolerations = member(t.spec, "tolerations");
      const bool has_list = tolerations.is_array();
      if (has_list && std::any_of(tolerations.begin(), tolerations.end(),
                                  [&](Node tol) { return tolerates(tol, key, value, effect); }))
        continue;
      std::optional<json> fix;
      if (ctx.fixes_wanted()) {
        json toleration(json::value_t::object);
        toleration["effect"] = effect;
        toleration["key"] = key;
        toleration["operator"] = "Exists";
        if (has_list) {
          fix = patch_of(patch_op("add", t.spec_pointer() + "/tolerations/-", std::move(toleration)));
        } else {
          json list(json::value_t::array);
          list.push_back(std::move(toleration));
          fix = patch_of(patch_op("add", t.spec_pointer() + "/tolerations", std::move(list)));
        }
      }
      const std::string taint = key + (value.empty() ? "" : "=" + value) + ":" + effect;
      report_or_hold(ctx, static_cast<DraHeldState*>(ctx.state())->held, claims,
                     has_list ? t.spec_pointer() + "/tolerations" : t.spec_pointer(),
                 "requests a GPU but does not tolerate the GPU nodes' taint " + taint +
                     ": it cannot schedule on a tainted GPU node (add {key: " + key + ", operator: Exists, effect: " + effect + "})",
                 std::move(fix));
    }
  }

 private:
  static bool tolerates(Node tol, const std::string& key, const std::string& value, const std::string& effect) {
    if (!tol.is_object()) return false;
    const std::string tkey(string_at(tol, "key").value_or(""));
    const std::string op(string_at(tol, "operator").value_or("Equal"));
    const std::string teffect(string_at(tol, "effect").value_or(""));
    if (!teffect.empty() && teffect != effect) return false;
    if (tkey.empty()) return op == "Exists";  // an empty key with Exists tolerates every taint
    if (tkey != key) return false;
    if (op == "Exists") return true;
    return op == "Equal" && string_at(tol, "value").value_or("") == value;
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_toleration_missing() { return std::make_unique<GpuTolerationMissing>(); }

}  // namespace gpuguard::rules
