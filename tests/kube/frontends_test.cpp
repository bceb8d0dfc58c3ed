// The kube client behind the front ends: `gpuguard serve --watch` against the API server double,
// `gpuguard audit` (and its snapshot, which `lint --complete` reproduces), and the RBAC the chart
// grants against what the two really list and watch.

#include <doctest/doctest.h>

#include <csignal>
#include <set>
#include <thread>

#include "engine/evaluate.h"
#include "engine/yaml_emit.h"
#include "kube/resources.h"
#include "rules/docs.h"
#include "tests/kube/kube_test.h"
#include "tests/webhook/fixture.h"
#include "webhook/admission.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

// A kubeconfig for the double: its CA inline, a bearer token.
fs::path write_kubeconfig(const fs::path& dir, const test::ApiServer& api, const std::string& token = "test-token") {
  const std::string ca = webhook::base64_encode(testkube::pki().ca_pem);
  const fs::path p = dir / "kubeconfig";
  test::write_file(p, "apiVersion: v1\nkind: Config\nclusters:\n- name: double\n  cluster:\n    server: " + api.url() +
                          "\n    certificate-authority-data: " + ca + "\nusers:\n- name: tester\n  user:\n    token: " + token +
                          "\ncontexts:\n- name: double\n  context:\n    cluster: double\n    user: tester\ncurrent-context: double\n");
  return p;
}

json gpu_deployment(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"managedFields", {{{"manager", "kubectl"}}}}}},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec", {{"containers", {{{"name", "train"}, {"image", "pytorch"}, {"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}}}}}}}}}}};
}

json gpu_pod(const std::string& ns, const std::string& name, bool owned) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "cuda"}, {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}}}}}};
  if (owned)
    pod["metadata"]["ownerReferences"] = {
        {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "train-7d9f"}, {"uid", "1"}, {"controller", true}}};
  return pod;
}

std::set<std::string> rbac_set(const json& rules) {
  std::set<std::string> out;
  for (const auto& r : rules)
    for (const auto& g : r["apiGroups"])
      for (const auto& res : r["resources"]) out.insert(g.get<std::string>() + "/" + res.get<std::string>());
  return out;
}

std::set<std::string> resource_set(const std::vector<kube::Resource>& rs) {
  std::set<std::string> out;
  for (const auto& r : rs) out.insert(r.group + "/" + r.plural);
  return out;
}

}  // namespace

