// Generated documentation is committed and current; every rule is documented and cites its facts.

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>

#include "rules/docs.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;

TEST_SUITE("docs") {

TEST_CASE("rules/README.md is what `gpuguard rules --format markdown` writes") {
  const fs::path p = test::source_dir() / "rules" / "README.md";
  CHECK_MESSAGE(test::read_file(p) == rules::rules_index_markdown(test::registry()),
                "rules/README.md is out of date: run scripts/gen-docs.sh");
}

TEST_CASE("every rule has its page, generated from its metadata") {
  for (const auto* r : test::registry().rules()) {
    const fs::path p = test::source_dir() / rules::rule_doc_path(r->info());
    CAPTURE(p);
    REQUIRE_MESSAGE(fs::exists(p), p << " is missing: run scripts/gen-docs.sh");
    CHECK_MESSAGE(test::read_file(p) == rules::rule_page_markdown(*r), p << " is out of date: run scripts/gen-docs.sh");
  }
}

TEST_CASE("the chart's generated files are current") {
  for (const auto& file : rules::chart_files(test::registry())) {  // no structured binding: clang 14 cannot capture one
    const std::string& path = file.first;
    CAPTURE(path);
    CHECK_MESSAGE(test::read_file(test::source_dir() / path) == file.second, path << " is out of date: run scripts/gen-docs.sh");
  }
}

TEST_CASE("no stale rule pages") {
  for (const auto& e : fs::recursive_directory_iterator(test::source_dir() / "rules")) {
    if (e.path().extension() != ".md" || e.path().filename() == "README.md") continue;
    CHECK_MESSAGE(test::registry().find(e.path().stem().string()), e.path() << " documents no rule");
  }
}

TEST_CASE("rule metadata follows the conventions") {
  for (const auto* r : test::registry().rules()) {
    const auto& i = r->info();
    CAPTURE(i.id);
    for (char c : i.id) CHECK((std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'));
    // id ↔ rules/<category>/<id_with_underscores>.cpp
    std::string file = i.id;
    for (char& c : file)
      if (c == '-') c = '_';
    CHECK_MESSAGE(fs::exists(test::source_dir() / "rules" / i.category / (file + ".cpp")),
                  "rules/" << i.category << "/" << file << ".cpp is missing");
    CHECK(!i.summary.empty());
    CHECK(i.summary.back() != '.');
    CHECK(!i.rationale.empty());
    CHECK(!i.remediation.empty());
    CHECK(!i.seed.empty());
    CHECK_MESSAGE(!i.checks.empty(), "the rule declares no kinds it checks (RuleInfo::checks)");
    REQUIRE(!i.facts.empty());
    bool cites = false;
    for (const auto& f : i.facts) cites = cites || f.find("facts/") != std::string::npos || f.find("Seed") != std::string::npos;
    CHECK_MESSAGE(cites, "the rule cites no fact");
    for (const auto& p : i.params) CHECK(!p.description.empty());
  }
}

TEST_CASE("the README carries the two quick-start commands and links the rules index") {
  std::string readme = test::read_file(test::source_dir() / "README.md");
  CHECK(readme.find("make demo") != std::string::npos);
  CHECK(readme.find("make test") != std::string::npos);
  CHECK(readme.find("rules/README.md") != std::string::npos);
  for (const auto* r : test::registry().rules())
    CHECK_MESSAGE(readme.find(r->info().id) != std::string::npos, "README does not mention " << r->info().id);
}

}  // TEST_SUITE
