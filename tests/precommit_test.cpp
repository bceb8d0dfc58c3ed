// The pre-commit hook with the real pre-commit: a repository that uses this one as its hook
// source refuses a commit with a bad manifest (showing the finding) and accepts a good one.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;

namespace {

// git with a fixed identity and no user or system config, so the test is hermetic.
// gpuguard and helm (build/tools) come first on PATH.
test::Run git(const fs::path& cwd, const std::vector<std::string>& args, const fs::path& home) {
  std::vector<std::string> argv = {"env", "HOME=" + home.string(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
                                   "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "PRE_COMMIT_HOME=" + (home / "pre-commit").string(),
                                   "PATH=" + test::binary().parent_path().string() + ":" + (test::source_dir() / "build" / "tools").string() + ":" +
                                       std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"),
                                   "git"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_command(argv, "", cwd);
}

}  // namespace

TEST_SUITE("formats") {

TEST_CASE("pre-commit refuses a bad manifest with the finding shown, and takes a good one") {
  if (test::run_command({"pre-commit", "--version"}).exit_code != 0 || test::run_command({"git", "--version"}).exit_code != 0) {
    test::skip("pre-commit or git is not installed (make test installs them)");
    return;
  }
  test::TempDir tmp;
  const fs::path home = tmp.path() / "home";
  fs::create_directories(home);
  // The hook source: this repository's hook manifest, committed in a repository of its own (so
  // the test sees the working tree's version, committed or not).
  const fs::path hooks = tmp.path() / "hooks";
  test::write_file(hooks / ".pre-commit-hooks.yaml", test::read_file(test::source_dir() / ".pre-commit-hooks.yaml"));
  REQUIRE(git(hooks, {"init", "-q"}, home).exit_code == 0);
  REQUIRE(git(hooks, {"add", "."}, home).exit_code == 0);
  REQUIRE(git(hooks, {"commit", "-q", "-m", "hooks"}, home).exit_code == 0);
  const std::string rev = [&] {
    std::string s = git(hooks, {"rev-parse", "HEAD"}, home).out;
    return s.substr(0, s.find('\n'));
  }();

  const fs::path repo = tmp.path() / "manifests";
  REQUIRE(git(tmp.path(), {"init", "-q", repo.string()}, home).exit_code == 0);
  test::write_file(repo / ".pre-commit-config.yaml",
                   "repos:\n  - repo: " + hooks.string() + "\n    rev: " + rev + "\n    hooks:\n      - id: gpuguard-lint\n");
  auto install = test::run_command({"env", "HOME=" + home.string(), "PRE_COMMIT_HOME=" + (home / "pre-commit").string(), "pre-commit",
                                    "install"}, "", repo);
  REQUIRE_MESSAGE(install.exit_code == 0, install.out << install.err);

  test::write_file(repo / "bad.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                   "    resources: {requests: {nvidia.com/gpu: 1}}\n");
  REQUIRE(git(repo, {"add", "bad.yaml", ".pre-commit-config.yaml"}, home).exit_code == 0);
  auto refused = git(repo, {"commit", "-m", "bad"}, home);
  CHECK(refused.exit_code != 0);
  const std::string shown = refused.out + refused.err;
  CHECK_MESSAGE(shown.find("bad.yaml:7:28: error:") != std::string::npos, shown);
  CHECK(shown.find("[gpu-request-limit-mismatch]") != std::string::npos);

  test::write_file(repo / "bad.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                   "    resources: {limits: {nvidia.com/gpu: 1}}\n");
  REQUIRE(git(repo, {"add", "bad.yaml"}, home).exit_code == 0);
  auto accepted = git(repo, {"commit", "-m", "good"}, home);
  CHECK_MESSAGE(accepted.exit_code == 0, accepted.out << accepted.err);

  // A staged Helm template: the hook renders its chart (helm from build/tools) and shows the
  // finding on the template's line; the template is never read as raw YAML.
  if (!fs::exists(test::source_dir() / "build" / "tools" / "helm")) {
    MESSAGE("helm is not installed (make test runs scripts/test-tools.sh): the chart case is not run");
    return;
  }
  test::write_file(repo / "chart" / "Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n");
  test::write_file(repo / "chart" / "values.yaml", "gpus: 1\n");
  test::write_file(repo / "chart" / "templates" / "pod.yaml",
                   "{{- if .Values.gpus }}\napiVersion: v1\nkind: Pod\nmetadata: {name: {{ .Release.Name }}}\nspec:\n  containers:\n"
                   "  - name: c\n    resources:\n      requests:\n        nvidia.com/gpu: {{ .Values.gpus }}\n{{- end }}\n");
  REQUIRE(git(repo, {"add", "chart"}, home).exit_code == 0);
  auto chart = git(repo, {"commit", "-m", "chart"}, home);
  CHECK(chart.exit_code != 0);
  const std::string chart_shown = chart.out + chart.err;
  CHECK_MESSAGE(chart_shown.find("chart/templates/pod.yaml:10:9: error:") != std::string::npos, chart_shown);
  CHECK_MESSAGE(chart_shown.find("Go template") == std::string::npos, chart_shown);
}

}  // TEST_SUITE
