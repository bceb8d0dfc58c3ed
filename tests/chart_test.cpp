// charts/gpuguard with the real helm 3.17.2: lint and template for each certificate mode and a
// values matrix; every rendered object validated against the Kubernetes definitions; the webhook
// entries against the one table the chart README prints, in every documented mode, and what
// reaches an entry that fails closed (the matchConditions run by a real CEL evaluator when
// build/tools has one); RBAC and rules in step with the rules' metadata. And the Dockerfile's
// runtime packages against what the binary links.

#include <algorithm>
#include <cstring>
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <iterator>
#include <set>
#include <sstream>
#include <tuple>

#include "engine/json.h"
#include "engine/kinds.h"
#include "engine/load.h"
#include "engine/object.h"
#include "engine/schema.h"
#include "kube/cache.h"
#include "rules/docs.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

fs::path helm() { return test::source_dir() / "build" / "tools" / "helm"; }
fs::path chart() { return test::source_dir() / "charts" / "gpuguard"; }

struct Rendered {
  int exit_code = 0;
  std::string err;
  std::vector<engine::Object> objects;
  [[nodiscard]] const engine::Object* find(const std::string& kind, const std::string& name = "") const {
    for (const auto& o : objects)
      if (o.gvk.kind == kind && (name.empty() || o.name == name)) return &o;
    return nullptr;
  }
};

Rendered render(const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {helm().string(), "template", "rel", chart().string(), "--namespace", "gpuguard-system"};
  for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
  test::TempDir home;  // helm wants a writable cache and config
  std::vector<std::string> env = {"env", "HOME=" + home.path().string(), "HELM_CACHE_HOME=" + (home.path() / "cache").string(),
                                  "HELM_CONFIG_HOME=" + (home.path() / "config").string(), "HELM_DATA_HOME=" + (home.path() / "data").string()};
  env.insert(env.end(), argv.begin(), argv.end());
  auto r = test::run_command(env);
  Rendered out{r.exit_code, r.err, {}};
  if (r.exit_code == 0) out.objects = test::load_objects(r.out, "rendered.yaml");
  return out;
}

const std::vector<std::vector<std::string>>& matrix() {
  static const std::vector<std::vector<std::string>> m = {
      {},
      {"certificates.mode=cert-manager"},
      {"certificates.mode=cert-manager", "certificates.certManager.issuerRef.name=corp-ca", "certificates.certManager.issuerRef.kind=ClusterIssuer"},
      {"certificates.mode=secret", "certificates.secretName=my-tls", "certificates.caBundle=Zm9v"},
      {"priorityClassName=system-cluster-critical", "podAntiAffinity=required", "webhook.failurePolicy=Fail", "replicaCount=3"},
      {"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "webhook.mutating.templates=true", "webhook.excludeNamespaces={ci,sandbox}"},
      {"replicaCount=1", "webhook.validating.enabled=false"},
      {"webhook.failurePolicy=Fail", "webhook.mutating.failurePolicy=Fail", "webhook.timeoutSeconds=10", "webhook.failOpenTimeoutSeconds=3",
       "webhook.namespaceSelector.matchExpressions[0].key=gpuguard.io/enforce", "webhook.namespaceSelector.matchExpressions[0].operator=In",
       "webhook.namespaceSelector.matchExpressions[0].values={enabled}", "webhook.namespaceSelector.matchLabels.team=gpu",
       "webhook.objectSelector.matchLabels.gpu=yes"},
      {"webhook.mutating.enabled=false", "webhook.failurePolicy=Fail"},
  };
  return m;
}

// ---- The webhook entries: one table, which the chart README prints -----------------------------

struct Row {
  std::string config;   // "validating" or "mutating"
  std::string name;
  std::string matches;  // in words; the rules themselves are checked against the rules' metadata
  std::string policy;   // "Ignore", or the value that sets it
  std::string timeout;  // the value that sets it
  std::vector<std::string> conditions;
  std::string why;
};

const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      {"validating", "workloads.validate.gpuguard.io",
       "CREATE, UPDATE of every kind a rule checks but Nodes and ConfigMaps: Pods and the kinds with a pod template, "
       "ResourceQuotas, LimitRanges, PriorityClasses, PodGroups, Volcano Queues, Kueue ClusterQueues, Cohorts and "
       "LocalQueues, ClusterPolicies and NVIDIADrivers, PrometheusRules",
       "webhook.failurePolicy", "webhook.timeoutSeconds", {"not-node-identity", "not-terminating"},
       "what users and their tools submit: you choose whether it is admitted unchecked (Ignore) or refused (Fail) while "
       "gpuguard is down"},
      {"validating", "nodes.validate.gpuguard.io", "CREATE, UPDATE of Nodes", "Ignore", "webhook.failOpenTimeoutSeconds",
       {"not-node-identity", "gpu-nodes", "labels-changed"},
       "kubelets register and update their Node, NFD and GFD label nodes, the node controller taints them: never blocked. "
       "Only GPU nodes (a `nvidia.com/gpu.product` or `nvidia.com/mig.config` label) whose labels change are sent: "
       "mig-node-pool-mixed reads nothing else"},
      {"validating", "configmaps.validate.gpuguard.io", "CREATE, UPDATE of ConfigMaps", "Ignore", "webhook.failOpenTimeoutSeconds",
       {"not-node-identity", "gpu-configmaps", "data-changed"},
       "controllers write ConfigMaps in every namespace (`kube-root-ca.crt`): never blocked. Only those whose data may hold "
       "a mig-parted, device-plugin or DCGM config, when their data changes, are sent"},
      {"validating", "deletes.validate.gpuguard.io", "DELETE of the kinds a rule checks whose removal an aggregate rule notices",
       "Ignore", "webhook.failOpenTimeoutSeconds", {"not-node-identity", "deleted-gpu-nodes", "deleted-gpu-configmaps"},
       "gpuguard only warns on a DELETE: namespace deletion and garbage collection never wait for it. Of Nodes and "
       "ConfigMaps only those the rules read are sent"},
      {"mutating", "mutate.gpuguard.io",
       "CREATE of Pods (with `webhook.mutating.templates`, of the kinds with a pod template too)",
       "webhook.mutating.failurePolicy", "webhook.timeoutSeconds", {"not-node-identity", "gpu-or-rdma-pods", "not-mirror-pods"},
       "fixes (GPU limits, tolerations): a mutator fails open, and the validating entry checks the object either way"},
  };
  return rows;
}

std::string table_markdown() {
  std::string out =
      "| entry | what it matches | failurePolicy | timeoutSeconds | matchConditions (all must hold) | why |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& r : table()) {
    std::string conditions;
    for (const auto& c : r.conditions) conditions += (conditions.empty() ? "`" : ", `") + c + "`";
    out += "| `" + r.name + "`" + (r.config == "mutating" ? " (mutating)" : "") + " | " + r.matches + " | " +
           (r.policy == "Ignore" ? std::string("`Ignore`, always") : "`" + r.policy + "` (default `Ignore`)") + " | `" + r.timeout +
           "` | " + conditions + " | " + r.why + " |\n";
  }
  return out;
}

// A documented combination of values, and what it implies for the entries.
struct Mode {
  std::string label;
  std::vector<std::string> sets = {};
  std::string policy = "Ignore";
  std::string mutating_policy = "Ignore";
  int timeout = 5;
  int fail_open_timeout = 2;
  bool validating = true;
  bool mutating = true;
  bool templates = false;
  bool cert_manager = false;
  std::vector<std::string> exclude = {};
  json extra_expressions = json::array();  // webhook.namespaceSelector.matchExpressions
  json extra_labels = nullptr;             // webhook.namespaceSelector.matchLabels (null: none)
  json object_selector = nullptr;          // webhook.objectSelector (null: none)
};

