// The AdmissionReview protocol without HTTP: decode, evaluate, encode.

#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "engine/evaluate.h"
#include "engine/json_parse.h"
#include "engine/state.h"
#include "rules/registry.h"
#include "tests/support/support.h"
#include "webhook/admission.h"
#include "webhook/metrics.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;
using webhook::Admission;
using webhook::Endpoint;
using webhook::Outcome;

namespace {

json gpu_pod(bool with_limit, const std::string& name = "train") {
  json res = with_limit ? json{{"limits", {{"nvidia.com/gpu", 1}}}} : json{{"requests", {{"nvidia.com/gpu", 1}}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
                    {"priorityClassName", "training"},
                    {"nodeSelector", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}},
                    {"containers", {{{"name", "c"}, {"image", "pytorch"}, {"resources", res}}}}}}};
}

json review(const json& object, const std::string& op = "CREATE", const std::string& version = "v1",
            const json& old_object = nullptr) {
  json req = {{"uid", "u-1"},
              {"kind", {{"group", ""}, {"version", "v1"}, {"kind", object.is_object() ? object.value("kind", "Pod") : "Pod"}}},
              {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
              {"operation", op},
              {"namespace", "ml"},
              {"userInfo", {{"username", "alice"}}}};
  if (!object.is_null()) req["object"] = object;
  if (!old_object.is_null()) req["oldObject"] = old_object;
  return {{"apiVersion", "admission.k8s.io/" + version}, {"kind", "AdmissionReview"}, {"request", req}};
}

struct Call {
  webhook::Answer answer;
  json body;
  Outcome outcome;
};

Call call(const Admission& a, Endpoint ep, const std::string& body, const std::shared_ptr<const engine::Inventory>& state = nullptr,
          const std::string& ct = "application/json") {
  Call c;
  c.answer = a.handle(ep, body, ct, state, c.outcome);
  c.body = json::parse(c.answer.body, nullptr, false);
  return c;
}

std::shared_ptr<const engine::Config> config(const std::string& yaml = "") {
  if (yaml.empty()) return std::make_shared<engine::Config>(engine::default_config(test::registry()));
  auto c = engine::load_config(yaml, ".gpuguard.yaml", test::registry());
  REQUIRE(c.has_value());
  return std::make_shared<engine::Config>(std::move(*c));
}

std::shared_ptr<const engine::Inventory> state_of(const std::string& yaml, const engine::Config& cfg) {
  test::TempDir dir;
  test::write_file(dir.path() / "state.yaml", yaml);
  auto s = engine::load_state({(dir.path() / "state.yaml").string()}, test::registry(), cfg);
  REQUIRE(s.diagnostics.empty());
  return s.inventory;
}

std::string pcs(int n, int from = 0) {
  std::string s;
  for (int i = from; i < from + n; ++i)
    s += "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pc" + std::to_string(i) + "}\nvalue: " +
         std::to_string(i) + "\n";
  return s;
}

json pc(const std::string& name) {
  return {{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", name}}}, {"value", 7}};
}

// JSON text with every object's keys in reverse order (the fast reader keeps the order as written;
// the API server writes Go's struct order, not nlohmann's sorted one), and optionally the top
// object's `kind` written twice (a key written twice goes through nlohmann: sorted order again).
std::string dump_reordered(const json& j, bool twice = false) {
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) out += (i ? "," : "") + dump_reordered(j[i]);
    return out + "]";
  }
  if (!j.is_object()) return j.dump();
  std::string out = "{";
  if (twice && j.contains("kind")) out += "\"kind\":" + j["kind"].dump() + ",";
  std::vector<std::string> members;
  for (const auto& [key, value] : j.items()) members.push_back(json(key).dump() + ":" + dump_reordered(value));
  for (size_t i = members.size(); i-- > 0;) out += members[i] + (i ? "," : "");
  return out + "}";
}

}  // namespace

