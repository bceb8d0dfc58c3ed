#pragma once
// Reporters: the linter's findings and diagnostics in every output format.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/evaluate.h"
#include "engine/registry.h"

namespace gpuguard::cli {

struct ReportContext {
  const engine::Registry* registry = nullptr;
  std::vector<std::string> files;  // the inputs, in order
  bool color = false;
  bool show_suppressed = false;
};

// `file:line:col: severity: message [rule-id]`, sorted, then a summary line.
void write_text(const engine::Result& result, const ReportContext& ctx, std::ostream& out);
// The stable JSON document of schemas/findings.schema.json.
void write_json(const engine::Result& result, const ReportContext& ctx, std::ostream& out);
// SARIF 2.1.0 with the rule catalog, regions and stable partial fingerprints.
void write_sarif(const engine::Result& result, const ReportContext& ctx, std::ostream& out);
// JUnit XML: a testsuite per file, a testcase per object, a failure per finding.
void write_junit(const engine::Result& result, const ReportContext& ctx, std::ostream& out);
// GitHub Actions workflow commands (::error file=…,line=…,col=…,title=…::message).
void write_github(const engine::Result& result, const ReportContext& ctx, std::ostream& out);
// wgpolicyk8s.io/v1alpha2 PolicyReport (per namespace) and ClusterPolicyReport, as YAML.
void write_policyreport(const engine::Result& result, const ReportContext& ctx, std::ostream& out);

// Writes `value` as json::dump(2) would inside a document, `depth` levels down: every line after
// the first indented by 2 × depth more spaces (a dump has raw newlines only between its tokens,
// strings escape theirs, so indenting after each newline is exact). `buf` is scratch space. The
// streaming JSON and SARIF writers use it to emit one finding at a time.
void write_nested(std::ostream& out, const engine::json& value, int depth, std::string& buf);

// The formats, for --format.
inline constexpr std::string_view kFormats[] = {"text", "json", "sarif", "junit", "github", "policyreport"};
void write_report(std::string_view format, const engine::Result& result, const ReportContext& ctx, std::ostream& out);

// "file:line:col" (or "file", or "<cluster>") of a finding.
[[nodiscard]] std::string location(const engine::Finding& f);
[[nodiscard]] std::string location(const engine::Diagnostic& d);
// "Deployment team-a/train", "PriorityClass high", "cluster".
[[nodiscard]] std::string object_label(const engine::ObjectRef& o);

}  // namespace gpuguard::cli
