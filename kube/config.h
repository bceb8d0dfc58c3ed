#pragma once
// Where the API server is and how to authenticate to it: in-cluster (service account) or a
// kubeconfig. Errors are values with a message that names the file and the field.

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "engine/expected.h"

namespace gpuguard::kube {

using engine::Expected;
using engine::Unexpected;

struct ClusterConfig {
  std::string server;            // "https://host:port" (http:// only for tests, never by default)
  std::string ca_pem;            // CA bundle (PEM); empty: the system store
  std::string token;             // bearer token, fixed
  std::string token_file;        // bearer token read from this file, re-read when it changes (rotation)
  std::string client_cert_pem;   // client certificate + key (PEM), for certificate auth
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig says so
  std::string tls_server_name;   // kubeconfig `tls-server-name`
  std::string source;            // "in-cluster" or "<kubeconfig path> (context <name>)", for messages
};

// The environment the in-cluster config reads; tests pass their own.
struct Environment {
  std::map<std::string, std::string> vars;            // KUBERNETES_SERVICE_HOST, _PORT, KUBECONFIG, HOME
  std::filesystem::path service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  static Environment current();  // the process's environment
};

// In-cluster: KUBERNETES_SERVICE_HOST/PORT (IPv6 hosts bracketed), the service-account token
// file (kept as token_file: it rotates) and ca.crt.
[[nodiscard]] Expected<ClusterConfig, std::string> in_cluster_config(const Environment& env);

// A kubeconfig file (or several, KUBECONFIG-style, separated by ':', merged first-wins), the
// named context or the current one. Supports token, tokenFile, client-certificate(-data),
// client-key(-data), certificate-authority(-data), insecure-skip-tls-verify, tls-server-name;
// relative file paths are relative to the kubeconfig that names them. An exec or auth-provider
// user yields an error saying they are not supported (use a token or a client certificate).
[[nodiscard]] Expected<ClusterConfig, std::string> kubeconfig_config(const std::string& paths,
                                                                     const std::string& context = "");

// What `--kubeconfig` (may be empty) + the environment select: the flag, else $KUBECONFIG, else
// in-cluster when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
[[nodiscard]] Expected<ClusterConfig, std::string> resolve_config(const std::string& kubeconfig_flag,
                                                                  const std::string& context,
                                                                  const Environment& env);

}  // namespace gpuguard::kube
