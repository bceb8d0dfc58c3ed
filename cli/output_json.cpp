#include "cli/output.h"
#include "cli/version.h"
#include "engine/json_write.h"

#include <sstream>

namespace gpuguard::cli {

using engine::json;

namespace {

// The members of an object written at `pad` (in json's order: sorted keys).
struct Members {
  std::string& out;
  std::string_view pad;
  bool first = true;
  void key(std::string_view k) {
    out += first ? "{\n" : ",\n";
    out += pad;
    out.push_back('"');
    out += k;
    out += "\": ";
    first = false;
  }
  void string(std::string_view k, std::string_view v) {
    key(k);
    engine::append_json_string(out, v);
  }
  void string_unless_empty(std::string_view k, std::string_view v) {
    if (!v.empty()) string(k, v);
  }
  void close(std::string_view outer_pad) {
    out.push_back('\n');
    out += outer_pad;
    out.push_back('}');
  }
};

// A finding, as json::dump(2) of {column, file, fix, line, message, object, pointer, rule,
// severity, suppressed} nested two levels deep, appended to `out` without building that object.
void write_finding(std::string& out, const engine::Finding& f, std::string& buf) {
  Members m{out, "      "};
  const bool located = f.object.id != engine::kNoObject;
  if (located && f.pos.known()) {
    m.key("column");
    out += std::to_string(f.pos.col);
  }
  if (located && f.object.source) m.string("file", f.object.source->path);
  if (f.fix) {
    m.key("fix");
    std::ostringstream nested;
    write_nested(nested, *f.fix, 3, buf);
    out += nested.str();
  }
  if (located && f.pos.known()) {
    m.key("line");
    out += std::to_string(f.pos.line);
  }
  m.string("message", f.message);
  if (located) {
    const engine::ObjectRef& o = f.object;
    m.key("object");
    Members obj{out, "        "};
    obj.string_unless_empty("apiVersion", o.api_version());
    obj.key("document");
    out += std::to_string(o.document);
    obj.string_unless_empty("itemPointer", o.item_pointer());
    obj.string_unless_empty("kind", o.kind());
    obj.string_unless_empty("name", o.name());
    obj.string_unless_empty("namespace", o.namespace_());
    obj.close("      ");
    m.string("pointer", f.pointer);
  }
  m.string("rule", f.rule);
  m.string("severity", engine::to_string(f.severity));
  if (f.suppressed) {
    m.key("suppressed");
    Members sup{out, "        "};
    sup.string("reason", f.suppression);
    sup.close("      ");
  }
  m.close("    ");
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
  std::string chunk;  // findings are written 64 KiB at a time
  for (const auto& f : result.findings) {
    if (f.suppressed)
      ++suppressed;
    else
      ++counts[static_cast<int>(f.severity)];
    chunk += first ? "[\n    " : ",\n    ";
    first = false;
    write_finding(chunk, f, buf);
    if (chunk.size() >= (64u << 10)) {
      out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      chunk.clear();
    }
  }
  out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
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
