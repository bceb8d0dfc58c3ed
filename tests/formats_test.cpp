// The CI output formats, each checked with a real consumer: the SARIF multitool, Python's XML
// parser, GitHub's command syntax, the PolicyReport CRD schema (valijson).

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "engine/json.h"
#include "tests/support/schema.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

fs::path multitool() {
  return test::source_dir() / "build" / "tools" / "node_modules" / "@microsoft" / "sarif-multitool-linux" / "Sarif.Multitool";
}

// A working copy of manifests with findings of every severity, linted with relative paths.
struct Workspace {
  test::TempDir dir;
  Workspace() {
    test::write_file(dir.path() / "deploy" / "pod.yaml",
                     "apiVersion: v1\nkind: Pod\nmetadata: {name: train, namespace: ml}\nspec:\n  containers:\n"
                     "  - name: c\n    image: x\n    resources: {requests: {nvidia.com/gpu: 1}}\n  priorityClassName: only\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n");
    test::write_file(dir.path() / "deploy" / "quota.yaml",
                     "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: ml}\nspec:\n  hard:\n"
                     "    limits.nvidia.com/gpu: 4  # a comment, a comma, and a\n");
    test::write_file(dir.path() / "deploy" / "classes.yaml",
                     "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: only}\nvalue: 1\n");
    test::write_file(dir.path() / "deploy" / "suppressed.yaml",
                     "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: legacy\n  namespace: ml\n  annotations:\n"
                     "    gpuguard.io/ignore: quota-gpu-key-ignored\n    gpuguard.io/ignore-reason: migrating\n"
                     "spec: {hard: {nvidia.com/gpu: 2}}\n");
    test::write_file(dir.path() / "deploy" / "broken.yaml", "a: [1\n");
  }
  test::Run lint(const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"lint", "--no-config", "--complete"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("deploy");
    return test::run(args, "", dir.path());
  }
};

}  // namespace

