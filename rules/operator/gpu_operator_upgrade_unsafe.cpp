// gpu-operator-upgrade-unsafe: a ClusterPolicy or NVIDIADriver whose automatic driver upgrade does not go node by node.

#include <algorithm>
#include <cctype>

#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class GpuOperatorUpgradeUnsafe final : public Rule {
 public:
  GpuOperatorUpgradeUnsafe() {
    info_.id = "gpu-operator-upgrade-unsafe";
    info_.severity = Severity::warning;
    info_.category = "operator";
    info_.seed = "9.7";
    info_.summary = "The GPU Operator's automatic driver upgrade (ClusterPolicy or NVIDIADriver) may take many GPU nodes down at once, or delete unmanaged GPU pods";
    info_.rationale =
        "With `spec.driver.upgradePolicy.autoUpgrade: true` the GPU Operator upgrades the driver by itself "
        "whenever the driver spec changes: per node it cordons, waits for jobs (`waitForCompletion`), deletes "
        "the GPU pods (`podDeletion`), drains if pod deletion fails and `drain.enable` is set, restarts the "
        "driver pod, validates and uncordons. The seed (9.7) asks for exactly this, **node by node**.\n\n"
        "The rule fires when autoUpgrade is on and:\n\n"
        "- `maxParallelUpgrades: 0` — unlimited parallel upgrades; only `maxUnavailable` (default 25 %) bounds them;\n"
        "- `maxUnavailable` is 100 % or more — every GPU node may be down at the same time;\n"
        "- `podDeletion.force: true` or `drain.force: true` — GPU pods (or, when draining, all pods) that no "
        "controller manages are deleted and never come back.\n\n"
        "`drain.enable: false` alone is not reported: GPU pods are removed by the pod-deletion step (the GPU "
        "Operator always enables it), drain is only the fallback when that step fails, and without it a node "
        "whose GPU pods cannot be deleted goes to `upgrade-failed` and stays cordoned — the safe outcome. "
        "With `autoUpgrade` false (or absent from a ClusterPolicy: its CRD default) the other fields are ignored and "
        "nothing is reported.\n\n"
        "**NVIDIADriver** (`nvidia.com/v1alpha1`, one per node pool, when the ClusterPolicy sets "
        "`driver.useNvidiaDriverCRD: true`): since GPU Operator v26.7.0 each NVIDIADriver carries its own "
        "`spec.upgradePolicy`, applied by the upgrade controller to the nodes that NVIDIADriver owns (label "
        "`nvidia.com/gpu-operator.driver.owner`), and the ClusterPolicy's `driver.upgradePolicy` is then not read. "
        "The rule checks it as it checks the ClusterPolicy's, with one difference: the NVIDIADriver CRD defaults "
        "`autoUpgrade` to **true**, so a policy that leaves it out upgrades by itself. An NVIDIADriver without "
        "`upgradePolicy` gets the operator's defaults (auto-upgrade, one node at a time, 25 %, no force) and is "
        "not reported. `maxUnavailable` counts that NVIDIADriver's nodes only. A ClusterPolicy with "
        "`useNvidiaDriverCRD: true` is still checked (GPU Operator v26.3 and earlier apply its policy to the "
        "NVIDIADriver-managed drivers), and its findings say that v26.7.0 and later do not read it.";
    info_.remediation =
        "Keep `maxParallelUpgrades: 1` (the default) or a small number, `maxUnavailable` at `25%` or less, and "
        "the `force` flags false; set `waitForCompletion.podSelector` for batch jobs that must finish first. "
        "Test the new driver on one node, and back up Helm values and MIG ConfigMaps before the upgrade (seed 9.7).";
    info_.facts = {
        "facts/nvidia.md §5 — `driver.upgradePolicy` fields and defaults (autoUpgrade CRD false / Helm true; "
        "maxParallelUpgrades 1, 0 = unlimited; maxUnavailable \"25%\", bounding maxParallelUpgrades; podDeletion "
        "and drain with force false; drain only a fallback) [GO CRD, k8s-operator-libs `upgrade_spec.go`].",
        "Checked upstream (k8s-operator-libs `pkg/upgrade/upgrade_state.go`): the state machine runs "
        "cordon → wait-for-jobs → pod-deletion → drain (skipped unless `DrainSpec.Enable`) → pod-restart; "
        "`ProcessPodDeletionRequiredNodes` passes `drainEnabled` so a failed deletion goes to drain only when enabled; "
        "the GPU Operator's `cmd/gpu-operator/main.go` calls `WithPodDeletionEnabled(gpuPodSpecFilter)`, so the pod-deletion "
        "step always runs for GPU pods.",
        "Seed 9.7 (design.md §1): roll upgrades node by node (cordon, drain, upgrade, verify).",
        "NVIDIADriver, read at NVIDIA/gpu-operator v26.7.0 (@a22dbf67, v26.7.0+3, same files): "
        "`api/nvidia/v1alpha1/nvidiadriver_types.go` `DriverUpgradePolicySpec` (`autoUpgrade` "
        "`+kubebuilder:default=true`, `maxParallelUpgrades` default 1 minimum 0 \"0 means no limit\", "
        "`maxUnavailable` default \"25%\", `podDeletion`, `waitForCompletion`, `drain`) and "
        "`GetUpgradePolicyWithDefaults` (no upgradePolicy: autoUpgrade true, 1, 25%, force false); "
        "`controllers/upgrade_controller.go`: with no ClusterPolicy or `driver.useNvidiaDriverCRD: true`, "
        "`reconcileNVIDIADriverUpgrades` applies each NVIDIADriver's policy to the nodes labelled "
        "`nvidia.com/gpu-operator.driver.owner=<name>` and never reads the ClusterPolicy's. v26.3.3 (its "
        "NVIDIADriver has no upgradePolicy) applies the ClusterPolicy's policy to NVIDIADriver-managed driver pods.",
    };
    info_.checks = {KindRef{"nvidia.com", "ClusterPolicy"}, KindRef{"nvidia.com", "NVIDIADriver"}};
    info_.example_bad = R"(apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
spec:
  driver:
    enabled: true
    upgradePolicy:
      autoUpgrade: true
      maxParallelUpgrades: 0
      maxUnavailable: 100%
)";
    info_.example_good = R"(apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
