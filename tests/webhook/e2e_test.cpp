// gpuguard serve end to end: real TLS on 127.0.0.1 (port 0), a certificate authority made in the
// test, curl as the client, python3-jsonpatch as an independent RFC 6902 implementation.

#include <doctest/doctest.h>

#include <set>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/json.h"
#include "tests/support/support.h"
#include "tests/webhook/fixture.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

using namespace gpuguard::test::e2e;

TEST_SUITE("webhook") {

TEST_CASE("validate and mutate over TLS; the patch, applied by python3-jsonpatch, gives the fixed pod") {
  if (!have_tools()) {
    test::skip("curl, openssl or python3-jsonpatch missing (make test installs them)");
    return;
  }
  Webhook wh;
  auto bad = wh.write("bad.json", review_of(gpu_pod(false)).dump());
  auto [code, body] = wh.curl("/validate?timeout=10s", bad.string());
  REQUIRE(code == 200);
  json v = json::parse(body);
  CHECK(v["response"]["uid"] == json("7f0c3f4e-0000-4000-8000-000000000001"));
  CHECK(v["response"]["allowed"] == json(false));
  CHECK(v["response"]["status"]["code"] == json(403));

  auto [mcode, mbody] = wh.curl("/mutate?timeout=10s", bad.string());
  REQUIRE(mcode == 200);
  auto response_file = wh.write("mutate-response.json", mbody);
  auto object_file = wh.write("object.json", gpu_pod(false).dump());
  auto applied = test::run_command({kPython, client_py().string(), "apply-patch", object_file.string(), response_file.string()});
  REQUIRE_MESSAGE(applied.exit_code == 0, applied.err);
  json expected = gpu_pod(false);
  expected["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpu", 2}};
  CHECK(json::parse(applied.out) == expected);
  // The mutated pod validates, and mutating it again changes nothing.
  auto fixed = wh.write("fixed.json", review_of(expected).dump());
  CHECK(json::parse(wh.curl("/validate", fixed.string()).second)["response"]["allowed"] == json(true));
  CHECK_FALSE(json::parse(wh.curl("/mutate", fixed.string()).second)["response"].contains("patch"));

  // The same patch as `gpuguard mutate --patch` gives offline.
  auto manifest = wh.write("pod.json", gpu_pod(false).dump());
  auto offline = test::run({"mutate", "--no-config", "--patch", manifest.string()});
  REQUIRE(offline.exit_code == 0);
  json offline_patch = json::parse(offline.out)["patch"];
  auto online = test::run_command({kPython, "-c",
                                   "import json,base64,sys; print(base64.b64decode(json.load(open(sys.argv[1]))['response']['patch']).decode())",
                                   response_file.string()});
  CHECK(json::parse(online.out) == offline_patch);
}

TEST_CASE("the recorded AdmissionReviews over TLS: 200, the same uid, the version asked") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  auto shared = test::shared_dir();
  if (!shared) {
    test::skip("../shared/corpus is not on this machine");
    return;
  }
  Webhook wh;
  for (const char* name : {"kubewarden_kwctl__tests__data__privileged-pod-admission-review.json",
                           "linkerd_linkerd2__controller__proxy-injector__fake__data__inject-enabled-request.json",
                           "kubewarden_policies__policies__echo__test_data__update_accept.json",
                           "kubewarden_policies__policies__pod-runtime-class-policy__test_data__PodDeleteRequest.json"}) {
    CAPTURE(name);
    json doc = json::parse(test::read_file(*shared / "corpus" / "admission" / name));
    if (!doc.contains("request")) doc = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", doc}};
    auto f = wh.write("review.json", doc.dump());
    for (const char* ep : {"/validate", "/mutate"}) {
      auto [code, body] = wh.curl(ep, f.string());
      REQUIRE(code == 200);
      json r = json::parse(body);
      CHECK(r["apiVersion"] == doc["apiVersion"]);
      CHECK(r["kind"] == json("AdmissionReview"));
      CHECK(r["response"]["uid"] == doc["request"]["uid"]);
    }
  }
}

