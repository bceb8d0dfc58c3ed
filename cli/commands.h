#pragma once
// Each subcommand registers itself on the root app and sets `exit_code` when it runs.

#include <CLI/CLI.hpp>

#include "engine/object.h"
#include "engine/registry.h"

namespace gpuguard::cli {

// Exit codes (all subcommands).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitUsage = 2;  // usage, config or input errors

// -n/--namespace: a namespace's name, as the config's defaultNamespace.
inline CLI::Validator namespace_name() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (engine::is_dns1123_label(s)) return {};
        return "expected a namespace name (a DNS-1123 label: at most 63 lower-case letters, digits and '-'), got \"" + s + "\"";
      },
      "NAMESPACE");
}

void add_lint_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_audit_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_rules_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_explain_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_version_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_mutate_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_fix_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_schema_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_rbac_command(CLI::App& app, const engine::Registry& registry, int& exit_code);
void add_docs_command(CLI::App& app, const engine::Registry& registry, int& exit_code);

}  // namespace gpuguard::cli