TEST_SUITE("webhook") {

TEST_CASE("a clean pod is allowed; the answer echoes uid, apiVersion and kind") {
  Admission a(test::registry(), config());
  for (const char* version : {"v1", "v1beta1"}) {
    auto c = call(a, Endpoint::validate, review(gpu_pod(true), "CREATE", version).dump());
    CHECK(c.answer.status == 200);
    CHECK(c.body["apiVersion"] == json(std::string("admission.k8s.io/") + version));
    CHECK(c.body["kind"] == json("AdmissionReview"));
    CHECK(c.body["response"]["uid"] == json("u-1"));
    CHECK(c.body["response"]["allowed"] == json(true));
    CHECK_FALSE(c.body["response"].contains("patch"));
    CHECK(c.outcome.decision == "allowed");
  }
}

TEST_CASE("error findings deny with 403 and name rule and field") {
  Admission a(test::registry(), config());
  auto c = call(a, Endpoint::validate, review(gpu_pod(false)).dump());
  REQUIRE(c.answer.status == 200);
  const json& r = c.body["response"];
  CHECK(r["allowed"] == json(false));
  CHECK(r["status"]["code"] == json(403));
  std::string msg = r["status"]["message"];
  CHECK(msg.find("[gpu-request-limit-mismatch]") != std::string::npos);
  CHECK(msg.find("spec.containers[0].resources.requests[nvidia.com/gpu]: ") != std::string::npos);
  CHECK_FALSE(r.contains("patch"));  // a validating answer never carries a patch
  CHECK(c.outcome.decision == "denied");
}

TEST_CASE("enforcement modes: warn turns errors into warnings, audit only counts") {
  {
    Admission a(test::registry(), config("rules: {gpu-request-limit-mismatch: {mode: warn}}\n"));
    auto c = call(a, Endpoint::validate, review(gpu_pod(false)).dump());
    CHECK(c.body["response"]["allowed"] == json(true));
    REQUIRE(c.body["response"]["warnings"].size() == 1);
    std::string w = c.body["response"]["warnings"][0];
    CHECK(w.size() <= 256);
    CHECK(w.rfind("spec.containers[0].resources.requests[nvidia.com/gpu]: ", 0) == 0);
    CHECK(c.outcome.decision == "warned");
  }
  {
    Admission a(test::registry(), config("rules: {gpu-request-limit-mismatch: {mode: audit}}\n"));
    auto c = call(a, Endpoint::validate, review(gpu_pod(false)).dump());
    CHECK(c.body["response"]["allowed"] == json(true));
    CHECK_FALSE(c.body["response"].contains("warnings"));
    CHECK(c.outcome.findings.size() == 1);  // still logged and counted
  }
}

TEST_CASE("warnings are bounded in count and length, as the API server truncates") {
  json pod = gpu_pod(false);
  auto& containers = pod["spec"]["containers"];
  for (int i = 1; i < 60; ++i) {
    json c = containers[0];
    c["name"] = "container-with-a-rather-long-name-" + std::to_string(i) + std::string(100, 'x');
    containers.push_back(c);
  }
  Admission a(test::registry(), config("rules: {gpu-request-limit-mismatch: {mode: warn}}\n"));
  auto c = call(a, Endpoint::validate, review(pod).dump());
  const json& w = c.body["response"]["warnings"];
  REQUIRE(w.is_array());
  CHECK(w.size() <= 30);
  size_t total = 0;
  for (const auto& x : w) {
    CHECK(x.get<std::string>().size() <= 256);
    total += x.get<std::string>().size();
  }
  CHECK(total <= 4096);
  CHECK(w.back().get<std::string>().find("more gpuguard warnings") != std::string::npos);
}

TEST_CASE("UPDATE: only new findings by default, all with onUpdate: all") {
  json old_pod = gpu_pod(false);
  json new_pod = gpu_pod(false);
  new_pod["metadata"]["labels"] = {{"x", "y"}};
  {
    Admission a(test::registry(), config());
    auto c = call(a, Endpoint::validate, review(new_pod, "UPDATE", "v1", old_pod).dump());
    CHECK(c.body["response"]["allowed"] == json(true));
  }
  {
    Admission a(test::registry(), config("webhook: {onUpdate: all}\n"));
    auto c = call(a, Endpoint::validate, review(new_pod, "UPDATE", "v1", old_pod).dump());
    CHECK(c.body["response"]["allowed"] == json(false));
  }
  {
    Admission a(test::registry(), config());
    auto c = call(a, Endpoint::validate, review(gpu_pod(false), "UPDATE", "v1", gpu_pod(true)).dump());
    CHECK(c.body["response"]["allowed"] == json(false));  // the update introduces the defect
  }
}

TEST_CASE("DELETE, CONNECT and subresources are allowed without evaluation") {
  Admission a(test::registry(), config());
  auto del = call(a, Endpoint::validate, review(nullptr, "DELETE", "v1", gpu_pod(false)).dump());
  CHECK(del.body["response"]["allowed"] == json(true));
  json exec = review(json{{"apiVersion", "v1"}, {"kind", "PodExecOptions"}, {"command", {"sh"}}}, "CONNECT");
  exec["request"]["subResource"] = "exec";
  CHECK(call(a, Endpoint::validate, exec.dump()).body["response"]["allowed"] == json(true));
  json scale = review(json{{"apiVersion", "autoscaling/v1"}, {"kind", "Scale"}, {"spec", {{"replicas", 3}}}}, "UPDATE", "v1",
                      json{{"apiVersion", "autoscaling/v1"}, {"kind", "Scale"}});
  scale["request"]["subResource"] = "scale";
  auto s = call(a, Endpoint::validate, scale.dump());
  CHECK(s.body["response"]["allowed"] == json(true));
  CHECK(s.outcome.decision == "skipped");
  auto m = call(a, Endpoint::mutate, review(nullptr, "DELETE", "v1", gpu_pod(false)).dump());
  CHECK_FALSE(m.body["response"].contains("patch"));
}

TEST_CASE("dryRun requests get the same answer") {
  Admission a(test::registry(), config());
  json r = review(gpu_pod(false));
  r["request"]["dryRun"] = true;
  auto c = call(a, Endpoint::validate, r.dump());
  CHECK(c.body["response"]["allowed"] == json(false));
  CHECK(c.outcome.dry_run);
}

TEST_CASE("the cluster state: a sixth PriorityClass warns, the count is over the state plus the object") {
  auto cfg = config();
  Admission a(test::registry(), cfg);
  auto state = state_of(pcs(5), *cfg);
  auto c = call(a, Endpoint::validate, review(pc("pc-new")).dump(), state);
  CHECK(c.body["response"]["allowed"] == json(true));
  REQUIRE(c.body["response"]["warnings"].size() == 1);
  CHECK(c.body["response"]["warnings"][0].get<std::string>().find("6 user PriorityClasses") != std::string::npos);
  // Replacing one of the five (UPDATE) keeps five.
  auto u = call(a, Endpoint::validate, review(pc("pc1"), "UPDATE", "v1", pc("pc1")).dump(), state);
  CHECK_FALSE(u.body["response"].contains("warnings"));
  // Without state, the rule does not speak.
  CHECK_FALSE(call(a, Endpoint::validate, review(pc("pc-new")).dump()).body["response"].contains("warnings"));
}

TEST_CASE("cross-object findings reach the webhook only on the object under review") {
  auto cfg = config();
  Admission a(test::registry(), cfg);
  // The GPU Operator's ClusterPolicy says the cluster has GPUs (gpu-alerts-missing speaks only then).
  auto state = state_of(pcs(5) + "---\napiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n", *cfg);
  auto rules_of = [](const Call& c) {
    std::set<std::string> out;
    for (const auto& f : c.outcome.findings) out.insert(f.rule);
    return out;
  };
  // gpu-alerts-missing speaks of the scope (no PrometheusRule) or of a PrometheusRule: not on a pod.
  json pod = gpu_pod(true);
  pod["spec"]["priorityClassName"] = "pc1";
  auto p = call(a, Endpoint::validate, review(pod).dump(), state);
  CHECK(rules_of(p).count("gpu-alerts-missing") == 0);
  // On a PrometheusRule under review it does, counting the alerts of that rule.
  const json prometheus_rule = {
      {"apiVersion", "monitoring.coreos.com/v1"},
      {"kind", "PrometheusRule"},
      {"metadata", {{"name", "gpu-alerts"}, {"namespace", "ml"}}},
      {"spec", {{"groups", {{{"name", "gpu"}, {"rules", {{{"alert", "GpuHot"}, {"expr", "DCGM_FI_DEV_GPU_TEMP > 85"}}}}}}}}}};
  auto message_of = [&](const Call& c) {
    for (const auto& f : c.outcome.findings)
      if (f.rule == "gpu-alerts-missing") return f.message;
    return std::string();
  };
  auto r = call(a, Endpoint::validate, review(prometheus_rule).dump(), state);
  CHECK(message_of(r).find("(1 of the seed's 3 core GPU alerts present)") != std::string::npos);
  // With that rule in the cluster state: still nothing on a pod (the finding would be the state's
  // rule's), and a second rule under review gets it, counting the alerts of both.
  auto with_rule = state_of(pcs(5) + "---\napiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n---\n" +
                                prometheus_rule.dump() + "\n",
                            *cfg);
  pod["spec"]["priorityClassName"] = "pc1";
  CHECK(rules_of(call(a, Endpoint::validate, review(pod).dump(), with_rule)).count("gpu-alerts-missing") == 0);
  json memory_rule = prometheus_rule;
  memory_rule["metadata"]["name"] = "memory-alerts";
  memory_rule["spec"]["groups"][0]["rules"][0] = {{"alert", "GpuMemoryHigh"},
                                                  {"expr", "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.9"}};
  CHECK(message_of(call(a, Endpoint::validate, review(memory_rule).dump(), with_rule)).find("(2 of the seed's 3 core GPU alerts present)") !=
        std::string::npos);
  // priority-class-unknown: a class the state lacks, and none named at all.
  pod["spec"]["priorityClassName"] = "training";
  CHECK(rules_of(call(a, Endpoint::validate, review(pod).dump(), state)).count("priority-class-unknown") == 1);
  pod["spec"].erase("priorityClassName");
  CHECK(rules_of(call(a, Endpoint::validate, review(pod).dump(), state)).count("priority-class-unknown") == 0);
}

TEST_CASE("a cluster state that is not whole (a broken watch) says so in a warning; the mutating webhook does not") {
  auto cfg = config();
  Admission a(test::registry(), cfg);
  auto loaded = state_of(pcs(5), *cfg);
  auto stale = std::make_shared<engine::Inventory>(engine::Inventory::layered(loaded));
  // The base is complete; a stale watch hands out an incomplete layer with a note.
  auto incomplete = std::make_shared<engine::Inventory>(engine::kinds_read(test::registry(), *cfg));
  incomplete->set_note("the watch of PriorityClass.scheduling.k8s.io has failed since 2026-12-03T10:00:00Z; checks that need the whole cluster were skipped");
  auto c = call(a, Endpoint::validate, review(pc("pc-new")).dump(), incomplete);
  CHECK(c.body["response"]["allowed"] == json(true));
  REQUIRE(c.body["response"].contains("warnings"));
  CHECK(c.body["response"]["warnings"][0].get<std::string>().rfind("gpuguard: the watch of PriorityClass", 0) == 0);
  CHECK(call(a, Endpoint::mutate, review(gpu_pod(false)).dump(), incomplete).body["response"].value("warnings", json::array()).empty());
  // A complete state says nothing of the sort, note or not.
  stale->set_note("ignored while complete");
  auto ok = call(a, Endpoint::validate, review(pc("pc1"), "UPDATE", "v1", pc("pc1")).dump(), stale);
  CHECK_FALSE(ok.body["response"].contains("warnings"));
}

TEST_CASE("DELETE of an object an aggregate needs: allowed, with the new warning") {
  auto cfg = config();
  Admission a(test::registry(), cfg);
  auto state = state_of(pcs(3), *cfg);
  json del = review(nullptr, "DELETE", "v1", pc("pc2"));
  del["request"]["kind"]["kind"] = "PriorityClass";
  auto c = call(a, Endpoint::validate, del.dump(), state);
  CHECK(c.body["response"]["allowed"] == json(true));
  REQUIRE(c.body["response"]["warnings"].size() == 1);
  CHECK(c.body["response"]["warnings"][0].get<std::string>().find("only 2 user PriorityClasses") != std::string::npos);
  // Deleting one of six removes a problem rather than adding one.
  auto six = state_of(pcs(6), *cfg);
  CHECK_FALSE(call(a, Endpoint::validate, review(nullptr, "DELETE", "v1", pc("pc2")).dump(), six).body["response"].contains("warnings"));
}

TEST_CASE("an object without apiVersion and kind (taken from request.kind) keeps its name and namespace") {
  auto cfg = config("exclude:\n  - {kind: PriorityClass, name: 'legacy-.*', reason: kept}\n");
  Admission a(test::registry(), cfg);
  auto bare = [](json o) {
    o.erase("apiVersion");
    o.erase("kind");
    return o;
  };
  auto with_kind = [](json r) {
    r["request"]["kind"] = {{"group", "scheduling.k8s.io"}, {"version", "v1"}, {"kind", "PriorityClass"}};
    return r;
  };
  // Excluded by name either way (a value over 1e9 is refused otherwise).
  json legacy = pc("legacy-top");
  legacy["value"] = 2000000000;
  CHECK(call(a, Endpoint::validate, with_kind(review(legacy)).dump()).body["response"]["allowed"] == json(true));
  CHECK(call(a, Endpoint::validate, with_kind(review(bare(legacy))).dump()).body["response"]["allowed"] == json(true));
  // A DELETE removes the state's object by its name: one of three gone warns of two left.
  auto state = state_of(pcs(3), *cfg);
  json del = with_kind(review(nullptr, "DELETE", "v1", bare(pc("pc2"))));
  auto c = call(a, Endpoint::validate, del.dump(), state);
  REQUIRE(c.body["response"]["warnings"].size() == 1);
  CHECK(c.body["response"]["warnings"][0].get<std::string>().find("only 2 user PriorityClasses") != std::string::npos);
}

TEST_CASE("mutate: a base64 JSON Patch that fixes the pod, and nothing the second time") {
  Admission a(test::registry(), config());
  auto c = call(a, Endpoint::mutate, review(gpu_pod(false)).dump());
  const json& r = c.body["response"];
  CHECK(r["allowed"] == json(true));
  REQUIRE(r["patchType"] == json("JSONPatch"));
  std::string b64 = r["patch"];
  // Decode with the engine's loader-independent path: nlohmann + OpenSSL round trip.
  CHECK(b64 == webhook::base64_encode(
                   json::parse(R"([{"op":"add","path":"/spec/containers/0/resources/limits","value":{"nvidia.com/gpu":1}}])").dump()));
  json fixed = gpu_pod(false).patch(json::parse(R"([{"op":"add","path":"/spec/containers/0/resources/limits","value":{"nvidia.com/gpu":1}}])"));
  auto again = call(a, Endpoint::mutate, review(fixed).dump());
  CHECK_FALSE(again.body["response"].contains("patch"));
  CHECK(again.outcome.decision == "allowed");
}

TEST_CASE("mutate: Pods on CREATE only, templates only when configured, never mirror pods") {
  json deploy = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", {{"name", "d"}, {"namespace", "ml"}}},
                 {"spec", {{"template", {{"spec", gpu_pod(false)["spec"]}}}}}};
  {
    Admission a(test::registry(), config());
    CHECK_FALSE(call(a, Endpoint::mutate, review(deploy).dump()).body["response"].contains("patch"));
    CHECK_FALSE(call(a, Endpoint::mutate, review(gpu_pod(false), "UPDATE", "v1", gpu_pod(false)).dump()).body["response"].contains("patch"));
    json mirror = gpu_pod(false);
    mirror["metadata"]["annotations"] = {{"kubernetes.io/config.mirror", "abc"}};
    CHECK_FALSE(call(a, Endpoint::mutate, review(mirror).dump()).body["response"].contains("patch"));
  }
  {
    Admission a(test::registry(), config("webhook: {mutate: {templates: true, pods: false}}\n"));
    CHECK(call(a, Endpoint::mutate, review(deploy).dump()).body["response"].contains("patch"));
    CHECK_FALSE(call(a, Endpoint::mutate, review(gpu_pod(false)).dump()).body["response"].contains("patch"));
  }
}