TEST_SUITE("kube") {

TEST_CASE("rbac: the ClusterRoles grant exactly what serve --watch watches and audit lists") {
  const auto& reg = test::registry();
  const engine::Config config = engine::default_config(reg);
  std::vector<std::string> unknown;
  const auto watched = kube::resources_for(engine::kinds_read(reg, config), &unknown);
  CHECK_MESSAGE(unknown.empty(), testkube::join(unknown));
  CHECK(resource_set(watched) == rbac_set(rules::rbac_rules(reg, config)));
  const auto audited = kube::resources_for(engine::kinds_audited(reg, config), &unknown);
  CHECK_MESSAGE(unknown.empty(), testkube::join(unknown));
  CHECK(resource_set(audited) == rbac_set(rules::audit_rbac_rules(reg, config)));
  // The chart's file is `gpuguard rbac`'s rules.
  const std::string chart = test::read_file(test::source_dir() / "charts" / "gpuguard" / "files" / "rbac-rules.yaml");
  CHECK(chart.find(engine::to_yaml(rules::rbac_rules(reg, config))) != std::string::npos);
  auto r = test::run({"rbac"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("- watch") != std::string::npos);
  auto a = test::run({"rbac", "--audit"});
  CHECK(a.exit_code == 0);
  CHECK(a.out.find("- watch") == std::string::npos);
  CHECK(a.out.find("- deployments") != std::string::npos);
}

TEST_CASE("serve --watch: ready once listed; a PriorityClass created through the watch makes the next admission warn; a slow API server does not slow admission") {
  if (!test::e2e::have_tools()) {
    test::skip("tools missing");
    return;
  }
  test::ApiServer api(testkube::pki());
  api.serve("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false);
  api.serve("v1", "Namespace", "namespaces", false);
  for (int i = 0; i < 4; ++i) api.put(testkube::priority_class("pc" + std::to_string(i), i * 10), false);
  api.set_version({{"major", "1"}, {"minor", "35"}, {"gitVersion", "v1.35.1"}});
  test::TempDir dir;
  const fs::path kc = write_kubeconfig(dir.path(), api);
  api.set_delay_ms(1500);  // the first lists take a while: not ready meanwhile
  test::e2e::Webhook wh({"--watch", "--kubeconfig", kc.string(), "--log-level", "debug"});
  auto [code, body] = wh.curl("/readyz");
  CHECK(code == 503);
  CHECK(body.find("cluster state not synced") != std::string::npos);
  REQUIRE_MESSAGE(test::wait_until([&] { return wh.curl("/readyz").first == 200; }, 20000), wh.proc->log());
  api.set_delay_ms(0);
  // The cluster's Kubernetes version replaces the config's kubernetesVersion.
  CHECK_MESSAGE(wh.proc->log().find("the API server's Kubernetes version replaces the config's kubernetesVersion") != std::string::npos,
                wh.proc->log());
  CHECK(wh.proc->log().find("\"version\":\"1.35\"") != std::string::npos);

  json fifth = {{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", "new"}}}, {"value", 99}};
  const auto review = wh.write("pc.json", test::e2e::review_of(fifth).dump());
  json r = json::parse(wh.curl("/validate", review.string()).second);
  CHECK(r["response"]["allowed"] == json(true));
  CHECK_FALSE(r["response"].contains("warnings"));  // 5 user classes: within 3–5

  // A fifth class appears in the cluster: admitting "new" would make six.
  api.put(testkube::priority_class("pc4", 40));
  json warned;
  CHECK(test::wait_until(
      [&] {
        warned = json::parse(wh.curl("/validate", review.string()).second);
        return warned["response"].contains("warnings");
      },
      10000));
  REQUIRE(warned["response"].contains("warnings"));
  CHECK(warned["response"]["warnings"][0].get<std::string>().find("6 user PriorityClasses") != std::string::npos);

  // Metrics: the staleness gauge per kind, healthy watches, the objects kept.
  auto [mcode, metrics] = wh.curl("/metrics");
  CHECK(metrics.find("gpuguard_state_last_sync_timestamp_seconds{kind=\"PriorityClass.scheduling.k8s.io\"} ") != std::string::npos);
  CHECK(metrics.find("gpuguard_state_watch_healthy{kind=\"PriorityClass.scheduling.k8s.io\"} 1") != std::string::npos);
  CHECK(wh.metric("gpuguard_state_objects") == 5);
  CHECK(metrics.find("# TYPE gpuguard_watch_failures_total counter\n") != std::string::npos);
  CHECK(metrics.find("\ngpuguard_watch_failures_total{kind=\"PriorityClass.scheduling.k8s.io\"} ") != std::string::npos);

  // A slow API server: admission answers from the cache at once (curl gives up after 1 s).
  api.set_delay_ms(4000);
  api.drop_watches();
  for (int i = 0; i < 3; ++i) {
    auto [c, b] = wh.curl("/validate", review.string(), {"--max-time", "1"});
    CHECK(c == 200);
  }
  api.set_delay_ms(0);

  // The watch breaks for good (RBAC taken away): the last state is kept, each answer says it is
  // stale, the rules that need the whole cluster stay quiet, the gauge drops to 0.
  api.forbid("priorityclasses");
  api.drop_watches();
  json stale;
  CHECK(test::wait_until(
      [&] {
        stale = json::parse(wh.curl("/validate", review.string()).second);
        return stale["response"].contains("warnings") &&
               stale["response"]["warnings"][0].get<std::string>().find("PriorityClass.scheduling.k8s.io stale since") != std::string::npos;
      },
      20000));
  CHECK(stale["response"]["allowed"] == json(true));
  CHECK_MESSAGE(stale["response"]["warnings"][0].get<std::string>().rfind("gpuguard: cluster state of ", 0) == 0, stale.dump());
  CHECK(wh.curl("/metrics").second.find("gpuguard_state_watch_healthy{kind=\"PriorityClass.scheduling.k8s.io\"} 0") != std::string::npos);
  // Each refused watch is a failure that backs off (200 ms, 400 ms, …): counted, and not hundreds.
  const double failures = wh.metric("gpuguard_watch_failures_total{kind=\"PriorityClass.scheduling.k8s.io\"}");
  CHECK(failures >= 1);
  CHECK(failures <= 20);
  CHECK(wh.metric("gpuguard_watch_restarts_total{kind=\"PriorityClass.scheduling.k8s.io\",reason=\"error\"}") >= 1);
  CHECK(wh.curl("/readyz").first == 200);  // still serving, from the last good state
  wh.proc->signal(SIGTERM);
  CHECK(wh.proc->wait_exit() == 0);
}

TEST_CASE("audit: lists the cluster, lints it complete; its snapshot linted offline gives the same findings") {
  test::ApiServer api(testkube::pki());
  api.serve("v1", "Namespace", "namespaces", false);
  api.serve("v1", "Pod", "pods", true);
  api.serve("v1", "ResourceQuota", "resourcequotas", true);
  api.serve("apps/v1", "Deployment", "deployments", true);
  api.serve("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false);
  api.put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ml"}}}}, false);
  api.put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "web"}}}}, false);
  api.put(gpu_deployment("ml", "train"), false);
  api.put(gpu_pod("ml", "train-7d9f-abcde", true), false);  // made by a ReplicaSet: linted on its Deployment
  api.put(gpu_pod("ml", "debug", false), false);
  api.put(gpu_pod("web", "notebook", false), false);
  api.put(testkube::priority_class("high", 1000), false);
  test::TempDir dir;
  const fs::path kc = write_kubeconfig(dir.path(), api);
  const fs::path snap = dir.path() / "snap";

  auto audit = test::run({"audit", "--kubeconfig", kc.string(), "--no-config", "--snapshot", snap.string(), "-f", "json", "--fail-on", "none"});
  REQUIRE_MESSAGE(audit.exit_code == 0, audit.err);
  CHECK(audit.err.find("1 Pods and ReplicaSets made by controllers") != std::string::npos);
  CHECK(fs::exists(snap / "ml" / "deployments.apps" / "train.yaml"));
  CHECK(fs::exists(snap / "ml" / "pods" / "debug.yaml"));
  CHECK_FALSE(fs::exists(snap / "ml" / "pods" / "train-7d9f-abcde.yaml"));
  CHECK(fs::exists(snap / "_cluster" / "priorityclasses.scheduling.k8s.io" / "high.yaml"));
  CHECK(test::read_file(snap / "ml" / "deployments.apps" / "train.yaml").find("managedFields") == std::string::npos);
  auto lint = test::run({"lint", "--complete", "--no-config", snap.string(), "-f", "json", "--fail-on", "none"});
  REQUIRE(lint.exit_code == 0);
  CHECK(audit.out == lint.out);
  // The cluster as a whole: namespaces with GPU pods and no quota are reported (complete).
  CHECK(audit.out.find("namespace-gpu-quota-missing") != std::string::npos);
  CHECK(audit.out.find("ml/deployments.apps/train.yaml") != std::string::npos);

  // The cluster's Kubernetes version (GET /version) replaces the config's kubernetesVersion; a
  // server without /version leaves the config's, and says so.
  CHECK(audit.err.find("cannot read the API server's version") != std::string::npos);
  api.set_version({{"major", "1"}, {"minor", "34+"}, {"gitVersion", "v1.34.2-eks-4f2a"}});
  auto versioned = test::run({"audit", "--kubeconfig", kc.string(), "--no-config", "-f", "json", "--fail-on", "none"});
  REQUIRE_MESSAGE(versioned.exit_code == 0, versioned.err);
  CHECK_MESSAGE(versioned.err.find("the API server runs Kubernetes 1.34 (kubernetesVersion 1.36 of the config not used)") != std::string::npos,
                versioned.err);

  // Without a snapshot the files are named under "cluster/"; --namespace keeps to one namespace.
  auto text = test::run({"audit", "--kubeconfig", kc.string(), "--no-config", "-n", "web", "--fail-on", "none"});
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  CHECK(text.out.find("cluster/web/pods/notebook.yaml:") != std::string::npos);
  CHECK(text.out.find("cluster/ml/") == std::string::npos);

  // A kind it may not list: exit 2 with the API server's answer; the rest is still linted, and
  // rules that need the whole cluster stay quiet.
  api.forbid("resourcequotas");
  auto partial = test::run({"audit", "--kubeconfig", kc.string(), "--no-config", "--fail-on", "none"});
  CHECK(partial.exit_code == 2);
  CHECK((partial.out + partial.err).find("cannot list resourcequotas") != std::string::npos);
  CHECK(partial.out.find("cluster/ml/deployments.apps/train.yaml:") != std::string::npos);
  CHECK(partial.out.find("namespace-gpu-quota-missing") == std::string::npos);

  // Bad credentials and a broken kubeconfig: clear errors, exit 2.
  fs::create_directories(dir.path() / "bad");
  const fs::path bad = write_kubeconfig(dir.path() / "bad", api, "wrong-token");
  auto denied = test::run({"audit", "--kubeconfig", bad.string(), "--no-config"});
  CHECK(denied.exit_code == 2);
  CHECK((denied.out + denied.err).find("401") != std::string::npos);
  // No API server there: one error, at once (not one per kind).
  const std::string refused = test::read_file(kc);
  const std::string url = api.url();
  std::string gone = refused;
  gone.replace(gone.find(url), url.size(), "https://127.0.0.1:1");
  fs::create_directories(dir.path() / "gone");
  test::write_file(dir.path() / "gone" / "kubeconfig", gone);
  auto unreachable = test::run({"audit", "--kubeconfig", (dir.path() / "gone" / "kubeconfig").string(), "--no-config"});
  CHECK(unreachable.exit_code == 2);
  CHECK(unreachable.err.find("cannot reach the API server") != std::string::npos);
  test::write_file(dir.path() / "broken", "clusters: [\n");
  auto broken = test::run({"audit", "--kubeconfig", (dir.path() / "broken").string(), "--no-config"});
  CHECK(broken.exit_code == 2);
  CHECK(broken.err.find("broken") != std::string::npos);
}

}  // TEST_SUITE
