// The MIG catalog and the placement solver (engine/mig.h, rules/data/mig_catalog.h):
// every combination of facts/nvidia.md §1.2, the per-model data, and hostile input.

#include <doctest/doctest.h>

#include <chrono>

#include "engine/config.h"
#include "engine/mig.h"
#include "rules/data/mig_catalog.h"
#include "engine/evaluate.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;
namespace mig = gpuguard::rules::mig;

namespace {

const MigGpu& gpu(std::string_view device_id) {
  RunSettings s;
  mig::Catalog c(s);
  const MigGpu* g = c.by_device_id(device_id);
  REQUIRE(g != nullptr);
  return *g;
}

MigFit fit(const MigGpu& g, std::vector<std::pair<std::string, int64_t>> req) {
  std::vector<MigRequest> r;
  for (const auto& entry : req) {  // not a structured binding: clang 14 cannot capture one (doctest's macros do)
    const std::string& name = entry.first;
    const MigProfile* p = g.profile(name);
    REQUIRE_MESSAGE(p != nullptr, name);
    r.push_back({p, entry.second});
  }
  return mig_fit(g, r);
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("mig catalog: the built-in data parses and covers every GPU of the facts") {
  CHECK(mig::builtin_problems().empty());
  for (const auto& [ptr, msg] : mig::builtin_problems()) FAIL(ptr << ": " << msg);
  // PCI ID → model, facts/nvidia.md §1.3
  struct Case {
    const char* id;
    const char* name;
    const char* profile;
  } cases[] = {
      {"0x20B710DE", "A30-24GB", "2g.12gb+me"},       {"0x20B010DE", "A100-40GB", "1g.5gb"},
      {"0x20F110DE", "A100-40GB", "7g.40gb"},         {"0x20F610DE", "A100-40GB", "3g.20gb"},
      {"0x20B210DE", "A100-80GB", "1g.20gb"},         {"0x20B510DE", "A100-80GB", "7g.80gb"},
      {"0x233010DE", "H100-80GB", "3g.40gb"},         {"0x232410DE", "H100-80GB", "4g.40gb"},
      {"0x232110DE", "H100-NVL-94GB", "7g.94gb"},     {"0x234210DE", "H100-96GB/GH200-96GB", "3g.48gb"},
      {"0x233510DE", "H200-141GB", "3g.71gb"},        {"0x233B10DE", "H200-NVL-141GB", "1g.35gb"},
      {"0x234810DE", "GH200-144GB-HBM3e", "7g.144gb"}, {"0x290110DE", "B200", "1g.45gb"},
      {"0x294110DE", "GB200", "3g.93gb"},             {"0x318210DE", "B300", "7g.269gb"},
      {"0x31C210DE", "GB300", "1g.70gb"},             {"0x2BB510DE", "RTX-PRO-6000-Blackwell-Server", "2g.48gb+me.all"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.id);
    const MigGpu& g = gpu(c.id);
    CHECK(g.name == c.name);
    CHECK(g.profile(c.profile) != nullptr);
  }
  CHECK(gpu("0x233510DE").profile("3g.40gb") == nullptr);  // the example
  CHECK(gpu("0x20B710DE").compute_slices == 4);
  // Inferred entries are marked (facts: DERIVED / UNVERIFIED).
  CHECK_FALSE(gpu("0x20B010DE").inferred);
  CHECK_FALSE(gpu("0x233010DE").inferred);
  CHECK(gpu("0x233510DE").inferred);
  CHECK(gpu("0x232110DE").inferred);
  CHECK(gpu("0x233B10DE").profile("1g.35gb")->inferred);
  CHECK_FALSE(gpu("0x233510DE").profile("1g.35gb")->inferred);
  // GFD products, with MIG and SHARED suffixes.
  RunSettings s;
  mig::Catalog cat(s);
  REQUIRE(cat.by_product("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb") != nullptr);
  CHECK(cat.by_product("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")->name == "H100-80GB");
  CHECK(cat.by_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED")->name == "A100-40GB");
  CHECK(cat.by_product("NVIDIA-H200-NVL")->name == "H200-NVL-141GB");
  CHECK(cat.by_product("Tesla-T4") == nullptr);
  // The unattributed profiles are known by name.
  CHECK(cat.known_profile("7g.189gb"));
  CHECK_FALSE(cat.known_profile("3g.30gb"));
  CHECK(mig::catalog_markdown().find("**(inferred)**") != std::string::npos);
  // mig-profile-unknown's rationale shows the catalog, made only when the rationale is shown.
  const auto* rule = gpuguard::test::registry().find("mig-profile-unknown");
  REQUIRE(rule != nullptr);
  CHECK(rule->info().rationale.find("| GPU model |") == std::string::npos);
  CHECK(rule->info().full_rationale() == rule->info().rationale + mig::catalog_markdown());
}

TEST_CASE("mig solver: every combination of facts/nvidia.md §1.2 on a 7-slice GPU") {
  for (const char* id : {"0x20B210DE", "0x233010DE"}) {  // A100-80GB, H100-80GB
    CAPTURE(id);
    const MigGpu& g = gpu(id);
    CHECK(fit(g, {{"4g.40gb", 1}, {"3g.40gb", 1}}).ok);
    CHECK(fit(g, {{"3g.40gb", 2}}).ok);
    auto f = fit(g, {{"4g.40gb", 2}});
    CHECK_FALSE(f.ok);
    CHECK(f.why == "4g.40gb + 4g.40gb: both need placement 0");
    f = fit(g, {{"3g.40gb", 3}});
    CHECK_FALSE(f.ok);
    CHECK(f.why == "3 × 3g.40gb needs 9 of 7 compute slices");
    CHECK(fit(g, {{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}).ok);  // all-balanced
    CHECK(fit(g, {{"2g.20gb", 3}, {"1g.10gb", 1}}).ok);
    f = fit(g, {{"2g.20gb", 3}, {"1g.10gb", 2}});
    CHECK_FALSE(f.ok);
    CHECK(f.why == "3 × 2g.20gb + 2 × 1g.10gb need 8 of 7 compute slices");
    CHECK(fit(g, {{"1g.20gb", 4}}).ok);
    f = fit(g, {{"1g.20gb", 4}, {"1g.10gb", 1}});
    CHECK_FALSE(f.ok);
    CHECK(f.why == "4 × 1g.20gb + 1g.10gb need 9 of 8 memory slices");
    for (const char* other : {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}) {
      CAPTURE(other);
      CHECK_FALSE(fit(g, {{"7g.80gb", 1}, {other, 1}}).ok);
    }
    CHECK(fit(g, {{"7g.80gb", 1}}).ok);
    CHECK(fit(g, {{"4g.40gb", 1}, {"2g.20gb", 1}, {"1g.10gb", 1}}).ok);
    CHECK(fit(g, {{"3g.40gb", 1}, {"2g.20gb", 2}}).ok);
    CHECK(fit(g, {{"3g.40gb", 1}, {"1g.10gb", 4}}).ok);
    CHECK(fit(g, {{"1g.10gb", 7}}).ok);
    // At most one +me, and per-profile maxima.
    f = fit(g, {{"1g.10gb+me", 2}});
    CHECK_FALSE(f.ok);
    CHECK(f.why.find("at most 1") != std::string::npos);
    f = fit(g, {{"1g.20gb", 5}});
    CHECK_FALSE(f.ok);
    CHECK(f.why.find("at most 4") != std::string::npos);
    CHECK(fit(g, {{"1g.10gb+me", 1}, {"1g.10gb", 6}}).ok);
    // 2g + 2g + 2g leaves slice 6 (memory 6–7): a 1g fits, a 3g does not.
    f = fit(g, {{"2g.20gb", 1}, {"3g.40gb", 2}});
    CHECK_FALSE(f.ok);  // 8 compute
    CHECK(fit(g, {{"3g.40gb", 1}, {"1g.20gb", 2}}).ok);
    f = fit(g, {{"3g.40gb", 1}, {"1g.20gb", 3}});
    CHECK_FALSE(f.ok);
    CHECK(f.why == "3g.40gb + 3 × 1g.20gb need 10 of 8 memory slices");
    // A small 1g never starts at slice 7: 4g + 3 small 1g fit, and the placement says where.
    f = fit(g, {{"4g.40gb", 1}, {"1g.10gb", 3}});
    REQUIRE(f.ok);
    CHECK(f.starts == std::vector<int>{0, 4, 5, 6});
  }
  // A100-40GB: 1g.10gb is the double-memory 1g there.
  const MigGpu& a40 = gpu("0x20B010DE");
  CHECK(fit(a40, {{"1g.10gb", 4}}).ok);
  CHECK_FALSE(fit(a40, {{"1g.10gb", 5}}).ok);
  CHECK(fit(a40, {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}}).ok);
  // A placement failure only the search finds (a config GPU): B cannot go around A.
  MigGpu odd;
  odd.name = "odd";
  odd.compute_slices = 4;
  odd.memory_slices = 4;
  odd.profiles = {MigProfile{"1g.2gb", 1, 2, {1}, 1, false}, MigProfile{"2g.2gb", 2, 2, {0, 2}, 1, false}};
  auto fo = mig_fit(odd, {{&odd.profiles[0], 1}, {&odd.profiles[1], 1}});
  CHECK_FALSE(fo.ok);
  CHECK(fo.why == "1g.2gb + 2g.2gb: no placement without overlapping memory slices (1g.2gb (2 memory slices) starts at 1; 2g.2gb (2 memory slices) starts at 0 or 2)");
  // 4-slice GPUs (A30).
  const MigGpu& a30 = gpu("0x20B710DE");
  CHECK(fit(a30, {{"1g.6gb", 4}}).ok);
  CHECK(fit(a30, {{"2g.12gb", 2}}).ok);
  CHECK(fit(a30, {{"1g.6gb", 2}, {"2g.12gb", 1}}).ok);  // mig-parted's 4-slot balanced
  auto f = fit(a30, {{"4g.24gb", 1}, {"1g.6gb", 1}});
  CHECK_FALSE(f.ok);
  CHECK(f.why == "4g.24gb + 1g.6gb need 5 of 4 compute slices");
}

TEST_CASE("mig solver: hostile input is answered fast") {
  const MigGpu& g = gpu("0x233010DE");
  std::vector<MigRequest> req;
  for (int i = 0; i < 1000; ++i) req.push_back({g.profile("1g.10gb"), 1});
  auto t0 = std::chrono::steady_clock::now();
  auto f = mig_fit(g, req);
  CHECK_FALSE(f.ok);
  req.assign(1, {g.profile("1g.10gb"), INT64_MAX});
  CHECK_FALSE(mig_fit(g, req).ok);
  req.assign(1, {g.profile("3g.40gb"), INT64_MAX / 2});
  req.push_back({g.profile("4g.40gb"), INT64_MAX / 3});
  CHECK_FALSE(mig_fit(g, req).ok);
  // A config GPU with 32 slices and many small instances: bounded search.
  MigGpu big;
  big.name = "big";
  big.compute_slices = 32;
  big.memory_slices = 32;
  for (int m : {1, 2, 3}) {
    MigProfile p;
    p.name = std::to_string(m) + "g." + std::to_string(m) + "gb";
    p.compute = 1;
    p.memory = m;
    p.max = 32;
    for (int s = 0; s + m <= 32; ++s) p.starts.push_back(s);
    big.profiles.push_back(p);
  }
  req = {{&big.profiles[0], 10}, {&big.profiles[1], 6}, {&big.profiles[2], 3}};
  CHECK(mig_fit(big, req).ok);
  req = {{&big.profiles[0], 12}, {&big.profiles[1], 6}, {&big.profiles[2], 3}};  // 33 of 32 memory slices
  CHECK_FALSE(mig_fit(big, req).ok);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 2000);
}

TEST_CASE("mig rules: a hostile mig-parted config is linted fast") {
  std::string text = "version: v1\nmig-configs:\n  wide:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n";
  for (int i = 0; i < 1000; ++i) text += "        \"" + std::to_string(i % 7 + 1) + "g." + std::to_string(i) + "gb\": " + std::to_string(i) + "\n";
  text += "        \"1g.10gb\": 1000000000000\n";
  text += "  long:\n";
  for (int i = 0; i < 5000; ++i)
    text += "    - device-filter: [\"0x" + std::to_string(10000000 + i) + "\"]\n      devices: [" + std::to_string(i) +
            "]\n      mig-enabled: true\n      mig-devices: {\"" + std::to_string(i % 7 + 1) + "g.10gb\": 1}\n";
  gpuguard::test::LintOptions o;
  for (const char* r : {"mig-config-invalid", "mig-profile-unknown", "mig-geometry-infeasible", "mig-mixed-profiles"}) o.only_rules.push_back(r);
  auto t0 = std::chrono::steady_clock::now();
  auto result = gpuguard::test::lint(text, o);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 3000);
  CHECK(result.findings.size() > 1000);  // every unknown profile is named
}

TEST_CASE("mig names: profiles and device IDs") {
  for (const char* ok : {"1g.10gb", "1g.5gb+me", "1g.24gb+me.all", "2g.48gb+gfx", "1g.24gb-me", "1c.3g.20gb", "7g.189gb", "1g.24gb+me,gfx"})
    CHECK_MESSAGE(valid_profile_name(ok), ok);
  for (const char* bad : {"", "1g", "1g.10g", "g.10gb", "1g.10gb+", "1g.10gb+xx", "1g.10gb+me-gfx", "1g.10gb-me,gfx", "3g-40gb", "mig-1g.10gb"})
    CHECK_FALSE_MESSAGE(valid_profile_name(bad), bad);
  CHECK(normalize_device_id("0x20b010de") == "0x20B010DE");
  CHECK(normalize_device_id("0x234210DE:0x16B510DE") == "0x234210DE");
  CHECK(normalize_device_id("0x2342") == "");
  CHECK(normalize_device_id("20B010DE") == "");
  CHECK(normalize_device_id("0x234210DE:0x16B5") == "");
}

TEST_CASE("config: mig.gpus adds a GPU model to the catalog") {
  auto c = load_config(
      "mig:\n"
      "  gpus:\n"
      "    - name: X100\n"
      "      deviceIDs: [\"0x3FFF10DE\"]\n"
      "      products: [NVIDIA-X100]\n"
      "      profiles:\n"
      "        - {name: 1g.50gb, compute: 1, memory: 1, starts: [0, 1, 2, 3, 4, 5, 6], max: 7}\n"
      "        - {name: 7g.400gb, compute: 7, memory: 8, starts: [0], max: 1}\n",
      ".gpuguard.yaml", gpuguard::test::registry());
  REQUIRE(c.has_value());
  REQUIRE(c->settings.mig_gpus);
  REQUIRE(c->settings.mig_gpus->size() == 1);
  mig::Catalog cat(c->settings);
  REQUIRE(cat.by_device_id("0x3FFF10DE") != nullptr);
  CHECK(cat.by_device_id("0x3FFF10DE")->origin == ".gpuguard.yaml");
  CHECK(cat.by_product("NVIDIA-X100-MIG-1g.50gb") != nullptr);
  CHECK(cat.known_profile("7g.400gb"));
  CHECK(cat.by_device_id("0x233010DE") != nullptr);  // the built-ins stay
  // It prints back and loads again.
  auto printed = print_config(*c, gpuguard::test::registry());
  CHECK(printed.find("X100") != std::string::npos);
  auto again = load_config(printed, "printed.yaml", gpuguard::test::registry());
  CHECK(again.has_value());

  auto bad = load_config("mig:\n  gpus:\n    - name: Y\n      deviceIDs: [2330]\n      profiles:\n        - {name: 3g.40, compute: 9, memory: 4, starts: [6], max: 2}\n",
                         ".gpuguard.yaml", gpuguard::test::registry());
  REQUIRE_FALSE(bad.has_value());
  std::string all;
  for (const auto& d : bad.error()) all += d.message + "\n";
  CHECK(all.find("mig.gpus[0].deviceIDs[0]") != std::string::npos);
  CHECK(all.find("mig.gpus[0].profiles[0].name") != std::string::npos);
  CHECK(all.find("compute") != std::string::npos);
  CHECK(all.find("starts") != std::string::npos);
  CHECK_FALSE(load_config("mig: {unknown: 1}\n", ".gpuguard.yaml", gpuguard::test::registry()).has_value());
}

}  // TEST_SUITE
