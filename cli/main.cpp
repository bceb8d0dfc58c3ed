// gpuguard: a policy linter and admission webhook for GPU scheduling on Kubernetes.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/net.h"
#include "cli/version.h"
#include "rules/registry.h"

namespace {

int run(int argc, char** argv) {
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
  cli::add_fix_command(app, registry, exit_code);
  cli::add_serve_command(app, registry, exit_code);
  cli::add_rules_command(app, registry, exit_code);
  cli::add_explain_command(app, registry, exit_code);
  cli::add_schema_command(app, registry, exit_code);
  cli::add_docs_command(app, registry, exit_code);
  cli::add_rbac_command(app, registry, exit_code);
  cli::add_version_command(app, exit_code);
  int code = exit_code;
  try {
    app.parse(argc, argv);
    code = exit_code;
  } catch (const CLI::ParseError& e) {
    code = app.exit(e) == 0 ? cli::kExitOk : cli::kExitUsage;  // --help and --version too
  }
  // What did not reach standard output (a full disk, a closed pipe) is not a clean run.
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout) {
    const int err = errno;
    std::cerr << "gpuguard: cannot write to standard output" << (err != 0 ? std::string(": ") + std::strerror(err) : "") << "\n";
    return cli::kExitUsage;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Nothing a command throws ends the process unexplained (an allocation that fails, a bug).
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpuguard: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "gpuguard: internal error\n";
  }
  return gpuguard::cli::kExitUsage;
}
