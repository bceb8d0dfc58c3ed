#pragma once
// `.gpuguard.yaml`: which rules run, at what severity, with which parameters, and what is
// excluded. Parsed once, validated with positions, printable back (`lint --print-config`), and
// described by a JSON Schema generated from the same rule metadata (schemas/config.schema.json).

#include "engine/expected.h"
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/registry.h"
#include "engine/rule.h"

namespace re2 {
class RE2;
}

namespace gpuguard::engine {

[[nodiscard]] std::string_view to_string(Mode m);

struct RuleSettings {
  bool enabled = true;
  Severity severity = Severity::warning;
  Mode mode = Mode::enforce;
  Params params;
};

// `webhook:` — how `gpuguard serve` answers.
struct WebhookSettings {
  // On UPDATE, report only findings the old object did not have (so a change that does not
  // touch a defect is not blocked by it), or every finding.
  bool new_findings_only = true;
  // When a rule fails internally: allow the request (the default, like failurePolicy: Ignore
  // for the rules' sake) or deny it.
  bool fail_open = true;
  bool mutate_pods = true;       // apply fixes to Pods
  bool mutate_templates = false; // and to controllers' pod templates (GitOps tools would see drift)
};

// Objects a config takes out of linting; every pattern that is set must match in full (RE2).
struct Exclusion {
  std::shared_ptr<const re2::RE2> namespace_;
  std::shared_ptr<const re2::RE2> kind;
  std::shared_ptr<const re2::RE2> name;
  std::vector<std::string> rules;  // empty: every rule
  std::string reason;
  std::string where;  // "file:line" of the entry, for messages
  [[nodiscard]] bool matches(std::string_view ns, std::string_view kind, std::string_view name) const;
  [[nodiscard]] bool covers(std::string_view rule) const;
};

struct Config {
  std::string source;  // the file it came from; "" for the built-in defaults
  RunSettings settings;
  std::vector<std::string> extra_gpu_resources;
  std::map<std::string, RuleSettings, std::less<>> rules;  // every registered rule
  std::vector<Exclusion> exclude;
  WebhookSettings webhook;

  [[nodiscard]] const RuleSettings& rule(std::string_view id) const;
};

// The defaults: every rule enabled at its own severity with its default parameters.
[[nodiscard]] Config default_config(const Registry& registry);

// Parses and validates a config; on failure, every problem with its position.
[[nodiscard]] Expected<Config, std::vector<Diagnostic>> load_config(std::string_view text, std::string_view file,
                                                                         const Registry& registry);
[[nodiscard]] Expected<Config, std::vector<Diagnostic>> load_config_file(const std::filesystem::path& path,
                                                                              const Registry& registry);

// `.gpuguard.yaml` or `.gpuguard.yml` in `start` or the nearest parent that has one.
[[nodiscard]] std::optional<std::filesystem::path> find_config_upward(const std::filesystem::path& start);

// The effective configuration as YAML, complete (every rule, every parameter).
[[nodiscard]] std::string print_config(const Config& config, const Registry& registry);

// JSON Schema (draft-07) of the config file, with every rule and its typed parameters.
[[nodiscard]] json config_schema(const Registry& registry);

}  // namespace gpuguard::engine
