// Every input a fuzzer ever found a crash with stays a test: tests/fuzz/regressions/<target>/*
// is replayed through the same target bodies `make fuzz` runs. The rule fixtures and the shared
// corpus go through the whole-pipeline targets too, so the targets themselves stay right.

#include <doctest/doctest.h>

#include <filesystem>

#include "tests/fuzz/targets.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;

namespace {

void replay(fuzz::Target target, const fs::path& file) {
  const std::string data = test::read_file(file);
  CAPTURE(file.string());
  CHECK(target(reinterpret_cast<const uint8_t*>(data.data()), data.size()) == 0);
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("fuzz regressions: every input a fuzzer crashed on runs clean") {
  const fs::path root = test::source_dir() / "tests" / "fuzz" / "regressions";
  for (const auto& [name, target] : fuzz::targets()) {
    const fs::path dir = root / std::string(name);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) replay(target, e.path());
  }
}

TEST_CASE("fuzz targets run clean on every rule fixture") {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::source_dir() / "tests" / "rules")) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    replay(fuzz::yaml, e.path());
    replay(fuzz::lint, e.path());
    ++n;
  }
  CHECK(n > 20);
  for (const char* q : {"1", "500m", "1.5Gi", "1e3", "0.000000001", "-2Ki", "9223372036854775807"}) {
    CAPTURE(q);
    CHECK(fuzz::quantity(reinterpret_cast<const uint8_t*>(q), std::char_traits<char>::length(q)) == 0);
  }
}

}  // TEST_SUITE
