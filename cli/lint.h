#pragma once
// The linter's pipeline, shared by `lint` (files) and `audit` (what it listed from a cluster):
// config, output formats, evaluation and reports, exit code.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/config.h"
#include "engine/load.h"
#include "engine/registry.h"

#include <memory>

namespace gpuguard::cli {

class SourceMap;  // cli/render.h

struct ReportOptions {
  std::vector<std::string> formats;  // "name" or "name=path"
  std::string fail_on = "error";
  std::string color = "auto";
  bool show_suppressed = false;
  // gpuguard.io/ignore annotations exempt nothing: the findings they name are reported with a note
  // (CI of a platform repository, where exemptions are the operator's config, not the manifests').
  bool no_annotation_exemptions = false;
};
using Outputs = std::vector<std::pair<std::string, std::string>>;  // format, file ("" = stdout)

// --format, --fail-on, --color, --show-suppressed, --no-annotation-exemptions.
void add_report_options(CLI::App* sub, ReportOptions& opts);
// The formats asked for, each with its file; nullopt (after a message) when they are wrong.
[[nodiscard]] std::optional<Outputs> parse_outputs(const ReportOptions& opts, const char* command);
// --config, else the nearest .gpuguard.yaml upward, else the defaults; nullopt after printing
// the config's problems.
[[nodiscard]] std::optional<engine::Config> load_run_config(const std::string& config_path, bool no_config,
                                                            const engine::Registry& registry);
void print_diagnostics(const std::vector<engine::Diagnostic>& diags);
// Loads and lints the inputs, writes every report; the exit code (0, 1 findings, 2 input errors).
int lint_and_report(const std::vector<engine::Input>& inputs, const engine::Config& config, const engine::Registry& registry,
                    bool complete, unsigned jobs, size_t max_file_mb, const Outputs& outputs, const ReportOptions& opts,
                    std::vector<engine::Diagnostic> diags, const char* command,
                    const std::vector<std::shared_ptr<const SourceMap>>& maps = {});

}  // namespace gpuguard::cli
