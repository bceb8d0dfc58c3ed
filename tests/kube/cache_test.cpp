// kube/cache: reflectors against the API server double, projections, snapshots.

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <mutex>
#include <thread>

#include "engine/config.h"
#include "engine/dra.h"
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
  size_t size() {
    std::lock_guard lock(mu);
    return lines.size();
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

// The most attempts (watches, or lists) a reflector can make in `window_ms` while each one fails,
// from the backoff schedule of kube/cache.h: after the n-th failure in a row it sleeps at least
// d_n / 2, d_n = min(backoff_max_ms, backoff_initial_ms × 2^(n−1)), so attempts k and k+1 are at
// least d_k / 2 apart. With the defaults and 10 s: 7 (the sleeps' floors 100 + 200 + 400 + 800 +
// 1600 + 3200 = 6,300 ms fit, + 6,400 = 12,700 ms do not).
size_t max_attempts(double window_ms, const kube::CacheOptions& o) {
  size_t n = 1;
  double t = 0;
  for (int k = 1;; ++k) {
    const int64_t d = std::min<int64_t>(o.backoff_max_ms, static_cast<int64_t>(o.backoff_initial_ms) << std::min(k - 1, 30));
    const int64_t floor = d / 2;  // the jitter's lower end, an integer as in kube/cache.cpp
    t += static_cast<double>(floor);
    if (t > window_ms) return n;
    ++n;
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The backoffs logged for `resource` ("nodes") from line `from` on, in order: (failures in a row,
// the sleep in ms), from "<resource>: … (failure N in a row; next attempt in D ms)".
std::vector<std::pair<int, int>> logged_backoffs(Logs& logs, size_t from, const std::string& resource) {
  std::lock_guard lock(logs.mu);
  std::vector<std::pair<int, int>> out;
  for (size_t i = from; i < logs.lines.size(); ++i) {
    const std::string& l = logs.lines[i];
    if (l.find(": " + resource + ": ") == std::string::npos) continue;
    const auto p = l.rfind("(failure ");
    if (p == std::string::npos) continue;
    int n = 0, d = 0;
    if (std::sscanf(l.c_str() + p, "(failure %d in a row; next attempt in %d ms)", &n, &d) == 2) out.emplace_back(n, d);
  }
  return out;
}

// Each logged backoff is the schedule's: failures numbered 1, 2, 3, … from the first, the n-th
// sleeping within [d_n / 2, d_n].
void check_schedule(const std::vector<std::pair<int, int>>& backoffs, const kube::CacheOptions& o) {
  for (size_t i = 0; i < backoffs.size(); ++i) {
    const auto [n, d] = backoffs[i];
    CHECK(n == static_cast<int>(i) + 1);
    const int64_t top = std::min<int64_t>(o.backoff_max_ms, static_cast<int64_t>(o.backoff_initial_ms) << std::min(n - 1, 30));
    CHECK(d >= top / 2);
    CHECK(d <= top);
  }
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
    const auto t0 = std::chrono::steady_clock::now();
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
    // The refused lists back off: within the schedule's count for the time run.
    const size_t lists = list_requests(api, "/api/v1/configmaps");
    CHECK(lists >= 1);
    CHECK(lists <= max_attempts(ms_since(t0), fast_options(kKinds)));
    CHECK(status_of(cache.status(), "ConfigMap").failures >= lists - 1);
    const auto t1 = std::chrono::steady_clock::now();
    cache.stop();
    CHECK(std::chrono::steady_clock::now() - t1 < std::chrono::seconds(2));
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

  TEST_CASE("cache: a server that ends every watch at once is asked at most 7 times a kind in 10 s with the default backoff, each time a failure") {
    // Issue 42: a failure count reset on any answer made serve --watch reopen such watches about
    // 650 times a second (53 % of a core). With the defaults (200 ms, ×2, 30 s, equal jitter), the
    // bound of max_attempts: 7 watch requests a kind in 10 s.
    test::ApiServer api(testkube::pki());
    serve_all(api);
    for (int i = 0; i < 3; ++i) api.put(testkube::node("gpu-" + std::to_string(i)));
    api.put(testkube::priority_class("high", 1000));
    api.set_watch_fault(test::ApiServer::WatchFault::close);
    kube::CacheOptions o;  // serve --watch's defaults
    for (const auto& k : kKinds) o.resources.push_back(*kube::resource_for(k));
    REQUIRE(o.backoff_initial_ms == 200);
    REQUIRE(o.backoff_max_ms == 30000);
    REQUIRE(o.min_watch_ms == 1000);
    REQUIRE(max_attempts(10000, o) == 7);
    Logs logs;
    o.log = logs.hook();
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), o);
    const auto t0 = std::chrono::steady_clock::now();
    cache.start();
    std::this_thread::sleep_for(std::chrono::seconds(10));
    const auto st = cache.status();
    const double window = ms_since(t0);  // 10 s, more on a machine that stalled
    const auto requests = api.requests();
    const size_t bound = max_attempts(window, o);
    MESSAGE("ran ", window, " ms: at most ", bound, " watch requests a kind");
    const std::vector<std::pair<std::string, std::string>> watched = {{"Node", "/api/v1/nodes"},
                                                                      {"ConfigMap", "/api/v1/configmaps"},
                                                                      {"PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"},
                                                                      {"Queue", "/apis/scheduling.volcano.sh/v1beta1/queues"}};
    for (const auto& w : watched) {
      const std::string& kind = w.first;
      const std::string& path = w.second;
      CAPTURE(kind);
      size_t watches = 0, lists = 0;
      for (const auto& r : requests) (r.watch ? watches : lists) += r.path == path;
      MESSAGE(kind, ": ", watches, " watch requests");
      CHECK(watches >= 3);  // it does watch again (the third after at most 200 + 400 ms)
      CHECK(watches <= bound);
      CHECK(lists == 1);  // a short watch is watched again, not listed again
      const auto& s = status_of(st, kind);
      CHECK(s.failures >= watches - 1);
      CHECK(s.failures <= watches);
      CHECK(s.consecutive_failures == static_cast<int>(s.failures));  // no watch ran: never reset
      CHECK(s.watch_restarts.at("short") == s.failures);
      CHECK_FALSE(s.watch_restarts.contains("closed"));
      CHECK(s.last_error.find("ended the watch") != std::string::npos);
      const std::string name = kind == "Node" ? "nodes" : kind == "ConfigMap" ? "configmaps"
                               : kind == "PriorityClass" ? "priorityclasses.scheduling.k8s.io" : "queues.scheduling.volcano.sh";
      const auto backoffs = logged_backoffs(logs, 0, name);
      CHECK(backoffs.size() == s.failures);
      check_schedule(backoffs, o);
    }
    // The listed state is kept, and counts as incomplete while the watches fail.
    CHECK(cache.snapshot()->list("", "Node").size() == 3);
    CHECK(wait_snapshot(cache, [](const engine::Inventory& inv) { return !inv.complete(); }));
    const auto t1 = std::chrono::steady_clock::now();
    cache.stop();  // wakes the backoffs at once
    CHECK(std::chrono::steady_clock::now() - t1 < std::chrono::seconds(2));
  }

  TEST_CASE("cache: each way a watch fails backs off on the schedule; events on a watch that ran reset it") {
    using Fault = test::ApiServer::WatchFault;
    test::ApiServer api(testkube::pki());
    api.serve("v1", "Node", "nodes", false);
    for (int i = 0; i < 3; ++i) api.put(testkube::node("gpu-" + std::to_string(i)));
    kube::CacheOptions o;
    o.resources.push_back(*kube::resource_for({"", "Node"}));
    o.watch_timeout_seconds = 60;
    // The defaults (200 ms, 30 s, 1 s) scaled down so that each way is seen for 1 s: sleeps of
    // 10–20, 20–40, 40–80, then 80–160 ms; max_attempts(1000 ms) = 15.
    o.backoff_initial_ms = 20;
    o.backoff_max_ms = 160;
    o.min_watch_ms = 150;
    o.debounce_ms = 10;
    REQUIRE(max_attempts(1000, o) == 15);
    Logs logs;
    o.log = logs.hook();
    kube::ClusterCache cache(testkube::client(api), engine::default_config(test::registry()), o);
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete() && inv.list("", "Node").size() == 3; }));
    REQUIRE(api.wait_for_watches(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(o.min_watch_ms + 50));  // the first watch has run
    const std::string path = "/api/v1/nodes";
    auto node_status = [&] { return status_of(cache.status(), "Node"); };
    // Events (a Node's MIG config flipping) until one reaches a watch that has run min_watch_ms.
    int tick = 0;
    auto reset_by_events = [&] {
      return test::wait_until(
          [&] {
            if (node_status().consecutive_failures == 0) return true;
            api.put(testkube::node("tick", ++tick % 2 ? "all-disabled" : "all-1g.10gb"));
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            return false;
          },
          10000);
    };
    struct Way {
      Fault fault;
      const char* what;
      const char* reason;  // of watch_restarts
      bool lists_again;
    };
    const Way ways[] = {
        {Fault::close, "200 and an empty stream", "short", false},
        {Fault::bookmark_close, "a bookmark, then the end", "short", false},
        {Fault::cut_line, "a stream cut mid-line", "error", false},
        {Fault::not_json, "a line that is not JSON", "error", false},
        {Fault::error_event, "an ERROR event (500)", "error", false},
        {Fault::expired, "410 Expired on every watch", "expired", true},
        {Fault::not_found, "404 on the watch while discovery and list answer", "error", true},
    };
    for (const auto& way : ways) {
      CAPTURE(way.what);
      REQUIRE(node_status().consecutive_failures == 0);
      const auto before = node_status();
      const size_t watches0 = api.watch_requests(path), lists0 = list_requests(api, path), mark = logs.size();
      api.set_watch_fault(way.fault);
      const auto t0 = std::chrono::steady_clock::now();
      api.end_watches();  // the running watch ran (no failure); the next ones meet the fault
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      const size_t watches = api.watch_requests(path) - watches0, lists = list_requests(api, path) - lists0;
      const double window = ms_since(t0);
      const auto after = node_status();
      api.set_watch_fault(Fault::none);
      const size_t bound = max_attempts(window, o);
      CHECK(watches >= 3);
      CHECK(watches <= bound);
      CHECK(lists <= watches);
      if (way.lists_again) CHECK(lists >= 2);
      else CHECK(lists == 0);
      CHECK(after.failures - before.failures >= watches - 1);
      CHECK(after.consecutive_failures >= static_cast<int>(watches) - 1);
      const auto count = [](const kube::ResourceStatus& st, const std::string& reason) {
        auto it = st.watch_restarts.find(reason);
        return it == st.watch_restarts.end() ? uint64_t{0} : it->second;
      };
      CHECK(count(after, way.reason) - count(before, way.reason) >= watches - 1);
      CHECK(count(after, "closed") - count(before, "closed") == 1);  // the watch end_watches() ended
      const auto backoffs = logged_backoffs(logs, mark, "nodes");
      CHECK(backoffs.size() >= watches - 1);
      check_schedule(backoffs, o);  // from failure 1 again: the events of the last round reset it
      CHECK(cache.snapshot()->list("", "Node").size() >= 3);  // the last state is kept
      REQUIRE(reset_by_events());
    }
    // Served again: the state catches up and is complete.
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) { return inv.complete() && inv.find("", "Node", "", "tick"); }));
  }
}

