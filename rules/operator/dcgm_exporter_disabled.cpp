// dcgm-exporter-disabled: GPU metrics are switched off, or GPU workloads run with no DCGM exporter.

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/operator/prometheus_rules.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct State final : RuleState {
  size_t workloads = 0;
  ObjectRef last;  // the last GPU workload seen
  std::string last_name;
  // Workloads without GPUs in their resources but with claims, in input order (resolved in finish).
  struct Claiming {
    ObjectRef ref;
    std::string name;
    std::vector<PodClaim> claims;
  };
  Records<Claiming> claiming;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override {
    auto& l = static_cast<State&>(later);
    append(claiming, l.claiming);
    if (l.workloads == 0) return;
    workloads += l.workloads;
    last = std::move(l.last);
    last_name = std::move(l.last_name);
  }
};

class DcgmExporterDisabled final : public Rule {
 public:
  DcgmExporterDisabled() {
    info_.id = "dcgm-exporter-disabled";
    info_.severity = Severity::warning;
    info_.category = "operator";
    info_.seed = "9.6";
    info_.summary = "GPU metrics are not collected: the ClusterPolicy disables the DCGM exporter, or GPU workloads run with no exporter";
    info_.rationale =
        "The seed (9.6) asks for the DCGM exporter on every GPU node: without it there is no GPU utilisation, "
        "memory, temperature or Xid data, so the alerts of the seed cannot fire and idle or failing GPUs go "
        "unnoticed.\n\n"
        "The rule reports a ClusterPolicy with `spec.dcgmExporter.enabled: false` (the GPU Operator then "
        "deploys no exporter). With a complete inventory it also reports GPU workloads when nothing deploys "
        "the exporter: no DaemonSet runs a `dcgm-exporter` image or container, and no ClusterPolicy leaves "
        "`dcgmExporter` enabled (an absent `enabled` counts as enabled, as the Helm chart's default is).\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.remediation =
        "Set `spec.dcgmExporter.enabled: true` (Helm `dcgmExporter.enabled=true`) with its ServiceMonitor, or "
        "install the dcgm-exporter chart as a DaemonSet on the GPU nodes.";
    info_.facts = {
        "facts/nvidia.md §5 — `dcgmExporter.enabled` (Helm default true; CRD without default) and §6 — the "
        "Operator's exporter DaemonSet `nvidia-dcgm-exporter`, port 9400 [GO values.yaml, "
        "`assets/state-dcgm-exporter/0800_daemonset.yaml`].",
        "Seed 9.6 (design.md §1): DCGM exporter on every GPU node.",
    };
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{"nvidia.com", "ClusterPolicy"});
    info_.reads = {KindRef{"apps", "DaemonSet"}, KindRef{"nvidia.com", "ClusterPolicy"}};
    info_.reads.insert(info_.reads.end(), dra_kinds().begin(), dra_kinds().end());
    info_.example_bad = R"(apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
spec:
  dcgmExporter:
    enabled: false
)";
    info_.example_good = R"(apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
spec:
  dcgmExporter:
    enabled: true
    serviceMonitor:
      enabled: true
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (obj.is("nvidia.com", "ClusterPolicy")) {
      const Node dcgm = path(obj.root(), {"spec", "dcgmExporter"});
      if (dcgm && bool_at(dcgm, "enabled") == false)
        ctx.report("/spec/dcgmExporter/enabled",
                   "dcgmExporter.enabled: false: the GPU Operator deploys no DCGM exporter, so GPU utilisation, memory, "
                   "temperature and Xid errors are not collected and no GPU alert can fire (seed 9.6)");
      return;
    }
    if (obj.is("apps", "DaemonSet") && operator_::runs_dcgm_exporter(obj)) return;
    auto* st = static_cast<State*>(ctx.state());
    if (!requests_gpu(obj, ctx.settings().gpu_resources)) {
      auto claims = pod_claims(obj);  // GPUs through DRA, perhaps: resolved in finish
      if (!claims.empty()) st->claiming.push_back(State::Claiming{ctx.ref(), obj.display_name(), std::move(claims)});
      return;
    }
    ++st->workloads;
    st->last = ctx.ref();
    st->last_name = obj.display_name();
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    auto* st = static_cast<State*>(ctx.state());
    if (!inv.complete()) return;
    size_t dra = 0;
    const State::Claiming* last_dra = nullptr;
    for (const auto& c : st->claiming)
      if (resolve_dra_gpus(inv, c.ref.namespace_(), c.claims, ctx.settings().gpu_device_classes).any()) {
        ++dra;
        last_dra = &c;
      }
    if (st->workloads == 0 && dra == 0) return;
    for (const Object* ds : inv.list("apps", "DaemonSet"))
      if (operator_::runs_dcgm_exporter(*ds)) return;
    // A ClusterPolicy deploys the exporter, or was reported for `enabled: false` in `check`.
    if (!inv.list("nvidia.com", "ClusterPolicy").empty()) return;
    const size_t total = st->workloads + dra;
    std::string last = st->workloads == 0 ? "last: " + last_dra->name + ", GPUs through DRA claims"
                       : dra == 0         ? "last: " + st->last_name
                                          : "last: " + st->last_name + "; with GPUs through DRA claims: " + std::to_string(dra) +
                                        ", the last " + last_dra->name;
    const ObjectRef& at = st->workloads == 0 ? last_dra->ref : st->last;
    ctx.report(at, "", at.pos,
               std::to_string(total) + " GPU workload" + (total == 1 ? "" : "s") + " (" + last +
                   ") and no DCGM exporter: no DaemonSet runs dcgm-exporter and no ClusterPolicy deploys it, so GPU "
                   "utilisation, memory, temperature and Xid errors are not collected (seed 9.6)");
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_dcgm_exporter_disabled() { return std::make_unique<DcgmExporterDisabled>(); }

}  // namespace gpuguard::rules
