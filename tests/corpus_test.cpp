// Every rule over the whole shared corpus of real manifests: no crash, no input error, and exactly
// the findings recorded (and judged) in tests/corpus/expected.txt.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "engine/json.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

// "rule corpus/relative/path:line", sorted.
std::vector<std::string> findings_of(const json& doc, const fs::path& shared) {
  std::vector<std::string> out;
  for (const auto& f : doc["findings"]) {
    std::string file = f.value("file", std::string("<cluster>"));
    if (file != "<cluster>") file = fs::relative(file, shared).string();
    out.push_back(f["rule"].get<std::string>() + " " + file + ":" + std::to_string(f.value("line", 0)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> expected_findings(const fs::path& p) {
  std::vector<std::string> out;
  std::stringstream ss(test::read_file(p));
  std::string line;
  while (std::getline(ss, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto hash = line.find("  #");  // a judgement follows the finding
    out.push_back(line.substr(0, hash == std::string::npos ? line.size() : hash));
    while (!out.back().empty() && out.back().back() == ' ') out.back().pop_back();
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_SUITE("corpus") {

TEST_CASE("lint over ../shared/corpus finds exactly the recorded findings") {
  auto shared = test::shared_dir();
  if (!shared) {
    test::skip("../shared/corpus is not on this machine");
    return;
  }
  for (const char* mode : {"plain", "complete", "schemas"}) {
    CAPTURE(mode);
    std::vector<std::string> args = {"lint", "--no-config", "--format", "json"};
    if (std::string(mode) == "complete") args.push_back("--complete");
    if (std::string(mode) == "schemas") args.insert(args.end(), {"--schemas", (*shared / "k8s-schemas").string()});
    args.push_back((*shared / "corpus").string());
    auto r = test::run(args);
    CHECK_MESSAGE((r.exit_code == 0 || r.exit_code == 1), "exit " << r.exit_code << "\n" << r.err);
    // The same report whatever the number of threads (checks on the parsing threads, states
    // merged, rules finishing in parallel).
    for (const char* jobs : {"1", "3"}) {
      std::vector<std::string> with_jobs = args;
      with_jobs.insert(with_jobs.begin() + 1, {"--jobs", jobs});
      CHECK_MESSAGE(test::run(with_jobs).out == r.out, "--jobs " << jobs << " reports differently");
    }
    json doc = json::parse(r.out);
    // Every file of the corpus parses: a parse error would be a defect of the loader.
    for (const auto& d : doc["diagnostics"]) FAIL_CHECK(d.dump());
    CHECK(doc["summary"]["files"].get<int>() > 150);
    auto got = findings_of(doc, *shared);
    auto want = expected_findings(test::source_dir() / "tests" / "corpus" / (std::string(mode) + ".txt"));
    std::vector<std::string> missing, extra;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
    for (const auto& m : missing) FAIL_CHECK("expected but not found: " << m);
    for (const auto& e : extra) FAIL_CHECK("found but not recorded in tests/corpus/" << std::string(mode) << ".txt: " << e);
  }
}

}  // TEST_SUITE
