#pragma once
// Helpers of the kube suite: one PKI for the run, clients for the API server double, objects built
// on the recorded payloads (tests/kube/recorded/).

#include <memory>
#include <string>
#include <vector>

#include "engine/json.h"
#include "kube/client.h"
#include "tests/support/apiserver.h"
#include "tests/support/support.h"

namespace gpuguard::testkube {

// The PKI of the run (made once, in a temporary directory).
inline const test::Pki& pki() {
  static test::TempDir dir;
  static const test::Pki p = test::make_pki(dir.path());
  return p;
}

inline std::shared_ptr<kube::Client> client_for(const kube::ClusterConfig& cfg, kube::ClientOptions options = {}) {
  auto c = kube::Client::create(cfg, options);
  if (!c) throw std::runtime_error(c.error());
  return std::shared_ptr<kube::Client>(std::move(*c));
}

inline std::shared_ptr<kube::Client> client(const test::ApiServer& api, kube::ClientOptions options = {}) {
  return client_for(api.config(), options);
}

// The recorded labels of a real H100 node (GFD + NFD).
inline const engine::json& recorded_node_labels() {
  static const engine::json labels =
      engine::json::parse(test::read_file(test::source_dir() / "tests" / "kube" / "recorded" / "node-labels-h100.json"));
  return labels;
}

// A Node as the API returns it: the recorded labels, managedFields, status.
inline engine::json node(const std::string& name, const std::string& mig_config = "all-1g.10gb") {
  engine::json labels = recorded_node_labels();
  labels["kubernetes.io/hostname"] = name;
  labels["nvidia.com/mig.config"] = mig_config;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"uid", "5b1c2d3e-0000-4000-8000-" + std::string(12 - std::min<size_t>(12, name.size()), '0') + name.substr(0, 12)},
            {"labels", labels},
            {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}, {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}}},
            {"managedFields",
             {{{"manager", "gpu-feature-discovery"}, {"operation", "Update"}, {"apiVersion", "v1"},
               {"fieldsType", "FieldsV1"}, {"fieldsV1", {{"f:metadata", {{"f:labels", {{"f:nvidia.com/gpu.product", engine::json::object()}}}}}}}}}}}},
          {"spec", {{"podCIDR", "10.244.1.0/24"}}},
          {"status",
           {{"capacity", {{"cpu", "224"}, {"memory", "2113389528Ki"}, {"nvidia.com/gpu", "8"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}}}}}};
}

inline engine::json priority_class(const std::string& name, int value) {
  return {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata",
           {{"name", name},
            {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{\"apiVersion\":\"scheduling.k8s.io/v1\"}"}}}}},
          {"value", value}};
}

// A ConfigMap holding a mig-parted config (what MIG Manager reads).
inline engine::json mig_configmap(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"managedFields", {{{"manager", "helm"}}}}}},
          {"data",
           {{"config.yaml",
             "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
             "  all-1g.10gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 7\n"}}}};
}

// An unrelated ConfigMap (kube-root-ca.crt style).
inline engine::json plain_configmap(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"data", {{"ca.crt", "-----BEGIN CERTIFICATE-----\nMIIC/jCCAeagAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\n-----END CERTIFICATE-----\n"}}}};
}

inline std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace gpuguard::testkube
