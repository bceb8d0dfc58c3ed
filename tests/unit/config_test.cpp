#include <doctest/doctest.h>

#include "engine/config.h"
#include "engine/dra.h"
#include "tests/support/schema.h"
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

TEST_CASE("webhook.exemptions: off by default; read, decided and printed back") {
  const Config d = default_config(registry());
  CHECK_FALSE(d.webhook.exemptions.annotations);
  CHECK(d.webhook.exemptions.require_reason);
  CHECK(d.webhook.exemptions.refuses("ml", "gpu-toleration-missing", nullptr, true) == NotHonoured::off);

  auto c = load_config(
      "webhook:\n  exemptions:\n    annotations: true\n    allow:\n"
      "    - namespaces: \"ml-.*\"\n      rules: [gpu-toleration-missing]\n"
      "      users: [\"system:serviceaccount:ci:deployer\"]\n      groups: [platform-admins]\n"
      "    - namespaces: \"\"\n",  // cluster-scoped objects, anyone, any rule
      ".gpuguard.yaml", registry());
  REQUIRE(c.has_value());
  const ExemptionSettings& ex = c->webhook.exemptions;
  CHECK(ex.annotations);
  CHECK(ex.require_reason);
  REQUIRE(ex.allow.size() == 2);
  CHECK(ex.allow[0].where == ".gpuguard.yaml:5");
  const RequestUser ci{"system:serviceaccount:ci:deployer", {}};
  const RequestUser admin{"bob", {"system:authenticated", "platform-admins"}};
  const RequestUser other{"bob", {"system:authenticated"}};
  CHECK_FALSE(ex.refuses("ml-a", "gpu-toleration-missing", &ci, true).has_value());
  CHECK_FALSE(ex.refuses("ml-a", "gpu-toleration-missing", &admin, true).has_value());
  CHECK(ex.refuses("ml-a", "gpu-toleration-missing", &other, true) == NotHonoured::user);
  CHECK(ex.refuses("ml-a", "gpu-toleration-missing", nullptr, true) == NotHonoured::user);
  CHECK(ex.refuses("ml-a", "gpu-request-limit-mismatch", &ci, true) == NotHonoured::rule);
  CHECK(ex.refuses("ml", "gpu-toleration-missing", &ci, true) == NotHonoured::namespace_);
  CHECK(ex.refuses("ml-a", "gpu-toleration-missing", &ci, false) == NotHonoured::no_reason);
  CHECK_FALSE(ex.refuses("", "priority-class-count", nullptr, true).has_value());
  CHECK(honour_note(NotHonoured::user) == "gpuguard.io/ignore not honoured at admission for this user");
  for (auto why : {NotHonoured::off, NotHonoured::no_reason, NotHonoured::namespace_, NotHonoured::rule, NotHonoured::user, NotHonoured::flag})
    CHECK(honour_note(why).size() <= 64);

  const std::string printed = print_config(*c, registry());
  CHECK(printed.find("exemptions:\n    annotations: true\n    requireReason: true\n    allow:\n") != std::string::npos);
  CHECK(printed.find("users: [\"system:serviceaccount:ci:deployer\"]") != std::string::npos);
  auto again = load_config(printed, "printed.yaml", registry());
  REQUIRE(again.has_value());
  auto body = [](const std::string& s) { return s.substr(s.find('\n')); };
  CHECK(body(print_config(*again, registry())) == body(printed));
}

TEST_CASE("webhook.exemptions and rules' fix: every error names its place") {
  struct Case {
    const char* yaml;
    Pos pos;
    const char* text;
  };
  const Case cases[] = {
      {"webhook: {exemptions: {annotation: true}}\n", {1, 24}, "webhook.exemptions: unknown key \"annotation\" (known: annotations, requireReason, allow)"},
      {"webhook: {exemptions: {annotations: yes please}}\n", {1, 24}, "webhook.exemptions.annotations: expected true or false"},
      {"webhook: {exemptions: {requireReason: 1}}\n", {1, 24}, "webhook.exemptions.requireReason: expected true or false"},
      {"webhook: {exemptions: []}\n", {1, 11}, "webhook.exemptions: expected a mapping"},
      {"webhook:\n  exemptions:\n    allow:\n    - namespaces: \"([\"\n", {4, 7}, "webhook.exemptions.allow[0].namespaces: invalid regular expression"},
      {"webhook:\n  exemptions:\n    allow:\n    - rules: [nope]\n", {4, 15}, "webhook.exemptions.allow[0].rules[0]: unknown rule \"nope\""},
      {"webhook:\n  exemptions:\n    allow:\n    - users: [\"a(\"]\n", {4, 15}, "webhook.exemptions.allow[0].users[0]: invalid regular expression"},
      {"webhook:\n  exemptions:\n    allow:\n    - groups: admins\n", {4, 7}, "webhook.exemptions.allow[0].groups: expected a list"},
      {"webhook:\n  exemptions:\n    allow:\n    - users: []\n", {4, 7}, "webhook.exemptions.allow[0].users: an empty list"},
      {"webhook:\n  exemptions:\n    allow:\n    - namespace: ml\n", {4, 7}, "unknown key \"namespace\" (known: namespaces, rules, users, groups)"},
      {"webhook:\n  exemptions:\n    allow: [ml]\n", {3, 13}, "webhook.exemptions.allow[0]: expected a mapping"},
      {"rules:\n  quota-gpu-key-ignored: {fix: false}\n", {2, 27}, "rules.quota-gpu-key-ignored.fix: the rule has no fix"},
      {"rules:\n  gpu-toleration-missing: {fix: no-thanks}\n", {2, 28}, "rules.gpu-toleration-missing.fix: expected true or false"},
  };
  for (const auto& c : cases) {
    const std::string yaml = c.yaml;
    CAPTURE(yaml);
    auto errs = errors_of(c.yaml);
    REQUIRE(!errs.empty());
    CHECK_MESSAGE(errs[0].pos == c.pos, errs[0].pos.line << ":" << errs[0].pos.col);
    CHECK_MESSAGE(errs[0].message.find(c.text) != std::string::npos, errs[0].message);
  }
}

