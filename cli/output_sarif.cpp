// SARIF 2.1.0 (OASIS), as GitHub code scanning and other viewers read it.

#include <openssl/evp.h>

#include <filesystem>

#include "cli/output.h"
#include "cli/version.h"
#include "rules/docs.h"

namespace gpuguard::cli {

using engine::json;

namespace {

std::string sarif_level(engine::Severity s) {
  switch (s) {
    case engine::Severity::error: return "error";
    case engine::Severity::warning: return "warning";
    case engine::Severity::info: return "note";
  }
  return "warning";
}

// "gpu-request-limit-mismatch" → "GpuRequestLimitMismatch"
std::string pascal(const std::string& id) {
  std::string out;
  bool up = true;
  for (char c : id) {
    if (c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

// RFC 3986 percent-encoding of a path (keeps / and unreserved characters).
std::string uri_path(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') out += static_cast<char>(c);
    else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

json artifact_location(const std::string& file) {
  if (file == "<stdin>") return json{{"uri", "stdin"}};
  std::filesystem::path p(file);
  if (p.is_absolute()) return json{{"uri", "file://" + uri_path(p.lexically_normal().string())}};
  return json{{"uri", uri_path(p.lexically_normal().string())}, {"uriBaseId", "%SRCROOT%"}};
}

json region(engine::Pos pos) { return json{{"startLine", pos.line}, {"startColumn", pos.col}}; }


}  // namespace

void write_sarif(const engine::Result& result, const ReportContext& ctx, std::ostream& out) {
  json rules = json::array();
  std::map<std::string, size_t> index;
  for (const auto* r : ctx.registry->rules()) {
    const auto& i = r->info();
    index[i.id] = rules.size();
    const std::string full = i.full_rationale();
    rules.push_back({
        {"id", i.id},
        {"name", pascal(i.id)},
        {"shortDescription", {{"text", i.summary + "."}}},
        {"fullDescription", {{"text", full}}},
        {"help", {{"text", i.remediation}, {"markdown", "**Why.** " + full + "\n\n**What to do.** " + i.remediation}}},
        {"helpUri", rules::rule_help_uri(i)},
        {"defaultConfiguration", {{"level", sarif_level(i.severity)}}},
        {"properties", {{"tags", json::array({"kubernetes", "gpu", i.category})}, {"seedSection", i.seed}}},
    });
  }
  json notifications = json::array();
  bool ok = true;
  for (const auto& d : result.diagnostics) {
    json n = {{"level", sarif_level(d.severity)}, {"message", {{"text", d.message}}}};
    if (!d.file.empty()) {
      json loc = {{"physicalLocation", {{"artifactLocation", artifact_location(d.file)}}}};
      if (d.pos.known()) loc["physicalLocation"]["region"] = region(d.pos);
      n["locations"] = json::array({loc});
    }
    notifications.push_back(std::move(n));
    ok = ok && d.severity != engine::Severity::error;
  }
  std::error_code ec;
  std::string cwd = std::filesystem::current_path(ec).string();
  if (cwd.empty() || cwd.back() != '/') cwd += '/';
  const json tool = {{"driver",
                      {{"name", "gpuguard"},
                       {"version", std::string(kVersion)},
                       {"semanticVersion", std::string(kVersion)},
                       {"informationUri", "https://github.com/gpuguard/gpuguard"},
                       {"rules", std::move(rules)}}}};
  const json invocations = json::array({{{"executionSuccessful", ok}, {"toolExecutionNotifications", std::move(notifications)}}});
  const json base_ids = {{"%SRCROOT%", {{"uri", "file://" + uri_path(cwd)}}}};

  // json::dump(2) of {"$schema", "runs": [{columnKind, invocations, originalUriBaseIds, results,
  // tool}], "version"} (nlohmann keeps keys sorted), written a result at a time.
  std::string buf;
  out << "{\n  \"$schema\": ";
  write_nested(out, json("https://json.schemastore.org/sarif-2.1.0.json"), 1, buf);
  out << ",\n  \"runs\": [\n    {\n      \"columnKind\": ";
  write_nested(out, json("unicodeCodePoints"), 3, buf);
  out << ",\n      \"invocations\": ";
  write_nested(out, invocations, 3, buf);
  out << ",\n      \"originalUriBaseIds\": ";
  write_nested(out, base_ids, 3, buf);
  out << ",\n      \"results\": ";
  if (result.findings.empty()) out << "[]";
  bool first = true;
  for (const auto& f : result.findings) {
    json r = {{"ruleId", f.rule}, {"level", sarif_level(f.severity)}, {"message", {{"text", f.message}}}};
    if (auto it = index.find(f.rule); it != index.end()) r["ruleIndex"] = it->second;
    std::string identity = f.rule + '\n' + object_label(f.object) + '\n' + f.pointer;
    if (f.object.id != engine::kNoObject && f.object.source) {
      json loc = {{"physicalLocation", {{"artifactLocation", artifact_location(f.object.source->path)}}}};
      if (f.pos.known()) loc["physicalLocation"]["region"] = region(f.pos);
      loc["logicalLocations"] = json::array({{{"fullyQualifiedName", object_label(f.object) + (f.pointer.empty() ? "" : "#" + f.pointer)},
                                              {"kind", "object"}}});
      r["locations"] = json::array({loc});
      identity += '\n' + f.object.source->path;
    }
    // Stable across runs and unrelated edits: no line numbers, only what the finding is about.
    r["partialFingerprints"] = {{"gpuguard/v1", sha256_hex(identity).substr(0, 32)}};
    if (f.suppressed) r["suppressions"] = json::array({{{"kind", "inSource"}, {"justification", f.suppression}}});
    out << (first ? "[\n        " : ",\n        ");
    first = false;
    write_nested(out, r, 4, buf);
  }
  if (!result.findings.empty()) out << "\n      ]";
  out << ",\n      \"tool\": ";
  write_nested(out, tool, 3, buf);
  out << "\n    }\n  ],\n  \"version\": ";
  write_nested(out, json("2.1.0"), 1, buf);
  out << "\n}\n";
}

}  // namespace gpuguard::cli