const std::vector<Mode>& modes() {
  static const std::vector<Mode> m = [] {
    std::vector<Mode> out;
    out.push_back({.label = "default"});
    out.push_back({.label = "Fail", .sets = {"webhook.failurePolicy=Fail"}, .policy = "Fail"});
    out.push_back({.label = "Fail, mutating Fail, templates, other timeouts",
                   .sets = {"webhook.failurePolicy=Fail", "webhook.mutating.failurePolicy=Fail", "webhook.mutating.templates=true",
                            "webhook.timeoutSeconds=10", "webhook.failOpenTimeoutSeconds=3"},
                   .policy = "Fail", .mutating_policy = "Fail", .timeout = 10, .fail_open_timeout = 3, .templates = true});
    out.push_back({.label = "cert-manager, Fail", .sets = {"certificates.mode=cert-manager", "webhook.failurePolicy=Fail"}, .policy = "Fail",
                   .cert_manager = true});
    out.push_back({.label = "cert-manager with an issuer",
                   .sets = {"certificates.mode=cert-manager", "certificates.certManager.issuerRef.name=corp-ca",
                            "certificates.certManager.issuerRef.kind=ClusterIssuer"},
                   .cert_manager = true});
    out.push_back({.label = "an existing secret, Fail",
                   .sets = {"certificates.mode=secret", "certificates.secretName=my-tls", "certificates.caBundle=Zm9v", "webhook.failurePolicy=Fail"},
                   .policy = "Fail"});
    out.push_back({.label = "excludeNamespaces, Fail", .sets = {"webhook.excludeNamespaces={ci,sandbox}", "webhook.failurePolicy=Fail"},
                   .policy = "Fail", .exclude = {"ci", "sandbox"}});
    out.push_back({.label = "an extra namespaceSelector (opt-in), Fail",
                   .sets = {"webhook.failurePolicy=Fail", "webhook.namespaceSelector.matchExpressions[0].key=gpuguard.io/enforce",
                            "webhook.namespaceSelector.matchExpressions[0].operator=In",
                            "webhook.namespaceSelector.matchExpressions[0].values={enabled}", "webhook.namespaceSelector.matchLabels.team=gpu"},
                   .policy = "Fail",
                   .extra_expressions = json::array({{{"key", "gpuguard.io/enforce"}, {"operator", "In"}, {"values", {"enabled"}}}}),
                   .extra_labels = {{"team", "gpu"}}});
    out.push_back({.label = "an objectSelector, Fail", .sets = {"webhook.failurePolicy=Fail", "webhook.objectSelector.matchLabels.gpu=yes"},
                   .policy = "Fail", .object_selector = {{"matchLabels", {{"gpu", "yes"}}}}});
    out.push_back({.label = "validating disabled, mutating Fail",
                   .sets = {"webhook.validating.enabled=false", "webhook.mutating.failurePolicy=Fail"}, .mutating_policy = "Fail",
                   .validating = false});
    out.push_back({.label = "mutating disabled, Fail", .sets = {"webhook.mutating.enabled=false", "webhook.failurePolicy=Fail"},
                   .policy = "Fail", .mutating = false});
    return out;
  }();
  return m;
}

const char* const kNotNodeIdentity =
    "!('system:nodes' in request.userInfo.groups) && !request.userInfo.username.startsWith('system:node:')";

// (operation, group, resource, scope) of webhook rules; every rule covers every version.
using RuleKey = std::tuple<std::string, std::string, std::string, std::string>;
std::set<RuleKey> flatten(const json& rules) {
  std::set<RuleKey> out;
  for (const auto& r : rules) {
    CHECK(r["apiVersions"] == json({"*"}));
    for (const auto& op : r["operations"])
      for (const auto& g : r["apiGroups"])
        for (const auto& res : r["resources"])
          out.insert({op.get<std::string>(), g.get<std::string>(), res.get<std::string>(), r.value("scope", "*")});
  }
  return out;
}
std::set<RuleKey> expand(const std::set<engine::KindRef>& kinds, const std::vector<std::string>& ops) {
  std::set<RuleKey> out;
  for (const auto& k : kinds)
    for (const auto& op : ops)
      out.insert({op, k.group, engine::resource_of(k), engine::is_cluster_scoped(k.group, k.kind) ? "Cluster" : "Namespaced"});
  return out;
}

// What each entry must match, from the rules' metadata (default config): not from the generator.
std::set<RuleKey> expected_rules(const Row& row, const Mode& mode) {
  const auto& reg = test::registry();
  const engine::Config config = engine::default_config(reg);
  if (row.config == "mutating") return flatten(rules::mutating_webhook_rules(reg, config, mode.templates));
  std::set<engine::KindRef> checked;
  for (const auto* r : reg.rules())
    for (const auto& k : r->info().checks)
      if (k.kind != "*") checked.insert(k);
  const engine::KindRef node{"", "Node"}, configmap{"", "ConfigMap"};
  if (row.name == "nodes.validate.gpuguard.io") return expand({node}, {"CREATE", "UPDATE"});
  if (row.name == "configmaps.validate.gpuguard.io") return expand({configmap}, {"CREATE", "UPDATE"});
  if (row.name == "deletes.validate.gpuguard.io") {
    std::set<engine::KindRef> both;
    const auto read = engine::kinds_read(reg, config);
    std::set_intersection(checked.begin(), checked.end(), read.begin(), read.end(), std::inserter(both, both.end()));
    return expand(both, {"DELETE"});
  }
  checked.erase(node);
  checked.erase(configmap);
  return expand(checked, {"CREATE", "UPDATE"});
}

// A Kubernetes label selector over a namespace's labels (In, NotIn, Exists, DoesNotExist).
bool selects(const json& selector, const std::map<std::string, std::string>& labels) {
  if (selector.contains("matchLabels"))
    for (const auto& [k, v] : selector["matchLabels"].items()) {
      auto it = labels.find(k);
      if (it == labels.end() || json(it->second) != v) return false;
    }
  if (selector.contains("matchExpressions"))
    for (const auto& e : selector["matchExpressions"]) {
      const std::string op = e["operator"];
      auto it = labels.find(e["key"].get<std::string>());
      bool in = false;
      if (it != labels.end() && e.contains("values"))
        for (const auto& v : e["values"]) in = in || v == json(it->second);
      if (op == "In" && !in) return false;
      if (op == "NotIn" && in) return false;
      if (op == "Exists" && it == labels.end()) return false;
      if (op == "DoesNotExist" && it != labels.end()) return false;
    }
  return true;
}

std::map<std::string, std::string> namespace_labels(const std::string& ns, std::map<std::string, std::string> more = {}) {
  more["kubernetes.io/metadata.name"] = ns;
  return more;
}

std::string resolve(const std::string& value, const Mode& mode) {
  if (value == "webhook.failurePolicy") return mode.policy;
  if (value == "webhook.mutating.failurePolicy") return mode.mutating_policy;
  return value;
}

void check_entry(const Mode& mode, const Row& row, const json& hook) {
  CAPTURE(row.name);
  CHECK(hook["admissionReviewVersions"] == json({"v1"}));
  CHECK(hook["sideEffects"] == json("None"));
  CHECK(hook["matchPolicy"] == json("Equivalent"));
  CHECK(hook["failurePolicy"] == json(resolve(row.policy, mode)));
  CHECK(hook["timeoutSeconds"] == json(row.timeout == "webhook.timeoutSeconds" ? mode.timeout : mode.fail_open_timeout));
  const json& service = hook["clientConfig"]["service"];
  CHECK(service["name"] == json("rel-gpuguard"));
  CHECK(service["namespace"] == json("gpuguard-system"));
  CHECK(service["path"] == json(row.config == "mutating" ? "/mutate" : "/validate"));
  CHECK(hook["clientConfig"].contains("caBundle") == !mode.cert_manager);
  if (row.config == "mutating") CHECK(hook["reinvocationPolicy"] == json("IfNeeded"));
  // namespaceSelector: the system namespaces, the release's, the operator's list, the break-glass
  // label; then the operator's own selector.
  json names = {"kube-system", "kube-node-lease", "gpuguard-system"};
  for (const auto& n : mode.exclude) names.push_back(n);
  json expressions = json::array({{{"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", names}},
                                  {{"key", "gpuguard.io/webhook"}, {"operator", "NotIn"}, {"values", {"disabled"}}}});
  for (const auto& e : mode.extra_expressions) expressions.push_back(e);
  json selector = {{"matchExpressions", expressions}};
  if (!mode.extra_labels.is_null()) selector["matchLabels"] = mode.extra_labels;
  CHECK(hook["namespaceSelector"] == selector);
  // And what it selects: a namespace that opted in is sent, unless it is a system, the release's,
  // an excluded or a break-glass one.
  std::map<std::string, std::string> opt_in = {{"gpuguard.io/enforce", "enabled"}, {"team", "gpu"}};
  CHECK(selects(hook["namespaceSelector"], namespace_labels("team-a", opt_in)));
  for (const auto& n : names) CHECK_FALSE(selects(hook["namespaceSelector"], namespace_labels(n.get<std::string>(), opt_in)));
  auto glass = opt_in;
  glass["gpuguard.io/webhook"] = "disabled";
  CHECK_FALSE(selects(hook["namespaceSelector"], namespace_labels("team-a", glass)));
  if (mode.extra_labels.is_null()) CHECK(selects(hook["namespaceSelector"], namespace_labels("team-a")));
  else CHECK_FALSE(selects(hook["namespaceSelector"], namespace_labels("team-a")));
  if (mode.object_selector.is_null()) CHECK_FALSE(hook.contains("objectSelector"));
  else CHECK(hook["objectSelector"] == mode.object_selector);
  // matchConditions: the table's, not-node-identity first.
  std::vector<std::string> names_seen;
  for (const auto& c : hook["matchConditions"]) names_seen.push_back(c["name"].get<std::string>());
  CHECK(names_seen == row.conditions);
  REQUIRE(!hook["matchConditions"].empty());
  CHECK(hook["matchConditions"][0]["expression"] == json(kNotNodeIdentity));
  if (row.config == "mutating")
    for (const char* prefix : {"nvidia.com/", "amd.com/gpu", "rdma/"})
      CHECK(hook["matchConditions"][1]["expression"].get<std::string>().find(prefix) != std::string::npos);
  // rules: operations, resources, scope.
  const auto got = flatten(hook["rules"]);
  CHECK(got == expected_rules(row, mode));
  // Whatever the table says: an entry that fails closed never matches a Node, a ConfigMap, a Lease,
  // an Event, a Namespace, a DELETE or a wildcard.
  if (hook["failurePolicy"] == json("Fail"))
    for (const auto& [op, group, resource, scope] : got) {
      const std::string rule = op + " " + group + "/" + resource;
      CAPTURE(rule);
      CHECK((op == "CREATE" || op == "UPDATE"));
      CHECK(group != "*");
      CHECK(group != "coordination.k8s.io");
      CHECK(group != "events.k8s.io");
      for (const char* r : {"nodes", "configmaps", "leases", "events", "namespaces", "endpoints", "secrets", "serviceaccounts"})
        CHECK(resource != r);
      CHECK(resource.find('*') == std::string::npos);
    }
}