TEST_CASE("malformed requests get 400 with a clear error") {
  Admission a(test::registry(), config());
  const std::string good = review(gpu_pod(true)).dump();
  struct Case {
    std::string body;
    std::string ct;
    std::string error;
  };
  std::vector<Case> cases = {
      {good.substr(0, good.size() / 2), "application/json", "not valid JSON"},
      {"", "application/json", "not valid JSON"},
      {"[]", "application/json", "not a JSON object"},
      {good, "text/plain", "Content-Type must be application/json"},
      {good, "text/\xff\xfe", "Content-Type must be application/json"},  // quoted in the error, as valid UTF-8
      {R"({"apiVersion":"admission.k8s.io/\u00ff\udbff"})", "application/json", "not valid JSON"},
      {"{\"apiVersion\":\"admission.k8s.io/\xff\"}", "application/json", "not valid JSON"},
      {R"({"apiVersion":"admission.k8s.io/v9\u00e9"})", "application/json", "apiVersion must be"},
      {std::string(600, '[') + std::string(600, ']'), "application/json", "nests deeper"},
      {R"({"apiVersion":"v1","kind":"Pod"})", "application/json", "apiVersion must be"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"Review"})", "application/json", "kind must be AdmissionReview"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "application/json", "request is missing"},
  };
  // Every field with a wrong type.
  auto mutated = [&](const std::function<void(json&)>& f) {
    json r = review(gpu_pod(true));
    f(r["request"]);
    return r.dump();
  };
  cases.push_back({mutated([](json& q) { q.erase("uid"); }), "application/json", "uid"});
  cases.push_back({mutated([](json& q) { q["uid"] = 5; }), "application/json", "uid"});
  cases.push_back({mutated([](json& q) { q["uid"] = ""; }), "application/json", "uid"});
  cases.push_back({mutated([](json& q) { q["operation"] = json::array(); }), "application/json", "operation"});
  cases.push_back({mutated([](json& q) { q["operation"] = "PATCH"; }), "application/json", "operation"});
  cases.push_back({mutated([](json& q) { q["object"] = "x"; }), "application/json", "request.object"});
  cases.push_back({mutated([](json& q) { q.erase("object"); }), "application/json", "request.object is missing"});
  cases.push_back({mutated([](json& q) { q["oldObject"] = 3; }), "application/json", "request.oldObject"});
  cases.push_back({mutated([](json& q) { q["dryRun"] = "yes"; }), "application/json", "dryRun"});
  cases.push_back({mutated([](json& q) { q["namespace"] = json::object(); }), "application/json", "namespace"});
  cases.push_back({mutated([](json& q) { q["kind"] = 3; }), "application/json", "request.kind"});
  cases.push_back({mutated([](json& q) { q["userInfo"] = json::array(); }), "application/json", "userInfo"});
  cases.push_back({mutated([](json& q) { q["subResource"] = 1; }), "application/json", "subResource"});
  for (const auto& c : cases) {
    CAPTURE(c.error);
    for (Endpoint ep : {Endpoint::validate, Endpoint::mutate}) {
      auto r = call(a, ep, c.body, nullptr, c.ct);
      CHECK(r.answer.status == 400);
      REQUIRE(r.body.is_object());
      CHECK_MESSAGE(r.body["error"].get<std::string>().find(c.error) != std::string::npos, r.body.dump());
    }
  }
  json upd = review(gpu_pod(true), "UPDATE");
  CHECK(call(a, Endpoint::validate, upd.dump()).answer.status == 400);  // UPDATE without oldObject
  CHECK(call(a, Endpoint::validate, good, nullptr, "application/json; charset=utf-8").answer.status == 200);
}

