// Every rule through the webhook: each fix answers /mutate with the patch that turns the mutated
// fixture's input into its output (the same patch `gpuguard mutate` computes), and each error
// rule's disallowed fixtures are denied by /validate naming the rule.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "engine/inventory.h"
#include "engine/mutate.h"
#include "tests/support/support.h"
#include "webhook/admission.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

std::vector<fs::path> fixtures(const std::string& rule, const char* kind, const char* suffix = ".yaml") {
  std::vector<fs::path> out;
  fs::path dir = test::source_dir() / "tests" / "rules" / rule / kind;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= std::strlen(suffix) && name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Directives {
  bool complete = false;
  std::string config;  // merged flow mappings
};

Directives directives(const std::string& text) {
  Directives d;
  json merged = json::object();
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    auto p = line.find("# gpuguard-test:");
    if (p == std::string::npos) continue;
    std::string rest = line.substr(p + 16);
    rest.erase(0, rest.find_first_not_of(' '));
    if (rest == "complete") d.complete = true;
    else if (rest.rfind("config ", 0) == 0) merged.merge_patch(test::load_objects(rest.substr(7), "directive")[0].body());
  }
  if (!merged.empty()) d.config = merged.dump();
  return d;
}

std::shared_ptr<const engine::Config> make_config(const Directives& d, bool templates) {
  engine::Config c = engine::default_config(test::registry());
  if (!d.config.empty()) {
    auto loaded = engine::load_config(d.config, "directive", test::registry());
    REQUIRE(loaded.has_value());
    c = std::move(*loaded);
  }
  c.webhook.mutate_templates = templates;
  return std::make_shared<engine::Config>(std::move(c));
}

json review(const engine::Object& o) {
  json body = o.body();
  std::string ns = o.namespace_.empty() && !o.cluster_scoped() ? "default" : o.namespace_;
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "fixture"},
            {"kind", {{"group", o.gvk.group}, {"version", o.gvk.version}, {"kind", o.gvk.kind}}},
            {"operation", "CREATE"},
            {"namespace", ns},
            {"object", body}}}};
}

std::string base64_decode(const std::string& b64) {
  auto r = test::run_command({"/usr/bin/python3", "-c", "import base64,sys; sys.stdout.write(base64.b64decode(sys.argv[1]).decode())", b64});
  return r.out;
}

}  // namespace

TEST_SUITE("webhook") {

TEST_CASE("every fix: /mutate answers the patch that gives the mutated fixture, the same as gpuguard mutate") {
  if (!fs::exists("/usr/bin/python3")) {
    test::skip("python3 missing");
    return;
  }
  size_t checked = 0;
  for (const auto* rule : test::registry().rules()) {
    if (!rule->info().has_fix) continue;
    const std::string id = rule->info().id;
    for (const auto& in : fixtures(id, "mutated", ".in.yaml")) {
      const std::string fname = in.filename().string();
      const fs::path out = in.parent_path() / (fname.substr(0, fname.size() - 8) + ".out.yaml");
      CAPTURE(in);
      const std::string text = test::read_file(in);
      Directives d = directives(text);
      auto config = make_config(d, true);
      engine::Config only = *config;
      for (auto& [rid, s] : only.rules) s.enabled = rid == id;  // this rule's fix alone
      auto only_config = std::make_shared<engine::Config>(only);
      webhook::Admission admission(test::registry(), only_config);
      auto inputs = test::load_objects(text, in.string());
      auto expected = test::load_objects(test::read_file(out), out.string());
      REQUIRE(inputs.size() == expected.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].is_kubernetes_object() || inputs[i].body() == expected[i].body()) continue;
        auto state = test::state_without(inputs, i, only, d.complete);
        webhook::Outcome outcome;
        auto answer = admission.handle(webhook::Endpoint::mutate, review(inputs[i]).dump(), "application/json", state, outcome);
        REQUIRE(answer.status == 200);
        json resp = json::parse(answer.body)["response"];
        REQUIRE_MESSAGE(resp.contains("patch"), answer.body);
        json patch = json::parse(base64_decode(resp["patch"]));
        CHECK(inputs[i].body().patch(patch) == expected[i].body());
        // gpuguard mutate's patch is the same.
        engine::MutateOptions mo;
        mo.base = state;
        mo.complete = d.complete;
        CHECK(engine::mutate(inputs[i], test::registry(), only, mo).patch == patch);
        ++checked;
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("every error rule: /validate denies its disallowed fixtures and names the rule") {
  size_t checked = 0;
  for (const auto* rule : test::registry().rules()) {
    if (rule->info().severity != engine::Severity::error) continue;
    const std::string id = rule->info().id;
    for (const auto& p : fixtures(id, "disallowed")) {
      CAPTURE(p);
      const std::string text = test::read_file(p);
      if (text.find("# gpuguard-test: schemas") != std::string::npos) continue;  // the linter's --schemas only
      Directives d = directives(text);
      auto config = make_config(d, false);
      webhook::Admission admission(test::registry(), config);
      auto objects = test::load_objects(text, p.string());
      // The lines each object spans, to find the objects with an expected finding.
      std::vector<uint32_t> expect_lines;
      {
        std::stringstream ss(text);
        std::string line;
        uint32_t n = 0;
        while (std::getline(ss, line)) {
          ++n;
          if (line.find("# expect: ") != std::string::npos && line.find(id) != std::string::npos) expect_lines.push_back(n);
        }
      }
      for (size_t i = 0; i < objects.size(); ++i) {
        if (!objects[i].is_kubernetes_object()) continue;
        const uint32_t from = i == 0 ? 0 : objects[i].pos.line;
        const uint32_t to = i + 1 < objects.size() ? objects[i + 1].pos.line : UINT32_MAX;
        bool expected = std::any_of(expect_lines.begin(), expect_lines.end(), [&](uint32_t l) { return l >= from && l < to; });
        if (!expected) continue;
        auto state = test::state_without(objects, i, *config, d.complete);
        webhook::Outcome outcome;
        auto answer = admission.handle(webhook::Endpoint::validate, review(objects[i]).dump(), "application/json", state, outcome);
        REQUIRE(answer.status == 200);
        json resp = json::parse(answer.body)["response"];
        CHECK_MESSAGE(resp["allowed"] == json(false), objects[i].display_name() << ": " << answer.body);
        CHECK(resp.value("status", json::object()).value("message", std::string()).find("[" + id + "]") != std::string::npos);
        ++checked;
      }
    }
  }
  CHECK(checked > 0);
}

}  // TEST_SUITE