TEST_CASE("health, readiness and metrics") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  Webhook wh;
  CHECK(wh.curl("/healthz").first == 200);
  CHECK(wh.curl("/readyz").first == 200);
  auto f = wh.write("r.json", review_of(gpu_pod(false)).dump());
  wh.curl("/validate", f.string());
  auto [code, metrics] = wh.curl("/metrics");
  CHECK(code == 200);
  CHECK(metrics.find("gpuguard_admission_requests_total{webhook=\"validate\",operation=\"CREATE\",kind=\"Pod\",decision=\"denied\"} 1") != std::string::npos);
  CHECK(metrics.find("gpuguard_rule_findings_total{rule=\"gpu-request-limit-mismatch\",severity=\"error\",mode=\"enforce\"} 1") != std::string::npos);
  CHECK(metrics.find("gpuguard_admission_duration_seconds_count{webhook=\"validate\"} 1") != std::string::npos);
  CHECK(metrics.find("gpuguard_certificate_expiry_timestamp_seconds ") != std::string::npos);
  // TLS 1.1 and older are refused.
  CHECK(wh.curl("/healthz", "", {"--tls-max", "1.1"}).first < 0);
  // The server runs without transparent huge pages (they would round its resident memory up; the
  // linter keeps them). /proc shows the setting since Linux 5.0.
  std::ifstream status("/proc/" + std::to_string(wh.proc->pid()) + "/status");
  std::string line, thp;
  while (std::getline(status, line))
    if (line.rfind("THP_enabled:", 0) == 0) thp = line.substr(line.find_first_not_of(" \t", 12));
  if (thp.empty()) MESSAGE("this kernel does not show THP_enabled");
  else CHECK(thp == "0");
}

TEST_CASE("malformed input: each gets a correct answer and the server stays up") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  Webhook wh;
  const std::string good = review_of(gpu_pod(true)).dump();
  auto truncated = wh.write("truncated.json", good.substr(0, good.size() / 2));
  CHECK(wh.curl("/validate", truncated.string()).first == 400);
  auto wrong = wh.write("wrong.json", R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}})");
  auto [wcode, wbody] = wh.curl("/validate", wrong.string());
  CHECK(wcode == 400);
  CHECK(wbody.find("request.uid") != std::string::npos);
  // 20 MiB: refused before it is read (413, with the reason).
  auto big = wh.write("big.json", std::string(20u << 20, ' ') + good);
  auto [bcode, bbody] = wh.curl("/validate", big.string());
  CHECK(bcode == 413);
  CHECK(bbody.find("over the limit") != std::string::npos);
  // A chunked body has no length to check before it is read: refused.
  auto ok = wh.write("ok.json", good);
  CHECK(wh.curl("/validate", ok.string(), {"-H", "Transfer-Encoding: chunked"}).first == 411);
  // So are chunked bodies of other methods, and compressed bodies, which would be inflated in memory
  // before their size is known.
  for (const char* method : {"PUT", "PATCH", "DELETE"})
    CHECK(wh.curl("/validate", ok.string(), {"-X", method, "-H", "Transfer-Encoding: chunked"}).first == 411);
  auto gz = test::run_command({"sh", "-c", "gzip -c '" + ok.string() + "' > '" + ok.string() + ".gz'"});
  REQUIRE(gz.exit_code == 0);
  auto [zcode, zbody] = wh.curl("/validate", ok.string() + ".gz", {"-H", "Content-Encoding: gzip"});
  CHECK(zcode == 415);
  CHECK(zbody.find("Content-Encoding") != std::string::npos);
  CHECK(wh.curl("/validate", ok.string(), {"-H", "Content-Encoding: identity"}).first == 200);
  CHECK(wh.curl("/validate", ok.string(), {"-H", "Content-Encoding: Identity"}).first == 200);  // codings ignore case
  // A client that asks before it sends (Expect: 100-continue) gets the refusal instead of a
  // 100 Continue that would invite the body.
  auto asked = test::run_command({"sh", "-c", "head -c 1000000 /dev/zero | curl -sS -v --max-time 10 --cacert '" + wh.ca() +
                                                  "' -o /dev/null -w '%{http_code}' -X PUT -T - -H 'Expect: 100-continue' "
                                                  "-H 'Transfer-Encoding: chunked' " + wh.url("/validate") + " 2>&1"});
  CHECK(asked.out.find("HTTP/1.1 411") != std::string::npos);
  CHECK(asked.out.find("HTTP/1.1 100") == std::string::npos);
  CHECK(wh.metric(R"(gpuguard_admission_invalid_requests_total{reason="encoded"})") == 1);
  // Wrong content type, unknown paths and methods.
  CHECK(wh.curl("/validate", ok.string(), {}, "text/plain").first == 400);
  CHECK(wh.curl("/nope", ok.string()).first == 404);
  CHECK(wh.curl("/validate").first == 404);
  // HTTP/1.0, TLS garbage and bytes that are not TLS at all.
  auto h10 = test::run_command({kPython, client_py().string(), "http10", "127.0.0.1", std::to_string(wh.port), wh.ca(), ok.string()});
  CHECK(h10.out.rfind("HTTP/1.1 200", 0) == 0);  // a server answers with the highest version it speaks (RFC 9110 §6.2)
  CHECK(h10.out.find("\"allowed\":true") != std::string::npos);
  test::run_command({kPython, client_py().string(), "tls-garbage", "127.0.0.1", std::to_string(wh.port), wh.ca()});
  test::run_command({kPython, client_py().string(), "garbage", "127.0.0.1", std::to_string(wh.port)});
  // Still up and correct.
  auto [code, body] = wh.curl("/validate", ok.string());
  CHECK(code == 200);
  CHECK(json::parse(body)["response"]["allowed"] == json(true));
}