TEST_CASE("metrics series: labels in order, values escaped for the exposition format") {
  webhook::Metrics m;
  const std::vector<webhook::Metrics::FindingLabels> findings = {
      {"gpu-request-limit-mismatch", "error", "enforce"},
      {"gpu-request-limit-mismatch", "error", "enforce"},
      {"odd\"rule\\with\nescapes", "warning", "audit"},
      {"gpu-request-limit-mismatch", "error", "audit"},  // another series of the same rule
  };
  m.admission("validate", "CREATE", "Pod", "denied", 0.001, findings);
  CHECK(m.value(R"(gpuguard_rule_findings_total{rule="gpu-request-limit-mismatch",severity="error",mode="enforce"})") == 2);
  CHECK(m.value(R"(gpuguard_rule_findings_total{rule="gpu-request-limit-mismatch",severity="error",mode="audit"})") == 1);
  CHECK(m.value(R"(gpuguard_rule_findings_total{rule="odd\"rule\\with\nescapes",severity="warning",mode="audit"})") == 1);
  CHECK(webhook::label_value("a\"b\\c\nd") == R"(a\"b\\c\nd)");
  CHECK(webhook::label_value("plain") == "plain");
  const std::string text = m.render();
  CHECK(text.find(R"(gpuguard_rule_findings_total{rule="odd\"rule\\with\nescapes",severity="warning",mode="audit"} 1)") != std::string::npos);
}