TEST_SUITE("formats") {

TEST_CASE("SARIF 2.1.0: valid for sarif-multitool, the full rule catalog, regions, fingerprints") {
  Workspace ws;
  auto r = ws.lint({"--format", "sarif"});
  CHECK(r.exit_code == 2);  // broken.yaml
  json doc = json::parse(r.out);
  CHECK(doc["version"] == json("2.1.0"));
  const json& run = doc["runs"][0];
  CHECK(run["tool"]["driver"]["rules"].size() == test::registry().rules().size());
  for (const auto& rule : run["tool"]["driver"]["rules"]) {
    CHECK(rule["shortDescription"]["text"].is_string());
    CHECK(rule["fullDescription"]["text"].is_string());
    CHECK(rule["help"]["markdown"].is_string());
    CHECK(rule["helpUri"].get<std::string>().find("/rules/") != std::string::npos);
    CHECK(rule["defaultConfiguration"]["level"].is_string());
  }
  std::set<std::string> rules_seen;
  for (const auto& res : run["results"]) {
    rules_seen.insert(res["ruleId"]);
    CHECK(run["tool"]["driver"]["rules"][res["ruleIndex"].get<size_t>()]["id"] == res["ruleId"]);
    CHECK(res["partialFingerprints"]["gpuguard/v1"].get<std::string>().size() == 32);
    if (res.contains("locations")) {
      const json& pl = res["locations"][0]["physicalLocation"];
      CHECK(pl["artifactLocation"]["uriBaseId"] == json("%SRCROOT%"));
      CHECK(pl["region"]["startLine"].get<int>() >= 1);
    }
  }
  CHECK(rules_seen.count("gpu-request-limit-mismatch"));
  CHECK(rules_seen.count("priority-class-count"));
  CHECK(run["invocations"][0]["executionSuccessful"] == json(false));
  CHECK(run["invocations"][0]["toolExecutionNotifications"].size() == 1);
  bool suppressed = false;
  for (const auto& res : run["results"]) suppressed = suppressed || res.contains("suppressions");
  CHECK(suppressed);

  if (!fs::exists(multitool())) {
    test::skip("sarif-multitool is not installed (make test runs scripts/test-tools.sh)");
    return;
  }
  test::write_file(ws.dir.path() / "out.sarif", r.out);
  auto v = test::run_command({multitool().string(), "validate", "--level", "Error;Warning;Note", "-o",
                              (ws.dir.path() / "validation.sarif").string(), (ws.dir.path() / "out.sarif").string()});
  REQUIRE_MESSAGE(v.exit_code == 0, v.out << v.err);
  json report = json::parse(test::read_file(ws.dir.path() / "validation.sarif"));
  // Notes that do not apply to a manifest linter (documented in the README): message arguments
  // (our messages are composed, not templated), version-control provenance, reachable URIs (the
  // machine is offline), conventional rule ids (ours are names, like kube-linter's), code
  // snippets and context regions (the linter keeps positions, not source text).
  const std::set<std::string> not_applicable = {"SARIF2002", "SARIF2003", "SARIF2006", "SARIF2009", "SARIF2010", "SARIF2011"};
  for (const auto& res : report["runs"][0]["results"]) {
    CAPTURE(res.dump());
    CHECK(res["level"] == json("note"));
    CHECK(not_applicable.count(res["ruleId"].get<std::string>()));
  }
}

TEST_CASE("SARIF fingerprints are stable across runs and unrelated edits") {
  Workspace ws;
  auto fingerprints = [&] {
    json doc = json::parse(ws.lint({"--format", "sarif"}).out);
    std::map<std::string, std::string> out;  // fingerprint → rule
    for (const auto& r : doc["runs"][0]["results"]) out[r["partialFingerprints"]["gpuguard/v1"]] = r["ruleId"];
    return out;
  };
  auto first = fingerprints();
  CHECK(fingerprints() == first);
  // Lines move, the findings do not change: the fingerprints stay.
  std::string pod = test::read_file(ws.dir.path() / "deploy" / "pod.yaml");
  test::write_file(ws.dir.path() / "deploy" / "pod.yaml", "# a comment\n# another\n" + pod);
  CHECK(fingerprints() == first);
}

TEST_CASE("JUnit: a testsuite per file, a testcase per object, a failure per finding (Python's XML parser)") {
  Workspace ws;
  auto r = ws.lint({"--format", "junit"});
  test::write_file(ws.dir.path() / "out.xml", r.out);
  auto py = test::run_command({"/usr/bin/python3", "-c", R"(
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
for s in root.findall("testsuite"):
    cases = s.findall("testcase")
    assert int(s.get("tests")) == len(cases), s.get("name")
    print(s.get("name"), len(cases), sum(len(c.findall("failure")) for c in cases), sum(len(c.findall("error")) for c in cases))
)",
                               (ws.dir.path() / "out.xml").string()});
  REQUIRE_MESSAGE(py.exit_code == 0, py.err);
  CHECK(py.out.find("deploy/pod.yaml 1 4 0") != std::string::npos);  // request without limit, toleration, no GPU quota in ml, no DCGM exporter
  CHECK(py.out.find("deploy/quota.yaml 1 1 0") != std::string::npos);
  CHECK(py.out.find("deploy/suppressed.yaml 1 0 0") != std::string::npos);
  CHECK(py.out.find("deploy/broken.yaml 1 0 1") != std::string::npos);
  CHECK(py.out.find("deploy/classes.yaml 1 1 0") != std::string::npos);
}

TEST_CASE("GitHub workflow commands, escaped as actions/toolkit escapes them") {
  Workspace ws;
  auto r = ws.lint({"--format", "github"});
  std::regex line(R"(^::(error|warning|notice) (file=[^,:]+,line=\d+,col=\d+,)?title=[^:]+::.+$)");
  std::stringstream ss(r.out);
  std::string l;
  size_t n = 0;
  while (std::getline(ss, l)) {
    CAPTURE(l);
    CHECK(std::regex_match(l, line));
    ++n;
  }
  CHECK(n >= 5);
  CHECK(r.out.find("::error file=deploy/pod.yaml,line=8,col=28,title=gpu-request-limit-mismatch::") != std::string::npos);
  CHECK(r.out.find("::error file=deploy/broken.yaml,line=2,col=1,title=gpuguard%3A input error::") != std::string::npos);
  CHECK(r.out.find("suppressed") == std::string::npos);
}

