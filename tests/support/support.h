#pragma once
// Helpers shared by the tests: paths, in-memory linting, running the binary.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/evaluate.h"
#include "engine/registry.h"

namespace gpuguard::test {

std::filesystem::path source_dir();
// ../shared beside the checkout (GPUGUARD_SHARED overrides); nullopt when it is not there.
std::optional<std::filesystem::path> shared_dir();
std::filesystem::path binary();

// Marks the running suite as skipped (its data is absent); main returns 77.
void skip(const std::string& why);
bool skipped();

const engine::Registry& registry();

std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& text);

struct LintOptions {
  bool complete = false;
  std::vector<std::string> only_rules;
  std::string config_yaml;  // a .gpuguard.yaml text; empty = defaults
  std::string file = "test.yaml";
};
// Lints YAML text in memory; config errors fail the test.
engine::Result lint(const std::string& text, const LintOptions& options = {});
// Objects of a YAML text (diagnostics fail the test).
std::vector<engine::Object> load_objects(const std::string& text, const std::string& file = "test.yaml");

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the gpuguard binary with arguments (no shell), optional stdin, in `cwd`.
Run run(const std::vector<std::string>& args, const std::string& stdin_text = "",
        const std::filesystem::path& cwd = {});

// A temporary directory removed at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace gpuguard::test