TEST_CASE("metrics of admission requests: the histogram, the request counter and a count per finding") {
  webhook::Metrics m;
  const std::vector<webhook::Metrics::FindingLabels> findings = {
      {"gpu-request-limit-mismatch", "error", "enforce"}, {"gpu-request-limit-mismatch", "error", "enforce"}, {"a\"b", "info", "warn"}};
  m.admission("validate", "CREATE", "Pod", "denied", 0.00004, findings);
  m.admission("validate", "CREATE", "Pod", "denied", 0.2, {});
  m.admission("validate", "UPDATE", "Pod", "allowed", 0.00001, {});
  m.admission("mutate", "CREATE", "Pod", "patched", 0.00001, {});
  CHECK(m.value(R"(gpuguard_admission_requests_total{webhook="validate",operation="CREATE",kind="Pod",decision="denied"})") == 2);
  CHECK(m.value(R"(gpuguard_admission_requests_total{webhook="validate",operation="UPDATE",kind="Pod",decision="allowed"})") == 1);
  CHECK(m.value(R"(gpuguard_admission_requests_total{webhook="mutate",operation="CREATE",kind="Pod",decision="patched"})") == 1);
  CHECK(m.value(R"(gpuguard_rule_findings_total{rule="gpu-request-limit-mismatch",severity="error",mode="enforce"})") == 2);
  CHECK(m.value(R"(gpuguard_rule_findings_total{rule="a\"b",severity="info",mode="warn"})") == 1);
  const webhook::Metrics::FindingLabels again{"gpu-request-limit-mismatch", "error", "enforce"};  // the same counter
  m.admission("validate", "CREATE", "Pod", "denied", 0.001, {&again, 1});
  CHECK(m.value(R"(gpuguard_rule_findings_total{rule="gpu-request-limit-mismatch",severity="error",mode="enforce"})") == 3);
  const std::string text = m.render();
  CHECK(text.find("gpuguard_admission_duration_seconds_bucket{webhook=\"validate\",le=\"2.5e-05\"} 1\n") != std::string::npos);
  CHECK(text.find("gpuguard_admission_duration_seconds_bucket{webhook=\"validate\",le=\"5e-05\"} 2\n") != std::string::npos);
  CHECK(text.find("gpuguard_admission_duration_seconds_bucket{webhook=\"validate\",le=\"0.1\"} 3\n") != std::string::npos);
  CHECK(text.find("gpuguard_admission_duration_seconds_bucket{webhook=\"validate\",le=\"0.25\"} 4\n") != std::string::npos);
  CHECK(text.find("gpuguard_admission_duration_seconds_count{webhook=\"validate\"} 4\n") != std::string::npos);
  CHECK(text.find("gpuguard_admission_duration_seconds_count{webhook=\"mutate\"} 1\n") != std::string::npos);
}

