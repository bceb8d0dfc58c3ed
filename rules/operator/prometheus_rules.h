#pragma once
// PrometheusRule (monitoring.coreos.com) expressions and the DCGM exporter's default metrics
// (facts/nvidia.md §6).

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/node.h"
#include "engine/object.h"

namespace gpuguard::rules::operator_ {

struct PromExpr {
  std::string pointer;  // JSON pointer to `expr`
  std::string alert;    // alert name ("" for a recording rule)
  std::string record;   // recorded series ("" for an alert)
  std::string expr;
};

// Every rule expression of a PrometheusRule (spec.groups[].rules[]); none for other objects.
[[nodiscard]] std::vector<PromExpr> prometheus_exprs(const engine::Object& obj);

// The DCGM field names (`DCGM_FI_*`) an expression mentions, in order of first appearance.
[[nodiscard]] std::vector<std::string> dcgm_metrics(std::string_view expr);

// Identifiers that may name a series (for following recording rules), metric-name syntax.
[[nodiscard]] std::vector<std::string> series_names(std::string_view expr);

// DCGM fields the exporter exports by default: the uncommented lines of its `default-counters.csv`
// and of `dcp-metrics-included.csv` (the file the GPU Operator configures).
[[nodiscard]] const std::set<std::string, std::less<>>& dcgm_default_metrics();

// Whether a DaemonSet (or any pod-template holder) runs the DCGM exporter: an image or
// container named dcgm-exporter.
[[nodiscard]] bool runs_dcgm_exporter(const engine::Object& obj);

// DCGM fields listed, uncommented, in a metrics CSV held in ConfigMap data (`DCGM_FI_X, gauge, help`
// lines; the ConfigMap named by the ClusterPolicy's `dcgmExporter.config.name`): added to `out`.
void dcgm_csv_metrics(engine::Node data, std::set<std::string, std::less<>>& out);

}  // namespace gpuguard::rules::operator_
