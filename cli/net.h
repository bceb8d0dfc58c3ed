#pragma once
// `serve` and `audit` need the webhook server and the Kubernetes client, and with them cpp-httplib
// and libssl, whose loading and initialisation were a third of every command's start-up. So the
// front end is two programs built from the same sources: `gpuguard-net` links that code
// (cli/net_linked.cpp, cli/audit_run.cpp); `gpuguard`, which lint, mutate and every other command
// run in, does not, and runs `serve` and `audit` by executing gpuguard-net from its own folder with
// the same arguments (cli/net_exec.cpp), once its own parser has accepted them. The process stays
// the same (exec keeps its pid, signals, descriptors and environment), so a supervisor that
// started `gpuguard serve` signals the server itself.

#include <string>

#include "cli/lint.h"
#include "engine/registry.h"
#include "webhook/server.h"

namespace gpuguard::cli {

// The program beside gpuguard that carries the network code.
inline constexpr const char* kNetProgram = "gpuguard-net";

struct AuditOptions {
  std::string kubeconfig;
  std::string context;
  std::string namespace_;  // "" = every namespace
  std::string snapshot;    // "" = a temporary folder, removed afterwards
  std::string config_path;
  bool no_config = false;
  bool include_owned = false;
  size_t page_size = 500;
  ReportOptions report;
};

// The command line as main() received it (gpuguard hands it on to gpuguard-net).
void remember_args(int argc, char** argv);

// Each returns the command's exit code. In gpuguard they return only if gpuguard-net could not
// be started (after saying why, with kExitUsage).
int run_serve(const engine::Registry& registry, const webhook::ServerOptions& opts);
int run_audit(const engine::Registry& registry, const AuditOptions& opts);

}  // namespace gpuguard::cli