TEST_CASE("metrics: the request counter's kind label is bounded (it is the client's text)") {
  webhook::Metrics m;
  m.admission("validate", "CONNECT", "My-Kind2", "allowed", 0.00001, {});  // a CRD's kind may have '-'
  CHECK(m.value(R"(gpuguard_admission_requests_total{webhook="validate",operation="CONNECT",kind="My-Kind2",decision="allowed"})") == 1);
  // Not a kind's shape: counted as "other", not as a series of its own.
  for (std::string bad : {std::string(4096, 'K'), std::string("Pod\"}"), std::string("1Pod"), std::string(""), std::string("Pod-")})
    m.admission("validate", "CONNECT", bad, "allowed", 0.00001, {});
  CHECK(m.value(R"(gpuguard_admission_requests_total{webhook="validate",operation="CONNECT",kind="other",decision="allowed"})") == 5);
  // At most kMaxKinds distinct kinds; later ones are "other", the ones already counted go on.
  for (size_t i = 1; i < webhook::Metrics::kMaxKinds + 50; ++i)
    m.admission("validate", "CREATE", "Kind" + std::to_string(i), "allowed", 0.00001, {});
  m.admission("validate", "CREATE", "Kind1", "allowed", 0.00001, {});
  CHECK(m.value(R"(gpuguard_admission_requests_total{webhook="validate",operation="CREATE",kind="Kind1",decision="allowed"})") == 2);
  CHECK(m.value(R"(gpuguard_admission_requests_total{webhook="validate",operation="CREATE",kind="other",decision="allowed"})") == 50);
  const std::string text = m.render();
  size_t series = 0;
  for (size_t p = text.find("\ngpuguard_admission_requests_total{"); p != std::string::npos;
       p = text.find("\ngpuguard_admission_requests_total{", p + 1))
    ++series;
  CHECK(series == webhook::Metrics::kMaxKinds + 2);  // the kinds (My-Kind2 among them), CREATE's "other", CONNECT's "other"
}