TEST_CASE("200 slow clients holding connections do not keep a real request waiting") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  Webhook wh;
  const fs::path go = wh.dir.path() / "release";
  test::Process hold({kPython, client_py().string(), "hold", "127.0.0.1", std::to_string(wh.port), "200", go.string()}, wh.dir.path(), true);
  REQUIRE(hold.wait_for_log("holding 200"));
  auto ok = wh.write("ok.json", review_of(gpu_pod(true)).dump());
  // curl --max-time bounds the wait: the answer comes within 1 s from a fresh worker, not after
  // a slow client's read timeout.
  for (int i = 0; i < 3; ++i) {
    auto [code, body] = wh.curl("/validate", ok.string(), {"--max-time", "1"});
    CHECK(code == 200);
  }
  test::write_file(go, "");
  hold.wait_exit();
}

TEST_CASE("certificate rotation while a client loops: no failed request, the new certificate served") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  test::TempDir pki;
  make_pki(pki.path(), "server");
  make_pki(pki.path(), "rotated", "server-ca");  // same CA: clients keep trusting it
  make_pki(pki.path(), "other");                 // a new CA, for the last rotation
  SecretMount mount(pki.path(), pki.path() / "mount");
  mount.publish("server");

  Webhook wh({}, mount.cert(), mount.key());
  test::Process& proc = *wh.proc;
  const std::string bundle = (pki.path() / "bundle.crt").string();
  test::write_file(bundle, test::read_file(pki.path() / "server-ca.crt") + test::read_file(pki.path() / "other-ca.crt"));
  auto ok = wh.write("ok.json", review_of(gpu_pod(true)).dump());

  std::atomic<int> failures{0}, done{0};
  std::atomic<bool> stop{false};
  std::thread client([&] {
    while (!stop) {
      auto r = test::run_command({"curl", "-sS", "--max-time", "5", "--cacert", bundle, "-o", "/dev/null", "-w", "%{http_code}",
                                  "-H", "Content-Type: application/json", "--data-binary", "@" + ok.string(),
                                  "https://localhost:" + std::to_string(wh.port) + "/validate"});
      if (r.exit_code != 0 || r.out != "200") ++failures;
      ++done;
    }
  });
  auto wait_requests = [&](int n) {
    int target = done + n;
    for (int i = 0; i < 2000 && done < target; ++i) usleep(5000);
  };
  wait_requests(5);
  for (const char* name : {"rotated", "server", "other"}) {
    mount.publish(name);
    proc.signal(SIGHUP);
    REQUIRE(proc.wait_for_log("\"msg\":\"certificate loaded\"", 10000));
    wait_requests(5);
  }
  stop = true;
  client.join();
  CHECK(failures == 0);
  CHECK(done >= 20);
  // The last pair comes from the other CA: trusting only that CA now works.
  auto r = test::run_command({"curl", "-sS", "--max-time", "5", "--cacert", (pki.path() / "other-ca.crt").string(), "-o", "/dev/null",
                              "-w", "%{http_code}", "https://localhost:" + std::to_string(wh.port) + "/healthz"});
  CHECK(r.out == "200");
  proc.signal(SIGTERM);
  CHECK(proc.wait_exit() == 0);
}


