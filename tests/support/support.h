#pragma once
// Helpers shared by the tests: paths, in-memory linting, running the binary.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/evaluate.h"
#include "engine/registry.h"
#include "engine/schema.h"

namespace gpuguard::test {

// Built with AddressSanitizer (`make test-sanitize`): shadow memory and the quarantine multiply
// memory use, so memory bounds are scaled by this factor.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUGUARD_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(GPUGUARD_TEST_ASAN)
inline constexpr long kMemoryFactor = 3;
inline constexpr bool kSanitized = true;
#else
inline constexpr long kMemoryFactor = 1;
inline constexpr bool kSanitized = false;
#endif

std::filesystem::path source_dir();
// ../shared beside the checkout (GPUGUARD_SHARED overrides); nullopt when it is not there.
std::optional<std::filesystem::path> shared_dir();
std::filesystem::path binary();

// Marks the running suite as skipped (its data is absent); main returns 77.
void skip(const std::string& why);
bool skipped();

const engine::Registry& registry();

// Every file of the tests, the examples and the corpus (when ../shared is there) whose name ends
// with `extension` (".json"), sorted.
std::vector<std::filesystem::path> test_files(std::string_view extension);
// What the JSON differential tests must at least have read of test_files(".json"): files, and bytes
// of the small ones (with ../shared's corpus, 10 and 12,000; without it, the tests' and examples'
// own JSON files only: 5 and 1,000), so a test cannot pass on an emptied list.
size_t min_json_files();
size_t min_json_bytes();

std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& text);

struct LintOptions {
  bool complete = false;
  std::vector<std::string> only_rules;
  std::string config_yaml;  // a .gpuguard.yaml text; empty = defaults
  std::string file = "test.yaml";
  bool schemas = false;     // load ../shared/k8s-schemas (schema-invalid)
  bool fixes = true;        // EvalOptions::fixes
};
// The schemas of ../shared/k8s-schemas, loaded once; null when ../shared is absent.
std::shared_ptr<const engine::SchemaStore> shared_schemas();
// Lints YAML text in memory; config errors fail the test.
engine::Result lint(const std::string& text, const LintOptions& options = {});
// Objects of a YAML text (diagnostics fail the test).
std::vector<engine::Object> load_objects(const std::string& text, const std::string& file = "test.yaml");
// The objects but the one at `skip` (every one when it is out of range), as the cluster state a
// fix or the webhook reads: what `gpuguard mutate` gives each object of a file.
std::shared_ptr<const engine::Inventory> state_without(const std::vector<engine::Object>& objects, size_t skip,
                                                       const engine::Config& config, bool complete);

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

namespace gpuguard::test {

// A background process (the webhook server) with its output in files.
class Process {
 public:
  // gpuguard with these arguments, or (`command`) any program looked up in PATH.
  Process(const std::vector<std::string>& args, const std::filesystem::path& log_dir, bool command = false);
  ~Process();  // kills it if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  [[nodiscard]] int pid() const { return pid_; }
  void signal(int sig) const;
  // Waits (bounded) until the stderr log contains `text`; false on timeout or exit.
  bool wait_for_log(const std::string& text, int timeout_ms = 10000) const;
  [[nodiscard]] std::string log() const;
  // Waits (bounded) for the exit; the exit code, or -1 on timeout.
  int wait_exit(int timeout_ms = 20000);

 private:
  int pid_ = -1;
  std::filesystem::path err_;
  bool reaped_ = false;
  int code_ = -1;
};

// Runs a command (argv[0] looked up in PATH) and captures its output.
Run run_command(const std::vector<std::string>& argv, const std::string& stdin_text = "",
                const std::filesystem::path& cwd = {});

}  // namespace gpuguard::test