TEST_CASE("the nesting bound holds whichever reader reads the body") {
  // A review that nests 12 levels deep (the review 1, request 2, object 3, spec 4, containers 5,
  // the container 6, env 7, its entry 8, valueFrom 9, a 10, b 11, c 12): accepted at a bound of
  // 12, refused at 11. Once as the fast reader reads it, once with an integer of 20 digits, which
  // it leaves to nlohmann (the bound is then measured on the text).
  auto body = [](bool slow) {
    json r = review(gpu_pod(true));
    json& c = r["request"]["object"]["spec"]["containers"][0];
    c["env"] = json::array({{{"name", "X"}, {"valueFrom", {{"a", {{"b", {{"c", json::array({1})}}}}}}}}});
    std::string text = r.dump();
    if (slow) text.insert(text.size() - 1, R"(,"big":12345678901234567890)");
    return text;
  };
  for (bool slow : {false, true}) {
    CAPTURE(slow);
    json parsed = json::parse(body(slow));
    CHECK(parsed["request"]["object"]["spec"]["containers"][0]["env"][0]["valueFrom"]["a"]["b"]["c"][0] == json(1));
    json fast;
    CHECK(engine::parse_json_fast(body(slow), fast) == !slow);
    for (uint32_t bound : {11u, 12u}) {
      webhook::Limits limits;
      limits.max_json_depth = bound;
      Admission a(test::registry(), config(), limits);
      auto r = call(a, Endpoint::validate, body(slow));
      if (bound == 11) {
        CHECK(r.answer.status == 400);
        CHECK(r.body["error"].get<std::string>().find("nests deeper than 11 levels") != std::string::npos);
      } else {
        CHECK(r.answer.status == 200);
      }
    }
  }
}

TEST_CASE("answers are written byte for byte as nlohmann's dump writes them") {
  Admission a(test::registry(), config());
  json bad = gpu_pod(false);
  bad["metadata"]["name"] = "quote\"back\\slash-é-✓";
  json mixed = gpu_pod(true);
  mixed["spec"].erase("priorityClassName");
  mixed["spec"].erase("nodeSelector");
  std::string ascii(1, 'a');  // every ASCII byte, NUL included
  for (int c = 0; c < 0x80; ++c) ascii += static_cast<char>(c);
  for (const std::string& uid : {std::string("u-1"), std::string("quote\" back\\ ctl\u0001 tab\t é ✓ \u007f"), ascii}) {
    for (const json& object : {gpu_pod(true), bad, mixed}) {
      json r = review(object);
      r["request"]["uid"] = uid;
      for (Endpoint ep : {Endpoint::validate, Endpoint::mutate}) {
        auto c = call(a, ep, r.dump());
        REQUIRE(c.answer.status == 200);
        CHECK(c.answer.body == c.body.dump(-1, ' ', false, json::error_handler_t::replace));
        CHECK(c.body["response"]["uid"] == json(uid));
        CHECK(call(a, ep, dump_reordered(r)).answer.body == c.answer.body);
      }
    }
  }
}