struct Hook {
  std::string name;
  json body;
};

// An admission request, and the entries it must reach in the default mode.
struct Sample {
  std::string label;
  std::string op = "CREATE";
  std::string group, resource;
  std::string ns;                                   // "" for a cluster-scoped object
  std::map<std::string, std::string> ns_labels;     // besides kubernetes.io/metadata.name
  json user;                                        // {username, groups}
  json object, old_object;                          // null when absent
  std::set<std::string> expect;                     // entries it reaches (default values)
  bool critical = false;                            // must never reach an entry that fails closed
  bool cel_only = false;                            // ... which only the matchConditions' values show
};

json node(const std::string& name, json labels, json spec = json::object()) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"labels", std::move(labels)}}}, {"spec", std::move(spec)}};
}
json configmap(const std::string& ns, const std::string& name, json data) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}, {"namespace", ns}}}, {"data", std::move(data)}};
}
json pod(const std::string& ns, bool gpu, json annotations = json::object()) {
  json c = {{"name", "main"}, {"image", "busybox"}};
  if (gpu) c["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}}};
  json md = {{"name", "p"}, {"namespace", ns}};
  if (!annotations.empty()) md["annotations"] = std::move(annotations);
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", md}, {"spec", {{"containers", {c}}}}};
}

std::vector<Sample> request_samples() {
  const json admin = {{"username", "kubernetes-admin"}, {"groups", {"kubeadm:cluster-admins", "system:authenticated"}}};
  const json alice = {{"username", "alice"}, {"groups", {"team-a", "system:authenticated"}}};
  const json kubelet = {{"username", "system:node:gpu-1"}, {"groups", {"system:nodes", "system:authenticated"}}};
  const json nfd = {{"username", "system:serviceaccount:node-feature-discovery:nfd-master"},
                    {"groups", {"system:serviceaccounts", "system:serviceaccounts:node-feature-discovery", "system:authenticated"}}};
  const json controller = {{"username", "system:serviceaccount:kube-system:node-controller"},
                           {"groups", {"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}};
  const json publisher = {{"username", "system:serviceaccount:kube-system:root-ca-cert-publisher"},
                          {"groups", {"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}};
  const json gpu_labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}, {"node.kubernetes.io/instance-type", "p4d.24xlarge"}};
  json gpu_labels_mig = gpu_labels;
  gpu_labels_mig["nvidia.com/mig.config"] = "all-1g.10gb";
  const json cpu_labels = {{"node.kubernetes.io/instance-type", "m5.large"}};
  const std::string mig = "version: v1\nmig-configs:\n  all-1g.10gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 7}\n";
  const std::string sharing = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 4\n";
  const std::string pem =
      "-----BEGIN CERTIFICATE-----\nMIIC/jCCAeagAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\ncm5ldGVzMB4XDTI0MDEwMTAwMDAwMFoXDTM0MDEwMTAwMDAwMFowFTETMBEGA1UE\n-----END CERTIFICATE-----\n";
  const json ca = {{"ca.crt", pem}};
  const std::string W = "workloads.validate.gpuguard.io", N = "nodes.validate.gpuguard.io", C = "configmaps.validate.gpuguard.io",
                    D = "deletes.validate.gpuguard.io", M = "mutate.gpuguard.io";
  json terminating = {{"apiVersion", "apps/v1"}, {"kind", "Deployment"},
                      {"metadata", {{"name", "d"}, {"namespace", "team-a"}, {"deletionTimestamp", "2026-01-01T00:00:00Z"}, {"finalizers", json::array()}}},
                      {"spec", {{"template", {{"spec", {{"containers", json::array()}}}}}}}};
  json terminating_old = terminating;
  terminating_old["metadata"]["finalizers"] = {"foregroundDeletion"};
  json deployment = terminating;
  deployment["metadata"].erase("deletionTimestamp");
  json deployment_old = deployment;
  deployment_old["spec"]["replicas"] = 2;
  json pc = {{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", "high"}}}, {"value", 1000}};
  json lease = {{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}, {"metadata", {{"name", "gpu-1"}, {"namespace", "kube-node-lease"}}}};
  json lease_app = lease;
  lease_app["metadata"]["namespace"] = "team-a";
  json ns_obj = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-a"}}}};
  json quota = {{"apiVersion", "v1"}, {"kind", "ResourceQuota"}, {"metadata", {{"name", "q"}, {"namespace", "team-a"}}}, {"spec", {{"hard", {{"requests.nvidia.com/gpu", "8"}}}}}};
  json tainted = node("gpu-1", gpu_labels, {{"taints", {{{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoSchedule"}}}}});
  json annotated_cm = configmap("gpu-operator", "time-slicing", {{"any", sharing}});
  json annotated_cm_old = annotated_cm;
  annotated_cm["metadata"]["annotations"] = {{"reloaded", "yes"}};

  auto S = [](std::string label, std::string op, std::string group, std::string resource, std::string ns, json user, json object,
              json old_object, std::set<std::string> expect, bool critical) {
    Sample s;
    s.label = std::move(label);
    s.op = std::move(op);
    s.group = std::move(group);
    s.resource = std::move(resource);
    s.ns = std::move(ns);
    s.user = std::move(user);
    s.object = std::move(object);
    s.old_object = std::move(old_object);
    s.expect = std::move(expect);
    s.critical = critical;
    return s;
  };
  std::vector<Sample> out = {
      S("NFD labels a GPU node", "UPDATE", "", "nodes", "", nfd, node("gpu-1", gpu_labels_mig), node("gpu-1", gpu_labels), {N}, true),
      S("a kubelet registers a GPU node", "CREATE", "", "nodes", "", kubelet, node("gpu-1", gpu_labels), nullptr, {}, true),
      S("a kubelet updates its GPU node's labels", "UPDATE", "", "nodes", "", kubelet, node("gpu-1", gpu_labels_mig), node("gpu-1", gpu_labels), {}, true),
      S("an admin labels a CPU node", "UPDATE", "", "nodes", "", admin, node("cpu-1", {{"x", "1"}}), node("cpu-1", cpu_labels), {}, true),
      S("the node controller taints a GPU node", "UPDATE", "", "nodes", "", controller, tainted, node("gpu-1", gpu_labels), {}, true),
      S("a GPU node is deleted", "DELETE", "", "nodes", "", controller, nullptr, node("gpu-1", gpu_labels), {D}, true),
      S("a CPU node is deleted", "DELETE", "", "nodes", "", controller, nullptr, node("cpu-1", cpu_labels), {}, true),
      S("a mig-parted ConfigMap is created", "CREATE", "", "configmaps", "gpu-operator", admin,
        configmap("gpu-operator", "custom-mig-parted-config", {{"config.yaml", mig}}), nullptr, {C}, true),
      S("kube-root-ca.crt is published in a namespace", "CREATE", "", "configmaps", "team-a", publisher,
        configmap("team-a", "kube-root-ca.crt", ca), nullptr, {}, true),
      S("kube-root-ca.crt is updated in kube-system", "UPDATE", "", "configmaps", "kube-system", publisher,
        configmap("kube-system", "kube-root-ca.crt", ca), configmap("kube-system", "kube-root-ca.crt", {{"ca.crt", "old"}}), {}, true),
      S("a device-plugin config changes", "UPDATE", "", "configmaps", "gpu-operator", admin, configmap("gpu-operator", "time-slicing", {{"any", sharing + "#\n"}}),
        configmap("gpu-operator", "time-slicing", {{"any", sharing}}), {C}, true),
      S("a device-plugin config's annotations change", "UPDATE", "", "configmaps", "gpu-operator", admin, annotated_cm, annotated_cm_old, {}, true),
      S("a DCGM metrics ConfigMap is deleted", "DELETE", "", "configmaps", "gpu-operator", admin, nullptr,
        configmap("gpu-operator", "metrics", {{"dcgm-metrics.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"}}), {D}, true),
      S("a plain ConfigMap is deleted", "DELETE", "", "configmaps", "team-a", admin, nullptr, configmap("team-a", "app", {{"k", "v"}}), {}, true),
      S("a PriorityClass is deleted", "DELETE", "scheduling.k8s.io", "priorityclasses", "", admin, nullptr, pc, {D}, true),
      S("a PriorityClass is created", "CREATE", "scheduling.k8s.io", "priorityclasses", "", admin, pc, nullptr, {W}, false),
      S("a GPU pod is created", "CREATE", "", "pods", "team-a", alice, pod("team-a", true), nullptr, {W, M}, false),
      S("a CPU pod is created", "CREATE", "", "pods", "team-a", alice, pod("team-a", false), nullptr, {W}, false),
      S("a kubelet creates a mirror pod", "CREATE", "", "pods", "team-a", kubelet,
        pod("team-a", true, {{"kubernetes.io/config.mirror", "abc"}}), nullptr, {}, true),
      S("a GPU pod in kube-system", "CREATE", "", "pods", "kube-system", admin, pod("kube-system", true), nullptr, {}, true),
      S("a GPU pod in gpuguard's namespace", "CREATE", "", "pods", "gpuguard-system", admin, pod("gpuguard-system", true), nullptr, {}, true),
      S("a Deployment is scaled", "UPDATE", "apps", "deployments", "team-a", alice, deployment, deployment_old, {W}, false),
      S("a Deployment being deleted loses its finalizer", "UPDATE", "apps", "deployments", "team-a", admin, terminating, terminating_old, {}, true),
      S("a ResourceQuota is created", "CREATE", "", "resourcequotas", "team-a", admin, quota, nullptr, {W}, false),
      S("a kubelet renews its Lease", "UPDATE", "coordination.k8s.io", "leases", "kube-node-lease", kubelet, lease, lease, {}, true),
      S("a controller renews its Lease", "UPDATE", "coordination.k8s.io", "leases", "team-a", controller, lease_app, lease_app, {}, true),
      S("a pod is deleted", "DELETE", "", "pods", "team-a", alice, nullptr, pod("team-a", true), {}, true),
      S("a namespace is deleted", "DELETE", "", "namespaces", "", admin, nullptr, ns_obj, {}, true),
      S("a system:nodes member that is not a kubelet", "CREATE", "", "pods", "team-a",
        json{{"username", "node-bootstrapper"}, {"groups", {"system:nodes"}}}, pod("team-a", true), nullptr, {}, true),
  };
  for (auto& s : out) s.cel_only = s.label == "a Deployment being deleted loses its finalizer";
  Sample glass = S("a GPU pod in a break-glass namespace", "CREATE", "", "pods", "team-b", alice, pod("team-b", true), nullptr, {}, true);
  glass.ns_labels = {{"gpuguard.io/webhook", "disabled"}};
  out.push_back(glass);
  return out;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return "{" + out + "}";
}

// The AdmissionRequest the API server gives CEL as `request`.
json request_of(const Sample& s) {
  return {{"kind", {{"group", s.group}, {"version", "v1"}, {"kind", ""}}},
          {"resource", {{"group", s.group}, {"version", "v1"}, {"resource", s.resource}}},
          {"subResource", ""},
          {"requestKind", {{"group", s.group}, {"version", "v1"}, {"kind", ""}}},
          {"requestResource", {{"group", s.group}, {"version", "v1"}, {"resource", s.resource}}},
          {"requestSubResource", ""},
          {"name", ""},
          {"namespace", s.ns},
          {"operation", s.op},
          {"userInfo", {{"username", s.user["username"]}, {"uid", ""}, {"groups", s.user["groups"]}, {"extra", json::object()}}},
          {"dryRun", false},
          {"options", json::object()}};
}

// A real CEL evaluator: @bufbuild/cel (npm, Apache-2.0; conforms to cel-spec) under node, in
// build/tools. nullopt when either is missing. kubectl cannot evaluate or compile matchConditions
// offline: only the API server does.
std::optional<fs::path> cel_evaluator() {
  const fs::path tools = test::source_dir() / "build" / "tools";
  if (!fs::exists(tools / "node_modules" / "@bufbuild" / "cel" / "package.json")) return std::nullopt;
  if (test::run_command({"node", "--version"}).exit_code != 0) return std::nullopt;
  return tools;
}

// verdicts[hook][sample]: "true", "false" or "error: …" (the API server's rule: any false skips
// the entry, else any error applies failurePolicy, else the entry is called). Without an evaluator
// every condition is taken as true, but not-node-identity, which is checked to be the expected
// expression and evaluated here.
std::vector<std::vector<std::string>> evaluate_conditions(const std::optional<fs::path>& evaluator, const std::vector<Hook>& hooks,
                                                          const std::vector<Sample>& samples) {
  std::vector<std::vector<std::string>> out(hooks.size(), std::vector<std::string>(samples.size(), "true"));
  if (!evaluator) {
    for (size_t h = 0; h < hooks.size(); ++h)
      for (size_t i = 0; i < samples.size(); ++i) {
        const auto& conditions = hooks[h].body["matchConditions"];
        if (conditions.empty() || conditions[0]["expression"] != json(kNotNodeIdentity)) continue;
        const json& u = samples[i].user;
        const bool node_identity = std::find(u["groups"].begin(), u["groups"].end(), json("system:nodes")) != u["groups"].end() ||
                                   u["username"].get<std::string>().rfind("system:node:", 0) == 0;
        if (node_identity) out[h][i] = "false";
      }
    return out;
  }
  json input = {{"hooks", json::array()}, {"cases", json::array()}};
  for (const auto& h : hooks) {
    json exprs = json::array();
    for (const auto& c : h.body["matchConditions"]) exprs.push_back(c["expression"]);
    input["hooks"].push_back(exprs);
  }
  for (const auto& s : samples) input["cases"].push_back({{"object", s.object}, {"oldObject", s.old_object}, {"request", request_of(s)}});
  test::TempDir dir;
  const fs::path script = dir.path() / "eval.cjs";
  test::write_file(script, R"JS(
const { createRequire } = require("module");
const { run } = createRequire(process.argv[2] + "/package.json")("@bufbuild/cel");
const toCel = (v) => Array.isArray(v) ? v.map(toCel)
  : (v !== null && typeof v === "object") ? new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)])) : v;
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = input.hooks.map((exprs) => input.cases.map((c) => {
  const vars = { object: toCel(c.object), oldObject: toCel(c.oldObject), request: toCel(c.request) };
  let error = null;
  for (const e of exprs) {
    let r;
    try { r = run(e, vars); } catch (x) { r = x; }
    if (r === false) return "false";
    if (r !== true) error = error || ("error: " + (r && r.message ? r.message : String(r)) + " in " + e);
  }
  return error || "true";
}));
process.stdout.write(JSON.stringify(out));
)JS");
  auto r = test::run_command({"node", script.string(), evaluator->string()}, input.dump());
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json verdicts = json::parse(r.out);
  for (size_t h = 0; h < hooks.size(); ++h)
    for (size_t i = 0; i < samples.size(); ++i) out[h][i] = verdicts[h][i].get<std::string>();
  return out;
}

enum class Reach { no, yes, error };

// Whether a request reaches an entry: its rules, its namespaceSelector (namespaced requests; a
// cluster-scoped object is never filtered by it), its objectSelector, its matchConditions.
Reach reaches(const json& hook, const Sample& s, const std::string& verdict) {
  bool ruled = false;
  for (const auto& [op, group, resource, scope] : flatten(hook["rules"]))
    ruled = ruled || ((op == s.op || op == "*") && (group == s.group || group == "*") && (resource == s.resource || resource == "*") &&
                      (scope == "*" || scope == (s.ns.empty() ? "Cluster" : "Namespaced")));
  if (!ruled) return Reach::no;
  if (!s.ns.empty() && !selects(hook["namespaceSelector"], namespace_labels(s.ns, s.ns_labels))) return Reach::no;
  if (hook.contains("objectSelector")) {  // the object's or the old object's labels
    bool any = false;
    for (const json* o : {&s.object, &s.old_object}) {
      if (!o->is_object()) continue;
      std::map<std::string, std::string> labels;
      if ((*o)["metadata"].contains("labels"))
        for (const auto& [k, v] : (*o)["metadata"]["labels"].items()) labels[k] = v.get<std::string>();
      any = any || selects(hook["objectSelector"], labels);
    }
    if (!any) return Reach::no;
  }
  if (verdict == "false") return Reach::no;
  return verdict == "true" ? Reach::yes : Reach::error;
}

// The objects of a YAML text, whatever its diagnostics (fixtures may hold broken documents on purpose).
std::vector<engine::Object> load_all(const std::string& text, const std::string& file) {
  std::vector<engine::Object> out;
  std::vector<engine::Diagnostic> diags;
  auto src = std::make_shared<engine::SourceFile>(engine::SourceFile{file, 0});
  engine::load_text(text, src, engine::LoadOptions{}, [&](engine::Object&& o) { out.push_back(std::move(o)); }, diags);
  return out;
}

}  // namespace

TEST_SUITE("chart") {

TEST_CASE("helm lint passes for every certificate mode") {
  if (!fs::exists(helm())) {
    test::skip("helm is not installed (make test runs scripts/test-tools.sh)");
    return;
  }
  for (const auto& sets : matrix()) {
    std::vector<std::string> argv = {helm().string(), "lint", chart().string()};
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    auto r = test::run_command(argv);
    CAPTURE(r.out);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("every rendered object is valid for its Kubernetes schema, and gpuguard finds no error in its own chart") {
  if (!fs::exists(helm()) || !test::shared_schemas()) {
    test::skip("helm or ../shared/k8s-schemas missing");
    return;
  }
  for (const auto& sets : matrix()) {
    auto r = render(sets);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::set<std::string> unchecked;
    for (const auto& o : r.objects) {
      CAPTURE(o.display_name());
      auto problems = test::shared_schemas()->validate(o);
      if (!problems) {
        unchecked.insert(o.gvk.kind);  // CRD kinds without a schema here: Certificate, ServiceMonitor, ...
        continue;
      }
      for (const auto& p : *problems) FAIL_CHECK(o.display_name() << " " << p.pointer << ": " << p.message);
    }
    for (const auto& k : unchecked)
      CHECK_MESSAGE((k == "Certificate" || k == "Issuer" || k == "ServiceMonitor" || k == "PrometheusRule"), "no schema for " << k);
    // gpuguard's own rules over its chart.
    std::string yaml;
    for (const auto& o : r.objects) yaml += "---\n" + o.body().dump() + "\n";
    auto lint = test::lint(yaml);
    for (const auto& f : lint.findings) CHECK_MESSAGE(f.severity != engine::Severity::error, f.rule << ": " << f.message);
  }
}

TEST_CASE("the Deployment: replicas, disruption budget, spread, priority, limits, restricted security context") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  auto r = render({});
  REQUIRE(r.exit_code == 0);
  const auto* d = r.find("Deployment");
  REQUIRE(d);
  const json& spec = d->body()["spec"];
  CHECK(spec["replicas"] == json(2));
  const json& pod = spec["template"]["spec"];
  CHECK(pod["securityContext"]["runAsNonRoot"] == json(true));
  CHECK(pod["securityContext"]["seccompProfile"]["type"] == json("RuntimeDefault"));
  const json& c = pod["containers"][0];
  CHECK(c["securityContext"]["readOnlyRootFilesystem"] == json(true));
  CHECK(c["securityContext"]["allowPrivilegeEscalation"] == json(false));
  CHECK(c["securityContext"]["capabilities"]["drop"] == json({"ALL"}));
  CHECK(c["resources"]["requests"].contains("cpu"));
  CHECK(c["resources"]["limits"].contains("memory"));
  CHECK(pod["affinity"]["podAntiAffinity"].contains("preferredDuringSchedulingIgnoredDuringExecution"));
  CHECK_FALSE(pod.contains("priorityClassName"));
  // The cluster state by list + watch, with the service account's token (RBAC: templates/rbac.yaml).
  CHECK(std::find(c["args"].begin(), c["args"].end(), json("--watch")) != c["args"].end());
  const auto without = render({"watchCluster=false"});
  const json& nowatch = without.find("Deployment")->body()["spec"]["template"]["spec"]["containers"][0]["args"];
  CHECK(std::find(nowatch.begin(), nowatch.end(), json("--watch")) == nowatch.end());
  // The memory budget the server holds requests to, sized with the memory limit (values.yaml).
  CHECK(std::find(c["args"].begin(), c["args"].end(), json("--memory-budget=128")) != c["args"].end());
  CHECK(c["resources"]["limits"]["memory"] == json("256Mi"));
  const auto larger = render({"memoryBudgetMiB=384"});
  const json& bigger = larger.find("Deployment")->body()["spec"]["template"]["spec"]["containers"][0]["args"];
  CHECK(std::find(bigger.begin(), bigger.end(), json("--memory-budget=384")) != bigger.end());
  CHECK(r.find("PodDisruptionBudget"));
  auto strict = render({"priorityClassName=system-cluster-critical", "podAntiAffinity=required"});
  const json& spod = strict.find("Deployment")->body()["spec"]["template"]["spec"];
  CHECK(spod["priorityClassName"] == json("system-cluster-critical"));
  CHECK(spod["affinity"]["podAntiAffinity"].contains("requiredDuringSchedulingIgnoredDuringExecution"));
  CHECK_FALSE(render({"replicaCount=1"}).find("PodDisruptionBudget"));
  // The config the chart mounts is a valid gpuguard config.
  const auto* cm = r.find("ConfigMap");
  REQUIRE(cm);
  auto config = engine::load_config(cm->body()["data"][".gpuguard.yaml"].get<std::string>(), "configmap", test::registry());
  CHECK(config.has_value());
  auto templ = render({"webhook.mutating.templates=true"});
  auto tconfig = engine::load_config(templ.find("ConfigMap")->body()["data"][".gpuguard.yaml"].get<std::string>(), "cm", test::registry());
  REQUIRE(tconfig.has_value());
  CHECK(tconfig->webhook.mutate_templates);
}

TEST_CASE("the webhook entries are the README's table in every documented mode, and nothing critical reaches one that fails closed") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  // The README prints the table the chart is checked against.
  const std::string readme = test::read_file(chart() / "README.md");
  CHECK_MESSAGE(readme.find(table_markdown()) != std::string::npos, "charts/gpuguard/README.md does not print the entries' table:\n"
                                                                        << table_markdown());
  CHECK(readme.find("`gpuguard.io/webhook=disabled`") != std::string::npos);
  const auto evaluator = cel_evaluator();
  if (!evaluator) MESSAGE("no CEL evaluator (build/tools/node_modules/@bufbuild/cel and node): matchConditions are assumed true, but not-node-identity");
  const auto samples = request_samples();
  for (const auto& mode : modes()) {
    CAPTURE(mode.label);
    auto r = render(mode.sets);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::vector<Hook> hooks;
    for (const auto& row : table()) {
      const bool on = row.config == "validating" ? mode.validating : mode.mutating;
      const auto* cfg = r.find(row.config == "validating" ? "ValidatingWebhookConfiguration" : "MutatingWebhookConfiguration");
      if (!on) {
        CHECK_FALSE(cfg);
        continue;
      }
      REQUIRE(cfg);
      const json* found = nullptr;
      for (const auto& h : cfg->body()["webhooks"])
        if (h["name"] == json(row.name)) found = &h;
      REQUIRE_MESSAGE(found, row.name << " is not rendered");
      check_entry(mode, row, *found);
      hooks.push_back({row.name, *found});
    }
    // No entry the table does not list; the workloads entry first (the break-glass patch names /webhooks/0).
    for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"})
      if (const auto* cfg = r.find(kind)) {
        for (const auto& h : cfg->body()["webhooks"])
          CHECK_MESSAGE(std::any_of(table().begin(), table().end(), [&](const Row& row) { return h["name"] == json(row.name); }),
                        h["name"] << " is not in the table");
        if (std::string(kind) == "ValidatingWebhookConfiguration") CHECK(cfg->body()["webhooks"][0]["name"] == json("workloads.validate.gpuguard.io"));
      }

    // What reaches each entry: the rules, the selectors, the matchConditions.
    const auto verdicts = evaluate_conditions(evaluator, hooks, samples);
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      CAPTURE(s.label);
      std::set<std::string> called;
      for (size_t h = 0; h < hooks.size(); ++h) {
        const Reach reach = reaches(hooks[h].body, s, verdicts[h][i]);
        if (reach == Reach::no) continue;
        const std::string policy = hooks[h].body.value("failurePolicy", "Fail");
        // A request that reaches an entry failing closed, or whose conditions fail to evaluate under it.
        if (s.critical && (evaluator || !s.cel_only)) CHECK_MESSAGE(policy != "Fail", s.label << " reaches " << hooks[h].name << ", which fails closed");
        if (reach == Reach::error) CHECK_MESSAGE(policy != "Fail", s.label << ": a matchCondition of " << hooks[h].name << " fails (" << verdicts[h][i] << ") under Fail");
        if (reach == Reach::yes) called.insert(hooks[h].name);
      }
      if (evaluator && mode.label == "default") CHECK_MESSAGE(called == s.expect, s.label << ": called " << join(called) << ", expected " << join(s.expect));
    }
  }
}

TEST_CASE("the matchConditions never drop an object a rule reports on or reads (the rules' fixtures and examples, a real CEL evaluator)") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  const auto evaluator = cel_evaluator();
  if (!evaluator) {
    test::skip("no CEL evaluator: build/tools/node_modules/@bufbuild/cel (npm) and node");
    return;
  }
  auto r = render({});
  REQUIRE(r.exit_code == 0);
  std::vector<Hook> hooks;
  for (const auto& h : r.find("ValidatingWebhookConfiguration")->body()["webhooks"]) hooks.push_back({h["name"].get<std::string>(), h});
  const json admin = {{"username", "kubernetes-admin"}, {"groups", {"kubeadm:cluster-admins", "system:authenticated"}}};

  // Every Node and ConfigMap a rule reports on: the objects its disallowed fixtures mark (`# expect:`
  // on a line of the object), and those its example reports on.
  std::vector<Sample> samples;
  std::set<std::string> reported_kinds;
  auto add = [&](const engine::Object& o, const std::string& where, const std::string& op, const std::string& entry) {
    Sample s;
    s.label = where + ": " + o.display_name() + " " + op;
    s.op = op;
    s.resource = engine::resource_of({o.gvk.group, o.gvk.kind});
    s.ns = o.gvk.kind == "Node" ? "" : "team-a";  // the chart excludes the system namespaces on purpose
    s.user = admin;
    json body = o.body();
    if (!s.ns.empty()) body["metadata"]["namespace"] = s.ns;
    (op == "DELETE" ? s.old_object : s.object) = body;
    s.expect = {entry};
    samples.push_back(std::move(s));
  };
  for (const auto* rule : test::registry().rules()) {
    const auto& checks = rule->info().checks;
    for (const char* kind : {"Node", "ConfigMap"}) {
      if (std::find(checks.begin(), checks.end(), engine::KindRef{"", kind}) == checks.end()) continue;
      reported_kinds.insert(kind);
      const std::string entry = std::string(kind) == "Node" ? "nodes.validate.gpuguard.io" : "configmaps.validate.gpuguard.io";
      const fs::path dir = test::source_dir() / "tests" / "rules" / rule->info().id / "disallowed";
      size_t marked = 0;
      for (const auto& f : fs::directory_iterator(dir)) {
        const std::string text = test::read_file(f.path());
        const auto objects = load_all(text, f.path().string());
        std::istringstream lines(text);
        std::string line;
        for (uint32_t n = 1; std::getline(lines, line); ++n) {
          if (line.find("# expect: ") == std::string::npos) continue;
          const engine::Object* holder = nullptr;
          for (const auto& o : objects)
            if (o.pos.line <= n) holder = &o;
          if (!holder || !holder->is("", kind)) continue;
          ++marked;
          add(*holder, f.path().filename().string(), "CREATE", entry);
          add(*holder, f.path().filename().string(), "DELETE", "deletes.validate.gpuguard.io");
        }
      }
      // The rule's example, linted as a whole cluster.
      test::LintOptions lo;
      lo.complete = true;
      lo.only_rules = {rule->info().id};
      const auto example = load_all(rule->info().example_bad, "example.yaml");
      const auto linted = test::lint(rule->info().example_bad, lo);
      for (const auto& f : linted.findings)
        for (const auto& o : example)
          if (o.is("", kind) && o.name == f.object.ident().name && o.namespace_ == f.object.ident().namespace_) {
            ++marked;
            add(o, rule->info().id + " example", "CREATE", entry);
          }
      CHECK_MESSAGE(marked > 0, rule->info().id << ": no " << kind << " its fixtures report on");
    }
  }
  CHECK(reported_kinds == std::set<std::string>{"Node", "ConfigMap"});
  // A ConfigMap for each test of gpu-configmaps the fixtures do not isolate, each reported on by its
  // rule: a device-plugin config with `flags` and no `sharing`; a mig-parted config under
  // `config.yaml` whose `mig-configs` key is written with an escape.
  const std::vector<std::pair<std::string, std::string>> gates = {
      {"sharing-config-invalid",
       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flags-only, namespace: gpu-operator}\n"
       "data:\n  any: |\n    version: v2\n    flags:\n      migStrategy: none\n"},
      {"mig-profile-unknown",
       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: escaped, namespace: gpu-operator}\ndata:\n  config.yaml: |\n"
       "    version: v1\n    \"mig\\x2dconfigs\":\n      all-bad:\n        - devices: all\n          mig-enabled: true\n"
       "          mig-devices: {\"9g.99gb\": 1}\n"},
  };
  for (const auto& gate : gates) {  // no structured binding: clang 14 cannot capture one
    const std::string& rule = gate.first;
    const std::string& yaml = gate.second;
    test::LintOptions lo;
    lo.only_rules = {rule};
    const auto objects = load_all(yaml, rule + ".yaml");
    REQUIRE(objects.size() == 1);
    CHECK_MESSAGE(!test::lint(yaml, lo).findings.empty(), rule << " does not report on " << yaml);
    add(objects[0], rule + " (a test of gpu-configmaps)", "CREATE", "configmaps.validate.gpuguard.io");
    add(objects[0], rule + " (a test of gpu-configmaps)", "DELETE", "deletes.validate.gpuguard.io");
  }
  // A DCGM metrics CSV: read by gpu-alert-metric-unknown (serve --watch keeps it), so its DELETE is sent.
  const auto csv = load_all("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: metrics, namespace: gpu-operator}\n"
                            "data:\n  metrics.csv: |\n    DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n",
                            "metrics.yaml");
  REQUIRE(csv.size() == 1);
  CHECK(kube::project(csv[0].body(), {}));
  add(csv[0], "a DCGM metrics CSV", "DELETE", "deletes.validate.gpuguard.io");
  // Every ConfigMap of every fixture that serve --watch keeps (it holds a config a rule reads):
  // its DELETE is sent.
  size_t kept = 0;
  for (const auto& f : fs::recursive_directory_iterator(test::source_dir() / "tests" / "rules")) {
    if (f.path().extension() != ".yaml") continue;
    for (const auto& o : load_all(test::read_file(f.path()), f.path().string()))
      if (o.is("", "ConfigMap") && kube::project(o.body(), {})) {
        ++kept;
        add(o, f.path().parent_path().parent_path().filename().string() + "/" + f.path().filename().string(), "DELETE",
            "deletes.validate.gpuguard.io");
      }
  }
  CHECK(kept >= 10);
  const auto verdicts = evaluate_conditions(evaluator, hooks, samples);
  for (size_t i = 0; i < samples.size(); ++i) {
    CAPTURE(samples[i].label);
    for (size_t h = 0; h < hooks.size(); ++h) {
      if (!samples[i].expect.count(hooks[h].name)) continue;
      CHECK_MESSAGE(reaches(hooks[h].body, samples[i], verdicts[h][i]) == Reach::yes,
                    samples[i].label << " does not reach " << hooks[h].name << ": " << verdicts[h][i]);
    }
  }
}

TEST_CASE("every CEL expression of the chart compiles where the API server would: balanced, request fields the AdmissionRequest has, guarded") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  // The fields of `request` in the API server's CEL environment (k8s.io/apiserver/pkg/admission/plugin/cel,
  // the AdmissionRequest type); kubectl cannot compile matchConditions offline, the API server does.
  const std::set<std::string> fields = {"kind.group", "kind.version", "kind.kind", "resource.group", "resource.version",
                                        "resource.resource", "subResource", "requestKind.group", "requestKind.version",
                                        "requestKind.kind", "requestResource.group", "requestResource.version",
                                        "requestResource.resource", "requestSubResource", "name", "namespace", "operation",
                                        "userInfo.username", "userInfo.uid", "userInfo.groups", "userInfo.extra", "dryRun", "options"};
  const std::regex request_field(R"(\brequest\.([A-Za-z]+(\.[A-Za-z]+)?))");
  const std::regex selection(R"(\b(object|oldObject)((\.[A-Za-z]+)+))");
  for (const auto& mode : modes()) {
    CAPTURE(mode.label);
    auto r = render(mode.sets);
    REQUIRE(r.exit_code == 0);
    for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
      const auto* cfg = r.find(kind);
      if (!cfg) continue;
      for (const auto& h : cfg->body()["webhooks"]) {
        CAPTURE(h["name"]);
        REQUIRE(h.contains("matchConditions"));
        CHECK(h["matchConditions"].size() <= 64);
        std::set<std::string> names;
        for (const auto& c : h["matchConditions"]) {
          const std::string e = c["expression"];
          CAPTURE(e);
          CHECK(names.insert(c["name"].get<std::string>()).second);
          CHECK(std::regex_match(c["name"].get<std::string>(), std::regex("[a-z0-9]([-a-z0-9]*[a-z0-9])?")));
          // Parentheses balance outside string literals, every literal is closed.
          int depth = 0;
          bool quoted = false;
          for (char ch : e) {
            if (ch == '\'') quoted = !quoted;
            else if (!quoted && ch == '(') ++depth;
            else if (!quoted && ch == ')') CHECK(--depth >= 0);
          }
          CHECK(depth == 0);
          CHECK_FALSE(quoted);
          for (std::sregex_iterator it(e.begin(), e.end(), request_field), end; it != end; ++it)
            CHECK_MESSAGE(fields.count((*it)[1]), "request." << (*it)[1] << " is not a field of the AdmissionRequest");
          // A selection below metadata, kind or spec.containers of object/oldObject is guarded by has() on
          // the same path somewhere in the expression (the API server's objects are untyped: an absent
          // field is an error, which fails closed under Fail).
          for (std::sregex_iterator it(e.begin(), e.end(), selection), end; it != end; ++it) {
            std::string path = (*it)[2];
            for (std::string_view method : {".exists", ".all", ".contains", ".startsWith", ".endsWith", ".size"})
              if (path.size() > method.size() && path.ends_with(method)) path = path.substr(0, path.size() - method.size());
            // Always there: every object has metadata and kind, a Pod has spec.containers.
            if (path == ".metadata" || path == ".kind" || path == ".spec.containers" || path == ".metadata.name") continue;
            const std::string root = (*it)[1];
            bool guarded = false;
            for (std::string p = path; !p.empty(); p = p.substr(0, p.rfind('.')))
              guarded = guarded || e.find("has(" + root + p + ")") != std::string::npos;
            CHECK_MESSAGE(guarded, root << path << " is read without has()");
          }
        }
      }
    }
  }
}

TEST_CASE("the scope of every registered kind is the API's (the CRDs of ../shared/k8s-schemas, the built-in kinds)") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  std::map<std::pair<std::string, std::string>, std::string> scopes = {
      {{"", "nodes"}, "Cluster"},       {{"scheduling.k8s.io", "priorityclasses"}, "Cluster"}, {{"", "pods"}, "Namespaced"},
      {{"", "configmaps"}, "Namespaced"}, {{"", "resourcequotas"}, "Namespaced"},              {{"", "limitranges"}, "Namespaced"},
      {{"", "podtemplates"}, "Namespaced"}, {{"", "replicationcontrollers"}, "Namespaced"},
  };
  for (const char* r : {"daemonsets", "deployments", "replicasets", "statefulsets"}) scopes[{"apps", r}] = "Namespaced";
  for (const char* r : {"jobs", "cronjobs"}) scopes[{"batch", r}] = "Namespaced";
  if (auto shared = test::shared_dir(); shared && fs::exists(*shared / "k8s-schemas" / "crds"))
    for (const auto& f : fs::directory_iterator(*shared / "k8s-schemas" / "crds"))
      for (const auto& o : load_all(test::read_file(f.path()), f.path().string()))
        if (o.gvk.kind == "CustomResourceDefinition") {
          const json& spec = o.body()["spec"];
          scopes[{spec.value("group", ""), spec["names"].value("plural", "")}] = spec.value("scope", "");
        }
  auto r = render({"webhook.mutating.templates=true"});
  REQUIRE(r.exit_code == 0);
  size_t known = 0;
  for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"})
    for (const auto& h : r.find(kind)->body()["webhooks"])
      for (const auto& rule : h["rules"])
        for (const auto& res : rule["resources"]) {
          auto it = scopes.find({rule["apiGroups"][0].get<std::string>(), res.get<std::string>()});
          if (it == scopes.end()) continue;  // a CRD ../shared has no file for (checked by engine::is_cluster_scoped alone)
          ++known;
          CHECK_MESSAGE(rule["scope"] == json(it->second), rule["apiGroups"][0] << "/" << res << " is " << it->second);
        }
  CHECK(known >= 20);
}

TEST_CASE("the registered kinds and the RBAC are the rules' own (gpuguard rbac, the rules' checks)") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  const engine::Config config = engine::default_config(test::registry());
  auto r = render({});
  REQUIRE(r.exit_code == 0);
  CHECK(r.find("ClusterRole")->body()["rules"] == rules::rbac_rules(test::registry(), config));
  // Each validating entry as generated (files/validating-<entry>.yaml): its rules, and its
  // matchConditions after the chart's not-node-identity.
  const json& hooks = r.find("ValidatingWebhookConfiguration")->body()["webhooks"];
  const json generated = rules::validating_webhooks(test::registry(), config);
  REQUIRE(hooks.size() == generated.size());
  for (size_t i = 0; i < generated.size(); ++i) {
    CAPTURE(generated[i]["name"]);
    CHECK(hooks[i]["name"] == generated[i]["name"]);
    CHECK(hooks[i]["rules"] == generated[i]["rules"]);
    json conditions = hooks[i]["matchConditions"];
    conditions.erase(conditions.begin());
    CHECK(conditions == generated[i]["matchConditions"]);
    CHECK(hooks[i]["failurePolicy"] == json("Ignore"));  // the default: every entry
    CHECK(fs::exists(chart() / "files" / ("validating-" + generated[i]["entry"].get<std::string>() + ".yaml")));
  }
  // Every generated entry file is rendered (templates/webhook.yaml lists them).
  for (const auto& f : fs::directory_iterator(chart() / "files")) {
    const std::string name = f.path().filename().string();
    if (name.rfind("validating-", 0) != 0) continue;
    CHECK_MESSAGE(std::any_of(generated.begin(), generated.end(),
                              [&](const json& e) { return "validating-" + e["entry"].get<std::string>() + ".yaml" == name; }),
                  name << " is not generated by `gpuguard docs` (stale)");
  }
  CHECK(r.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["rules"] == rules::mutating_webhook_rules(test::registry(), config, false));
  auto t = render({"webhook.mutating.templates=true"});
  CHECK(t.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["rules"] == rules::mutating_webhook_rules(test::registry(), config, true));
  // And `gpuguard rbac` prints the same rules.
  auto rbac = test::run({"rbac"});
  auto role = test::load_objects(rbac.out, "rbac.yaml");
  REQUIRE(role.size() == 1);
  CHECK(role[0].body()["rules"] == r.find("ClusterRole")->body()["rules"]);
}

TEST_CASE("values the API server would refuse are refused at render time") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  CHECK(render({"webhook.failurePolicy=fail"}).exit_code != 0);
  CHECK(render({"webhook.mutating.failurePolicy=Never"}).exit_code != 0);
  CHECK(render({"webhook.timeoutSeconds=31"}).exit_code != 0);
  CHECK(render({"webhook.failOpenTimeoutSeconds=0"}).exit_code != 0);
  CHECK(render({"webhook.failurePolicy=Fail", "webhook.timeoutSeconds=30", "webhook.failOpenTimeoutSeconds=1"}).exit_code == 0);
}

