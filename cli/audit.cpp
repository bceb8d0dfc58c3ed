// gpuguard audit: its command line. The audit itself needs the Kubernetes client, so it runs in
// gpuguard-net (cli/net.h, cli/audit_run.cpp).

#include <memory>

#include "cli/commands.h"
#include "cli/lint.h"
#include "cli/net.h"

namespace gpuguard::cli {

void add_audit_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto opts = std::make_shared<AuditOptions>();
  auto* sub = app.add_subcommand("audit", "Lint a live cluster: list what the rules check and read, then lint it as a complete cluster");
  sub->add_option("--kubeconfig", opts->kubeconfig, "kubeconfig file(s), ':'-separated (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  sub->add_option("--context", opts->context, "kubeconfig context (default: the current one)");
  sub->add_option("-n,--namespace", opts->namespace_, "audit one namespace (and the cluster-scoped kinds); default: every namespace")
      ->check(namespace_name());
  sub->add_option("--snapshot", opts->snapshot,
                  "write what was listed into DIR (one YAML file per object): `gpuguard lint --complete DIR` reproduces the audit");
  sub->add_option("-c,--config", opts->config_path, "config file (default: .gpuguard.yaml found upward from the working directory)");
  sub->add_flag("--no-config", opts->no_config, "ignore any .gpuguard.yaml; use the built-in defaults");
  sub->add_flag("--include-owned", opts->include_owned, "also lint Pods and ReplicaSets made by controllers (their templates are linted on the controllers)");
  sub->add_option("--page-size", opts->page_size, "objects per list request (default 500)")->check(CLI::Range(1, 10000));
  add_report_options(sub, opts->report);
  sub->callback([opts, &registry, &exit_code] { exit_code = run_audit(registry, *opts); });
}

}  // namespace gpuguard::cli
