// kube/cache: reflectors against the API server double, projections, snapshots.

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <mutex>

#include "engine/config.h"
#include "engine/evaluate.h"
#include "kube/cache.h"
#include "tests/kube/kube_test.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

kube::CacheOptions fast_options(const std::vector<engine::KindRef>& kinds) {
  kube::CacheOptions o;
  for (const auto& k : kinds) o.resources.push_back(*kube::resource_for(k));
  o.page_size = 2;
  o.watch_timeout_seconds = 60;
  o.backoff_initial_ms = 20;
  o.backoff_max_ms = 200;
  o.crd_retry_ms = 100;
  o.debounce_ms = 10;
  return o;
}

const std::vector<engine::KindRef> kKinds = {
    {"", "Node"}, {"", "ConfigMap"}, {"scheduling.k8s.io", "PriorityClass"}, {"scheduling.volcano.sh", "Queue"}};

void serve_all(test::ApiServer& api, bool queues_installed = true) {
  api.serve("v1", "Node", "nodes", false);
  api.serve("v1", "ConfigMap", "configmaps", true);
  api.serve("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false);
  api.serve("scheduling.volcano.sh/v1beta1", "Queue", "queues", false, queues_installed);
}

// Waits (bounded) until the latest snapshot satisfies `pred`.
bool wait_snapshot(const kube::ClusterCache& cache, const std::function<bool(const engine::Inventory&)>& pred,
                   int timeout_ms = 10000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const uint64_t gen = cache.generation();
    if (pred(*cache.snapshot())) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    cache.wait_for_generation(gen, static_cast<int>(left));
  }
}

const kube::ResourceStatus& status_of(const std::vector<kube::ResourceStatus>& all, const std::string& kind) {
  for (const auto& s : all)
    if (s.resource.kind == kind) return s;
  throw std::runtime_error("no status for " + kind);
}

struct Logs {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&, const std::string&, const json&)> hook() {
    return [this](const std::string& level, const std::string& msg, const json&) {
      std::lock_guard lock(mu);
      lines.push_back(level + ": " + msg);
    };
  }
  size_t count(const std::string& needle) {
    std::lock_guard lock(mu);
    size_t n = 0;
    for (const auto& l : lines) n += l.find(needle) != std::string::npos;
    return n;
  }
};

size_t list_requests(const test::ApiServer& api, const std::string& path) {
  size_t n = 0;
  for (const auto& r : api.requests()) n += r.path == path && !r.watch;
  return n;
}

}  // namespace

