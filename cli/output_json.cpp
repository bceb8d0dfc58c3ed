#include "cli/output.h"
#include "cli/version.h"

namespace gpuguard::cli {

using engine::json;

namespace {

json object_json(const engine::ObjectRef& o) {
  json j = json::object();
  if (!o.api_version().empty()) j["apiVersion"] = o.api_version();
  if (!o.kind().empty()) j["kind"] = o.kind();
  if (!o.namespace_().empty()) j["namespace"] = o.namespace_();
  if (!o.name().empty()) j["name"] = o.name();
  j["document"] = o.document;
  if (!o.item_pointer().empty()) j["itemPointer"] = o.item_pointer();
  return j;
}

}  // namespace

void write_nested(std::ostream& out, const json& value, int depth, std::string& buf) {
  buf = value.dump(2, ' ', false, json::error_handler_t::replace);
  const std::string pad(static_cast<size_t>(2 * depth), ' ');
  size_t start = 0;
  for (size_t nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n', start)) {
    out.write(buf.data() + start, static_cast<std::streamsize>(nl + 1 - start));
    out << pad;
    start = nl + 1;
  }
  out.write(buf.data() + start, static_cast<std::streamsize>(buf.size() - start));
}

// The document is json::dump(2) of {diagnostics, findings, summary, tool, version} (nlohmann's
// objects keep their keys sorted), written a finding at a time so no whole document is built.
void write_json(const engine::Result& result, const ReportContext& ctx, std::ostream& out) {
  const size_t files = ctx.files.size();
  std::string buf;
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
  out << "{\n  \"diagnostics\": ";
  write_nested(out, diagnostics, 1, buf);
  out << ",\n  \"findings\": ";
  size_t counts[3] = {0, 0, 0};
  size_t suppressed = 0;
  if (result.findings.empty()) out << "[]";
  bool first = true;
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
    out << (first ? "[\n    " : ",\n    ");
    first = false;
    write_nested(out, j, 2, buf);
  }
  if (!result.findings.empty()) out << "\n  ]";
  const json summary = {{"files", files},
                        {"objects", result.objects},
                        {"errors", counts[2]},
                        {"warnings", counts[1]},
                        {"info", counts[0]},
                        {"suppressed", suppressed}};
  const json tool = {{"name", "gpuguard"}, {"version", std::string(kVersion)}};
  out << ",\n  \"summary\": ";
  write_nested(out, summary, 1, buf);
  out << ",\n  \"tool\": ";
  write_nested(out, tool, 1, buf);
  out << ",\n  \"version\": 1\n}\n";
}

}  // namespace gpuguard::cli
