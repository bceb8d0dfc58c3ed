// gpuguard: a policy linter and admission webhook for GPU scheduling on Kubernetes.

#include <iostream>

#include "cli/commands.h"
#include "cli/net.h"
#include "cli/version.h"
#include "rules/registry.h"

int main(int argc, char** argv) {
  using namespace gpuguard;
  if (!cli::start_program(argc, argv)) return cli::kExitNetUnusable;
  const engine::Registry registry = rules::make_registry();
  CLI::App app{"gpuguard: GPU scheduling best practices for Kubernetes manifests and admission", "gpuguard"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(cli::kVersion));
  int exit_code = cli::kExitOk;
  cli::add_lint_command(app, registry, exit_code);
  cli::add_audit_command(app, registry, exit_code);
  cli::add_mutate_command(app, registry, exit_code);
  cli::add_serve_command(app, registry, exit_code);
  cli::add_rules_command(app, registry, exit_code);
  cli::add_explain_command(app, registry, exit_code);
  cli::add_schema_command(app, registry, exit_code);
  cli::add_docs_command(app, registry, exit_code);
  cli::add_rbac_command(app, registry, exit_code);
  cli::add_version_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? cli::kExitOk : cli::kExitUsage;
  }
  return exit_code;
}
