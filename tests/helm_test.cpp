// Helm charts and Kustomize folders as lint input, with the real helm (build/tools, from
// scripts/test-tools.sh) and kubectl: rendering, values passthrough, a missing tool, a template
// error, findings placed on the template line (or the object's first line) in every format, the
// pre-commit case (a staged template stands for its chart), gpuguard's own chart and the charts
// of ../shared/charts.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "engine/json.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

fs::path helm() { return test::source_dir() / "build" / "tools" / "helm"; }

// kubectl on PATH or in build/tools; "" when there is none.
std::string kubectl() {
  const fs::path tools = test::source_dir() / "build" / "tools" / "kubectl";
  if (fs::exists(tools)) return tools.string();
  if (test::run_command({"kubectl", "version", "--client"}).exit_code == 0) return "kubectl";
  return "";
}

// helm wants writable cache and config folders; the run's environment has HOME.
std::vector<std::string> lint_argv(const fs::path& home, std::vector<std::string> args) {
  std::vector<std::string> argv = {"env", "HOME=" + home.string(), "HELM_CACHE_HOME=" + (home / "cache").string(),
                                   "HELM_CONFIG_HOME=" + (home / "config").string(), "HELM_DATA_HOME=" + (home / "data").string(),
                                   test::binary().string(), "lint", "--no-config"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// A chart whose pod's GPU limit is written in the template (an exact line) and whose second pod
// takes its resources from values (toYaml: no template line holds the key).
void write_chart(const fs::path& dir) {
  test::write_file(dir / "Chart.yaml", "apiVersion: v2\nname: gpu-app\nversion: 0.1.0\n");
  test::write_file(dir / "values.yaml", "gpus: 1\nextra: false\nresources:\n  requests:\n    nvidia.com/gpu: 1\n");
  test::write_file(dir / "templates" / "_helpers.tpl", "{{- define \"app.name\" -}}{{ .Release.Name }}-app{{- end }}\n");
  // Line 10 holds the request key the finding is about.
  test::write_file(dir / "templates" / "pod.yaml",
                   "apiVersion: v1\n"                                     // 1
                   "kind: Pod\n"                                          // 2
                   "metadata:\n"                                          // 3
                   "  name: {{ include \"app.name\" . }}\n"               // 4
                   "spec:\n"                                              // 5
                   "  containers:\n"                                      // 6
                   "  - name: main\n"                                     // 7
                   "    resources:\n"                                     // 8
                   "      requests:\n"                                    // 9
                   "        nvidia.com/gpu: {{ .Values.gpus }}\n");       // 10
  test::write_file(dir / "templates" / "other.yaml",
                   "# a second pod, its resources from values\n"          // 1
                   "apiVersion: v1\n"                                     // 2
                   "kind: Pod\n"                                          // 3
                   "metadata:\n"                                          // 4
                   "  name: other\n"                                      // 5
                   "spec:\n"                                              // 6
                   "  containers:\n"                                      // 7
                   "  - name: main\n"                                     // 8
                   "    resources:\n"                                     // 9
                   "      {{- toYaml .Values.resources | nindent 6 }}\n"  // 10
                   "{{- if .Values.extra }}\n"                            // 11
                   "---\n"                                                // 12
                   "apiVersion: v1\n"                                     // 13
                   "kind: ResourceQuota\n"                                // 14
                   "metadata: {name: q}\n"                                // 15
                   "spec:\n"                                              // 16
                   "  hard:\n"                                            // 17
                   "    limits.nvidia.com/gpu: {{ .Values.gpus }}\n"      // 18
                   "{{- end }}\n");
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("a chart is rendered with helm template; findings name the template line, else the object's first line") {
  if (!fs::exists(helm())) {
    test::skip("helm is not installed (make test runs scripts/test-tools.sh)");
    return;
  }
  test::TempDir tmp;
  const fs::path chart = tmp.path() / "chart";
  write_chart(chart);
  auto r = test::run_command(lint_argv(tmp.path(), {"--helm", helm().string(), chart.string()}), "", tmp.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  // The literal key on line 10 of pod.yaml; the column of the key.
  const std::string pod = (chart / "templates" / "pod.yaml").lexically_relative(tmp.path()).string();
  CHECK(has(r.out, pod + ":10:9: error:"));
  CHECK(std::regex_search(r.out, std::regex(R"(pod\.yaml:10:9: error: .*\(rendered at line \d+ of the helm template output\) \[gpu-request-limit-mismatch\])")));
  // toYaml: the key is in values.yaml, so the object's first line in other.yaml (line 2, after the comment).
  CHECK(std::regex_search(r.out, std::regex(R"(other\.yaml:2:1: error: .*the line of the node is not known\) \[gpu-request-limit-mismatch\])")));
  // The raw templates are never read: no YAML error about `{{`.
  CHECK_FALSE(has(r.out + r.err, "Go template"));
  CHECK_FALSE(has(r.out, "_helpers.tpl"));
  CHECK(has(r.out, "(1 file)"));

  SUBCASE("--set and --values go to helm; the k-th document of a template is its k-th section") {
    auto set = test::run_command(lint_argv(tmp.path(), {"--helm", helm().string(), "--set", "extra=true", "--fail-on", "warning", chart.string()}),
                                 "", tmp.path());
    INFO(set.out << set.err);
    CHECK(std::regex_search(set.out, std::regex(R"(other\.yaml:18:5: warning: .*\[quota-gpu-key-ignored\])")));
    test::write_file(tmp.path() / "more.yaml", "extra: true\ngpus: 3\n");
    auto values = test::run_command(
        lint_argv(tmp.path(), {"--helm", helm().string(), "--values", (tmp.path() / "more.yaml").string(), chart.string()}), "", tmp.path());
    INFO(values.out << values.err);
    CHECK(has(values.out, "[quota-gpu-key-ignored]"));
    CHECK(has(values.out, pod + ":10:9: error:"));
    // Release name and namespace reach the template.
    auto named = test::run_command(
        lint_argv(tmp.path(), {"--helm", helm().string(), "--release", "rel", "-n", "team-a", "--format", "json", chart.string()}), "", tmp.path());
    const json doc = json::parse(named.out);
    bool seen = false;
    for (const auto& f : doc["findings"])
      if (f["object"].dump().find("rel-app") != std::string::npos && f["object"].dump().find("team-a") != std::string::npos) seen = true;
    CHECK_MESSAGE(seen, named.out);
  }

  SUBCASE("every output format places the finding in the template") {
    const fs::path out = tmp.path() / "out";
    fs::create_directories(out);
    auto all = test::run_command(lint_argv(tmp.path(), {"--helm", helm().string(), "--format", "json=" + (out / "f.json").string(),
                                                        "--format", "sarif=" + (out / "f.sarif").string(), "--format",
                                                        "junit=" + (out / "f.xml").string(), "--format", "github", chart.string()}),
                                 "", tmp.path());
    INFO(all.out << all.err);
    CHECK(has(all.out, "::error file=" + pod + ",line=10,col=9,title=gpu-request-limit-mismatch::"));
    const json j = json::parse(test::read_file(out / "f.json"));
    bool in_json = false;
    for (const auto& f : j["findings"])
      if (f.value("file", "") == pod && f.value("line", 0) == 10) in_json = true;
    CHECK_MESSAGE(in_json, j.dump(2));
    const json s = json::parse(test::read_file(out / "f.sarif"));
    bool in_sarif = false;
    for (const auto& res : s["runs"][0]["results"]) {
      const auto& loc = res["locations"][0]["physicalLocation"];
      if (loc["artifactLocation"]["uri"] == pod && loc["region"]["startLine"] == 10) in_sarif = true;
    }
    CHECK_MESSAGE(in_sarif, s.dump(2));
    const std::string junit = test::read_file(out / "f.xml");
    CHECK(has(junit, "<testsuite name=\"" + pod + "\""));
    CHECK(has(junit, pod + ":10:9: error:"));
  }

  SUBCASE("a staged template or values file stands for its chart (pre-commit), rendered once") {
    auto staged = test::run_command(lint_argv(tmp.path(), {"--helm", helm().string(), (chart / "templates" / "pod.yaml").string(),
                                                           (chart / "values.yaml").string()}),
                                    "", tmp.path());
    INFO(staged.out << staged.err);
    CHECK(staged.exit_code == 1);
    CHECK(has(staged.out, pod + ":10:9: error:"));
    CHECK(has(staged.out, "(1 file)"));
    // A folder holding the chart: found while listing.
    auto listed = test::run_command(lint_argv(tmp.path(), {"--helm", helm().string(), tmp.path().string()}), "", tmp.path());
    CHECK(has(listed.out, ":10:9: error:"));
    CHECK_FALSE(has(listed.out + listed.err, "Go template"));
  }
}

TEST_CASE("helm missing, or failing: an input error naming the chart; the rest of the run goes on") {
  test::TempDir tmp;
  const fs::path chart = tmp.path() / "chart";
  write_chart(chart);
  test::write_file(tmp.path() / "pod.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                   "    resources: {requests: {nvidia.com/gpu: 1}}\n");
  // No helm on PATH.
  auto none = test::run_command({"env", "PATH=" + (tmp.path() / "nothing").string(), test::binary().string(), "lint", "--no-config",
                                 chart.string(), (tmp.path() / "pod.yaml").string()});
  INFO(none.out << none.err);
  CHECK(none.exit_code == 2);
  CHECK(has(none.out + none.err, "helm is not on PATH: install Helm 3"));
  CHECK(has(none.out, "pod.yaml:7:"));  // the other input is linted
  auto wrong = test::run({"lint", "--no-config", "--helm", (tmp.path() / "no-helm").string(), chart.string()});
  CHECK(wrong.exit_code == 2);
  CHECK(has(wrong.out + wrong.err, "is not an executable program"));

  // A tool that hangs, or writes without end, is stopped at the bounds (its process group killed).
  test::write_file(tmp.path() / "slow-helm", "#!/bin/sh\nsleep 30 &\nsleep 30\n");
  test::write_file(tmp.path() / "loud-helm", "#!/bin/sh\nexec yes kind: Pod\n");
  fs::permissions(tmp.path() / "slow-helm", fs::perms::owner_all);
  fs::permissions(tmp.path() / "loud-helm", fs::perms::owner_all);
  const auto started = std::chrono::steady_clock::now();
  auto slow = test::run({"lint", "--no-config", "--helm", (tmp.path() / "slow-helm").string(), "--render-timeout", "1", chart.string()});
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
  CHECK(slow.exit_code == 2);
  CHECK_MESSAGE(has(slow.out, "helm template ran longer than 1 s and was stopped"), slow.out);
  auto loud = test::run({"lint", "--no-config", "--helm", (tmp.path() / "loud-helm").string(), "--max-file-size", "1", chart.string()});
  CHECK(loud.exit_code == 2);
  CHECK_MESSAGE(has(loud.out, "helm template wrote more than 1 MiB (--max-file-size) and was stopped"), loud.out);

  if (!fs::exists(helm())) {
    test::skip("helm is not installed (make test runs scripts/test-tools.sh)");
    return;
  }
  test::write_file(chart / "templates" / "broken.yaml", "{{ fail \"gpus must be set\" }}\n");
  auto failed = test::run_command(lint_argv(tmp.path(), {"--helm", helm().string(), chart.string(), (tmp.path() / "pod.yaml").string()}),
                                  "", tmp.path());
  INFO(failed.out << failed.err);
  CHECK(failed.exit_code == 2);
  CHECK(has(failed.out, "helm template failed (exit 1): "));
  CHECK(has(failed.out, "gpus must be set"));
  CHECK(has(failed.out, "pod.yaml:7:"));
}

TEST_CASE("a template outside a chart is one clear input error, not libyaml's; `{{` in data that loads is data") {
  test::TempDir tmp;
  test::write_file(tmp.path() / "deploy.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n{{- if .Values.x }}\n  labels: {a: b}\n{{- end }}\nspec: {}\n");
  auto r = test::run({"lint", "--no-config", (tmp.path() / "deploy.yaml").string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(has(r.out, "deploy.yaml:5:1: error: Go template actions ({{ ... }}) outside a Helm chart"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);  // the one error and the summary
  test::write_file(tmp.path() / "rule.yaml",
                   "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: r}\nspec:\n  groups:\n  - name: g\n"
                   "    rules:\n    - alert: GpuHot\n      expr: DCGM_FI_DEV_GPU_TEMP > 90\n      annotations: {summary: \"{{ $labels.gpu }} is hot\"}\n");
  auto data = test::run({"lint", "--no-config", (tmp.path() / "rule.yaml").string()});
  CHECK(data.exit_code == 0);
  CHECK_FALSE(has(data.out, "Go template"));
}

TEST_CASE("a Kustomize folder is built with kubectl kustomize; findings name the resource file and line") {
  const std::string kc = kubectl();
  if (kc.empty()) {
    test::skip("kubectl is not installed");
    return;
  }
  test::TempDir tmp;
  test::write_file(tmp.path() / "base" / "kustomization.yaml", "resources:\n- pods.yaml\n");
  test::write_file(tmp.path() / "base" / "pods.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train\nspec:\n  containers:\n  - name: c\n    resources:\n"
                   "      requests:\n        nvidia.com/gpu: 1\n---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\nspec:\n"
                   "  hard:\n    limits.nvidia.com/gpu: 4\n");
  test::write_file(tmp.path() / "prod" / "kustomization.yaml",
                   "resources:\n- ../base\nnamePrefix: prod-\nnamespace: team-a\nlabels:\n- pairs: {env: prod}\n");
  test::write_file(tmp.path() / "comp" / "kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n");
  auto r = test::run({"lint", "--no-config", "--kustomize", kc, "--fail-on", "warning", (tmp.path() / "prod").string()}, "", tmp.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(has(r.out, "base/pods.yaml:10:9: error:"));
  CHECK(has(r.out, "(rendered at line"));
  CHECK(has(r.out, "base/pods.yaml:18:5: warning:"));
  // A folder of overlays: each kustomization is built (a Component only as a part of another).
  auto all = test::run({"lint", "--no-config", "--kustomize", kc, tmp.path().string()}, "", tmp.path());
  INFO(all.out << all.err);
  CHECK(all.exit_code == 1);
  CHECK(has(all.out, "(2 files)"));
  CHECK_FALSE(has(all.out, "comp"));
}

TEST_CASE("gpuguard's own chart is linted rendered: no input error, findings only in its templates") {
  if (!fs::exists(helm())) {
    test::skip("helm is not installed (make test runs scripts/test-tools.sh)");
    return;
  }
  test::TempDir tmp;
  auto r = test::run_command(lint_argv(tmp.path(), {"--helm", helm().string(), "-n", "gpuguard-system", "--format", "json", "--fail-on", "none", "charts/gpuguard"}),
                             "", test::source_dir());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.out);
  CHECK(doc["diagnostics"].empty());
  for (const auto& f : doc["findings"]) CHECK(f.value("file", "").starts_with("charts/gpuguard/templates/"));
}

TEST_CASE("the charts and overlays of ../shared/charts render, and most findings sit on their template line") {
  const auto shared = test::shared_dir();
  if (!shared || !fs::exists(*shared / "charts" / "PROVENANCE.md") || !fs::exists(helm()) || kubectl().empty()) {
    test::skip("../shared/charts, helm or kubectl missing");
    return;
  }
  const fs::path charts = *shared / "charts";
  test::TempDir tmp;
  struct Case {
    std::string path, ns, values;
  };
  // Each chart as PROVENANCE.md renders it, with and without its GPU values file; --complete, so
  // that the rules about what is missing speak too.
  const std::vector<Case> cases = {
      {"gpu-operator", "gpu-operator", ""},
      {"gpu-operator", "gpu-operator", "gpu-operator.gpu-values.yaml"},
      {"nvidia-device-plugin", "nvidia-device-plugin", ""},
      {"nvidia-device-plugin", "nvidia-device-plugin", "nvidia-device-plugin.gpu-values.yaml"},
      {"dcgm-exporter", "gpu-monitoring", ""},
      {"ray-cluster", "", ""},
      {"ray-cluster", "", "ray-cluster.gpu-values.yaml"},
      {"kueue", "kueue-system", ""},
      {"volcano", "volcano-system", ""},
      {"volcano", "volcano-system", "volcano.gpu-values.yaml"},
  };
  size_t findings = 0, exact = 0;
  std::vector<std::string> placed;  // "rule file:line" of every finding
  auto count = [&](const json& doc, const std::string& prefix) {
    for (const auto& f : doc["findings"]) {
      if (f.value("file", "").empty()) continue;  // about the inventory as a whole
      ++findings;
      const std::string file = f.value("file", "");
      CHECK_MESSAGE(file.starts_with(prefix), file);
      const std::string message = f.value("message", "");
      if (message.find("the line of the node is not known") == std::string::npos && message.find("not a file here") == std::string::npos) ++exact;
      placed.push_back(f.value("rule", "") + " " + file + ":" + std::to_string(f.value("line", 0)));
    }
  };
  for (const auto& c : cases) {
    CAPTURE(c.path);
    CAPTURE(c.values);
    std::vector<std::string> args = {"--helm", helm().string(), "--format", "json", "--fail-on", "none", "--complete"};
    if (!c.ns.empty()) args.insert(args.end(), {"-n", c.ns});
    if (!c.values.empty()) args.insert(args.end(), {"--values", c.values});
    args.push_back(c.path);
    auto r = test::run_command(lint_argv(tmp.path(), args), "", charts);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["diagnostics"].empty());
    count(doc, c.path + "/");
  }
  for (const char* overlay : {"kustomize/kueue-default/config/default", "kustomize/kubeflow-trainer-runtimes/manifests/overlays/runtimes"}) {
    CAPTURE(overlay);
    auto r = test::run({"lint", "--no-config", "--kustomize", kubectl(), "--format", "json", "--fail-on", "none", "--complete", overlay}, "", charts);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["diagnostics"].empty());
    count(doc, "kustomize/");
  }
  std::string all;
  for (const auto& p : placed) all += p + "\n";
  INFO(all);
  // The KubeRay cluster's GPU worker group (the second item of workerGroupSpecs, written in the
  // template's range of additionalWorkerGroups): its pod spec, line 335, not the first group's 201.
  CHECK(has(all, "gpu-priority-class-missing ray-cluster/templates/raycluster-cluster.yaml:335\n"));
  CHECK(has(all, "gang-scheduling-missing ray-cluster/templates/raycluster-cluster.yaml:12\n"));
  MESSAGE("findings on rendered objects: " << findings << ", on the exact line: " << exact);
  REQUIRE(findings > 0);
  CHECK(exact * 2 > findings);
}

}  // TEST_SUITE