TEST_CASE("PolicyReports: valid for the wgpolicyk8s.io CRDs, one per namespace and one for the cluster") {
  auto shared = test::shared_dir();
  if (!shared) {
    test::skip("../shared (CRD schemas) is not on this machine");
    return;
  }
  auto crd_schema = [&](const char* file) {
    auto objs = test::load_objects(test::read_file(*shared / "k8s-schemas" / "crds" / file), file);
    REQUIRE(objs.size() == 1);
    for (const auto& v : objs[0].body()["spec"]["versions"])
      if (v["name"] == json("v1alpha2")) return v["schema"]["openAPIV3Schema"];
    FAIL("no v1alpha2 in " << file);
    return json();
  };
  const json namespaced = crd_schema("wgpolicyk8s.io_policyreports.yaml");
  const json cluster = crd_schema("wgpolicyk8s.io_clusterpolicyreports.yaml");
  Workspace ws;
  auto r = ws.lint({"--format", "policyreport"});
  auto docs = test::load_objects(r.out, "report.yaml");
  REQUIRE(docs.size() == 2);
  std::set<std::string> kinds;
  for (const auto& d : docs) {
    CAPTURE(d.body().dump(2));
    kinds.insert(d.gvk.kind);
    CHECK(d.api_version == "wgpolicyk8s.io/v1alpha2");
    for (const auto& problem : test::validate(d.gvk.kind == "PolicyReport" ? namespaced : cluster, d.body())) FAIL_CHECK(problem);
  }
  CHECK(kinds == std::set<std::string>{"PolicyReport", "ClusterPolicyReport"});
  const auto& ml = docs[0].gvk.kind == "PolicyReport" ? docs[0] : docs[1];
  CHECK(ml.namespace_ == "ml");
  CHECK(ml.body()["summary"]["fail"] == json(1));
  CHECK(ml.body()["summary"]["skip"] == json(1));
}

TEST_CASE("the JSON report is byte for byte nlohmann's dump(2) of itself, whatever the strings hold") {
  // The writer streams findings without building the document: it must escape exactly as
  // nlohmann does (quotes, backslashes, every control character, UTF-8 kept), sort keys as
  // nlohmann's objects do, and nest fixes and suppressions the same way. (Invalid UTF-8 cannot
  // reach a report: the YAML parser refuses it.)
  test::TempDir dir;
  std::string odd = "q\"b\\s/";
  for (int c = 1; c < 0x20; ++c) odd.push_back(static_cast<char>(c));
  odd += "\x7f";
  std::string quoted;  // a YAML double-quoted scalar holding `odd`, then é and €
  for (unsigned char c : odd) {
    char esc[8];
    if (c < 0x20 || c == 0x7f) std::snprintf(esc, sizeof esc, "\\x%02x", c);
    else if (c == '"' || c == '\\') std::snprintf(esc, sizeof esc, "\\%c", c);
    else std::snprintf(esc, sizeof esc, "%c", c);
    quoted += esc;
  }
  quoted += "\xc3\xa9\xe2\x82\xac";
  test::write_file(dir.path() / "odd.yaml",
                   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: \"" + quoted + "\"\n  namespace: \"" + quoted +
                       "\"\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: \"" + quoted +
                       "\"\n        image: x\n        resources: {limits: {nvidia.com/gpu: 1}}\n"
                       "---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: legacy\n  namespace: ml\n  annotations:\n"
                       "    gpuguard.io/ignore: quota-gpu-key-ignored\n    gpuguard.io/ignore-reason: \"" + quoted + "\"\n"
                       "spec: {hard: {nvidia.com/gpu: 2}}\n"
                       "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: ml}\n"
                       "  spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
  auto r = test::run({"lint", "--no-config", "--complete", "--show-suppressed", "--format", "json", "odd.yaml"}, "", dir.path());
  REQUIRE(r.exit_code <= 1);
  const json doc = json::parse(r.out, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(r.out == doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  bool fix = false, suppressed = false, item = false, escaped = false;
  for (const auto& f : doc["findings"]) {
    fix = fix || f.contains("fix");
    suppressed = suppressed || f.contains("suppressed");
    item = item || (f.contains("object") && f["object"].contains("itemPointer"));
    escaped = escaped || f.value("message", "").find("q\"b\\s/\x01") != std::string::npos;
  }
  CHECK(fix);
  CHECK(suppressed);
  CHECK(item);
  CHECK(escaped);
}

TEST_CASE("several formats in one run: one on stdout, the others to files") {
  Workspace ws;
  auto r = ws.lint({"--format", "sarif=out.sarif", "--format", "junit=out.xml", "--format", "text"});
  CHECK(r.out.find("[gpu-request-limit-mismatch]") != std::string::npos);
  CHECK(json::parse(test::read_file(ws.dir.path() / "out.sarif"))["version"] == json("2.1.0"));
  CHECK(test::read_file(ws.dir.path() / "out.xml").rfind("<?xml", 0) == 0);
  CHECK(ws.lint({"--format", "sarif", "--format", "json"}).exit_code == 2);   // two on stdout
  CHECK(ws.lint({"--format", "yaml"}).exit_code == 2);                        // unknown
  CHECK(ws.lint({"--format", "sarif="}).exit_code == 2);                      // no file
}

}  // TEST_SUITE
