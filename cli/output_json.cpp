#include "cli/output.h"
#include "cli/version.h"

namespace gpuguard::cli {

using engine::json;

namespace {

// A JSON string as json::dump writes it (ensure_ascii off, invalid UTF-8 replaced): ASCII, most
// of what a report holds, is escaped here the way nlohmann escapes it; a string with other bytes
// goes through nlohmann's serializer, which checks their UTF-8.
void put_string(std::ostream& out, std::string_view s, std::string& buf) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) {
      buf = json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      return;
    }
  buf.clear();
  buf.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': buf += "\\\""; break;
      case '\\': buf += "\\\\"; break;
      case '\b': buf += "\\b"; break;
      case '\t': buf += "\\t"; break;
      case '\n': buf += "\\n"; break;
      case '\f': buf += "\\f"; break;
      case '\r': buf += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          buf += "\\u00";
          buf.push_back(kHex[(c >> 4) & 0xf]);
          buf.push_back(kHex[c & 0xf]);
        } else {
          buf.push_back(c);
        }
    }
  }
  buf.push_back('"');
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

// One member of an object written at `pad` (its keys in json's order: sorted), after the ones
// before it.
struct Members {
  std::ostream& out;
  std::string_view pad;
  bool first = true;
  void key(std::string_view k) {
    out << (first ? "{\n" : ",\n") << pad << '"' << k << "\": ";
    first = false;
  }
  void close(std::string_view outer_pad) { out << '\n' << outer_pad << '}'; }
};

// A finding, as json::dump(2) of {column, file, fix, line, message, object, pointer, rule,
// severity, suppressed} nested two levels deep, without building that object.
void write_finding(std::ostream& out, const engine::Finding& f, std::string& buf) {
  Members m{out, "      "};
  const bool located = f.object.id != engine::kNoObject;
  if (located && f.pos.known()) {
    m.key("column");
    out << f.pos.col;
  }
  if (located && f.object.source) {
    m.key("file");
    put_string(out, f.object.source->path, buf);
  }
  if (f.fix) {
    m.key("fix");
    write_nested(out, *f.fix, 3, buf);
  }
  if (located && f.pos.known()) {
    m.key("line");
    out << f.pos.line;
  }
  m.key("message");
  put_string(out, f.message, buf);
  if (located) {
    const engine::ObjectRef& o = f.object;
    m.key("object");
    Members obj{out, "        "};
    if (!o.api_version().empty()) {
      obj.key("apiVersion");
      put_string(out, o.api_version(), buf);
    }
    obj.key("document");
    out << o.document;
    if (!o.item_pointer().empty()) {
      obj.key("itemPointer");
      put_string(out, o.item_pointer(), buf);
    }
    if (!o.kind().empty()) {
      obj.key("kind");
      put_string(out, o.kind(), buf);
    }
    if (!o.name().empty()) {
      obj.key("name");
      put_string(out, o.name(), buf);
    }
    if (!o.namespace_().empty()) {
      obj.key("namespace");
      put_string(out, o.namespace_(), buf);
    }
    obj.close("      ");
    m.key("pointer");
    put_string(out, f.pointer, buf);
  }
  m.key("rule");
  put_string(out, f.rule, buf);
  m.key("severity");
  put_string(out, engine::to_string(f.severity), buf);
  if (f.suppressed) {
    m.key("suppressed");
    Members sup{out, "        "};
    sup.key("reason");
    put_string(out, f.suppression, buf);
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
  for (const auto& f : result.findings) {
    if (f.suppressed)
      ++suppressed;
    else
      ++counts[static_cast<int>(f.severity)];
    out << (first ? "[\n    " : ",\n    ");
    first = false;
    write_finding(out, f, buf);
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
