// gpuguard serve: the validating and mutating admission webhook. Its command line; the server runs
// in gpuguard-net (cli/net.h).

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/net.h"

namespace gpuguard::cli {

namespace {

// "HOST:PORT", "[v6]:PORT" or ":PORT".
bool split_address(const std::string& addr, std::string& host, int& port) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) return false;
  host = addr.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  try {
    size_t used = 0;
    int p = std::stoi(addr.substr(colon + 1), &used);
    if (used != addr.size() - colon - 1 || p < 0 || p > 65535) return false;
    port = p;
  } catch (...) {
    return false;
  }
  return true;
}

// A finite number (of seconds): CLI11's Range lets NaN through, since every comparison with it is
// false, and a cast of NaN or infinity to an integer is undefined.
CLI::Validator finite_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) return "expected a number of seconds, got " + text;
        return {};
      },
      "SECONDS");
}

}  // namespace

void add_serve_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto opts = std::make_shared<webhook::ServerOptions>();
  auto listen = std::make_shared<std::string>("0.0.0.0:8443");
  auto metrics = std::make_shared<std::string>();
  auto reload_s = std::make_shared<double>(2.0);
  auto delay_s = std::make_shared<double>(0.0);
  auto grace_s = std::make_shared<double>(15.0);
  auto budget_mib = std::make_shared<size_t>(opts->memory_budget_bytes >> 20);
  auto handshake_s = std::make_shared<double>(opts->handshake_timeout_ms / 1000.0);
  auto read_s = std::make_shared<double>(opts->request_timeout_ms / 1000.0);
  auto idle_s = std::make_shared<double>(opts->idle_timeout_ms / 1000.0);
  auto write_s = std::make_shared<double>(opts->write_timeout_ms / 1000.0);
  auto* sub = app.add_subcommand("serve", "Run the validating (/validate) and mutating (/mutate) admission webhook over TLS");
  sub->add_option("--listen", *listen, "address to serve on, HOST:PORT (port 0 picks one)");
  sub->add_option("--tls-cert", opts->cert_file, "serving certificate (PEM, chain after the leaf)")->required();
  sub->add_option("--tls-key", opts->key_file, "its private key (PEM)")->required();
  sub->add_option("--client-ca", opts->client_ca_file, "require client certificates signed by this CA (PEM)");
  sub->add_option("-c,--config", opts->config_file, "config file (.gpuguard.yaml); reloaded when it changes");
  auto* state = sub->add_option("--state", opts->state_paths, "cluster state: files or folders of objects (repeatable); reloaded when they change");
  sub->add_flag("--watch", opts->watch,
                "cluster state from the API server: list and watch the kinds the enabled rules read (not ready until listed)")
      ->excludes(state);
  sub->add_option("--kubeconfig", opts->kubeconfig, "with --watch: kubeconfig file(s), ':'-separated (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  sub->add_option("--context", opts->kube_context, "with --watch: kubeconfig context (default: the current one)");
  sub->add_option("--metrics-addr", *metrics, "serve /healthz, /readyz and /metrics on this plain-HTTP HOST:PORT instead of the TLS port");
  sub->add_option("--max-connections", opts->max_connections, "connections open at once; more are closed at once (default 1024)")->check(CLI::Range(1, 65536));
  sub->add_option("--workers", opts->workers, "threads that evaluate admission requests (default 2)")->check(CLI::Range(1, 256));
  sub->add_option("--memory-budget", *budget_mib,
                  "MiB that the requests in progress may hold at once: bodies being read and the documents built from them; past it, 503 "
                  "(default 128)")
      ->check(CLI::Range(16, 65536));
  sub->add_option("--max-body-bytes", opts->max_body_bytes, "largest request body, 413 past it (default 8 MiB)")->check(CLI::Range(1024, 1 << 30));
  sub->add_option("--max-header-bytes", opts->max_header_bytes, "largest request line and headers, 431 past it (default 16 KiB)")
      ->check(CLI::Range(1024, 1 << 20));
  sub->add_option("--handshake-timeout", *handshake_s, "seconds from a connection to the end of its TLS handshake (default 5)")
      ->check(finite_seconds())->check(CLI::Range(0.1, 300.0));
  sub->add_option("--read-timeout", *read_s, "seconds to read a whole request: request line, headers and body (default 10)")
      ->check(finite_seconds())->check(CLI::Range(0.1, 300.0));
  sub->add_option("--keep-alive-timeout", *idle_s, "seconds an idle connection is kept between requests (default 5)")
      ->check(finite_seconds())->check(CLI::Range(0.1, 300.0));
  sub->add_option("--write-timeout", *write_s, "seconds to write an answer (default 10)")->check(finite_seconds())->check(CLI::Range(0.1, 300.0));
  sub->add_option("--reload-interval", *reload_s, "seconds between checks of the certificate, config and state files; 0: only on SIGHUP (default 2)")
      ->check(finite_seconds())->check(CLI::Range(0.0, 3600.0));
  sub->add_option("--shutdown-delay", *delay_s, "seconds to stay up but not ready after SIGTERM, so endpoints drain (default 0)")
      ->check(finite_seconds())->check(CLI::Range(0.0, 300.0));
  sub->add_option("--grace-period", *grace_s, "seconds to wait for in-flight requests after SIGTERM (default 15)")->check(finite_seconds())->check(CLI::Range(0.0, 3600.0));
  sub->add_option("--log-level", opts->log_level, "debug, info, warn or error")->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  sub->callback([&registry, &exit_code, opts, listen, metrics, reload_s, delay_s, grace_s, budget_mib, handshake_s, read_s, idle_s, write_s] {
    if (!split_address(*listen, opts->host, opts->port)) {
      std::cerr << "gpuguard serve: --listen must be HOST:PORT, got \"" << *listen << "\"\n";
      exit_code = kExitUsage;
      return;
    }
    if (!metrics->empty()) {
      std::string host;
      int port = 0;
      if (!split_address(*metrics, host, port)) {
        std::cerr << "gpuguard serve: --metrics-addr must be HOST:PORT, got \"" << *metrics << "\"\n";
        exit_code = kExitUsage;
        return;
      }
      opts->metrics_host = host;
      opts->metrics_port = port;
    }
    opts->reload_interval_ms = static_cast<int>(*reload_s * 1000);
    opts->shutdown_delay_ms = static_cast<int>(*delay_s * 1000);
    opts->grace_period_ms = static_cast<int>(*grace_s * 1000);
    opts->memory_budget_bytes = *budget_mib << 20;
    opts->handshake_timeout_ms = static_cast<int>(*handshake_s * 1000);
    opts->request_timeout_ms = static_cast<int>(*read_s * 1000);
    opts->idle_timeout_ms = static_cast<int>(*idle_s * 1000);
    opts->write_timeout_ms = static_cast<int>(*write_s * 1000);
    if (opts->memory_budget_bytes < opts->max_body_bytes + (16u << 20)) {
      std::cerr << "gpuguard serve: --memory-budget must be at least --max-body-bytes + 16 MiB (a body of the largest size and "
                   "its document must fit in it)\n";
      exit_code = kExitUsage;
      return;
    }
    exit_code = run_serve(registry, *opts);
  });
}

}  // namespace gpuguard::cli
