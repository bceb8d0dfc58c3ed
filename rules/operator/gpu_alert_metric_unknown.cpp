// gpu-alert-metric-unknown: a PrometheusRule uses a DCGM field the exporter does not export.

#include <re2/re2.h>

#include <set>

#include "engine/inventory.h"
#include "rules/all.h"
#include "rules/operator/prometheus_rules.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct Use {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string metric;
  std::string rule;  // "alert X" / "recording rule Y"
};

struct State final : RuleState {
  engine::Records<Use> uses;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(uses, static_cast<State&>(later).uses); }
};

class GpuAlertMetricUnknown final : public Rule {
 public:
  GpuAlertMetricUnknown() {
    info_.id = "gpu-alert-metric-unknown";
    info_.severity = Severity::warning;
    info_.category = "operator";
    info_.seed = "9.6";
    info_.summary = "A PrometheusRule expression names a DCGM metric that the DCGM exporter does not export";
    info_.rationale =
        "The DCGM exporter exports only the fields listed in its metrics CSV. A rule over any other "
        "`DCGM_FI_*` series evaluates to an empty result: an alert on it never fires and a recording rule "
        "records nothing, silently. Common cases are the ECC counters (`DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`), which "
        "are commented out in the default CSVs, and `DCGM_FI_DEV_FB_TOTAL`, which neither default CSV lists.\n\n"
        "Known metrics are the uncommented lines of dcgm-exporter's `default-counters.csv` and "
        "`dcp-metrics-included.csv` (the one the GPU Operator configures), the names in `extraMetrics`, and "
        "every `DCGM_FI_*` line of a metrics CSV held in a ConfigMap of the input (a custom "
        "`dcgmExporter.config.name`).";
    info_.remediation =
        "Use an exported metric (for memory use `DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)`), "
        "or add the field to a custom metrics CSV (ConfigMap named by `dcgmExporter.config.name`) and list it in "
        "`extraMetrics` if that ConfigMap is not linted with the rule.";
    info_.facts = {
        "facts/nvidia.md §6 — exported counters by default, the commented-out ECC/retired-page/violation fields, "
        "`DCGM_FI_DEV_FB_TOTAL` in the Operator's OpenShift recording rules but in neither default CSV [DE, GO].",
        "Checked upstream: dcgm-exporter `etc/default-counters.csv` and `etc/dcp-metrics-included.csv` (the "
        "uncommented lines of both are the list kept in `rules/operator/prometheus_rules.cpp`; the dcp file of the "
        "version read lists DCGM_FI_DEV_RETIRED_SBE/DBE uncommented, so they count as exported).",
    };
    info_.params = {
        ParamSpec{"extraMetrics", ParamType::string_list, json::array(),
                  "further DCGM fields your exporter's metrics CSV exports", std::nullopt, std::nullopt},
    };
    info_.checks = {KindRef{"monitoring.coreos.com", "PrometheusRule"}};
    info_.reads = {KindRef{"", "ConfigMap"}};
    info_.example_bad = R"(apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpu-alerts
spec:
  groups:
    - name: gpu
      rules:
        - alert: GpuDoubleBitEcc
          expr: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0
)";
    info_.example_good = R"(apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpu-alerts
spec:
  groups:
    - name: gpu
      rules:
        - alert: GpuRowRemapFailure
          expr: DCGM_FI_DEV_ROW_REMAP_FAILURE > 0
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    const auto& known = operator_::dcgm_default_metrics();
    const auto& extra = ctx.params().strings("extraMetrics");
    auto* st = static_cast<State*>(ctx.state());
    for (const auto& e : operator_::prometheus_exprs(obj))
      for (const auto& m : operator_::dcgm_metrics(e.expr)) {
        if (known.contains(m) || std::find(extra.begin(), extra.end(), m) != extra.end()) continue;
        st->uses.push_back({ctx.ref(), e.pointer, ctx.position_of(e.pointer), m,
                            e.alert.empty() ? "recording rule " + e.record : "alert " + e.alert});
      }
  }

  void finish(FinishContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    if (st->uses.empty()) return;
    std::set<std::string, std::less<>> custom;
    for (const Object* cm : ctx.inventory().list("", "ConfigMap"))
      operator_::dcgm_csv_metrics(member(cm->root(), "data"), custom);
    for (const auto& u : st->uses) {
      if (custom.contains(u.metric)) continue;
      const bool is_alert = u.rule.starts_with("alert");
      ctx.report(u.ref, u.pointer, u.pos,
                 u.rule + " uses " + u.metric + ", which the DCGM exporter does not export by default (it is in neither "
                 "default-counters.csv nor dcp-metrics-included.csv): the series is absent, so the " +
                     (is_alert ? std::string("alert can never fire") : std::string("rule records nothing")) +
                     "; use an exported metric or add the field to the exporter's metrics CSV");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_alert_metric_unknown() { return std::make_unique<GpuAlertMetricUnknown>(); }

}  // namespace gpuguard::rules
