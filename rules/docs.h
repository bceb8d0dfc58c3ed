#pragma once
// Rule documentation generated from the rules' metadata: the index (rules/README.md), one page
// per rule (rules/<category>/<id>.md), and the plain-text `gpuguard explain`.

#include <string>

#include <utility>
#include <vector>

#include "engine/config.h"
#include "engine/registry.h"

namespace gpuguard::rules {

[[nodiscard]] std::string rules_index_markdown(const engine::Registry& registry);
[[nodiscard]] std::string rule_page_markdown(const engine::Rule& rule);
// "rules/<category>/<id>.md", relative to the repository root.
[[nodiscard]] std::string rule_doc_path(const engine::RuleInfo& info);
[[nodiscard]] std::string rule_explain_text(const engine::Rule& rule);
// RBAC rules (get, list, watch) for the kinds the enabled rules read from the cluster state.
[[nodiscard]] engine::json rbac_rules(const engine::Registry& registry, const engine::Config& config);
// RBAC rules (get, list) for every kind `gpuguard audit` lists.
[[nodiscard]] engine::json audit_rbac_rules(const engine::Registry& registry, const engine::Config& config);
// `gpuguard rbac`: the ClusterRole with those rules (the webhook's, or with `audit` the auditor's), as YAML.
[[nodiscard]] std::string cluster_role_yaml(const engine::Registry& registry, const engine::Config& config,
                                            const std::string& name, bool audit = false);
// The validating webhook's entries (charts/gpuguard/files/validating-<entry>.yaml), each
// {entry, name, failOpen, matchConditions, rules}: `workloads`, CREATE and UPDATE of every kind an
// enabled rule checks but the cluster-critical ones, under the operator's failurePolicy; one entry
// per cluster-critical kind (Nodes, ConfigMaps), always failing open, whose matchConditions send
// only the objects a rule reads; `deletes`, DELETE of the checked kinds whose removal an aggregate
// rule notices, failing open. The chart adds the namespace and node-identity exclusions.
[[nodiscard]] engine::json validating_webhooks(const engine::Registry& registry, const engine::Config& config);
// The mutating webhook's `rules`: CREATE of Pods, and of the template kinds of rules with fixes.
[[nodiscard]] engine::json mutating_webhook_rules(const engine::Registry& registry, const engine::Config& config,
                                                  bool templates);
// The chart's generated files (charts/gpuguard/files/*.yaml), path → text.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> chart_files(const engine::Registry& registry);

// "https://github.com/gpuguard/gpuguard/blob/main/rules/<category>/<id>.md"
[[nodiscard]] std::string rule_help_uri(const engine::RuleInfo& info);

}  // namespace gpuguard::rules
