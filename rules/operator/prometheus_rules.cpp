#include "rules/operator/prometheus_rules.h"

#include <re2/re2.h>

#include <unordered_set>

#include "engine/podspec.h"
#include "engine/positions.h"

namespace gpuguard::rules::operator_ {

using engine::json;
using engine::Node;

std::vector<PromExpr> prometheus_exprs(const engine::Object& obj) {
  std::vector<PromExpr> out;
  if (!obj.is("monitoring.coreos.com", "PrometheusRule")) return out;
  const Node groups = engine::path(obj.root(), {"spec", "groups"});
  if (!groups.is_array()) return out;
  size_t next_group = 0;
  for (const Node group : groups) {
    const size_t g = next_group++;
    const Node rules = engine::member(group, "rules");
    if (!rules.is_array()) continue;
    size_t next_rule = 0;
    for (const Node rule : rules) {
      const size_t r = next_rule++;
      const Node expr = engine::member(rule, "expr");
      if (!expr) continue;
      std::string text;
      if (expr.is_string())
        text = expr.str();
      else if (expr.is_number())
        text = engine::go_json_number(expr.to_json());
      else
        continue;
      out.push_back({"/spec/groups/" + std::to_string(g) + "/rules/" + std::to_string(r) + "/expr",
                     std::string(engine::string_at(rule, "alert").value_or("")),
                     std::string(engine::string_at(rule, "record").value_or("")), std::move(text)});
    }
  }
  return out;
}

namespace {

// The distinct matches, in the order first found: linear in the expression (a set of those seen).
std::vector<std::string> scan(std::string_view expr, const RE2& re) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  re2::StringPiece input(expr.data(), expr.size());
  std::string m;
  while (RE2::FindAndConsume(&input, re, &m))
    if (seen.insert(m).second) out.push_back(m);
  return out;
}

}  // namespace

std::vector<std::string> dcgm_metrics(std::string_view expr) {
  // A whole identifier starting with DCGM_FI_ (not part of a longer name such as a label value
  // suffix); RE2 has no look-behind, so the left boundary is matched as a non-identifier byte.
  static const RE2 re(R"((?:^|[^A-Za-z0-9_:])(DCGM_FI_[A-Za-z0-9_]+))");
  return scan(expr, re);
}

std::vector<std::string> series_names(std::string_view expr) {
  static const RE2 re(R"((?:^|[^A-Za-z0-9_:."'])([A-Za-z_:][A-Za-z0-9_:]*))");
  return scan(expr, re);
}

const std::set<std::string, std::less<>>& dcgm_default_metrics() {
  static const std::set<std::string, std::less<>> kMetrics = {
      // default-counters.csv and dcp-metrics-included.csv, uncommented lines (union)
      "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
      "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
      "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL",
      "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS",
      "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_RETIRED_SBE",
      "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
      "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
      "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
      "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
      "DCGM_FI_PROF_PCIE_RX_BYTES",
  };
  return kMetrics;
}

bool runs_dcgm_exporter(const engine::Object& obj) {
  for (const auto& t : engine::pod_templates(obj))
    for (const auto& c : engine::containers(t)) {
      auto image = engine::string_at(c.body, "image");
      if ((image && image->find("dcgm-exporter") != std::string_view::npos) || c.name == "nvidia-dcgm-exporter" ||
          c.name == "dcgm-exporter")
        return true;
    }
  return false;
}

// DCGM fields listed, uncommented, in a metrics CSV (`DCGM_FI_X, gauge, help`): a ConfigMap named
// by `dcgmExporter.config.name` holds one.
void dcgm_csv_metrics(Node data, std::set<std::string, std::less<>>& out) {
  static const RE2 re(R"((?m)^[ \t]*(DCGM_FI_[A-Za-z0-9_]+)[ \t]*,)");
  for (const auto [k, v] : data.items()) {
    if (!v.is_string()) continue;
    const std::string_view text = v.str();
    re2::StringPiece input(text.data(), text.size());
    std::string m;
    while (RE2::FindAndConsume(&input, re, &m)) out.insert(m);
  }
}

}  // namespace gpuguard::rules::operator_