TEST_CASE("the recorded AdmissionReviews of the corpus are all answered") {
  auto shared = test::shared_dir();
  if (!shared) {
    test::skip("../shared/corpus is not on this machine");
    return;
  }
  Admission a(test::registry(), config());
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(*shared / "corpus" / "admission")) {
    if (e.path().extension() != ".json") continue;
    CAPTURE(e.path().filename());
    json doc = json::parse(test::read_file(e.path()));
    // Bare AdmissionRequests (kwctl's format) are wrapped as the API server sends them.
    if (!doc.contains("request")) doc = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", doc}};
    doc.erase("response");
    const std::string uid = doc["request"]["uid"];
    const bool placeholder = doc["request"]["operation"] == json("operationValue");
    for (Endpoint ep : {Endpoint::validate, Endpoint::mutate}) {
      auto c = call(a, ep, doc.dump());
      if (placeholder) {  // kubernetes/api's every-field fixture: "operationValue" is no operation
        CHECK(c.answer.status == 400);
        continue;
      }
      REQUIRE(c.answer.status == 200);
      CHECK(c.body["apiVersion"] == doc["apiVersion"]);
      CHECK(c.body["response"]["uid"] == json(uid));
      CHECK(c.body["response"]["allowed"].is_boolean());
      // The same answer whatever order the keys were written in, and through either reader.
      CHECK(call(a, ep, dump_reordered(doc)).answer.body == c.answer.body);
      CHECK(call(a, ep, dump_reordered(doc, true)).answer.body == c.answer.body);
    }
    ++n;
  }
  CHECK(n >= 12);
}

TEST_CASE("a rule that fails: failureMode allow answers allowed, deny answers denied; the error is reported") {
  class Throws final : public engine::Rule {
   public:
    Throws() {
      info_.id = "always-throws";
      info_.severity = engine::Severity::error;
    }
    const engine::RuleInfo& info() const override { return info_; }
    void check(const engine::Object&, engine::CheckContext&) const override { throw std::runtime_error("boom"); }

   private:
    engine::RuleInfo info_;
  };
  std::vector<std::unique_ptr<const engine::Rule>> rules;
  rules.push_back(std::make_unique<Throws>());
  engine::Registry reg(std::move(rules));
  for (bool open : {true, false}) {
    auto cfg = std::make_shared<engine::Config>(engine::default_config(reg));
    cfg->webhook.fail_open = open;
    Admission a(reg, cfg);
    auto c = call(a, Endpoint::validate, review(gpu_pod(true)).dump());
    REQUIRE(c.answer.status == 200);
    CHECK(c.body["response"]["allowed"] == json(open));
    REQUIRE(c.outcome.rule_errors.size() == 1);
    CHECK(c.outcome.rule_errors[0].first == "always-throws");
  }
}

TEST_CASE("mutate: a fix whose value is not UTF-8 (a config's !!binary) is a failure the failure mode answers") {
  // dump() would throw on it, as the patch writer does: the answer is not a patch with U+FFFD in it.
  json pod = gpu_pod(true);
  pod["spec"].erase("priorityClassName");
  for (bool open : {true, false}) {
    auto cfg = std::make_shared<engine::Config>(
        *config("rules: {gpu-priority-class-missing: {params: {defaults: {ml: !!binary /3RyYWluaW5n}}}}\n"));  // "\xfftraining"
    cfg->webhook.fail_open = open;
    Admission a(test::registry(), cfg);
    auto c = call(a, Endpoint::mutate, review(pod).dump());
    REQUIRE(c.answer.status == 200);
    CHECK(c.body["response"]["allowed"] == json(open));
    CHECK_FALSE(c.body["response"].contains("patch"));
    REQUIRE(c.outcome.rule_errors.size() == 1);
    CHECK(c.outcome.rule_errors[0].second.find("invalid UTF-8 byte") != std::string::npos);
    // /validate names the finding; its message's bytes are written as U+FFFD.
    auto v = call(a, Endpoint::validate, review(pod).dump());
    REQUIRE(v.body["response"].contains("warnings"));
    CHECK(v.body["response"]["warnings"].dump().find("\xEF\xBF\xBDtraining") != std::string::npos);
  }
}

TEST_CASE("field paths for warnings") {
  CHECK(webhook::field_path("/spec/containers/0/resources/requests/nvidia.com~1gpu") ==
        "spec.containers[0].resources.requests[nvidia.com/gpu]");
  CHECK(webhook::field_path("/metadata/name") == "metadata.name");
  CHECK(webhook::field_path("") == "");
  CHECK(webhook::base64_encode("hello") == "aGVsbG8=");
}

}  // TEST_SUITE