TEST_SUITE("kube") {
  TEST_CASE("cache: watched ResourceClaimTemplates resolve an admitted pod's DRA claims (issue 44)") {
    test::ApiServer api(testkube::pki());
    api.serve("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates", true);
    api.serve("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", true);
    api.serve("resource.k8s.io/v1", "DeviceClass", "deviceclasses", false);
    api.put(json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
      "metadata": {"name": "one-gpu", "namespace": "team-a"},
      "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})"));
    const auto config = engine::default_config(test::registry());
    kube::ClusterCache cache(testkube::client(api), config, fast_options(engine::dra_kinds()));
    cache.start();
    REQUIRE(wait_snapshot(cache, [](const engine::Inventory& inv) {
      return inv.complete() && inv.find("resource.k8s.io", "ResourceClaimTemplate", "team-a", "one-gpu");
    }));
    engine::EvalOptions eo;
    eo.base = cache.snapshot();
    eo.focus_on_added = true;
    eo.only_rules = {"gpu-priority-class-missing"};
    engine::Evaluation ev(test::registry(), config, eo);
    auto pod = test::load_objects(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a}\nspec:\n"
        "  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]\n"
        "  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]\n");
    ev.add(std::move(pod[0]));
    auto result = ev.finish();
    REQUIRE(result.findings.size() == 1);
    CHECK(result.findings[0].message.find("ResourceClaimTemplate team-a/one-gpu, DeviceClass gpu.nvidia.com") != std::string::npos);
    cache.stop();
  }
}
