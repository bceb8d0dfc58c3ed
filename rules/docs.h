#pragma once
// Rule documentation generated from the rules' metadata: the index (rules/README.md), one page
// per rule (rules/<category>/<id>.md), and the plain-text `gpuguard explain`.

#include <string>

#include "engine/registry.h"

namespace gpuguard::rules {

[[nodiscard]] std::string rules_index_markdown(const engine::Registry& registry);
[[nodiscard]] std::string rule_page_markdown(const engine::Rule& rule);
// "rules/<category>/<id>.md", relative to the repository root.
[[nodiscard]] std::string rule_doc_path(const engine::RuleInfo& info);
[[nodiscard]] std::string rule_explain_text(const engine::Rule& rule);
// "https://github.com/gpuguard/gpuguard/blob/main/rules/<category>/<id>.md"
[[nodiscard]] std::string rule_help_uri(const engine::RuleInfo& info);

}  // namespace gpuguard::rules