spec:
  driver:
    enabled: true
    upgradePolicy:
      autoUpgrade: true
      maxParallelUpgrades: 1
      maxUnavailable: 25%
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (obj.is("nvidia.com", "ClusterPolicy")) {
      const Node driver = path(obj.root(), {"spec", "driver"});
      // GPU Operator v26.7.0+ reads each NVIDIADriver's policy instead (upgrade_controller.go).
      const std::string note = bool_at(driver, "useNvidiaDriverCRD") == true
                                   ? " (with driver.useNvidiaDriverCRD: true, GPU Operator v26.7.0 and later follow each "
                                     "NVIDIADriver's own upgradePolicy and ignore this one; v26.3 and earlier apply it)"
                                   : "";
      check_policy(member(driver, "upgradePolicy"), "/spec/driver/upgradePolicy", false, note, ctx);
      return;
    }
    if (obj.is("nvidia.com", "NVIDIADriver"))
      check_policy(path(obj.root(), {"spec", "upgradePolicy"}), "/spec/upgradePolicy", true,
                   " (on the nodes NVIDIADriver " + obj.name + " manages)", ctx);
  }

 private:
  // One DriverUpgradePolicySpec (ClusterPolicy `spec.driver.upgradePolicy`, NVIDIADriver
  // `spec.upgradePolicy`); `auto_default` is the CRD's default for an absent `autoUpgrade`.
  static void check_policy(Node up, const std::string& base, bool auto_default, const std::string& note, CheckContext& ctx) {
    if (!up.is_object()) return;
    const Node au = member(up, "autoUpgrade");
    if (!(au.is_null() ? auto_default : bool_at(up, "autoUpgrade") == true)) return;
    std::string max_unavailable = "25%";
    const Node mu = member(up, "maxUnavailable");
    if (mu.is_string()) max_unavailable = mu.str();
    if (mu.is_number()) max_unavailable = go_json_number(mu.to_json());
    if (auto n = int_at(up, "maxParallelUpgrades"); n && *n == 0)
      ctx.report(base + "/maxParallelUpgrades",
                 "maxParallelUpgrades: 0 lets the GPU Operator upgrade any number of GPU nodes at once (only maxUnavailable " +
                     max_unavailable + " bounds it): their GPU pods are deleted together; upgrade node by node with "
                     "maxParallelUpgrades: 1 (seed 9.7)" + note);
    if (mu.is_string() && max_unavailable.ends_with("%")) {
      const std::string digits = max_unavailable.substr(0, max_unavailable.size() - 1);
      if (!digits.empty() && digits.size() < 6 && std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }) &&
          std::stoi(digits) >= 100)
        ctx.report(base + "/maxUnavailable",
                   "maxUnavailable: " + max_unavailable + " lets the driver upgrade take every GPU node out of service at the "
                   "same time; keep it at 25% or less so that the cluster keeps serving (seed 9.7)" + note);
    }
    for (const char* section : {"podDeletion", "drain"}) {
      const Node s = member(up, section);
      if (!s || bool_at(s, "force") != true) continue;
      if (std::string(section) == "drain" && bool_at(s, "enable") != true) continue;
      ctx.report(base + "/" + section + "/force",
                 std::string(section) + ".force: true makes the upgrade delete " +
                     (std::string(section) == "drain" ? "pods" : "GPU pods") +
                     " that no controller manages (bare Pods): they are gone for good instead of being rescheduled; "
                     "leave force false so that such a node waits (or fails the upgrade) until they finish" + note);
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_operator_upgrade_unsafe() { return std::make_unique<GpuOperatorUpgradeUnsafe>(); }

}  // namespace gpuguard::rules
