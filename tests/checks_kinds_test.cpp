// A rule reports only on objects of the kinds its `checks` names (or on any kind when it names
// "*" or no kind at all), and on the cluster as a whole only when it declares reports_scope. The webhook relies on it: with only the admitted object in focus, a rule
// that does not check the object's kind is not run at all (engine::Plan::reporting). Checked over
// every fixture and the shared corpus, as a partial and as a complete inventory.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "engine/evaluate.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

// The fixture's own config and schema directives (as the fixture driver reads them).
test::LintOptions options_of(const std::string& text, const std::string& file) {
  test::LintOptions o;
  o.file = file;
  json merged = json::object();
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    auto d = line.find("# gpuguard-test:");
    if (d == std::string::npos) continue;
    std::string rest = line.substr(d + 16);
    rest.erase(0, rest.find_first_not_of(" \t"));
    if (rest.rfind("schemas", 0) == 0) o.schemas = true;
    if (rest.rfind("config ", 0) == 0) {
      auto objs = test::load_objects(rest.substr(7), "directive");
      if (objs.size() == 1) merged.merge_patch(objs[0].body());
    }
  }
  if (!merged.empty()) o.config_yaml = merged.dump();
  return o;
}

std::string group_of(const std::string& api_version) {
  auto slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

// Every finding on an object names a kind its rule checks; returns how many were looked at.
// Rules seen reporting on the scope go into `scoped`.
size_t check_kinds(const std::string& text, const std::string& file, std::set<std::string>& scoped) {
  size_t n = 0;
  for (bool complete : {false, true}) {
    test::LintOptions o = options_of(text, file);
    o.complete = complete;
    engine::Result r = test::lint(text, o);
    for (const auto& f : r.findings) {
      const engine::Rule* rule = test::registry().find(f.rule);
      REQUIRE(rule);
      if (f.object.id == engine::kNoObject) {  // the scope: only a rule that says it may (its docs say so)
        CHECK_MESSAGE(rule->info().reports_scope, file << ": " << f.rule << " reports on the cluster as a whole, "
                                                       << "but its RuleInfo::reports_scope is false: " << f.message);
        scoped.insert(f.rule);
        continue;
      }
      if (f.object.kind().empty()) continue;  // a document that is not a Kubernetes object
      ++n;
      CHECK_MESSAGE(engine::Plan::may_report_on(rule->info(), group_of(f.object.api_version()), f.object.kind()),
                    file << ": " << f.rule << " reports on a " << f.object.api_version() << " " << f.object.kind()
                         << ", a kind its `checks` does not name: " << f.message);
    }
  }
  return n;
}

std::vector<fs::path> yaml_under(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && (e.path().extension() == ".yaml" || e.path().extension() == ".yml")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_SUITE("fixtures") {

TEST_CASE("every finding on an object is on a kind its rule checks (what the webhook's focus relies on)") {
  size_t findings = 0;
  std::set<std::string> scoped;
  for (const auto& p : yaml_under(test::source_dir() / "tests" / "rules"))
    findings += check_kinds(test::read_file(p), p.lexically_relative(test::source_dir()).string(), scoped);
  CHECK(findings > 100);
  // And a rule that declares scope findings has a fixture that shows one (the flag is not idle).
  for (const engine::Rule* rule : test::registry().rules())
    if (rule->info().reports_scope) CHECK_MESSAGE(scoped.count(rule->info().id), rule->info().id << " declares reports_scope and no fixture shows it");
  if (auto shared = test::shared_dir()) {
    size_t corpus = 0;
    for (const auto& p : yaml_under(*shared / "corpus")) corpus += check_kinds(test::read_file(p), p.string(), scoped);
    CHECK(corpus > 10);
  }
}

}  // TEST_SUITE