TEST_CASE("a rule's fix applies only in enforce mode and unless fix: false; print_config says fix for rules with one") {
  auto c = load_config("rules:\n  gpu-toleration-missing: {fix: false}\n  gpu-request-limit-mismatch: {mode: warn}\n"
                       "  gpu-priority-class-missing: {mode: audit}\n",
                       ".gpuguard.yaml", registry());
  REQUIRE(c.has_value());
  CHECK_FALSE(c->rule("gpu-toleration-missing").fixes());
  CHECK_FALSE(c->rule("gpu-request-limit-mismatch").fixes());
  CHECK_FALSE(c->rule("gpu-priority-class-missing").fixes());
  CHECK(default_config(registry()).rule("gpu-toleration-missing").fixes());
  const std::string printed = print_config(*c, registry());
  CHECK(printed.find("gpu-toleration-missing:\n    enabled: true\n    severity: info\n    mode: enforce\n    fix: false\n") != std::string::npos);
  const size_t quota = printed.find("quota-gpu-key-ignored:");
  REQUIRE(quota != std::string::npos);
  CHECK(printed.substr(quota, printed.find("\n  ", quota + 1) - quota).find("fix:") == std::string::npos);
}

TEST_CASE("the config schema agrees with the loader on webhook.exemptions and fix") {
  const json schema = config_schema(registry());
  auto body = [](const std::string& yaml) { return gpuguard::test::load_objects(yaml, "c.yaml")[0].body(); };
  const std::string good =
      "rules: {gpu-toleration-missing: {mode: warn, fix: false}}\n"
      "webhook:\n  exemptions:\n    annotations: true\n    requireReason: false\n    allow:\n"
      "    - {namespaces: \"ml-.*\", rules: [gpu-toleration-missing], users: [\"ci:.*\"], groups: [admins]}\n    - {}\n";
  CHECK(gpuguard::test::validate(schema, body(good)).empty());
  auto loaded = load_config(good, "c.yaml", registry());
  REQUIRE(loaded.has_value());
  CHECK(gpuguard::test::validate(schema, body(print_config(*loaded, registry()))).empty());
  for (const char* bad : {
           "webhook: {exemptions: {annotation: true}}\n",
           "webhook: {exemptions: {annotations: 1}}\n",
           "webhook: {exemptions: {allow: [{namespace: ml}]}}\n",
           "webhook: {exemptions: {allow: [{rules: [nope]}]}}\n",
           "webhook: {exemptions: {allow: [{users: []}]}}\n",
           "webhook: {exemptions: {allow: [{groups: admins}]}}\n",
           "rules: {quota-gpu-key-ignored: {fix: false}}\n",
           "rules: {gpu-toleration-missing: {fix: 0}}\n",
       }) {
    CAPTURE(bad);
    CHECK_FALSE(gpuguard::test::validate(schema, body(bad)).empty());
    CHECK_FALSE(load_config(bad, "x", registry()).has_value());
  }
}

TEST_CASE("find_config_upward finds the nearest .gpuguard.yaml") {
  gpuguard::test::TempDir dir;
  gpuguard::test::write_file(dir.path() / ".gpuguard.yaml", "{}\n");
  std::filesystem::create_directories(dir.path() / "a" / "b");
  auto found = find_config_upward(dir.path() / "a" / "b");
  REQUIRE(found.has_value());
  CHECK(std::filesystem::equivalent(*found, dir.path() / ".gpuguard.yaml"));
}

TEST_CASE("kubernetesVersion: default 1.36, \"1.35\", \"v1.34.2\" kept as major.minor; a number or another form refused; printed back") {
  CHECK(default_config(registry()).settings.kubernetes_version == "1.36");
  CHECK(dra_extended_resource_on(default_config(registry()).settings.kubernetes_version));
  // No structured binding: CAPTURE's lambda cannot capture one under clang 14 (the sanitizer build).
  for (const auto& c_case : {std::pair{"kubernetesVersion: \"1.35\"\n", "1.35"}, std::pair{"kubernetesVersion: v1.34.2\n", "1.34"},
                             std::pair{"kubernetesVersion: \"1.37\"\n", "1.37"}}) {
    const char* yaml = c_case.first;
    const char* want = c_case.second;
    CAPTURE(yaml);
    auto c = load_config(yaml, ".gpuguard.yaml", registry());
    REQUIRE(c.has_value());
    CHECK(c->settings.kubernetes_version == want);
    auto again = load_config(print_config(*c, registry()), "printed.yaml", registry());
    REQUIRE(again.has_value());
    CHECK(again->settings.kubernetes_version == want);
  }
  CHECK_FALSE(dra_extended_resource_on("1.35"));
  CHECK_FALSE(dra_extended_resource_on("v1.34.2"));
  CHECK(dra_extended_resource_on("1.36"));
  CHECK(dra_extended_resource_on("2.0"));
  for (const char* bad : {"kubernetesVersion: 1.30\n", "kubernetesVersion: latest\n", "kubernetesVersion: \"1.\"\n",
                          "kubernetesVersion: \"1.35.x\"\n", "kubernetesVersion: [1]\n"}) {
    CAPTURE(bad);
    auto errs = errors_of(bad);
    REQUIRE(!errs.empty());
    CHECK(errs[0].message.find("kubernetesVersion: expected a Kubernetes version") != std::string::npos);
  }
}

}  // TEST_SUITE
