// schemas/: the config schema is generated and current; example configs and the JSON output
// validate against the committed schemas (valijson).

#include <doctest/doctest.h>

#include <filesystem>

#include "engine/config.h"
#include "tests/support/schema.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {
json committed(const char* name) { return json::parse(test::read_file(test::source_dir() / "schemas" / name)); }

json yaml_to_json(const std::string& text) {
  auto objs = test::load_objects(text);
  REQUIRE(objs.size() == 1);
  return objs[0].body();
}

std::vector<fs::path> example_configs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(test::source_dir() / "examples"))
    if (e.path().filename() == ".gpuguard.yaml" || e.path().filename() == ".gpuguard.yml") out.push_back(e.path());
  return out;
}
}  // namespace

TEST_SUITE("schema") {

TEST_CASE("schemas/config.schema.json is what `gpuguard schema config` prints") {
  CHECK_MESSAGE(test::read_file(test::source_dir() / "schemas" / "config.schema.json") ==
                    engine::config_schema(test::registry()).dump(2) + "\n",
                "schemas/config.schema.json is out of date: run scripts/gen-docs.sh");
}

TEST_CASE("every example config is valid for the schema and for the loader") {
  auto schema = committed("config.schema.json");
  auto configs = example_configs();
  REQUIRE(!configs.empty());
  for (const auto& p : configs) {
    CAPTURE(p);
    std::string text = test::read_file(p);
    for (const auto& problem : test::validate(schema, yaml_to_json(text))) FAIL_CHECK(problem);
    CHECK(engine::load_config(text, p.string(), test::registry()).has_value());
  }
}

TEST_CASE("the printed default config is valid for the schema") {
  auto schema = committed("config.schema.json");
  std::string printed = engine::print_config(engine::default_config(test::registry()), test::registry());
  for (const auto& problem : test::validate(schema, yaml_to_json(printed))) FAIL_CHECK(problem);
}

TEST_CASE("the schema refuses what the loader refuses") {
  auto schema = committed("config.schema.json");
  for (const char* bad : {
           "rulez: {}\n",
           "rules: {no-such-rule: {}}\n",
           "rules: {priority-class-count: {params: {min: three}}}\n",
           "rules: {priority-class-count: {params: {mni: 1}}}\n",
           "rules: {priority-class-count: {severity: fatal}}\n",
           "exclude: [{reason: nothing}]\n",
           "exclude: [{kind: Pod, rules: [nope]}]\n",
       }) {
    CAPTURE(bad);
    CHECK_FALSE(test::validate(schema, yaml_to_json(bad)).empty());
    CHECK_FALSE(engine::load_config(bad, "x", test::registry()).has_value());
  }
}

TEST_CASE("`gpuguard lint --format json` output validates against schemas/findings.schema.json") {
  auto schema = committed("findings.schema.json");
  std::vector<std::string> targets = {(test::source_dir() / "examples").string()};
  if (auto shared = test::shared_dir()) targets.push_back((*shared / "corpus").string());
  for (const auto& t : targets) {
    CAPTURE(t);
    for (const char* complete : {"--complete", "--fail-on=none"}) {
      auto r = test::run({"lint", "--no-config", "--format", "json", complete, t});
      CHECK(r.exit_code <= 1);
      json doc = json::parse(r.out);
      for (const auto& problem : test::validate(schema, doc)) FAIL_CHECK(problem);
    }
  }
  // Diagnostics and suppressed findings are in the schema too.
  test::TempDir dir;
  test::write_file(dir.path() / "bad.yaml",
                   "a: [1\n---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  annotations: {gpuguard.io/ignore: quota-gpu-key-ignored}\n"
                   "spec: {hard: {limits.nvidia.com/gpu: 1}}\n");
  auto r = test::run({"lint", "--no-config", "--format", "json", (dir.path() / "bad.yaml").string()});
  CHECK(r.exit_code == 2);
  json doc = json::parse(r.out);
  CHECK(doc["diagnostics"].size() == 1);
  CHECK(doc["findings"][0].contains("suppressed"));
  for (const auto& problem : test::validate(schema, doc)) FAIL_CHECK(problem);
}

}  // TEST_SUITE