TEST_CASE("SIGTERM during a request: the request completes, then the server exits 0") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  // A shutdown delay, as the chart sets: a connection accepted just before SIGTERM has its worker
  // reading the request by the time the listener closes (without one, cpp-httplib drops a
  // connection whose worker had not started reading yet).
  Webhook wh({"--shutdown-delay", "1"});
  auto ok = wh.write("ok.json", review_of(gpu_pod(false)).dump());
  const fs::path go = wh.dir.path() / "go";
  test::Process slow({kPython, client_py().string(), "slow-body", "127.0.0.1", std::to_string(wh.port), wh.ca(), ok.string(), go.string()},
                     wh.dir.path(), true);
  REQUIRE(slow.wait_for_log("half"));
  wh.proc->signal(SIGTERM);
  REQUIRE(wh.proc->wait_for_log("shutting down"));
  // Past the delay the listener is closed; the request in progress still completes.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  test::write_file(go, "");
  CHECK(slow.wait_exit() == 0);
  CHECK(slow.log().find("HTTP/1.1 200") != std::string::npos);
  CHECK(slow.log().find("\"allowed\":false") != std::string::npos);
  CHECK(wh.proc->wait_exit() == 0);
  CHECK(wh.proc->log().find("\"msg\":\"stopped\"") != std::string::npos);
}

TEST_CASE("--state: the admitted object is judged with the cluster, and the state reloads") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  test::TempDir state;
  std::string five;
  for (int i = 0; i < 5; ++i)
    five += "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pc" + std::to_string(i) + "}\nvalue: " +
            std::to_string(i) + "\n";
  test::write_file(state.path() / "pcs.yaml", five);
  Webhook wh({"--state", state.path().string()});
  CHECK(wh.curl("/readyz").first == 200);
  json sixth = {{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", "new"}}}, {"value", 9}};
  auto f = wh.write("pc.json", review_of(sixth).dump());
  json r = json::parse(wh.curl("/validate", f.string()).second);
  CHECK(r["response"]["allowed"] == json(true));
  REQUIRE(r["response"]["warnings"].size() == 1);
  CHECK(r["response"]["warnings"][0].get<std::string>().find("6 user PriorityClasses") != std::string::npos);
  // Two classes fewer in the state: the sixth is now the fourth, and fine.
  test::write_file(state.path() / "pcs.yaml",
                   "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\n---\n"
                   "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: b}\nvalue: 2\n");
  wh.proc->signal(SIGHUP);
  REQUIRE(wh.proc->wait_for_log("\"kept\":2"));
  r = json::parse(wh.curl("/validate", f.string()).second);
  CHECK_FALSE(r["response"].contains("warnings"));
  // A malformed state file keeps the last good state.
  test::write_file(state.path() / "broken.yaml", "a: [1\n");
  wh.proc->signal(SIGHUP);
  REQUIRE(wh.proc->wait_for_log("cannot load state"));
  CHECK(wh.metric("gpuguard_state_objects") == 2);
}

TEST_CASE("--state: a DRA pod is judged against the claim templates of the state (dra-reference-unknown)") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  test::TempDir state;
  const std::string cls =
      "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\n"
      "spec:\n  selectors: [{cel: {expression: \"device.driver == 'gpu.nvidia.com'\"}}]\n";
  const std::string tmpl =
      "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: one-gpu, namespace: ml}\n"
      "spec:\n  spec:\n    devices:\n      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]\n";
  test::write_file(state.path() / "dra.yaml", cls + tmpl);
  Webhook wh({"--state", state.path().string()});
  auto pod = [](const std::string& tmpl_name) {
    json claims = json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", tmpl_name}}});
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "serve"}, {"namespace", "ml"}}},
                {"spec",
                 {{"resourceClaims", claims},
                  {"containers", {{{"name", "vllm"}, {"image", "vllm/vllm-openai"}, {"resources", {{"claims", {{{"name", "gpu"}}}}}}}}}}}};
  };
  // The template is in the state: admitted.
  auto ok = wh.write("ok.json", review_of(pod("one-gpu")).dump());
  json r = json::parse(wh.curl("/validate", ok.string()).second);
  CHECK_MESSAGE(r["response"]["allowed"] == json(true), r.dump());
  // A template the namespace does not have: admitted (the template may be created a moment later:
  // Helm installs ResourceClaimTemplates after workloads) with a warning naming the rule and saying
  // the pod would stay Pending until it exists.
  auto missing = wh.write("missing.json", review_of(pod("two-gpus")).dump());
  r = json::parse(wh.curl("/validate", missing.string()).second);
  CHECK(r["response"]["allowed"] == json(true));
  REQUIRE_MESSAGE(r["response"].contains("warnings"), r.dump());
  const std::string msg = r["response"]["warnings"][0].get<std::string>();
  CHECK(msg.find("[dra-reference-unknown]") != std::string::npos);
  CHECK(msg.find("ResourceClaimTemplate ml/two-gpus") != std::string::npos);
  CHECK_MESSAGE(msg.find("stays Pending") != std::string::npos, msg);
  // Once the state holds that template too, the same pod is admitted without a warning.
  test::write_file(state.path() / "dra.yaml",
                   cls + tmpl + "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: two-gpus, namespace: ml}\n"
                                "spec:\n  spec:\n    devices:\n      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}]\n");
  wh.proc->signal(SIGHUP);
  REQUIRE(wh.proc->wait_for_log("\"kept\":3"));
  r = json::parse(wh.curl("/validate", missing.string()).second);
  CHECK_MESSAGE(r["response"]["allowed"] == json(true), r.dump());
  CHECK_MESSAGE(r.dump().find("[dra-reference-unknown]") == std::string::npos, r.dump());
}

