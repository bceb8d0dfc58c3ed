// gpu-alerts-missing: the cluster's PrometheusRules lack the seed's core GPU alerts.

#include <algorithm>
#include <map>
#include <set>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/operator/prometheus_rules.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct State final : RuleState {
  bool gpus = false;  // a GPU workload, the DCGM exporter or a ClusterPolicy was seen
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { gpus = gpus || static_cast<State&>(later).gpus; }
};

struct Core {
  const char* what;
  std::vector<std::string> metrics;
};

const std::vector<Core>& core_alerts() {
  static const std::vector<Core> kCore = {
      {"framebuffer memory > 90 % (DCGM_FI_DEV_FB_USED / FB_FREE)", {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"}},
      {"temperature > 85 °C (DCGM_FI_DEV_GPU_TEMP)", {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"}},
      {"Xid errors ≠ 0 (DCGM_FI_DEV_XID_ERRORS)", {"DCGM_FI_DEV_XID_ERRORS", "DCGM_EXP_XID_ERRORS_COUNT"}},
  };
  return kCore;
}

class GpuAlertsMissing final : public Rule {
 public:
  GpuAlertsMissing() {
    info_.id = "gpu-alerts-missing";
    info_.severity = Severity::info;
    info_.category = "operator";
    info_.seed = "9.6";
    info_.summary = "No PrometheusRule alerts on GPU memory, temperature or Xid errors";
    info_.rationale =
        "The seed (9.6) names the GPU alerts every cluster needs: framebuffer memory above 90 %, temperature "
        "above 85 °C and any Xid error (a driver-reported GPU fault). Without them a GPU that overheats, runs "
        "out of memory or falls off the bus is noticed only when jobs fail.\n\n"
        "An alerting rule covers a check when its expression uses the DCGM metric of that check — "
        "`DCGM_FI_DEV_FB_USED`/`DCGM_FI_DEV_FB_FREE`, `DCGM_FI_DEV_GPU_TEMP`/`DCGM_FI_DEV_MEMORY_TEMP`, "
        "`DCGM_FI_DEV_XID_ERRORS`/`DCGM_EXP_XID_ERRORS_COUNT` — directly or through a recording rule that does. "
        "Thresholds are not judged. The rule needs the whole cluster and speaks only with a complete "
        "inventory that shows GPUs (a GPU workload, a DCGM exporter, or a ClusterPolicy); it reports which of "
        "the three checks are missing.";
    info_.remediation =
        "Add a PrometheusRule, for example:\n\n"
        "```yaml\n- alert: GpuMemoryHigh\n  expr: DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.9\n  for: 10m\n"
        "- alert: GpuTemperatureHigh\n  expr: DCGM_FI_DEV_GPU_TEMP > 85\n  for: 5m\n"
        "- alert: GpuXidError\n  expr: DCGM_FI_DEV_XID_ERRORS != 0\n```\n\n"
        "(Xids 13, 31, 43, 45, 68 and 109 are application errors the device plugin ignores; you may exclude them.)";
    info_.facts = {
        "Seed 9.6 (design.md §1): alerts on memory > 90 %, temperature > 85 °C, Xid ≠ 0.",
        "facts/nvidia.md §6 — DCGM_FI_DEV_FB_USED/FB_FREE (MiB), DCGM_FI_DEV_GPU_TEMP/MEMORY_TEMP (°C), "
        "DCGM_FI_DEV_XID_ERRORS (last Xid) exported by default; DCGM_EXP_XID_ERRORS_COUNT optional; "
        "application Xids per KDP `internal/rm/health.go` [DE, KDP].",
    };
    // It reports on a PrometheusRule, or on the cluster when there is none. What tells it the
    // cluster has GPUs: in the linter the workloads it observes and a ClusterPolicy; in the webhook,
    // whose state keeps only the kinds rules read, a ClusterPolicy.
    info_.checks = {KindRef{"monitoring.coreos.com", "PrometheusRule"}};
    info_.reports_scope = true;
    info_.reads = {KindRef{"monitoring.coreos.com", "PrometheusRule"}, KindRef{"nvidia.com", "ClusterPolicy"}};
    info_.observes = pod_template_kinds();
    info_.needs_complete = true;
    info_.example_bad = R"(# gpuguard lint --complete: a GPU workload and only a temperature alert
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpu-alerts
spec:
  groups:
    - name: gpu
      rules:
        - alert: GpuTemperatureHigh
          expr: DCGM_FI_DEV_GPU_TEMP > 85
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            limits:
              nvidia.com/gpu: 1
)";
    info_.example_good = R"(# gpuguard lint --complete: all three core alerts
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpu-alerts
spec:
  groups:
    - name: gpu
      rules:
        - alert: GpuMemoryHigh
          expr: DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.9
        - alert: GpuTemperatureHigh
          expr: DCGM_FI_DEV_GPU_TEMP > 85
        - alert: GpuXidError
          expr: DCGM_FI_DEV_XID_ERRORS != 0
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            limits:
              nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    if (st->gpus) return;
    if (obj.is("nvidia.com", "ClusterPolicy") || operator_::runs_dcgm_exporter(obj) ||
        requests_gpu(obj, ctx.settings().gpu_resources))
      st->gpus = true;
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    auto* st = static_cast<State*>(ctx.state());
    if (!st->gpus && inv.list("nvidia.com", "ClusterPolicy").empty()) return;
    const auto rules = inv.list("monitoring.coreos.com", "PrometheusRule");
    // The finding is about the scope, or about a PrometheusRule: where only the admitted object is
    // in focus (the webhook), it is reported only when that object is a PrometheusRule.
    if (ctx.focused() && (rules.empty() || !ctx.in_focus(*ctx.subject(rules)))) return;
    // Recording rules: series → DCGM metrics it is computed from (followed a few levels deep).
    std::map<std::string, std::set<std::string>, std::less<>> recorded;
    std::vector<std::pair<std::string, std::string>> records;  // (record, expr)
    std::vector<std::string> alerts;                          // alert expressions
    for (const Object* pr : rules)
      for (const auto& e : operator_::prometheus_exprs(*pr)) {
        if (!e.record.empty()) records.emplace_back(e.record, e.expr);
        if (!e.alert.empty()) alerts.push_back(e.expr);
      }
    auto metrics_of = [&](const std::string& expr) {
      std::set<std::string> out;
      for (const auto& n : operator_::series_names(expr)) {
        if (n.starts_with("DCGM_")) out.insert(n);
        if (auto it = recorded.find(n); it != recorded.end()) out.insert(it->second.begin(), it->second.end());
      }
      return out;
    };
    for (int round = 0; round < 4; ++round)
      for (const auto& [name, expr] : records) {
        auto m = metrics_of(expr);
        recorded[name].insert(m.begin(), m.end());
      }
    std::set<std::string> used;
    for (const auto& a : alerts) {
      auto m = metrics_of(a);
      used.insert(m.begin(), m.end());
    }
    std::vector<std::string> missing;
    for (const auto& c : core_alerts())
      if (std::none_of(c.metrics.begin(), c.metrics.end(), [&](const std::string& m) { return used.contains(m); }))
        missing.push_back(c.what);
    if (missing.empty()) return;
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i) list += (i ? "; " : "") + missing[i];
    const std::string msg = "no PrometheusRule alerts on " + list + " (" + std::to_string(3 - missing.size()) +
                            " of the seed's 3 core GPU alerts present): these GPU faults are noticed only when jobs fail (seed 9.6)";
    if (rules.empty()) {
      ctx.report_scope(msg);
      return;
    }
    ctx.report(*ctx.subject(rules), "/spec/groups", msg);
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_alerts_missing() { return std::make_unique<GpuAlertsMissing>(); }

}  // namespace gpuguard::rules
