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

TEST_CASE("fuzz target mig: every built-in GPU, every pair of profiles at counts 1 to 3, checked by its oracle") {
  // The target traps when the solver claims an invalid placement or misses one a brute-force
  // search finds; this runs it over every small request of every built-in model.
  size_t runs = 0;
  for (uint8_t gpu = 0; gpu < 15; ++gpu)
    for (uint8_t a = 0; a < 12; ++a)
      for (uint8_t b = a; b < 12; ++b)
        for (uint8_t ca = 0; ca < 3; ++ca)
          for (uint8_t cb = 0; cb < 3; ++cb) {
            const uint8_t input[] = {0, gpu, a, ca, b, cb};
            CHECK(fuzz::mig(input, sizeof input) == 0);
            ++runs;
          }
  CHECK(runs > 10000);
  const std::string catalog = "\x01[{\"name\":\"X\",\"deviceIDs\":[\"0x12345678\"],\"computeSlices\":2,\"memorySlices\":2,"
                              "\"profiles\":[{\"name\":\"1g.1gb\",\"compute\":1,\"memory\":1,\"starts\":[0,1],\"max\":2}]}]";
  CHECK(fuzz::mig(reinterpret_cast<const uint8_t*>(catalog.data()), catalog.size()) == 0);
}

}  // TEST_SUITE