TEST_CASE("--client-ca requires a client certificate; --metrics-addr moves health and metrics to plain HTTP") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  test::TempDir pki;
  make_pki(pki.path(), "client");
  Webhook wh({"--client-ca", (pki.path() / "client-ca.crt").string(), "--metrics-addr", "127.0.0.1:0"});
  CHECK(wh.curl("/healthz").first < 0);  // no client certificate: the handshake fails
  auto with_cert = wh.curl("/healthz", "", {"--cert", (pki.path() / "client.crt").string(), "--key", (pki.path() / "client.key").string()});
  CHECK(with_cert.first == 404);  // the TLS port no longer serves health
  REQUIRE(wh.metrics_port > 0);
  auto r = test::run_command({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:" + std::to_string(wh.metrics_port) + "/readyz"});
  CHECK(r.out == "200");
  // The plain server refuses chunked and compressed bodies too, before reading them.
  auto chunked = test::run_command({"sh", "-c", "head -c 100000 /dev/zero | curl -sS -o /dev/null -w '%{http_code}' -X PATCH -T - "
                                                "-H 'Transfer-Encoding: chunked' http://127.0.0.1:" +
                                                    std::to_string(wh.metrics_port) + "/metrics"});
  CHECK(chunked.out == "411");
  auto encoded = test::run_command({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "-H", "Content-Encoding: gzip",
                                    "--data-binary", "x", "http://127.0.0.1:" + std::to_string(wh.metrics_port) + "/metrics"});
  CHECK(encoded.out == "415");
}

TEST_CASE("TLS as sslscan sees it: TLS 1.2 and 1.3 only, AEAD ciphers with forward secrecy, nothing weak") {
  if (test::run_command({"sh", "-c", "command -v sslscan"}).exit_code != 0) {
    test::skip("sslscan is not installed (make test installs it)");
    return;
  }
  Webhook w;
  auto r = test::run_command({"timeout", "120", "sslscan", "--no-colour", "--xml=-", "127.0.0.1:" + std::to_string(w.port)});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string& xml = r.out;
  // The value of attribute `name` in one element's text.
  auto attr = [](const std::string& element, const std::string& name) {
    auto p = element.find(" " + name + "=\"");
    if (p == std::string::npos) return std::string();
    p += name.size() + 3;
    return element.substr(p, element.find('"', p) - p);
  };
  auto elements = [&](const std::string& tag) {
    std::vector<std::string> out;
    for (size_t p = xml.find("<" + tag + " "); p != std::string::npos; p = xml.find("<" + tag + " ", p + 1))
      out.push_back(xml.substr(p, xml.find('>', p) - p));
    return out;
  };
  std::set<std::string> enabled;
  for (const auto& e : elements("protocol"))
    if (attr(e, "enabled") == "1") enabled.insert(attr(e, "type") + " " + attr(e, "version"));
  CHECK(enabled == std::set<std::string>{"tls 1.2", "tls 1.3"});  // no SSLv2/v3, TLS 1.0 or 1.1
  const auto ciphers = elements("cipher");
  CHECK(ciphers.size() >= 3);
  for (const auto& c : ciphers) {
    const std::string name = attr(c, "cipher");
    CAPTURE(name);
    CHECK(std::stoi(attr(c, "bits")) >= 128);
    const bool forward_secret = name.rfind("TLS_", 0) == 0 || name.find("ECDHE-") == 0 || name.find("DHE-") == 0;
    CHECK(forward_secret);
    const bool aead = name.find("GCM") != std::string::npos || name.find("CHACHA20") != std::string::npos;
    CHECK(aead);
    for (const char* weak : {"RC4", "DES", "NULL", "EXP", "MD5", "anon", "CBC"}) CHECK(name.find(weak) == std::string::npos);
  }
  for (const auto& h : elements("heartbleed")) CHECK(attr(h, "vulnerable") == "0");
  for (const auto& g : elements("renegotiation")) CHECK((attr(g, "supported") == "0" || attr(g, "secure") == "1"));
  for (const auto& c : elements("compression")) CHECK(attr(c, "supported") != "1");
}

TEST_CASE("a config file that changes into one that does not load: counted, the last good one in force, /readyz says so") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  test::TempDir cfg;
  const fs::path file = cfg.path() / ".gpuguard.yaml";
  test::write_file(file, "rules:\n  gpu-toleration-missing: {enabled: false}\n");
  Webhook wh({"--config", file.string()});
  auto ready = [&] {
    auto [code, body] = wh.curl("/readyz");
    CHECK(code == 200);  // a bad file never takes a replica out of service
    return json::parse(body);
  };
  CHECK(ready()["config"]["matchesDisk"] == json(true));
  CHECK(wh.metric(R"(gpuguard_config_reloads_total{result="ok"})") == 1);
  CHECK(wh.metric("gpuguard_config_matches_disk") == 1);
  test::write_file(file, "rules:\n  no-such-rule: {enabled: false}\n");
  wh.proc->signal(SIGHUP);
  REQUIRE(wh.proc->wait_for_log("invalid config"));
  for (int i = 0; i < 100 && wh.metric(R"(gpuguard_config_reloads_total{result="error"})") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(wh.metric(R"(gpuguard_config_reloads_total{result="error"})") == 1);
  CHECK(wh.metric("gpuguard_config_matches_disk") == 0);
  json bad = ready();
  CHECK(bad["status"] == "ready");
  CHECK(bad["config"]["matchesDisk"] == json(false));
  CHECK(bad["config"]["error"].get<std::string>().find("no-such-rule") != std::string::npos);
  // The last good config is in force: gpu-toleration-missing stays off.
  auto f = wh.write("r.json", review_of(gpu_pod(true)).dump());
  CHECK(wh.curl("/validate", f.string()).second.find("gpu-toleration-missing") == std::string::npos);
  test::write_file(file, "rules:\n  gpu-toleration-missing: {enabled: false}\n");
  wh.proc->signal(SIGHUP);
  for (int i = 0; i < 100 && wh.metric(R"(gpuguard_config_reloads_total{result="ok"})") < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(ready()["config"]["matchesDisk"] == json(true));
  CHECK(wh.metric("gpuguard_config_matches_disk") == 1);
}

TEST_CASE("bad serve options and files fail fast with exit code 2") {
  test::TempDir dir;
  test::write_file(dir.path() / "not-a-cert.pem", "hello\n");
  auto r = test::run({"serve", "--listen", "127.0.0.1:0", "--tls-cert", (dir.path() / "not-a-cert.pem").string(), "--tls-key",
                      (dir.path() / "not-a-cert.pem").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("cannot load the serving certificate") != std::string::npos);
  CHECK(test::run({"serve", "--listen", "nonsense", "--tls-cert", "x", "--tls-key", "y"}).exit_code == 2);
  CHECK(test::run({"serve"}).exit_code == 2);
}

}  // TEST_SUITE
