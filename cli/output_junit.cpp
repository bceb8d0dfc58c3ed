// JUnit XML, as CI systems show test results: a testsuite per file, a testcase per object, a
// failure per finding; input errors are <error>s.

#include <map>

#include "cli/output.h"

namespace gpuguard::cli {

namespace {

std::string xml(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') out += "?";
        else out += static_cast<char>(c);
    }
  }
  return out;
}

struct Case {
  std::string name;
  std::vector<const engine::Finding*> findings;
};

struct Suite {
  std::vector<Case> cases;
  std::map<std::pair<uint32_t, std::string>, size_t> by_object;  // (document, label) → case
  std::vector<const engine::Diagnostic*> errors;
};

}  // namespace

void write_junit(const engine::Result& result, const ReportContext& ctx, std::ostream& out) {
  std::map<std::string, Suite> suites;
  std::vector<std::string> order = ctx.files;
  auto suite = [&](const std::string& file) -> Suite& {
    if (!suites.count(file) && std::find(order.begin(), order.end(), file) == order.end()) order.push_back(file);
    return suites[file];
  };
  auto case_of = [&](Suite& s, const engine::ObjectRef& o) -> Case& {
    auto key = std::make_pair(o.document, object_label(o) + o.item_pointer());
    auto it = s.by_object.find(key);
    if (it != s.by_object.end()) return s.cases[it->second];
    s.by_object[key] = s.cases.size();
    s.cases.push_back({object_label(o), {}});
    return s.cases.back();
  };
  for (const auto& o : result.checked) case_of(suite(o.source ? o.source->path : "<input>"), o);
  for (const auto& f : result.findings) {
    if (f.suppressed) continue;
    const std::string file = f.object.id == engine::kNoObject ? "<cluster>" : (f.object.source ? f.object.source->path : "<input>");
    case_of(suite(file), f.object).findings.push_back(&f);
  }
  for (const auto& d : result.diagnostics) suite(d.file.empty() ? "gpuguard" : d.file).errors.push_back(&d);

  size_t tests = 0, failures = 0, errors = 0;
  for (const auto& [file, s] : suites) {
    tests += s.cases.size() + s.errors.size();
    for (const auto& c : s.cases) failures += c.findings.empty() ? 0 : 1;
    errors += s.errors.size();
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"gpuguard\" tests=\"" << tests << "\" failures=\"" << failures << "\" errors=\"" << errors << "\">\n";
  for (const auto& file : order) {
    auto it = suites.find(file);
    if (it == suites.end()) {
      out << "  <testsuite name=\"" << xml(file) << "\" tests=\"0\" failures=\"0\" errors=\"0\"/>\n";
      continue;
    }
    const Suite& s = it->second;
    size_t f = 0;
    for (const auto& c : s.cases) f += c.findings.empty() ? 0 : 1;
    out << "  <testsuite name=\"" << xml(file) << "\" tests=\"" << s.cases.size() + s.errors.size() << "\" failures=\"" << f
        << "\" errors=\"" << s.errors.size() << "\">\n";
    for (const auto* d : s.errors) {
      out << "    <testcase name=\"load\" classname=\"" << xml(file) << "\">\n      <error type=\"input\" message=\"" << xml(d->message)
          << "\">" << xml(location(*d) + ": " + d->message) << "</error>\n    </testcase>\n";
    }
    for (const auto& c : s.cases) {
      out << "    <testcase name=\"" << xml(c.name) << "\" classname=\"" << xml(file) << "\"";
      if (c.findings.empty()) {
        out << "/>\n";
        continue;
      }
      out << ">\n";
      for (const auto* fd : c.findings)
        out << "      <failure type=\"" << xml(fd->rule) << "\" message=\"" << xml(fd->message) << "\">"
            << xml(location(*fd) + ": " + std::string(engine::to_string(fd->severity)) + ": " + fd->message + " [" + fd->rule + "]")
            << "</failure>\n";
      out << "    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
}

}  // namespace gpuguard::cli
