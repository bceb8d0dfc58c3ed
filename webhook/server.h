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
  // The transport (webhook/http.h): connections cost memory, not threads, and every limit holds
  // whatever a client sends.
  size_t max_connections = 1024;        // open at once; more are closed at once
  unsigned io_threads = 2;              // threads that read and write connections
  unsigned workers = 2;                 // threads that run the rules (admission requests)
  size_t max_queued_requests = 1024;    // admission requests waiting for a worker; more get 503
  size_t memory_budget_bytes = 128u << 20;  // bodies being read and documents being evaluated
  int handshake_timeout_ms = 5000;      // TCP accept to the end of the TLS handshake
  int request_timeout_ms = 10000;       // a whole request: request line, headers and body
  int idle_timeout_ms = 5000;           // a kept-alive connection between requests
  int write_timeout_ms = 10000;         // an answer
  size_t max_header_bytes = 16u << 10;  // request line and headers (431 past it)
  size_t max_header_fields = 64;        // (431 past it)
  size_t max_body_bytes = 8u << 20;     // (413 past it)
  int reload_interval_ms = 2000;        // poll of the certificate, config and state files (0: only SIGHUP)
  int shutdown_delay_ms = 0;            // not ready before stopping, so endpoints drain
  int grace_period_ms = 15000;          // longest wait for in-flight requests after SIGTERM
  std::string log_level = "info";       // debug, info, warn, error
};

// Runs until SIGTERM or SIGINT; SIGHUP reloads certificates, config and state. Returns the
// process exit code. Prints one JSON line {"msg":"listening","port":N} to stderr once serving.
int serve(const engine::Registry& registry, const ServerOptions& options);

}  // namespace gpuguard::webhook
