// GitHub Actions workflow commands: annotations on the pull request's files.

#include "cli/output.h"

namespace gpuguard::cli {

namespace {

// The escaping of actions/toolkit's command.ts.
std::string escape_data(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string escape_property(const std::string& s) {
  std::string out;
  for (char c : escape_data(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

const char* command(engine::Severity s) {
  switch (s) {
    case engine::Severity::error: return "error";
    case engine::Severity::warning: return "warning";
    case engine::Severity::info: return "notice";
  }
  return "warning";
}

void emit(std::ostream& out, engine::Severity sev, const std::string& file, engine::Pos pos, const std::string& title,
          const std::string& message) {
  out << "::" << command(sev);
  std::string props;
  if (!file.empty()) props += "file=" + escape_property(file);
  if (pos.known()) props += ",line=" + std::to_string(pos.line) + ",col=" + std::to_string(pos.col);
  props += (props.empty() ? "" : ",") + std::string("title=") + escape_property(title);
  out << " " << props << "::" << escape_data(message) << "\n";
}

}  // namespace

void write_github(const engine::Result& result, const ReportContext&, std::ostream& out) {
  for (const auto& d : result.diagnostics) emit(out, d.severity, d.file, d.pos, "gpuguard: input error", d.message);
  for (const auto& f : result.findings) {
    if (f.suppressed) continue;
    std::string file = f.object.id != engine::kNoObject && f.object.source ? f.object.source->path : "";
    emit(out, f.severity, file, f.pos, f.rule, f.message);
  }
}

}  // namespace gpuguard::cli
