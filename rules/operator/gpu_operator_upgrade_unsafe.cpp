// gpu-operator-upgrade-unsafe: a ClusterPolicy whose automatic driver upgrade does not go node by node.

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
    info_.summary = "The GPU Operator's automatic driver upgrade may take many GPU nodes down at once, or delete unmanaged GPU pods";
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
        "With `autoUpgrade` false or absent (the CRD default) the other fields are ignored and nothing is reported.";
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
    };
    info_.checks = {KindRef{"nvidia.com", "ClusterPolicy"}};
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
    if (!obj.is("nvidia.com", "ClusterPolicy")) return;
    const Node up = path(obj.root(), {"spec", "driver", "upgradePolicy"});
    if (!up.is_object()) return;
    if (bool_at(up, "autoUpgrade") != true) return;
    const std::string base = "/spec/driver/upgradePolicy";
    std::string max_unavailable = "25%";
    const Node mu = member(up, "maxUnavailable");
    if (mu.is_string()) max_unavailable = mu.str();
    if (mu.is_number()) max_unavailable = go_json_number(mu.to_json());
    if (auto n = int_at(up, "maxParallelUpgrades"); n && *n == 0)
      ctx.report(base + "/maxParallelUpgrades",
                 "maxParallelUpgrades: 0 lets the GPU Operator upgrade any number of GPU nodes at once (only maxUnavailable " +
                     max_unavailable + " bounds it): their GPU pods are deleted together; upgrade node by node with "
                     "maxParallelUpgrades: 1 (seed 9.7)");
    if (mu.is_string() && max_unavailable.ends_with("%")) {
      const std::string digits = max_unavailable.substr(0, max_unavailable.size() - 1);
      if (!digits.empty() && digits.size() < 6 && std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }) &&
          std::stoi(digits) >= 100)
        ctx.report(base + "/maxUnavailable",
                   "maxUnavailable: " + max_unavailable + " lets the driver upgrade take every GPU node out of service at the "
                   "same time; keep it at 25% or less so that the cluster keeps serving (seed 9.7)");
    }
    for (const char* section : {"podDeletion", "drain"}) {
      const Node s = member(up, section);
      if (!s || bool_at(s, "force") != true) continue;
      if (std::string(section) == "drain" && bool_at(s, "enable") != true) continue;
      ctx.report(base + "/" + section + "/force",
                 std::string(section) + ".force: true makes the upgrade delete " +
                     (std::string(section) == "drain" ? "pods" : "GPU pods") +
                     " that no controller manages (bare Pods): they are gone for good instead of being rescheduled; "
                     "leave force false so that such a node waits (or fails the upgrade) until they finish");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_operator_upgrade_unsafe() { return std::make_unique<GpuOperatorUpgradeUnsafe>(); }

}  // namespace gpuguard::rules
