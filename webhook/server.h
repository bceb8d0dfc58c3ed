#pragma once
// `gpuguard serve`: the admission webhook over TLS, with health, readiness and metrics.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/registry.h"
#include "webhook/admission.h"

namespace gpuguard::webhook {

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8443;
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;           // verify client certificates when set
  std::string config_file;              // "" = built-in defaults
  std::vector<std::string> state_paths; // cluster snapshot files or folders
  bool watch = false;                   // cluster state from the API server (list + watch)
  std::string kubeconfig;               // for `watch`: "" = $KUBECONFIG, in-cluster, ~/.kube/config
  std::string kube_context;
  std::optional<std::string> metrics_host;  // health and metrics on a plain-HTTP port instead
  int metrics_port = 0;
  size_t min_threads = 8;
  size_t max_threads = 512;             // connections served at once (each open connection holds one)
  int idle_worker_seconds = 30;         // a worker beyond min_threads idle this long exits
  int keep_alive_seconds = 5;
  int read_timeout_seconds = 10;
  int write_timeout_seconds = 10;
  size_t max_body_bytes = 8u << 20;
  int reload_interval_ms = 2000;        // poll of the certificate, config and state files (0: only SIGHUP)
  int shutdown_delay_ms = 0;            // not ready before stopping, so endpoints drain
  int grace_period_ms = 15000;          // longest wait for in-flight requests after SIGTERM
  std::string log_level = "info";       // debug, info, warn, error
};

// Runs until SIGTERM or SIGINT; SIGHUP reloads certificates, config and state. Returns the
// process exit code. Prints one JSON line {"msg":"listening","port":N} to stderr once serving.
int serve(const engine::Registry& registry, const ServerOptions& options);

}  // namespace gpuguard::webhook
