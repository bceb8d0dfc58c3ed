#include <doctest/doctest.h>

#include "engine/config.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;
using gpuguard::test::registry;

namespace {
std::vector<Diagnostic> errors_of(const std::string& yaml) {
  auto c = load_config(yaml, ".gpuguard.yaml", registry());
  return c ? std::vector<Diagnostic>{} : c.error();
}
}  // namespace

TEST_SUITE("unit") {

TEST_CASE("defaults: every rule enabled at its severity with default parameters") {
  Config c = default_config(registry());
  CHECK(c.rules.size() == registry().rules().size());
  CHECK(c.rule("priority-class-count").params.integer("min") == 3);
  CHECK(c.rule("gpu-request-limit-mismatch").severity == Severity::error);
  CHECK_FALSE(c.rule("no-such-rule").enabled);
}

TEST_CASE("a valid config") {
  auto c = load_config(
      "gpuResources: [amd.com/gpu, example.com/accel-*]\n"
      "defaultNamespace: team-a\n"
      "rules:\n"
      "  priority-class-count:\n    severity: error\n    params: {min: 2, max: 4}\n"
      "  quota-gpu-key-ignored: false\n"
      "exclude:\n  - namespace: kube-.*\n    reason: system\n  - kind: ResourceQuota\n    rules: [quota-gpu-key-ignored]\n",
      ".gpuguard.yaml", registry());
  REQUIRE(c.has_value());
  CHECK(c->rule("priority-class-count").severity == Severity::error);
  CHECK(c->rule("priority-class-count").params.integer("max") == 4);
  CHECK_FALSE(c->rule("quota-gpu-key-ignored").enabled);
  CHECK(c->settings.gpu_resources.matches("amd.com/gpu"));
  CHECK(c->settings.gpu_resources.matches("example.com/accel-big"));
  CHECK(c->settings.gpu_resources.matches("nvidia.com/gpu"));
  CHECK(c->settings.default_namespace == "team-a");
  REQUIRE(c->exclude.size() == 2);
  CHECK(c->exclude[0].matches("kube-system", "Pod", "x"));
  CHECK_FALSE(c->exclude[0].matches("team", "Pod", "x"));
  CHECK(c->exclude[1].covers("quota-gpu-key-ignored"));
  CHECK_FALSE(c->exclude[1].covers("priority-class-count"));
}

TEST_CASE("an empty config file is the defaults") {
  auto c = load_config("# nothing\n", ".gpuguard.yaml", registry());
  REQUIRE(c.has_value());
  CHECK(c->rule("priority-class-count").enabled);
}

TEST_CASE("every config error names its place") {
  struct Case {
    const char* yaml;
    Pos pos;
    const char* text;
  };
  const Case cases[] = {
      {"rulez: {}\n", {1, 1}, "unknown config key \"rulez\""},
      {"rules:\n  no-such-rule: {}\n", {2, 3}, "unknown rule \"no-such-rule\""},
      {"rules:\n  priority-class-count:\n    params: {min: three}\n", {3, 14}, "expected an integer"},
      {"rules:\n  priority-class-count:\n    params: {mni: 1}\n", {3, 14}, "unknown parameter \"mni\" (known: min, max)"},
      {"rules:\n  priority-class-count:\n    params: {min: 6}\n", {3, 5}, "min (6) must not be greater than max (5)"},
      {"rules:\n  priority-class-count:\n    params: {min: -1}\n", {3, 14}, "must be at least 0"},
      {"rules:\n  priority-class-count:\n    severity: fatal\n", {3, 5}, "expected error, warning or info"},
      {"rules:\n  priority-class-count:\n    enable: true\n", {3, 5}, "unknown key \"enable\""},
      {"rules:\n  quota-gpu-key-ignored:\n    params: {x: 1}\n", {3, 14}, "the rule has no parameters"},
      {"exclude:\n  - namespace: \"([\"\n", {2, 5}, "exclude[0].namespace: invalid regular expression"},
      {"exclude:\n  - reason: nothing\n", {2, 5}, "needs at least one of namespace, kind, name"},
      {"exclude:\n  - kind: Pod\n    rules: [nope]\n", {3, 13}, "unknown rule \"nope\""},
      {"gpuResources: [\"\"]\n", {1, 16}, "gpuResources[0]"},
      {"defaultNamespace: 3\n", {1, 1}, "defaultNamespace"},
      {"- a\n", {1, 1}, "the config must be a mapping"},
      {"rules: [\n", {2, 1}, ""},
      {"a: 1\n---\nb: 2\n", {3, 1}, "one YAML document"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.yaml);
    auto errs = errors_of(c.yaml);
    REQUIRE(!errs.empty());
    CHECK(errs[0].pos == c.pos);
    CHECK_MESSAGE(errs[0].message.find(c.text) != std::string::npos, errs[0].message);
  }
}

TEST_CASE("print_config prints everything, and what it prints loads back the same") {
  auto c = load_config("rules:\n  priority-class-count: {params: {min: 2}}\nexclude: [{namespace: \"kube-.*\", reason: sys}]\n",
                       "x.yaml", registry());
  REQUIRE(c.has_value());
  std::string printed = print_config(*c, registry());
  CHECK(printed.find("priority-class-count:") != std::string::npos);
  CHECK(printed.find("min: 2") != std::string::npos);
  auto again = load_config(printed, "printed.yaml", registry());
  REQUIRE(again.has_value());
  // The source line differs; the rest is identical.
  auto body = [](const std::string& s) { return s.substr(s.find('\n')); };
  CHECK(body(print_config(*again, registry())) == body(printed));
}

TEST_CASE("find_config_upward finds the nearest .gpuguard.yaml") {
  gpuguard::test::TempDir dir;
  gpuguard::test::write_file(dir.path() / ".gpuguard.yaml", "{}\n");
  std::filesystem::create_directories(dir.path() / "a" / "b");
  auto found = find_config_upward(dir.path() / "a" / "b");
  REQUIRE(found.has_value());
  CHECK(std::filesystem::equivalent(*found, dir.path() / ".gpuguard.yaml"));
}

}  // TEST_SUITE
