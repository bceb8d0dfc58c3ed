// kube/client against the API server double: discovery, paging, watch streams, credentials, stop().

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "kube/client.h"
#include "tests/kube/kube_test.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

TEST_SUITE("kube") {
  TEST_CASE("resources: every kind the rules check, read or observe is listable, with the API's plural and scope") {
    std::set<engine::KindRef> kinds;
    for (const auto& rule : test::registry().rules())
      for (const auto* list : {&rule->info().checks, &rule->info().reads, &rule->info().observes})
        for (const auto& k : *list)
          if (k.kind != "*") kinds.insert(k);
    std::vector<std::string> unknown;
    auto resources = kube::resources_for(kinds, &unknown);
    CHECK_MESSAGE(unknown.empty(), "kinds with no resource: " << testkube::join(unknown));
    CHECK(resources.size() == kinds.size());
    auto node = kube::resource_for({"", "Node"});
    REQUIRE(node);
    CHECK(node->path("v1") == "/api/v1/nodes");
    CHECK_FALSE(node->namespaced);
    auto lq = kube::resource_for({"kueue.x-k8s.io", "LocalQueue"});
    REQUIRE(lq);
    CHECK(lq->versions == std::vector<std::string>{"v1beta1", "v1beta2"});
    CHECK(lq->path("v1beta1") == "/apis/kueue.x-k8s.io/v1beta1/localqueues");
    CHECK(lq->path("v1beta1", "team-a") == "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/localqueues");
    CHECK(kube::resource_for({"kubeflow.org", "MPIJob"})->versions == std::vector<std::string>{"v2beta1", "v1"});
    CHECK_FALSE(kube::resource_for({"", "*"}));
    CHECK_FALSE(kube::resource_for({"example.com", "Widget"}));

    // Against the CRDs of ../shared/k8s-schemas: every version we ask for is served, plural and scope agree.
    auto shared = test::shared_dir();
    if (!shared) return;
    size_t checked = 0;
    for (const auto& entry : fs::directory_iterator(*shared / "k8s-schemas" / "crds")) {
      auto objs = test::load_objects(test::read_file(entry.path()), entry.path().string());
      for (const auto& crd : objs) {
        const json* spec = engine::member(crd.body(), "spec");
        if (!spec) continue;
        const std::string group = engine::string_at(*spec, "group").value_or("").data();
        const std::string kind = std::string(engine::string_at(*engine::path(*spec, {"names"}), "kind").value_or(""));
        auto r = kube::resource_for({group, kind});
        if (!r) continue;
        ++checked;
        CHECK_MESSAGE(r->plural == engine::string_at(*engine::path(*spec, {"names"}), "plural").value_or(""), kind);
        CHECK_MESSAGE(r->namespaced == (engine::string_at(*spec, "scope").value_or("") == "Namespaced"), kind << "." << group);
        std::set<std::string> served;
        for (const auto& v : *engine::member(*spec, "versions"))
          if (engine::bool_at(v, "served").value_or(false)) served.insert(std::string(engine::string_at(v, "name").value_or("")));
        bool any = false;
        for (const auto& v : r->versions) any = any || served.contains(v);
        CHECK_MESSAGE(any, kind << "." << group << " serves none of our versions");
      }
    }
    CHECK(checked >= 12);
  }

  TEST_CASE("discovery: the first served version; 404 when the CRD is not installed") {
    auto& pki = testkube::pki();
    test::ApiServer api(pki);
    api.serve("v1", "Node", "nodes", false);
    api.serve("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", true);
    auto client = testkube::client(api);
    CHECK(*client->discover(*kube::resource_for({"", "Node"})) == "v1");
    CHECK(*client->discover(*kube::resource_for({"kueue.x-k8s.io", "LocalQueue"})) == "v1beta2");
    api.serve("kueue.x-k8s.io/v1beta1", "LocalQueue", "localqueues", true);
    CHECK(*client->discover(*kube::resource_for({"kueue.x-k8s.io", "LocalQueue"})) == "v1beta1");
    auto absent = client->discover(*kube::resource_for({"scheduling.volcano.sh", "Queue"}));
    REQUIRE_FALSE(absent);
    CHECK(absent.error().status == 404);
    CHECK(absent.error().message.find("is the CRD installed?") != std::string::npos);
    // Core resources the recorded /api/v1 document lists but the double does not serve are absent.
    auto pods = client->discover(*kube::resource_for({"", "Pod"}));
    CHECK((!pods && pods.error().status == 404));
  }

  TEST_CASE("server version: GET /version as major.minor (a managed cluster's '+', else gitVersion); errors when absent") {
    using kube::parse_server_version;
    using engine::json;
    CHECK(parse_server_version({{"major", "1"}, {"minor", "34"}, {"gitVersion", "v1.34.2"}}) == "1.34");
    CHECK(parse_server_version({{"major", "1"}, {"minor", "33+"}, {"gitVersion", "v1.33.5-eks-113cf36"}}) == "1.33");
    CHECK(parse_server_version({{"major", ""}, {"minor", ""}, {"gitVersion", "v1.35.0-gke.1"}}) == "1.35");
    CHECK(parse_server_version({{"gitVersion", "v1.36.1+k3s1"}}) == "1.36");
    CHECK_FALSE(parse_server_version({{"major", "one"}, {"minor", "x"}}));
    CHECK_FALSE(parse_server_version({{"gitVersion", "devel"}}));
    CHECK_FALSE(parse_server_version(json::array()));

    test::ApiServer api(testkube::pki());
    auto client = testkube::client(api);
    auto none = client->server_version();
    REQUIRE_FALSE(none);
    CHECK(none.error().status == 404);
    api.set_version({{"major", "1"}, {"minor", "35"}, {"gitVersion", "v1.35.3"}});
    CHECK(*client->server_version() == "1.35");
    api.set_version({{"major", "x"}});
    auto odd = client->server_version();
    REQUIRE_FALSE(odd);
    CHECK(odd.error().message.find("no Kubernetes version") != std::string::npos);
  }

  TEST_CASE("paged lists: limit/continue, one resourceVersion, apiVersion and kind filled in; 410 on an expired continue") {
    test::ApiServer api(testkube::pki());
    api.serve("v1", "Node", "nodes", false);
    for (int i = 0; i < 7; ++i) api.put(testkube::node("gpu-" + std::to_string(i)));
    const auto rv = std::to_string(api.resource_version());
    auto client = testkube::client(api);
    const auto nodes = *kube::resource_for({"", "Node"});
    auto page = client->list(nodes, "v1", "", 3, "");
    REQUIRE_MESSAGE(page.has_value(), page.error().message);
    CHECK(page->items.size() == 3);
    CHECK(page->resource_version == rv);
    CHECK_FALSE(page->continue_token.empty());
    for (const auto& item : page->items) {
      CHECK(item["apiVersion"] == "v1");
      CHECK(item["kind"] == "Node");
    }
    api.expire_continue_tokens();
    auto expired = client->list(nodes, "v1", "", 3, page->continue_token);
    REQUIRE_FALSE(expired);
    CHECK(expired.error().status == 410);
    CHECK(expired.error().reason == "Expired");
    auto all = client->list_all(nodes, "v1", "", 3);
    REQUIRE_MESSAGE(all.has_value(), all.error().message);
    CHECK(all->items.size() == 7);
    CHECK(all->resource_version == rv);
    CHECK(all->continue_token.empty());
    int list_requests = 0;
    for (const auto& r : api.requests())
      if (r.path == "/api/v1/nodes" && !r.watch) ++list_requests;
    CHECK(list_requests == 5);  // 3 + 3 + 1 pages, the expired page, the first page
  }

  TEST_CASE("watch: events in order, split across chunks, bookmarks, ERROR 410, an oversized event") {
    test::ApiServer api(testkube::pki());
    api.serve("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false);
    api.put(testkube::priority_class("low", 10));
    const auto from = std::to_string(api.resource_version());
    api.set_split_events(true);
    auto client = testkube::client(api);
    const auto pcs = *kube::resource_for({"scheduling.k8s.io", "PriorityClass"});
    std::vector<std::pair<std::string, std::string>> seen;  // type, resourceVersion
    auto fut = std::async(std::launch::async, [&] {
      return client->watch(pcs, "v1", from, 30, [&](kube::WatchEvent&& ev) {
        seen.emplace_back(ev.type, ev.object["metadata"].value("resourceVersion", ""));
        if (ev.type != "BOOKMARK") CHECK(ev.object["kind"] == "PriorityClass");
        return seen.size() < 4;
      });
    });
    REQUIRE(api.wait_for_watches(1));
    const auto a = api.put(testkube::priority_class("high", 1000));
    const auto b = api.put(testkube::priority_class("high", 2000));
    api.bookmark();
    const auto c = api.remove("scheduling.k8s.io/v1", "PriorityClass", "", "low");
    REQUIRE(fut.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    auto r = fut.get();
    CHECK_MESSAGE(r.has_value(), r.error().message);
    REQUIRE(seen.size() == 4);
    CHECK(seen[0] == std::pair<std::string, std::string>{"ADDED", std::to_string(a)});
    CHECK(seen[1] == std::pair<std::string, std::string>{"MODIFIED", std::to_string(b)});
    CHECK(seen[2] == std::pair<std::string, std::string>{"BOOKMARK", std::to_string(b)});
    CHECK(seen[3] == std::pair<std::string, std::string>{"DELETED", std::to_string(c)});

    api.compact();
    auto gone = client->watch(pcs, "v1", from, 30, [](kube::WatchEvent&&) { return true; });
    REQUIRE_FALSE(gone);
    CHECK(gone.error().status == 410);
    CHECK(gone.error().reason == "Expired");
    CHECK(gone.error().message.find("too old resource version") != std::string::npos);

    kube::ClientOptions small;
    small.max_event_bytes = 200;
    auto tight = testkube::client(api, small);
    const auto from2 = std::to_string(api.resource_version());
    auto fut2 = std::async(std::launch::async, [&] {
      return tight->watch(pcs, "v1", from2, 30, [](kube::WatchEvent&&) { return true; });
    });
    json big = testkube::priority_class("big", 1);
    big["description"] = std::string(1000, 'x');
    api.put(big);
    REQUIRE(fut2.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    auto r2 = fut2.get();
    REQUIRE_FALSE(r2);
    CHECK(r2.error().reason == "TooLarge");
  }

  TEST_CASE("a dropped watch resumes from the last resourceVersion: no event lost or doubled") {
    test::ApiServer api(testkube::pki());
    api.serve("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false);
    auto client = testkube::client(api);
    const auto pcs = *kube::resource_for({"scheduling.k8s.io", "PriorityClass"});
    std::vector<uint64_t> rvs;
    std::string last = std::to_string(api.resource_version());
    std::mutex mu;
    auto watch_once = [&] {
      return std::async(std::launch::async, [&] {
        return client->watch(pcs, "v1", last, 30, [&](kube::WatchEvent&& ev) {
          std::lock_guard lock(mu);
          last = ev.object["metadata"].value("resourceVersion", "");
          rvs.push_back(std::stoull(last));
          return true;
        });
      });
    };
    auto f1 = watch_once();
    REQUIRE(api.wait_for_watches(1));
    std::vector<uint64_t> want;
    for (int i = 0; i < 3; ++i) want.push_back(api.put(testkube::priority_class("pc-" + std::to_string(i), i)));
    REQUIRE(test::wait_until([&] { std::lock_guard lock(mu); return rvs.size() == 3; }));
    api.drop_watches();
    REQUIRE(f1.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    auto r1 = f1.get();
    CHECK_FALSE(r1.has_value());  // a broken stream is an error (the cache then backs off)
    for (int i = 3; i < 6; ++i) want.push_back(api.put(testkube::priority_class("pc-" + std::to_string(i), i)));  // while disconnected
    auto f2 = watch_once();
    REQUIRE(test::wait_until([&] { std::lock_guard lock(mu); return rvs.size() == 6; }));
    api.end_watches();
    REQUIRE(f2.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK(f2.get().has_value());  // a clean end is success
    CHECK(rvs == want);
  }

  TEST_CASE("credentials: 401 and 403 messages, client certificates, TLS verification, tls-server-name") {
    auto& pki = testkube::pki();
    test::ApiServer api(pki);
    api.serve("v1", "Node", "nodes", false);
    const auto nodes = *kube::resource_for({"", "Node"});
    auto cfg = api.config();
    cfg.token = "wrong";
    auto bad = testkube::client_for(cfg);
    auto r = bad->list(nodes, "v1", "", 10, "");
    REQUIRE_FALSE(r);
    CHECK(r.error().status == 401);
    CHECK(r.error().message.find("HTTP 401 Unauthorized") != std::string::npos);
    CHECK(r.error().message.find("rejected the credentials (bearer token from test)") != std::string::npos);

    api.forbid("nodes");
    auto forbidden = testkube::client(api)->list(nodes, "v1", "", 10, "");
    REQUIRE_FALSE(forbidden);
    CHECK(forbidden.error().status == 403);
    CHECK(forbidden.error().reason == "Forbidden");
    CHECK(forbidden.error().message.find("cannot list resource \"nodes\" in API group \"\" at the cluster scope") != std::string::npos);
    CHECK(forbidden.error().message.find("grant get, list and watch") != std::string::npos);

    auto cert_cfg = api.config();
    cert_cfg.token.clear();
    cert_cfg.client_cert_pem = pki.client_cert_pem;
    cert_cfg.client_key_pem = pki.client_key_pem;
    CHECK(testkube::client_for(cert_cfg)->discover(nodes).has_value());

    auto other_ca = api.config();
    other_ca.ca_pem = pki.client_cert_pem;  // not the CA that signed the server
    auto untrusted = testkube::client_for(other_ca)->discover(nodes);
    REQUIRE_FALSE(untrusted);
    CHECK(untrusted.error().status == 0);
    auto insecure = other_ca;
    insecure.insecure_skip_tls_verify = true;
    CHECK(testkube::client_for(insecure)->discover(nodes).has_value());

    auto named = api.config();
    named.tls_server_name = "kubernetes.default.svc";
    CHECK(testkube::client_for(named)->discover(nodes).has_value());
    named.tls_server_name = "api.example.com";
    CHECK_FALSE(testkube::client_for(named)->discover(nodes).has_value());
  }

  TEST_CASE("token rotation: the token file is re-read when it changes, and once after a 401") {
    test::TempDir dir;
    test::ApiServer api(testkube::pki(), "token-1");
    api.serve("v1", "Node", "nodes", false);
    const auto nodes = *kube::resource_for({"", "Node"});
    const fs::path token = dir.path() / "token";
    test::write_file(token, "token-1\n");
    auto cfg = api.config();
    cfg.token.clear();
    cfg.token_file = token.string();
    auto client = testkube::client_for(cfg);
    CHECK(client->discover(nodes).has_value());
    api.set_token("token-22");
    test::write_file(token, "token-22\n");  // size changes
    CHECK(client->discover(nodes).has_value());
    // Same size and the old mtime: only the 401 tells the client to read the file again.
    const auto mtime = fs::last_write_time(token);
    api.set_token("token-33");
    test::write_file(token, "token-33\n");
    fs::last_write_time(token, mtime);
    auto r = client->discover(nodes);
    CHECK_MESSAGE(r.has_value(), r.error().message);
  }

  TEST_CASE("stop() ends a blocked watch promptly, and later calls fail at once") {
    test::ApiServer api(testkube::pki());
    api.serve("v1", "Node", "nodes", false);
    auto client = testkube::client(api);
    const auto nodes = *kube::resource_for({"", "Node"});
    auto fut = std::async(std::launch::async, [&] {
      return client->watch(nodes, "v1", std::to_string(api.resource_version()), 300, [](kube::WatchEvent&&) { return true; });
    });
    REQUIRE(api.wait_for_watches(1));
    const auto t0 = std::chrono::steady_clock::now();
    client->stop();
    REQUIRE(fut.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    CHECK(ms < 2000);
    auto r = fut.get();
    REQUIRE_FALSE(r);
    CHECK(r.error().reason == "Stopped");
    auto later = client->list(nodes, "v1", "", 10, "");
    REQUIRE_FALSE(later);
    CHECK(later.error().reason == "Stopped");
  }

  TEST_CASE("stop() also ends a call stuck in the TLS handshake (a server that accepts and never answers)") {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 4) == 0);  // the kernel completes the TCP handshake; nobody speaks TLS
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    kube::ClusterConfig cfg;
    cfg.server = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    cfg.ca_pem = testkube::pki().ca_pem;
    cfg.token = "t";
    auto client = testkube::client_for(cfg);
    const auto nodes = *kube::resource_for({"", "Node"});
    std::atomic<bool> started{false};
    auto fut = std::async(std::launch::async, [&] {
      started = true;
      return client->watch(nodes, "v1", "1", 300, [](kube::WatchEvent&&) { return true; });
    });
    REQUIRE(test::wait_until([&] { return started.load(); }));
    // The watch is connecting or in the handshake (bounded only by its long read timeout).
    CHECK(fut.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
    const auto t0 = std::chrono::steady_clock::now();
    client->stop();
    REQUIRE(fut.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
    auto r = fut.get();
    REQUIRE_FALSE(r);
    CHECK(r.error().reason == "Stopped");
    ::close(fd);
  }
}