TEST_CASE("certificates: helm-generated (SANs for the service), cert-manager (injected), an existing secret") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  auto helm_mode = render({});
  const auto* secret = helm_mode.find("Secret");
  REQUIRE(secret);
  const std::string ca = secret->body()["data"]["ca.crt"];
  CHECK(helm_mode.find("ValidatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"]["caBundle"] == json(ca));
  CHECK(helm_mode.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"]["caBundle"] == json(ca));
  test::TempDir dir;
  auto decode = [&](const std::string& b64, const std::string& name) {
    test::write_file(dir.path() / (name + ".b64"), b64);
    auto r = test::run_command({"openssl", "base64", "-d", "-A", "-in", (dir.path() / (name + ".b64")).string(), "-out",
                                (dir.path() / name).string()});
    REQUIRE(r.exit_code == 0);
    return (dir.path() / name).string();
  };
  const std::string ca_file = decode(ca, "ca.crt");
  const std::string crt_file = decode(secret->body()["data"]["tls.crt"], "tls.crt");
  CHECK(test::run_command({"openssl", "verify", "-CAfile", ca_file, crt_file}).exit_code == 0);
  auto text = test::run_command({"openssl", "x509", "-in", crt_file, "-noout", "-ext", "subjectAltName"});
  CHECK(text.out.find("DNS:rel-gpuguard.gpuguard-system.svc") != std::string::npos);

  auto cm = render({"certificates.mode=cert-manager"});
  CHECK(cm.find("Certificate"));
  CHECK_FALSE(cm.find("Secret"));
  const json& annotations = cm.find("ValidatingWebhookConfiguration")->body()["metadata"]["annotations"];
  CHECK(annotations["cert-manager.io/inject-ca-from"] == json("gpuguard-system/rel-gpuguard"));
  CHECK_FALSE(cm.find("ValidatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"].contains("caBundle"));

  auto existing = render({"certificates.mode=secret", "certificates.secretName=my-tls", "certificates.caBundle=Zm9v"});
  CHECK(existing.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"]["caBundle"] == json("Zm9v"));
  CHECK(existing.find("Deployment")->body()["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == json("my-tls"));
  CHECK(render({"certificates.mode=secret"}).exit_code != 0);   // no caBundle: refused
  CHECK(render({"certificates.mode=magic"}).exit_code != 0);
}

TEST_CASE("the Dockerfile's build stage has every source folder and library the build needs") {
  const std::string dockerfile = test::read_file(test::source_dir() / "Dockerfile");
  const std::string cmake = test::read_file(test::source_dir() / "CMakeLists.txt");
  // Folders the top-level CMakeLists adds unconditionally (at the start of a line, outside any
  // if()) must be copied in; the optional ones (bench, tests) must be switched off.
  std::regex always(R"((^|\n)add_subdirectory\(([A-Za-z_/]+)\))");
  size_t folders = 0;
  for (std::sregex_iterator it(cmake.begin(), cmake.end(), always), end; it != end; ++it, ++folders) {
    const std::string dir = (*it)[2];
    CHECK_MESSAGE(dockerfile.find("COPY " + dir + " " + dir + "\n") != std::string::npos, "the build stage does not copy " << dir);
  }
  CHECK(folders >= 5);
  CHECK(dockerfile.find("-DGPUGUARD_TESTS=OFF") != std::string::npos);
  CHECK(dockerfile.find("-DGPUGUARD_BENCH=OFF") != std::string::npos);
  // The profile-guided build: its instrumented stage builds bench_admission (bench/, and the test
  // helpers bench/CMakeLists.txt names) and trains on the rules' fixtures and the examples.
  CHECK(dockerfile.find("scripts/pgo-build.sh /build ") != std::string::npos);
  for (const std::string dir : {"bench", "scripts", "examples", "tests"})
    CHECK_MESSAGE(dockerfile.find("COPY " + dir + " " + dir + "\n") != std::string::npos, "the build stage does not copy " << dir);
  const std::string pgo = test::read_file(test::source_dir() / "scripts" / "pgo-build.sh");
  for (const std::string input : {"tests/rules", "examples", "bench/pgo-review.json"}) {
    CHECK_MESSAGE(pgo.find(input) != std::string::npos, "the training does not read " << input);
    CHECK_MESSAGE(std::filesystem::exists(test::source_dir() / input), input << " is missing");
  }
  // Every library package bootstrap.sh installs for the build (the -dev ones, but the tests').
  const std::string bootstrap = test::read_file(test::source_dir() / "scripts" / "bootstrap.sh");
  std::regex dev(R"(\n  (lib[a-z0-9.+-]+-dev|nlohmann-json3-dev)\s)");
  size_t libs = 0;
  for (std::sregex_iterator it(bootstrap.begin(), bootstrap.end(), dev), end; it != end; ++it, ++libs) {
    const std::string pkg = (*it)[1];
    CHECK_MESSAGE(dockerfile.find(" " + pkg + " ") != std::string::npos, "the build stage does not install " << pkg);
  }
  CHECK(libs >= 9);
}

TEST_CASE("the Dockerfile's runtime image carries both programs and every library they link") {
  const std::string dockerfile = test::read_file(test::source_dir() / "Dockerfile");
  CHECK(dockerfile.find("FROM debian:12 AS build") != std::string::npos);
  CHECK(dockerfile.find("USER 65532:65532") != std::string::npos);
  // gpuguard runs gpuguard-net from its own folder (cli/net.h): both are copied there.
  CHECK(dockerfile.find("COPY --from=build /build/cli/gpuguard /build/cli/gpuguard-net /usr/local/bin/\n") != std::string::npos);
  CHECK(dockerfile.find("ENTRYPOINT [\"/usr/local/bin/gpuguard\"]") != std::string::npos);
  for (const fs::path& program : {test::binary(), test::binary().parent_path() / "gpuguard-net"}) {
    CAPTURE(program);
    auto needed = test::run_command({"objdump", "-p", program.string()});
    auto resolved = test::run_command({"ldd", program.string()});
    if (needed.exit_code != 0 || resolved.exit_code != 0) {
      test::skip("objdump or ldd missing");
      return;
    }
    std::regex lib(R"(NEEDED\s+(\S+))");
    for (std::sregex_iterator it(needed.out.begin(), needed.out.end(), lib), end; it != end; ++it) {
      const std::string so = (*it)[1];
      if (so.rfind("ld-linux", 0) == 0) continue;  // the dynamic loader, which ldd names without "=>" (libc6)
      std::smatch m;
      std::regex where("\\s" + std::regex_replace(so, std::regex(R"([.+])"), R"(\$&)") + R"( => (\S+))");
      REQUIRE_MESSAGE(std::regex_search(resolved.out, m, where), so << " not in ldd's output");
      std::string path = fs::canonical(m[1].str()).string();
      auto owner = test::run_command({"dpkg", "-S", path});
      if (owner.exit_code != 0 && path.rfind("/usr/", 0) == 0) owner = test::run_command({"dpkg", "-S", path.substr(4)});
      REQUIRE_MESSAGE(owner.exit_code == 0, path);
      std::string pkg = owner.out.substr(0, owner.out.find(':'));
      if (pkg == "libc6" || pkg == "libstdc++6" || pkg == "libgcc-s1") continue;  // in debian:12-slim
      if (test::kSanitized && (pkg.rfind("libasan", 0) == 0 || pkg.rfind("libubsan", 0) == 0)) continue;  // the sanitizer build's own
      CHECK_MESSAGE(dockerfile.find(" " + pkg + " ") != std::string::npos, so << " comes from " << pkg << ", which the runtime stage does not install");
    }
  }
}

}  // TEST_SUITE
