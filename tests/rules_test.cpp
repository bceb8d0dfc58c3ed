// The fixture driver (design.md §3): tests/rules/<id>/{allowed,disallowed,mutated}/.
//
// - allowed/*.yaml: the rule finds nothing.
// - disallowed/*.yaml: the rule finds exactly what the `# expect: <id>` comments mark, line by
//   line (a line may list the id more than once); `# expect-scope: <id>` marks a finding about the
//   whole scope (no object).
// - mutated/<case>.in.yaml → <case>.out.yaml: the rule's fix turns the one into the other; the
//   result no longer fires; fixing it again changes nothing.
// Directives in a leading comment: `# gpuguard-test: complete`, `# gpuguard-test: config <yaml>`
// (a one-line flow mapping merged into the config, e.g. `{rules: {r: {params: {min: 1}}}}`).

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "engine/inventory.h"
#include "engine/load.h"
#include "engine/mutate.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

struct Fixture {
  std::string text;
  bool complete = false;
  bool schemas = false;                   // validate against ../shared/k8s-schemas
  std::string config;                     // .gpuguard.yaml text
  std::map<uint32_t, std::vector<std::string>> expected;  // line → rule ids
  std::vector<std::string> expected_scope;
};

std::string trim(std::string s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> split_ids(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    part = trim(part);
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

Fixture read_fixture(const fs::path& p) {
  Fixture f;
  f.text = test::read_file(p);
  std::stringstream ss(f.text);
  std::string line;
  uint32_t n = 0;
  std::string config_lines;
  while (std::getline(ss, line)) {
    ++n;
    auto d = line.find("# gpuguard-test:");
    if (d != std::string::npos) {
      std::string rest = trim(line.substr(d + 16));
      if (rest == "complete") f.complete = true;
      else if (rest == "schemas") f.schemas = true;
      else if (rest.rfind("config ", 0) == 0) config_lines += rest.substr(7) + "\n";
      else FAIL_CHECK(p.string() << ":" << n << ": unknown directive " << rest);
      continue;
    }
    auto e = line.find("# expect-scope:");
    if (e != std::string::npos) {
      for (auto& id : split_ids(line.substr(e + 15))) f.expected_scope.push_back(id);
      continue;
    }
    e = line.find("# expect:");
    if (e != std::string::npos)
      for (auto& id : split_ids(line.substr(e + 9))) f.expected[n].push_back(id);
  }
  f.config = config_lines;
  return f;
}

// Merges flow-mapping config lines into one config document.
std::string config_text(const std::string& lines) {
  if (lines.empty()) return "";
  json merged = json::object();
  std::stringstream ss(lines);
  std::string line;
  while (std::getline(ss, line)) {
    auto objs = test::load_objects(line, "directive");
    REQUIRE(objs.size() == 1);
    merged.merge_patch(objs[0].body());
  }
  return merged.dump();
}

std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

engine::Result lint_fixture(const Fixture& f, const std::string& rule, const std::string& name, bool fixes = true) {
  test::LintOptions o;
  o.fixes = fixes;
  o.complete = f.complete;
  o.schemas = f.schemas;
  o.only_rules = {rule};
  o.config_yaml = config_text(f.config);
  o.file = name;
  return test::lint(f.text, o);
}

fs::path rules_dir() { return test::source_dir() / "tests" / "rules"; }

}  // namespace

TEST_SUITE("fixtures") {

TEST_CASE("every rule has allowed and disallowed fixtures, and mutated ones when it has a fix") {
  for (const auto* r : test::registry().rules()) {
    const auto& id = r->info().id;
    CAPTURE(id);
    CHECK_MESSAGE(!yaml_files(rules_dir() / id / "allowed").empty(), "tests/rules/" << id << "/allowed/ is empty");
    CHECK_MESSAGE(!yaml_files(rules_dir() / id / "disallowed").empty(), "tests/rules/" << id << "/disallowed/ is empty");
    if (r->info().has_fix)
      CHECK_MESSAGE(!yaml_files(rules_dir() / id / "mutated").empty(), "tests/rules/" << id << "/mutated/ is empty");
  }
  // And no fixtures for rules that do not exist.
  for (const auto& e : fs::directory_iterator(rules_dir()))
    if (e.is_directory()) CHECK_MESSAGE(test::registry().find(e.path().filename().string()), "fixtures for unknown rule " << e.path());
}

TEST_CASE("allowed fixtures: the rule finds nothing") {
  for (const auto* r : test::registry().rules()) {
    const auto& id = r->info().id;
    for (const auto& p : yaml_files(rules_dir() / id / "allowed")) {
      const std::string name = fs::relative(p, test::source_dir()).string();
      CAPTURE(name);
      Fixture f = read_fixture(p);
      if (f.schemas && !test::shared_schemas()) {
        test::skip("../shared/k8s-schemas is not on this machine");
        continue;
      }
      CHECK_MESSAGE(f.expected.empty(), name << " is an allowed fixture with # expect markers");
      auto res = lint_fixture(f, id, name);
      for (const auto& d : res.diagnostics) FAIL_CHECK(name << ":" << d.pos.line << ": input error: " << d.message);
      for (const auto& fd : res.findings)
        if (!fd.suppressed) FAIL_CHECK(name << ":" << fd.pos.line << ": unexpected " << fd.rule << ": " << fd.message);
    }
  }
}

TEST_CASE("disallowed fixtures: exactly the marked findings, on the marked lines") {
  for (const auto* r : test::registry().rules()) {
    const auto& id = r->info().id;
    for (const auto& p : yaml_files(rules_dir() / id / "disallowed")) {
      const std::string name = fs::relative(p, test::source_dir()).string();
      CAPTURE(name);
      Fixture f = read_fixture(p);
      if (f.schemas && !test::shared_schemas()) {
        test::skip("../shared/k8s-schemas is not on this machine");
        continue;
      }
      CHECK_MESSAGE(!(f.expected.empty() && f.expected_scope.empty()), name << " has no # expect marker");
      auto res = lint_fixture(f, id, name);
      for (const auto& d : res.diagnostics) FAIL_CHECK(name << ":" << d.pos.line << ": input error: " << d.message);
      std::map<uint32_t, std::vector<std::string>> got;
      std::vector<std::string> got_scope;
      for (const auto& fd : res.findings) {
        if (fd.suppressed) continue;
        if (fd.object.id == engine::kNoObject) got_scope.push_back(fd.rule);
        else got[fd.pos.line].push_back(fd.rule);
        // Every finding explains itself and points into the object.
        CHECK_MESSAGE(!fd.message.empty(), name << ": empty message");
      }
      auto expected = f.expected;
      for (auto& [line, ids] : expected) std::sort(ids.begin(), ids.end());
      for (auto& [line, ids] : got) std::sort(ids.begin(), ids.end());
      std::sort(got_scope.begin(), got_scope.end());
      std::sort(f.expected_scope.begin(), f.expected_scope.end());
      for (const auto& [line, ids] : expected)
        if (got[line] != ids) {
          std::string msgs;
          for (const auto& fd : res.findings)
            if (fd.pos.line == line) msgs += "\n  got: " + fd.message;
          FAIL_CHECK(name << ":" << line << ": expected " << ids.size() << " × " << ids[0] << ", got " << got[line].size() << msgs);
        }
      for (const auto& [line, ids] : got)
        if (!expected.count(line) && !ids.empty()) {
          std::string msgs;
          for (const auto& fd : res.findings)
            if (fd.pos.line == line) msgs += "\n  got: " + fd.message;
          FAIL_CHECK(name << ":" << line << ": unexpected " << ids[0] << msgs);
        }
      CHECK(got_scope == f.expected_scope);
    }
  }
}

TEST_CASE("without fixes wanted (the validating webhook) a rule finds the same, and no finding carries a fix") {
  for (const auto* r : test::registry().rules()) {
    const auto& id = r->info().id;
    if (!r->info().has_fix) continue;
    size_t fixes = 0;
    std::vector<fs::path> files = yaml_files(rules_dir() / id / "disallowed");
    for (const auto& p : yaml_files(rules_dir() / id / "mutated"))
      if (p.string().ends_with(".in.yaml")) files.push_back(p);
    for (const auto& p : files) {
      const std::string name = fs::relative(p, test::source_dir()).string();
      CAPTURE(name);
      Fixture f = read_fixture(p);
      if (f.schemas && !test::shared_schemas()) continue;
      const engine::Result with = lint_fixture(f, id, name);
      const engine::Result without = lint_fixture(f, id, name, false);
      REQUIRE(with.findings.size() == without.findings.size());
      for (size_t i = 0; i < with.findings.size(); ++i) {
        const auto& a = with.findings[i];
        const auto& b = without.findings[i];
        CHECK(a.rule == b.rule);
        CHECK(a.message == b.message);
        CHECK(a.pointer == b.pointer);
        CHECK(a.pos == b.pos);
        CHECK(a.severity == b.severity);
        CHECK(a.suppressed == b.suppressed);
        CHECK_FALSE(b.fix.has_value());
        if (a.fix) ++fixes;
      }
    }
    CHECK_MESSAGE(fixes > 0, id << ": no fixture's finding carries a fix");
  }
}

TEST_CASE("mutated fixtures: the fix gives the expected object, settles, and silences the rule") {
  for (const auto* r : test::registry().rules()) {
    const auto& id = r->info().id;
    for (const auto& in : yaml_files(rules_dir() / id / "mutated")) {
      const std::string fname = in.filename().string();
      if (fname.size() < 8 || fname.substr(fname.size() - 8) != ".in.yaml") continue;
      const fs::path out = in.parent_path() / (fname.substr(0, fname.size() - 8) + ".out.yaml");
      const std::string name = fs::relative(in, test::source_dir()).string();
      CAPTURE(name);
      REQUIRE_MESSAGE(fs::exists(out), out << " is missing");
      Fixture f = read_fixture(in);
      engine::Config config = engine::default_config(test::registry());
      if (!f.config.empty()) {
        auto c = engine::load_config(config_text(f.config), "directive", test::registry());
        REQUIRE(c.has_value());
        config = std::move(*c);
      }
      auto inputs = test::load_objects(f.text, name);
      auto expected = test::load_objects(test::read_file(out), out.string());
      REQUIRE(inputs.size() == expected.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        // An object the fix leaves alone is context (a Namespace the fix reads), as in the webhook tests.
        if (inputs[i].body() == expected[i].body()) continue;
        engine::MutateOptions mo;
        mo.only_rules = {id};
        mo.complete = f.complete;
        mo.base = test::state_without(inputs, i, config, f.complete);
        auto m = engine::mutate(inputs[i], test::registry(), config, mo);
        CHECK(m.diagnostics.empty());
        CHECK_MESSAGE(m.object == expected[i].body(), "got:\n" << m.object.dump(2) << "\nexpected:\n" << expected[i].body().dump(2));
        CHECK_MESSAGE(!m.patch.empty(), name << ": the fix changed nothing");
        CHECK(inputs[i].body().patch(m.patch) == m.object);
        // Fixed point: mutating the result again changes nothing.
        engine::Object again = expected[i];
        auto m2 = engine::mutate(again, test::registry(), config, mo);
        CHECK_MESSAGE(m2.patch.empty(), name << ": not idempotent: " << m2.patch.dump());
      }
      // The result no longer fires.
      Fixture fo = read_fixture(out);
      fo.complete = f.complete;
      fo.config = f.config;
      auto res = lint_fixture(fo, id, out.string());
      for (const auto& fd : res.findings)
        if (!fd.suppressed) FAIL_CHECK(out.string() << ":" << fd.pos.line << ": still fires: " << fd.message);
    }
  }
}

TEST_CASE("messages that gather several quotas or LimitRanges of a namespace") {
  auto messages = [](const std::string& rule, const std::string& fixture) {
    test::LintOptions o;
    o.complete = true;
    o.only_rules = {rule};
    std::vector<std::string> out;
    for (const auto& f : test::lint(test::read_file(rules_dir() / rule / "disallowed" / fixture), o).findings)
      out.push_back(f.message);
    return out;
  };
  auto quota = messages("namespace-gpu-quota-missing", "partial-caps.yaml");
  REQUIRE(quota.size() == 1);
  CHECK(quota[0].find("caps requests.nvidia.com/gpu:") != std::string::npos);  // the MIG slices are capped
  CHECK(quota[0].find("(ResourceQuota ignored sets only `limits.nvidia.com/gpu`, which quota ignores)") != std::string::npos);
  auto lr = messages("limitrange-gpu-default-injection", "two-limitranges.yaml");
  REQUIRE(lr.size() == 4);
  const std::string pod = *std::find_if(lr.begin(), lr.end(), [](const std::string& m) { return m.find("container \"proxy\"") != std::string::npos; });
  CHECK(pod.find("LimitRange team-a/first (the first of 2 that default nvidia.com/gpu) (default nvidia.com/gpu: 1)") == 0);
  CHECK(std::count_if(lr.begin(), lr.end(), [](const std::string& m) { return m.find("in namespace team-b") != std::string::npos; }) == 1);
}

TEST_CASE("gpu-request-limit-mismatch shows a quantity past int64 as written, not capped") {
  test::LintOptions o;
  o.only_rules = {"gpu-request-limit-mismatch"};
  auto messages = [&](const std::string& resources) {
    std::vector<std::string> out;
    for (const auto& f : test::lint("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                                    "  - name: c\n    image: i\n    resources: " + resources + "\n", o).findings)
      out.push_back(f.message);
    return out;
  };
  auto m = messages("{requests: {nvidia.com/gpu: \"1e19\"}}");
  REQUIRE(m.size() == 1);
  CHECK(m[0].find("requests nvidia.com/gpu: 1e19 without a limit") != std::string::npos);
  CHECK(m[0].find("set limits.nvidia.com/gpu to 1e19,") != std::string::npos);
  m = messages("{requests: {nvidia.com/gpu: 20000000000000000000}, limits: {nvidia.com/gpu: 2}}");
  REQUIRE(m.size() == 1);
  CHECK(m[0].find("request 20000000000000000000 differs from its limit 2;") != std::string::npos);
  m = messages("{requests: {nvidia.com/gpu: 9223372036854775806}}");  // in range: canonical
  REQUIRE(m.size() == 1);
  CHECK(m[0].find("set limits.nvidia.com/gpu to 9223372036854775806,") != std::string::npos);
}

TEST_CASE("limitrange-gpu-default-injection names the first three affected workloads on the LimitRange") {
  std::string yaml =
      "apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: team-a}\n"
      "spec: {limits: [{type: Container, default: {nvidia.com/gpu: 1}}]}\n";
  for (int i = 0; i < 5; ++i)
    yaml += "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p" + std::to_string(i) +
            ", namespace: team-a}\nspec: {containers: [{name: app, image: x}, {name: proxy, image: x}]}\n";
  test::LintOptions o;
  o.complete = true;
  o.only_rules = {"limitrange-gpu-default-injection"};
  const auto r = test::lint(yaml, o);
  REQUIRE(r.findings.size() == 6);  // the five pods and the LimitRange
  const auto lr = std::find_if(r.findings.begin(), r.findings.end(), [](const auto& f) { return f.object.kind() == "LimitRange"; });
  REQUIRE(lr != r.findings.end());
  CHECK(lr->message.ends_with("; in this namespace: Pod team-a/p0, Pod team-a/p1 and Pod team-a/p2 and 2 more"));
}

TEST_CASE("each rule's documented examples: the bad one fires, the good one does not") {
  for (const auto* r : test::registry().rules()) {
    const auto& info = r->info();
    CAPTURE(info.id);
    test::LintOptions o;
    o.complete = info.needs_complete;
    o.only_rules = {info.id};
    o.schemas = info.example_bad.rfind("# gpuguard lint --schemas", 0) == 0;
    if (o.schemas && !test::shared_schemas()) continue;
    auto bad = test::lint(info.example_bad, o);
    CHECK(bad.diagnostics.empty());
    CHECK_MESSAGE(!bad.findings.empty(), info.id << ": example_bad does not fire");
    auto good = test::lint(info.example_good, o);
    CHECK(good.diagnostics.empty());
    CHECK_MESSAGE(good.findings.empty(), info.id << ": example_good fires");
  }
}

TEST_CASE("kueue-cohort-cycle and volcano-queue-order-invalid keep their messages short on a long loop or a wide parent") {
  // A loop of 2,000 Cohorts: each of the 2,000 findings names the loop by 3 members, its size and the last.
  std::string yaml;
  constexpr int kLoop = 2000;
  for (int i = 0; i < kLoop; ++i)
    yaml += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c" + std::to_string(i) +
            "}\nspec: {parentName: c" + std::to_string((i + 1) % kLoop) + "}\n";
  test::LintOptions o;
  o.only_rules = {"kueue-cohort-cycle"};
  auto r = test::lint(yaml, o);
  REQUIRE(r.findings.size() == kLoop);
  for (const auto& f : r.findings) CHECK(f.message.size() < 600);
  CHECK(r.findings.front().message.find("c0 → c1 → c2 → … (2000 cohorts) → c1999 → c0") != std::string::npos);
  // 3,000 children of one Volcano queue whose summed deserved exceeds the parent's: one finding,
  // naming five of them.
  yaml = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: p}\nspec: {deserved: {nvidia.com/gpu: 1}}\n";
  for (int i = 0; i < 3000; ++i)
    yaml += "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q" + std::to_string(i) +
            "}\nspec: {parent: p, deserved: {nvidia.com/gpu: 1}}\n";
  o.only_rules = {"volcano-queue-order-invalid"};
  r = test::lint(yaml, o);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].message.size() < 600);
  CHECK(r.findings[0].message.find("and 2995 more) together have deserved nvidia.com/gpu: 3000") != std::string::npos);
}

}  // TEST_SUITE
