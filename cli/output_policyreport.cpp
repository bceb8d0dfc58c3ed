// wgpolicyk8s.io/v1alpha2 PolicyReports, so Policy Reporter and other consumers show gpuguard's
// results: one PolicyReport per namespace, one ClusterPolicyReport for cluster-scoped objects
// and cluster-wide findings. YAML documents, ready for `kubectl apply -f -`.

#include <chrono>
#include <map>

#include "cli/output.h"
#include "engine/yaml_emit.h"

namespace gpuguard::cli {

using engine::json;

namespace {

std::pair<std::string, std::string> outcome(engine::Severity s) {
  switch (s) {
    case engine::Severity::error: return {"fail", "high"};
    case engine::Severity::warning: return {"warn", "medium"};
    case engine::Severity::info: return {"warn", "info"};
  }
  return {"warn", "medium"};
}

}  // namespace

void write_policyreport(const engine::Result& result, const ReportContext& ctx, std::ostream& out) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  std::map<std::string, std::string> category;
  for (const auto* r : ctx.registry->rules()) category[r->info().id] = r->info().category;

  // One namespace's report at a time (its findings found by index first), so only one report's
  // document is ever built; the reports are written in namespace order as before.
  std::map<std::string, std::vector<size_t>> by_namespace;  // "" = cluster scope
  for (size_t i = 0; i < result.findings.size(); ++i) {
    const auto& f = result.findings[i];
    by_namespace[f.object.id == engine::kNoObject ? "" : f.object.namespace_()].push_back(i);
  }
  bool first = true;
  for (const auto& [ns, indices] : by_namespace) {
    json results = json::array();
    int fail = 0, warn = 0, skip = 0;
    for (size_t i : indices) {
      const auto& f = result.findings[i];
      auto [res, sev] = outcome(f.severity);
      if (f.suppressed) res = "skip";
      json r = {{"source", "gpuguard"}, {"policy", f.rule}, {"rule", f.rule}, {"category", category[f.rule]},
                {"severity", sev},      {"result", res},    {"message", f.message}, {"scored", true},
                {"timestamp", {{"seconds", seconds}, {"nanos", 0}}}};
      if (f.object.id != engine::kNoObject && !f.object.kind().empty()) {
        json ref = {{"apiVersion", f.object.api_version()}, {"kind", f.object.kind()}, {"name", f.object.name()}};
        if (!f.object.namespace_().empty()) ref["namespace"] = f.object.namespace_();
        r["resources"] = json::array({ref});
      }
      json props = json::object();
      if (!f.pointer.empty()) props["pointer"] = f.pointer;
      if (f.object.source) props["file"] = f.object.source->path;
      if (f.pos.known()) props["line"] = std::to_string(f.pos.line);
      if (f.suppressed) props["suppression"] = f.suppression;
      if (!props.empty()) r["properties"] = props;
      if (res == "fail") ++fail;
      else if (res == "skip") ++skip;
      else ++warn;
      results.push_back(std::move(r));
    }
    json doc = {{"apiVersion", "wgpolicyk8s.io/v1alpha2"},
                {"kind", ns.empty() ? "ClusterPolicyReport" : "PolicyReport"},
                {"metadata", {{"name", ns.empty() ? "gpuguard-cluster" : "gpuguard"}, {"labels", {{"app.kubernetes.io/managed-by", "gpuguard"}}}}},
                {"summary", {{"pass", 0}, {"fail", fail}, {"warn", warn}, {"error", 0}, {"skip", skip}}},
                {"results", std::move(results)}};
    if (!ns.empty()) doc["metadata"]["namespace"] = ns;
    if (!first) out << "---\n";
    first = false;
    out << engine::to_yaml(doc);
  }
}

}  // namespace gpuguard::cli
