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
  // Whether /mutate and `gpuguard mutate` apply the rule's fix (`fix: false` switches it off). A
  // fix is applied only in enforce mode: a rule in warn or audit mode changes nothing.
  bool fix = true;
  [[nodiscard]] bool fixes() const { return enabled && fix && mode == Mode::enforce; }
};

// Who sent an admission request: request.userInfo's username and groups.
struct RequestUser {
  std::string username;
  std::vector<std::string> groups;
};

// Why a gpuguard.io/ignore annotation that names a rule does not exempt its finding.
enum class NotHonoured : uint8_t {
  off,         // annotations do not exempt at admission (webhook.exemptions.annotations: false)
  no_reason,   // requireReason and no non-empty gpuguard.io/ignore-reason
  namespace_,  // no webhook.exemptions.allow entry matches the object's namespace
  rule,        // ... entries match the namespace, none the rule
  user,        // ... entries match namespace and rule, none the user or a group
  flag,        // `lint --no-annotation-exemptions`
};
// The note a finding carries: "gpuguard.io/ignore not honoured at admission for this rule" (at most 64 bytes).
[[nodiscard]] std::string_view honour_note(NotHonoured why);

// One entry of webhook.exemptions.allow: where, for which rules and for whom an annotation may
// exempt at admission. Every field that is set must match; users and groups: either matches.
struct ExemptionAllow {
  std::shared_ptr<const re2::RE2> namespaces;  // RE2, full match; null: any ("" for cluster-scoped objects)
  std::vector<std::string> rules;              // empty: any rule
  std::vector<std::shared_ptr<const re2::RE2>> users;   // RE2, full match on userInfo.username
  std::vector<std::shared_ptr<const re2::RE2>> groups;  // RE2, full match on any of userInfo.groups
  std::string where;  // "file:line" of the entry
  [[nodiscard]] bool matches_namespace(std::string_view ns) const;
  [[nodiscard]] bool covers(std::string_view rule) const;
  // No user known (`gpuguard mutate` without --as): an entry that names users or groups does not match.
  [[nodiscard]] bool matches_user(const RequestUser* user) const;
};

// webhook.exemptions: whether and where object annotations exempt findings at admission (the
// operator's decision; the linter honours them unless told not to).
struct ExemptionSettings {
  bool annotations = false;     // annotations never exempt at admission by default
  bool require_reason = true;   // an annotation without a non-empty gpuguard.io/ignore-reason exempts nothing
  std::vector<ExemptionAllow> allow;  // empty: anywhere, any rule, anyone
  // Why an annotation naming `rule` on an object in `ns` does not exempt it for `user`; nullopt: it does.
  [[nodiscard]] std::optional<NotHonoured> refuses(std::string_view ns, std::string_view rule, const RequestUser* user,
                                                   bool has_reason) const;
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
  ExemptionSettings exemptions;
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

// One of `clusters:`: an inventory scope of `gpuguard lint`. Its paths' objects are linted
// together and apart from every other scope's (cross-object rules never mix two clusters).
struct ClusterScope {
  std::string name;
  std::vector<std::string> paths;                // as written
  std::vector<std::filesystem::path> resolved;   // relative to the config file's folder, lexically normal
  bool complete = false;                         // `complete: true`: the paths hold the whole cluster
  // The cluster's `rules:` over the config's (every registered rule); nullopt: the config's own.
  std::optional<std::map<std::string, RuleSettings, std::less<>>> rules;
  std::vector<std::string> named;  // the rules its `rules:` names
  std::string where;  // "file:line" of the entry
};

struct Config {
  std::string source;  // the file it came from; "" for the built-in defaults
  RunSettings settings;
  std::vector<std::string> extra_gpu_resources;
  std::vector<std::string> extra_gpu_device_classes;  // `gpuDeviceClasses`, added to the defaults
  std::map<std::string, RuleSettings, std::less<>> rules;  // every registered rule
  std::vector<Exclusion> exclude;
  WebhookSettings webhook;
  // `lint`'s inventory scopes: `oneInventory: true` joins the paths given on the command line into
  // one (else each is its own); `clusters:` names scopes by their paths.
  bool one_inventory = false;
  std::vector<ClusterScope> clusters;

  [[nodiscard]] const RuleSettings& rule(std::string_view id) const;
  [[nodiscard]] const ClusterScope* cluster(std::string_view name) const;
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
