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

// Set by gpuguard for the gpuguard-net it runs, to its own version. gpuguard refuses to run
// gpuguard-net when it is set already (the program it ran was gpuguard again: a link, a copy),
// and gpuguard-net refuses a version other than its own (one of the two was upgraded alone).
inline constexpr const char* kNetMarker = "GPUGUARD_NET_EXEC";
// Exit codes when gpuguard-net cannot take over, as env(1) and shells give them.
inline constexpr int kExitNetMissing = 127;   // no gpuguard-net beside gpuguard
inline constexpr int kExitNetUnusable = 126;  // there, but not runnable, not gpuguard-net, or another version

// What each program does first, with the command line main() received: gpuguard keeps it (to hand
// it on to gpuguard-net) and sets up OpenSSL without the system's openssl.cnf, which it has no use
// for (its libcrypto only encodes base64 and hashes SARIF fingerprints; a host config that loads
// a provider would break those); gpuguard-net checks kNetMarker. Returns false (after a message)
// when the program must stop, with kExitNetUnusable.
[[nodiscard]] bool start_program(int argc, char** argv);

// Each returns the command's exit code. In gpuguard they return only if gpuguard-net could not
// be started (after saying why, with kExitNetMissing or kExitNetUnusable).
int run_serve(const engine::Registry& registry, const webhook::ServerOptions& opts);
int run_audit(const engine::Registry& registry, const AuditOptions& opts);

}  // namespace gpuguard::cli
