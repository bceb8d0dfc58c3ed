#include "cli/output.h"
#include "cli/version.h"

namespace gpuguard::cli {

using engine::json;

namespace {

json object_json(const engine::ObjectRef& o) {
  json j = json::object();
  if (!o.api_version.empty()) j["apiVersion"] = o.api_version;
  if (!o.kind.empty()) j["kind"] = o.kind;
  if (!o.namespace_.empty()) j["namespace"] = o.namespace_;
  if (!o.name.empty()) j["name"] = o.name;
  j["document"] = o.document;
  if (!o.item_pointer.empty()) j["itemPointer"] = o.item_pointer;
  return j;
}

}  // namespace

void write_json(const engine::Result& result, const ReportContext& ctx, std::ostream& out) {
  const size_t files = ctx.files.size();
  json findings = json::array();
  size_t counts[3] = {0, 0, 0};
  size_t suppressed = 0;
  for (const auto& f : result.findings) {
    json j = {{"rule", f.rule}, {"severity", std::string(engine::to_string(f.severity))}, {"message", f.message}};
    if (f.object.id != engine::kNoObject) {
      if (f.object.source) j["file"] = f.object.source->path;
      if (f.pos.known()) {
        j["line"] = f.pos.line;
        j["column"] = f.pos.col;
      }
      j["pointer"] = f.pointer;
      j["object"] = object_json(f.object);
    }
    if (f.fix) j["fix"] = *f.fix;
    if (f.suppressed) {
      j["suppressed"] = {{"reason", f.suppression}};
      ++suppressed;
    } else {
      ++counts[static_cast<int>(f.severity)];
    }
    findings.push_back(std::move(j));
  }
  json diagnostics = json::array();
  for (const auto& d : result.diagnostics) {
    json j = {{"severity", std::string(engine::to_string(d.severity))}, {"message", d.message}};
    if (!d.file.empty()) j["file"] = d.file;
    if (d.pos.known()) {
      j["line"] = d.pos.line;
      j["column"] = d.pos.col;
    }
    diagnostics.push_back(std::move(j));
  }
  json doc = {
      {"version", 1},
      {"tool", {{"name", "gpuguard"}, {"version", std::string(kVersion)}}},
      {"findings", std::move(findings)},
      {"diagnostics", std::move(diagnostics)},
      {"summary",
       {{"files", files},
        {"objects", result.objects},
        {"errors", counts[2]},
        {"warnings", counts[1]},
        {"info", counts[0]},
        {"suppressed", suppressed}}},
  };
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

}  // namespace gpuguard::cli