TEST_SUITE("kube") {
  TEST_CASE("projection: Nodes keep name and the labels rules read; managedFields and last-applied go; ConfigMaps only with a config a rule reads") {
    const auto config = engine::default_config(test::registry());
    const auto labels = kube::node_labels_read(config);
    CHECK(labels == std::set<std::string, std::less<>>{"node.kubernetes.io/instance-type", "nvidia.com/gpu.product", "nvidia.com/mig.config"});
    auto node = kube::project(testkube::node("gpu-1"), labels);
    REQUIRE(node);
    CHECK(*node == json{{"apiVersion", "v1"},
                        {"kind", "Node"},
                        {"metadata",
                         {{"name", "gpu-1"},
                          {"labels", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}, {"nvidia.com/mig.config", "all-1g.10gb"}}}}}});
    CHECK(testkube::recorded_node_labels().size() > 100);

    auto recorded_cm = json::parse(test::read_file(test::source_dir() / "tests" / "kube" / "recorded" / "configmap-managedfields.json"));
    CHECK_FALSE(kube::project(recorded_cm, labels));  // holds nothing a rule reads
    CHECK_FALSE(kube::project(testkube::plain_configmap("kube-system", "kube-root-ca.crt"), labels));
    auto mig = kube::project(testkube::mig_configmap("gpu-operator", "default-mig-parted-config"), labels);
    REQUIRE(mig);
    CHECK_FALSE((*mig)["metadata"].contains("managedFields"));
    CHECK((*mig)["data"].contains("config.yaml"));
    json plugin = testkube::plain_configmap("gpu-operator", "time-slicing-config");
    plugin["data"] = {{"any", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"}};
    CHECK(kube::project(plugin, labels));
    json csv = testkube::plain_configmap("gpu-operator", "metrics");
    csv["data"] = {{"dcgm-metrics.csv", "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization.\n"}};
    CHECK(kube::project(csv, labels));

    auto pc = kube::project(testkube::priority_class("high", 1000), labels);
    REQUIRE(pc);
    CHECK_FALSE((*pc)["metadata"].contains("annotations"));
    CHECK((*pc)["value"] == 1000);
  }

  TEST_CASE("cache: paged lists and watches build a complete snapshot; a CRD that appears later is picked up") {
    test::ApiServer api(testkube::pki());
    serve_all(api, false);
    for (int i = 0; i < 5; ++i) api.put(testkube::node("gpu-" + std::to_string(i)));
    api.put(testkube::priority_class("high", 1000));
    api.put(testkube::mig_configmap("gpu-operator", "default-mig-parted-config"));
    for (int i = 0; i < 5; ++i) api.put(testkube::plain_configmap("ns-" + std::to_string(i), "kube-root-ca.crt"));
    Logs logs;
    auto opts = fast_options(kKinds);
    opts.log = logs.hook();
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), opts);
    REQUIRE(cache.snapshot() != nullptr);
    CHECK_FALSE(cache.snapshot()->complete());
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete() && inv.list("", "Node").size() == 5; }));
    CHECK(cache.ready());
    auto inv = cache.snapshot();
    CHECK(inv->find("scheduling.k8s.io", "PriorityClass", "", "high"));
    CHECK(inv->list("", "ConfigMap").size() == 1);  // only the mig-parted one
    const engine::Object* n0 = inv->find("", "Node", "", "gpu-0");
    REQUIRE(n0);
    CHECK(n0->body()["metadata"]["labels"].size() == 2);
    std::set<uint32_t> ids;
    for (const auto* kind : {"Node", "ConfigMap"})
      for (const auto* o : inv->list("", kind)) CHECK(ids.insert(o->id).second);
    CHECK(list_requests(api, "/api/v1/nodes") == 3);  // 5 nodes, pages of 2
    auto st = cache.status();
    CHECK(status_of(st, "Queue").installed == false);
    CHECK(status_of(st, "Queue").healthy);
    CHECK(status_of(st, "Node").version == "v1");
    CHECK(status_of(st, "Node").objects == 5);
    CHECK(logs.count("queues.scheduling.volcano.sh is not served") == 1);

    // The watch: a new PriorityClass, a deleted Node.
    api.put(testkube::priority_class("low", 10));
    api.remove("v1", "Node", "", "gpu-4");
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) {
      return inv.find("scheduling.k8s.io", "PriorityClass", "", "low") && !inv.find("", "Node", "", "gpu-4");
    }));

    // Volcano gets installed.
    api.install("scheduling.volcano.sh/v1beta1", "queues");
    api.put({{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"}, {"metadata", {{"name", "training"}}}, {"spec", {{"weight", 1}}}});
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) {
      return inv.complete() && inv.find("scheduling.volcano.sh", "Queue", "", "training");
    }));
    CHECK(logs.count("queues.scheduling.volcano.sh is not served") == 1);
    CHECK(logs.count("queues.scheduling.volcano.sh is now served") == 1);
  }

  TEST_CASE("cache: an update equal to what is kept does not rebuild the snapshot") {
    test::ApiServer api(testkube::pki());
    serve_all(api);
    api.put(testkube::node("gpu-0"));
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), fast_options(kKinds));
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete() && inv.list("", "Node").size() == 1; }));
    REQUIRE(api.wait_for_watches(4));
    const uint64_t g0 = cache.generation();
    const double synced = status_of(cache.status(), "Node").last_sync_unix;
    json heartbeat = testkube::node("gpu-0");
    heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-12-03T10:00:00Z";
    heartbeat["metadata"]["labels"]["feature.node.kubernetes.io/cpu-cpuid.AVX512F"] = "true";  // a label no rule reads
    api.put(heartbeat);
    REQUIRE(test::wait_until([&] { return status_of(cache.status(), "Node").last_sync_unix > synced; }));
    api.put(testkube::priority_class("high", 1000));
    REQUIRE(cache.wait_for_generation(g0, 10000));
    CHECK(cache.generation() == g0 + 1);
    CHECK(cache.snapshot()->find("scheduling.k8s.io", "PriorityClass", "", "high"));
  }

  TEST_CASE("cache: 410 on a watch and on a continue token → list again") {
    test::ApiServer api(testkube::pki());
    serve_all(api);
    for (int i = 0; i < 5; ++i) api.put(testkube::node("gpu-" + std::to_string(i)));
    Logs logs;
    auto opts = fast_options(kKinds);
    opts.log = logs.hook();
    api.set_delay_ms(300);
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), opts);
    cache.start();
    // The second page is asked for (and held by the delay): its token expires before it is read.
    REQUIRE(test::wait_until([&] {
      for (const auto& r : api.requests())
        if (r.path == "/api/v1/nodes" && r.query.find("continue=") != std::string::npos) return true;
      return false;
    }));
    api.expire_continue_tokens();
    REQUIRE(test::wait_until([&] { return logs.count("nodes: list continue token expired (410)") >= 1; }));
    api.set_delay_ms(0);
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete() && inv.list("", "Node").size() == 5; }));
    REQUIRE(api.wait_for_watches(4));

    // Compacted history: the re-watch after a drop gets ERROR 410 and the cache lists again.
    const size_t lists = list_requests(api, "/api/v1/nodes");
    api.put(testkube::node("gpu-5"));
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.find("", "Node", "", "gpu-5") != nullptr; }));
    api.put(testkube::priority_class("later", 1));  // the history moves past the Nodes' resourceVersion
    api.compact();
    api.drop_watches();
    api.remove("v1", "Node", "", "gpu-0");
    REQUIRE(test::wait_until([&] { return logs.count("nodes: watch from resourceVersion") >= 1; }));
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) {
      return inv.complete() && !inv.find("", "Node", "", "gpu-0") && inv.list("", "Node").size() == 5;
    }));
    CHECK(list_requests(api, "/api/v1/nodes") > lists);
  }

  TEST_CASE("cache: a dropped watch keeps the last state, marks the snapshot incomplete, resumes from the last resourceVersion") {
    test::ApiServer api(testkube::pki());
    serve_all(api);
    api.put(testkube::priority_class("a", 1));
    auto cfg = api.config();
    kube::ClusterCache cache(testkube::client_for(cfg), engine::default_config(test::registry()), fast_options(kKinds));
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete(); }));
    REQUIRE(api.wait_for_watches(4));
    const auto rv_b = api.put(testkube::priority_class("b", 2));
    api.bookmark();  // PriorityClasses are at rv_b; the other watches learn rv_b too
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.find("scheduling.k8s.io", "PriorityClass", "", "b"); }));
    const size_t lists = list_requests(api, "/apis/scheduling.k8s.io/v1/priorityclasses");

    // The server refuses the old token while the watches are down: the resources go unhealthy.
    api.set_token("rotated");
    api.drop_watches();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return !inv.complete(); }));
    auto inv = cache.snapshot();
    CHECK(inv->find("scheduling.k8s.io", "PriorityClass", "", "b"));  // last good state kept
    CHECK(test::wait_until([&] { return status_of(cache.status(), "PriorityClass").last_error.find("HTTP 401") != std::string::npos; }));
    api.put(testkube::priority_class("c", 3));  // while disconnected
    api.set_token("test-token");
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) {
      return inv.complete() && inv.find("scheduling.k8s.io", "PriorityClass", "", "c");
    }));
    CHECK(list_requests(api, "/apis/scheduling.k8s.io/v1/priorityclasses") == lists);  // resumed, not re-listed
    bool resumed = false;
    for (const auto& r : api.requests())
      resumed = resumed || (r.watch && r.path == "/apis/scheduling.k8s.io/v1/priorityclasses" &&
                            r.query.find("resourceVersion=" + std::to_string(rv_b)) != std::string::npos);
    CHECK(resumed);
  }

  TEST_CASE("cache: a rotated service-account token is read from the token file") {
    test::TempDir dir;
    test::ApiServer api(testkube::pki(), "sa-1");
    serve_all(api);
    const fs::path token = dir.path() / "token";
    test::write_file(token, "sa-1");
    auto cfg = api.config();
    cfg.token.clear();
    cfg.token_file = token.string();
    kube::ClusterCache cache(testkube::client_for(cfg), engine::default_config(test::registry()), fast_options(kKinds));
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete(); }));
    REQUIRE(api.wait_for_watches(4));
    api.set_token("sa-2-rotated");
    test::write_file(token, "sa-2-rotated");
    api.drop_watches();
    api.put(testkube::priority_class("after-rotation", 5));
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) {
      return inv.complete() && inv.find("scheduling.k8s.io", "PriorityClass", "", "after-rotation");
    }));
  }

  TEST_CASE("cache: a slow server leaves the last snapshot available at once") {
    test::ApiServer api(testkube::pki());
    serve_all(api);
    api.put(testkube::priority_class("old", 1));
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), fast_options(kKinds));
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete(); }));
    REQUIRE(api.wait_for_watches(4));
    api.set_delay_ms(1500);
    api.drop_watches();
    api.put(testkube::priority_class("new", 2));
    for (int i = 0; i < 20; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto inv = cache.snapshot();
      CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50));
      REQUIRE(inv);
      CHECK(inv->find("scheduling.k8s.io", "PriorityClass", "", "old"));
    }
    CHECK_FALSE(cache.snapshot()->find("scheduling.k8s.io", "PriorityClass", "", "new"));  // the slow re-watch has not answered
    api.set_delay_ms(0);
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) {
      return inv.complete() && inv.find("scheduling.k8s.io", "PriorityClass", "", "new");
    }));
  }

  TEST_CASE("cache: 403 leaves the resource unhealthy with the API server's message; stop() ends blocked watches promptly") {
    test::ApiServer api(testkube::pki());
    serve_all(api);
    api.forbid("configmaps");
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), fast_options(kKinds));
    cache.start();
    REQUIRE(test::wait_until([&] { return !status_of(cache.status(), "ConfigMap").last_error.empty(); }));
    const auto cm = status_of(cache.status(), "ConfigMap");
    CHECK_FALSE(cm.healthy);
    CHECK_FALSE(cm.synced);
    CHECK(cm.last_error.find("HTTP 403 Forbidden") != std::string::npos);
    CHECK(cm.last_error.find("cannot list resource \"configmaps\"") != std::string::npos);
    CHECK_FALSE(cache.ready());
    CHECK_FALSE(cache.snapshot()->complete());
    REQUIRE(api.wait_for_watches(3));  // the others are watching, idle
    const auto t0 = std::chrono::steady_clock::now();
    cache.stop();
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  }

  TEST_CASE("cache: the rules read the projected snapshot: mig-node-pool-mixed over watched Nodes") {
    test::ApiServer api(testkube::pki());
    serve_all(api);
    for (int i = 0; i < 3; ++i) {
      json n = testkube::node("p5-" + std::to_string(i), i == 2 ? "all-disabled" : "all-1g.10gb");
      n["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "p5.48xlarge";
      api.put(n);
    }
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), fast_options(kKinds));
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete() && inv.list("", "Node").size() == 3; }));
    const auto config = engine::default_config(test::registry());
    engine::EvalOptions eo;
    eo.base = cache.snapshot();
    eo.complete = true;
    eo.only_rules = {"mig-node-pool-mixed"};
    engine::Evaluation ev(test::registry(), config, eo);
    auto result = ev.finish();
    REQUIRE(result.findings.size() == 1);
    CHECK(result.findings[0].rule == "mig-node-pool-mixed");
    CHECK(result.findings[0].message.find("node.kubernetes.io/instance-type=p5.48xlarge") != std::string::npos);
    CHECK(result.findings[0].message.find("1 all-disabled (p5-2)") != std::string::npos);
  }
}
