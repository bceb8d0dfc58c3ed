#include <string>

#include "cli/output.h"

namespace gpuguard::cli {

using engine::Diagnostic;
using engine::Finding;
using engine::Severity;

namespace {

std::string pos_suffix(engine::Pos pos) {
  if (!pos.known()) return "";
  return ":" + std::to_string(pos.line) + ":" + std::to_string(pos.col);
}

const char* color_of(Severity s) {
  switch (s) {
    case Severity::error: return "\033[1;31m";
    case Severity::warning: return "\033[1;33m";
    case Severity::info: return "\033[1;36m";
  }
  return "";
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace

std::string location(const Finding& f) {
  if (f.object.id == engine::kNoObject) return "<cluster>";
  std::string file = f.object.source ? f.object.source->path : "<input>";
  return file + pos_suffix(f.pos);
}

std::string location(const Diagnostic& d) {
  return (d.file.empty() ? std::string("gpuguard") : d.file) + pos_suffix(d.pos);
}

std::string object_label(const engine::ObjectRef& o) {
  if (o.id == engine::kNoObject) return "cluster";
  if (o.kind().empty()) return "document " + std::to_string(o.document);
  return o.kind() + " " + (o.namespace_().empty() ? "" : o.namespace_() + "/") + (o.name().empty() ? "<unnamed>" : o.name());
}

void write_report(std::string_view format, const engine::Result& result, const ReportContext& ctx, std::ostream& out) {
  if (format == "json") write_json(result, ctx, out);
  else if (format == "sarif") write_sarif(result, ctx, out);
  else if (format == "junit") write_junit(result, ctx, out);
  else if (format == "github") write_github(result, ctx, out);
  else if (format == "policyreport") write_policyreport(result, ctx, out);
  else write_text(result, ctx, out);
}

void write_text(const engine::Result& result, const ReportContext& options, std::ostream& out) {
  const char* bold = options.color ? "\033[1m" : "";
  const char* dim = options.color ? "\033[2m" : "";
  const char* reset = options.color ? "\033[0m" : "";
  auto sev = [&](Severity s) {
    return options.color ? std::string(color_of(s)) + std::string(engine::to_string(s)) + reset
                         : std::string(engine::to_string(s));
  };
  for (const auto& d : result.diagnostics)
    out << bold << location(d) << reset << ": " << sev(d.severity) << ": " << d.message << "\n";
  size_t counts[3] = {0, 0, 0};
  size_t suppressed = 0;
  for (const auto& f : result.findings) {
    if (f.suppressed) {
      ++suppressed;
      if (!options.show_suppressed) continue;
    } else {
      ++counts[static_cast<int>(f.severity)];
    }
    out << bold << location(f) << reset << ": " << sev(f.severity) << ": " << f.message << " " << dim << "["
        << f.rule << "]" << reset;
    if (f.suppressed) out << " " << dim << "(suppressed: " << f.suppression << ")" << reset;
    out << "\n";
  }
  size_t input_errors = 0;
  for (const auto& d : result.diagnostics)
    if (d.severity == Severity::error) ++input_errors;
  out << plural(counts[2], "error", "errors") << ", " << plural(counts[1], "warning", "warnings") << ", "
      << counts[0] << " info in " << plural(result.objects, "object", "objects") << " ("
      << plural(options.files.size(), "file", "files") << ")";
  if (suppressed) out << "; " << suppressed << " suppressed";
  if (input_errors) out << "; " << plural(input_errors, "input error", "input errors");
  out << "\n";
}

}  // namespace gpuguard::cli
