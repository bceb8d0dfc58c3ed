// The AdmissionReview protocol without HTTP: decode, evaluate, encode.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
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


// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 9;
    if (n == 9 || i + n >= s.size()) return false;  // not a lead byte, or cut short
    uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// A rule's fixtures of one kind (tests/rules/<id>/<kind>/*.yaml), sorted.
std::vector<fs::path> rule_fixtures(const std::string& id, const char* kind) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(test::source_dir() / "tests" / "rules" / id / kind, ec))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Lints a fixture as the fixture driver does (tests/rules_test.cpp): its directives `complete`,
// `schemas` and `config <flow mapping>`.
engine::Result lint_fixture(const fs::path& file) {
  const std::string text = test::read_file(file);
  test::LintOptions o;
  o.file = file.filename().string();
  json config = json::object();
  size_t at = 0;
  while ((at = text.find("# gpuguard-test:", at)) != std::string::npos) {
    const size_t end = text.find('\n', at);
    std::string rest = text.substr(at + 16, end == std::string::npos ? std::string::npos : end - at - 16);
    rest.erase(0, rest.find_first_not_of(' '));
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.pop_back();
    if (rest == "complete") o.complete = true;
    else if (rest == "schemas") o.schemas = true;
    else if (rest.rfind("config ", 0) == 0) config.merge_patch(test::load_objects(rest.substr(7), "directive")[0].body());
    at = end == std::string::npos ? text.size() : end;
  }
  if (!config.empty()) o.config_yaml = config.dump();
  return test::lint(text, o);
}

// The length of a finding's text before any cut: its path and message.
size_t field_path_size(const engine::Finding& f) { return webhook::field_path(f.pointer).size() + f.message.size(); }

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
    CHECK(w.rfind("[gpu-request-limit-mismatch] spec.containers[0].resources.requests[nvidia.com/gpu]: ", 0) == 0);
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

TEST_CASE("a rule that fails on a DELETE: never denied, failureMode deny included; the failure is a warning") {
  // A rule that reads PriorityClasses (so a DELETE of one re-runs it over the state) and fails in
  // finish(). Deleting must always be possible: a namespace whose deletion hit a failing rule would
  // never go away.
  class ThrowsInFinish final : public engine::Rule {
   public:
    ThrowsInFinish() {
      info_.id = "throws-in-finish";
      info_.severity = engine::Severity::error;
      info_.checks = {{"scheduling.k8s.io", "PriorityClass"}};
      info_.reads = {{"scheduling.k8s.io", "PriorityClass"}};
    }
    const engine::RuleInfo& info() const override { return info_; }
    void finish(engine::FinishContext&) const override { throw std::runtime_error("boom"); }

   private:
    engine::RuleInfo info_;
  };
  std::vector<std::unique_ptr<const engine::Rule>> rules;
  rules.push_back(std::make_unique<ThrowsInFinish>());
  engine::Registry reg(std::move(rules));
  for (bool open : {true, false}) {
    CAPTURE(open);
    auto cfg = std::make_shared<engine::Config>(engine::default_config(reg));
    cfg->webhook.fail_open = open;
    Admission a(reg, cfg);
    test::TempDir dir;
    test::write_file(dir.path() / "state.yaml", pcs(3));
    auto loaded = engine::load_state({(dir.path() / "state.yaml").string()}, reg, *cfg);
    REQUIRE(loaded.diagnostics.empty());
    json del = review(nullptr, "DELETE", "v1", pc("pc2"));
    del["request"]["kind"] = {{"group", "scheduling.k8s.io"}, {"version", "v1"}, {"kind", "PriorityClass"}};
    auto c = call(a, Endpoint::validate, del.dump(), loaded.inventory);
    REQUIRE(c.answer.status == 200);
    CHECK(c.body["response"]["allowed"] == json(true));
    CHECK_FALSE(c.outcome.rule_errors.empty());
    if (!open) {
      REQUIRE(c.body["response"].contains("warnings"));
      CHECK(c.body["response"]["warnings"].dump().find("could not evaluate every rule") != std::string::npos);
    }
    // The same rule on a CREATE under failureMode deny denies, as before.
    auto create = call(a, Endpoint::validate, review(pc("pc9")).dump(), loaded.inventory);
    CHECK(create.body["response"]["allowed"] == json(open));
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
    webhook::Limits long_lines;
    long_lines.max_warning_chars = 1024;  // the whole message, whose end names the default
    Admission a(test::registry(), cfg, long_lines);
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

// --- exemptions at admission (webhook.exemptions) ---

namespace {

// The bare pod: a GPU request without a limit (gpu-request-limit-mismatch, an error with a fix),
// and optionally no PriorityClass (gpu-priority-class-missing, a warning).
json annotated_pod(const json& annotations, const std::string& ns = "ml", bool with_class = true) {
  json pod = gpu_pod(false);
  pod["metadata"]["namespace"] = ns;
  if (!annotations.is_null()) pod["metadata"]["annotations"] = annotations;
  if (!with_class) pod["spec"].erase("priorityClassName");
  return pod;
}

json as_user(json r, const std::string& user, const json& groups = nullptr, const std::string& ns = "ml") {
  r["request"]["userInfo"] = {{"username", user}};
  if (!groups.is_null()) r["request"]["userInfo"]["groups"] = groups;
  r["request"]["namespace"] = ns;
  return r;
}

const json kIgnoreAll = {{"gpuguard.io/ignore", "*"}, {"gpuguard.io/ignore-reason", "benchmark, ticket 12"}};

bool allowed(const Call& c) { return c.body["response"]["allowed"] == json(true); }
std::string denial(const Call& c) { return c.body["response"]["status"].value("message", ""); }

}  // namespace

TEST_CASE("exemptions off (the default): an ignore annotation does not turn a denial into an allow") {
  Admission a(test::registry(), config());
  auto c = call(a, Endpoint::validate, as_user(review(annotated_pod(kIgnoreAll)), "mallory").dump());
  CHECK_FALSE(allowed(c));
  CHECK(denial(c).find("[gpu-request-limit-mismatch] ") != std::string::npos);
  CHECK(denial(c).find("(gpuguard.io/ignore not honoured at admission: annotations off)") != std::string::npos);
  CHECK(c.outcome.exempted.empty());
  CHECK(c.outcome.username == "mallory");
  // The annotation naming the rule alone, or on UPDATE: the same.
  auto one = call(a, Endpoint::validate, review(annotated_pod({{"gpuguard.io/ignore", "gpu-request-limit-mismatch"}})).dump());
  CHECK_FALSE(allowed(one));
  auto update = call(a, Endpoint::validate, review(annotated_pod(kIgnoreAll), "UPDATE", "v1", gpu_pod(true)).dump());
  CHECK_FALSE(allowed(update));
  CHECK(denial(update).find("annotations off") != std::string::npos);
  CHECK(update.outcome.exempted.empty());
  // An annotation that names another rule says nothing about this one.
  auto other = call(a, Endpoint::validate, review(annotated_pod({{"gpuguard.io/ignore", "gpu-toleration-missing"}})).dump());
  CHECK_FALSE(allowed(other));
  CHECK(denial(other).find("not honoured") == std::string::npos);
}

TEST_CASE("exemptions on for one namespace: exempted there (listed with user and reason), denied elsewhere") {
  Admission a(test::registry(), config("webhook:\n  exemptions:\n    annotations: true\n    allow:\n    - namespaces: \"ml-.*\"\n"));
  auto in = call(a, Endpoint::validate, as_user(review(annotated_pod(kIgnoreAll, "ml-bench")), "alice", {"team-a"}, "ml-bench").dump());
  CHECK(allowed(in));
  CHECK(in.outcome.decision == "allowed");
  REQUIRE(in.outcome.exempted.size() == 1);
  CHECK(in.outcome.exempted[0].rule == "gpu-request-limit-mismatch");
  CHECK(in.outcome.exempted[0].pointer == "/spec/containers/0/resources/requests/nvidia.com~1gpu");
  CHECK(in.outcome.exempted[0].reason == "benchmark, ticket 12");
  CHECK(in.outcome.username == "alice");
  CHECK(in.outcome.groups == std::vector<std::string>{"team-a"});
  CHECK(in.outcome.exempted_rules() == std::vector<std::string>{"gpu-request-limit-mismatch"});
  CHECK(in.outcome.findings.empty());  // not counted as a finding
  auto out = call(a, Endpoint::validate, as_user(review(annotated_pod(kIgnoreAll, "ml")), "alice", nullptr, "ml").dump());
  CHECK_FALSE(allowed(out));
  CHECK(denial(out).find("(gpuguard.io/ignore not honoured at admission in this namespace)") != std::string::npos);
  CHECK(out.outcome.exempted.empty());
  // "ml-.*" is a full match: "xml-a" is not in it.
  auto near = call(a, Endpoint::validate, as_user(review(annotated_pod(kIgnoreAll, "xml-a")), "alice", nullptr, "xml-a").dump());
  CHECK_FALSE(allowed(near));
}

TEST_CASE("exemptions with a required reason (the default): without one, denied") {
  Admission a(test::registry(), config("webhook: {exemptions: {annotations: true}}\n"));
  auto none = call(a, Endpoint::validate, review(annotated_pod({{"gpuguard.io/ignore", "*"}})).dump());
  CHECK_FALSE(allowed(none));
  CHECK(denial(none).find("(gpuguard.io/ignore not honoured at admission: no ignore-reason)") != std::string::npos);
  auto blank = call(a, Endpoint::validate, review(annotated_pod({{"gpuguard.io/ignore", "*"}, {"gpuguard.io/ignore-reason", "  "}})).dump());
  CHECK_FALSE(allowed(blank));
  auto with = call(a, Endpoint::validate, review(annotated_pod(kIgnoreAll)).dump());
  CHECK(allowed(with));
  CHECK(with.outcome.exempted.size() == 1);
  // requireReason: false
  Admission lax(test::registry(), config("webhook: {exemptions: {annotations: true, requireReason: false}}\n"));
  auto bare = call(lax, Endpoint::validate, review(annotated_pod({{"gpuguard.io/ignore", "*"}})).dump());
  CHECK(allowed(bare));
  REQUIRE(bare.outcome.exempted.size() == 1);
  CHECK(bare.outcome.exempted[0].reason == "gpuguard.io/ignore annotation");
}

TEST_CASE("exemptions restricted to rules: \"*\" exempts only the rules an entry allows") {
  const json pod = annotated_pod(kIgnoreAll, "ml", false);  // an error and a warning
  {
    Admission a(test::registry(), config("webhook:\n  exemptions:\n    annotations: true\n    allow: [{rules: [gpu-priority-class-missing]}]\n"));
    auto c = call(a, Endpoint::validate, review(pod).dump());
    CHECK_FALSE(allowed(c));
    CHECK(denial(c).find("[gpu-request-limit-mismatch] ") != std::string::npos);
    CHECK(denial(c).find("(gpuguard.io/ignore not honoured at admission for this rule)") != std::string::npos);
    CHECK_FALSE(c.body["response"].contains("warnings"));  // the warning is exempted
    REQUIRE(c.outcome.exempted.size() == 1);
    CHECK(c.outcome.exempted[0].rule == "gpu-priority-class-missing");
  }
  {
    Admission a(test::registry(), config("webhook:\n  exemptions:\n    annotations: true\n    allow: [{rules: [gpu-request-limit-mismatch]}]\n"));
    auto c = call(a, Endpoint::validate, review(pod).dump());
    CHECK(allowed(c));
    REQUIRE(c.body["response"]["warnings"].size() == 1);
    const std::string w = c.body["response"]["warnings"][0];
    CHECK(w.rfind("[gpu-priority-class-missing] ", 0) == 0);
    CHECK(w.find("(gpuguard.io/ignore not honoured at admission for this rule)") != std::string::npos);
    CHECK(c.outcome.exempted_rules() == std::vector<std::string>{"gpu-request-limit-mismatch"});
  }
}

TEST_CASE("exemptions restricted to users and groups (request.userInfo): either matches") {
  Admission a(test::registry(), config("webhook:\n  exemptions:\n    annotations: true\n    allow:\n"
                                       "    - users: [\"system:serviceaccount:ci:.*\"]\n      groups: [platform-admins]\n"));
  const json r = review(annotated_pod(kIgnoreAll));
  CHECK(allowed(call(a, Endpoint::validate, as_user(r, "system:serviceaccount:ci:deployer").dump())));
  CHECK(allowed(call(a, Endpoint::validate, as_user(r, "bob", {"system:authenticated", "platform-admins"}).dump())));
  for (const json& who : {as_user(r, "bob", {"system:authenticated"}), as_user(r, "system:serviceaccount:ci2:x"),
                          as_user(r, "xsystem:serviceaccount:ci:deployer", {"platform-admins-2"}), review(annotated_pod(kIgnoreAll))}) {
    auto c = call(a, Endpoint::validate, who.dump());
    CHECK_FALSE(allowed(c));
    CHECK(denial(c).find("(gpuguard.io/ignore not honoured at admission for this user)") != std::string::npos);
    CHECK(c.outcome.exempted.empty());
  }
  // Without userInfo at all (a review that names nobody): no entry with users or groups matches.
  json nobody = review(annotated_pod(kIgnoreAll));
  nobody["request"].erase("userInfo");
  auto c = call(a, Endpoint::validate, nobody.dump());
  CHECK_FALSE(allowed(c));
  CHECK(c.outcome.username.empty());
}

TEST_CASE("exemptions: a pod template's annotation covers its template, at admission as configured") {
  json deploy = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", {{"name", "d"}, {"namespace", "ml"}}},
                 {"spec", {{"template", {{"metadata", {{"annotations", kIgnoreAll}}}, {"spec", gpu_pod(false)["spec"]}}}}}};
  json r = review(deploy);
  r["request"]["kind"] = {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}};
  {
    Admission a(test::registry(), config());
    auto c = call(a, Endpoint::validate, r.dump());
    CHECK_FALSE(allowed(c));
    CHECK(denial(c).find("[gpu-request-limit-mismatch] spec.template.spec.containers[0]") != std::string::npos);
    CHECK(denial(c).find("annotations off") != std::string::npos);
  }
  {
    Admission a(test::registry(), config("webhook: {exemptions: {annotations: true, allow: [{namespaces: ml}]}}\n"));
    auto c = call(a, Endpoint::validate, r.dump());
    CHECK(allowed(c));
    REQUIRE(c.outcome.exempted.size() == 1);
    CHECK(c.outcome.exempted[0].pointer.rfind("/spec/template/spec/containers/0", 0) == 0);
  }
}

TEST_CASE("exemptions on UPDATE: a defect the update brings is exempted only as configured") {
  const json before = gpu_pod(true);
  const json after = annotated_pod(kIgnoreAll);
  {
    Admission a(test::registry(), config());
    CHECK_FALSE(allowed(call(a, Endpoint::validate, review(after, "UPDATE", "v1", before).dump())));
  }
  {
    Admission a(test::registry(), config("webhook: {exemptions: {annotations: true}}\n"));
    auto c = call(a, Endpoint::validate, review(after, "UPDATE", "v1", before).dump());
    CHECK(allowed(c));
    CHECK(c.outcome.exempted.size() == 1);
    // A defect the old object had already is not a new exemption.
    auto same = call(a, Endpoint::validate, review(after, "UPDATE", "v1", after).dump());
    CHECK(allowed(same));
    CHECK(same.outcome.exempted.empty());
  }
}

TEST_CASE("exemptions on /mutate: an exempted rule's fix is not applied, a fix whose annotation is not honoured is") {
  const json pod = annotated_pod({{"gpuguard.io/ignore", "gpu-request-limit-mismatch"}, {"gpuguard.io/ignore-reason", "r"}});
  {
    Admission a(test::registry(), config());
    auto c = call(a, Endpoint::mutate, review(pod).dump());
    CHECK(c.body["response"].contains("patch"));
    CHECK(c.outcome.decision == "patched");
    CHECK(c.outcome.exempted.empty());
  }
  {
    Admission a(test::registry(), config("webhook: {exemptions: {annotations: true, allow: [{namespaces: ml}]}}\n"));
    auto c = call(a, Endpoint::mutate, review(pod).dump());
    CHECK_FALSE(c.body["response"].contains("patch"));
    REQUIRE(c.outcome.exempted.size() == 1);
    CHECK(c.outcome.exempted[0].rule == "gpu-request-limit-mismatch");
    CHECK(c.outcome.exempted[0].reason == "r");
    // In another namespace the entry does not allow it: the fix applies.
    json other = pod;
    other["metadata"]["namespace"] = "prod";
    auto p = call(a, Endpoint::mutate, as_user(review(other), "alice", nullptr, "prod").dump());
    CHECK(p.body["response"].contains("patch"));
    CHECK(p.outcome.exempted.empty());
  }
}

TEST_CASE("userInfo of the wrong shape is a 400 naming the field") {
  Admission a(test::registry(), config());
  json bad = review(gpu_pod(true));
  bad["request"]["userInfo"] = {{"username", 7}};
  auto c = call(a, Endpoint::validate, bad.dump());
  CHECK(c.answer.status == 400);
  CHECK(c.body["error"] == json("request.userInfo.username must be a string"));
  bad["request"]["userInfo"] = {{"username", "a"}, {"groups", {"x", 1}}};
  c = call(a, Endpoint::validate, bad.dump());
  CHECK(c.answer.status == 400);
  CHECK(c.body["error"] == json("request.userInfo.groups must be a list of strings"));
}

TEST_CASE("metrics: gpuguard_admission_exemptions_total by rule") {
  webhook::Metrics m;
  m.exempted("gpu-request-limit-mismatch");
  m.exempted("gpu-request-limit-mismatch");
  m.exempted("gpu-toleration-missing");
  CHECK(m.value(R"(gpuguard_admission_exemptions_total{rule="gpu-request-limit-mismatch"})") == 2);
  const std::string text = m.render();
  CHECK(text.find("# TYPE gpuguard_admission_exemptions_total counter\n") != std::string::npos);
  CHECK(text.find("gpuguard_admission_exemptions_total{rule=\"gpu-toleration-missing\"} 1\n") != std::string::npos);
}

// --- modes ---

TEST_CASE("modes: /mutate applies a fix only in enforce mode, and not with fix: false") {
  for (const char* yaml : {"rules: {gpu-request-limit-mismatch: {mode: audit}}\n", "rules: {gpu-request-limit-mismatch: {mode: warn}}\n",
                           "rules: {gpu-request-limit-mismatch: {fix: false}}\n"}) {
    CAPTURE(yaml);
    Admission a(test::registry(), config(yaml));
    auto c = call(a, Endpoint::mutate, review(gpu_pod(false)).dump());
    CHECK(allowed(c));
    CHECK_FALSE(c.body["response"].contains("patch"));
    CHECK(c.outcome.decision == "allowed");
  }
  Admission a(test::registry(), config("rules: {gpu-request-limit-mismatch: {mode: enforce, fix: true}}\n"));
  auto c = call(a, Endpoint::mutate, review(gpu_pod(false)).dump());
  CHECK(c.body["response"].contains("patch"));
  CHECK(c.outcome.decision == "patched");
  // The other rules' fixes still apply when one is in audit: the toleration, for a pod without one.
  Admission b(test::registry(), config("rules: {gpu-request-limit-mismatch: {mode: audit}}\n"));
  json pod = gpu_pod(false);
  pod["spec"].erase("tolerations");
  auto d = call(b, Endpoint::mutate, review(pod).dump());
  REQUIRE(d.body["response"].contains("patch"));
  CHECK(d.outcome.findings.size() == 1);
  CHECK(d.outcome.findings[0].rule == "gpu-toleration-missing");
}

// --- warnings and denials a person can act on ---

TEST_CASE("admission text: the rule id first and whole, the message cut at a clause, a pointer to gpuguard explain") {
  engine::Finding f;
  f.rule = "limitrange-gpu-default-injection";
  f.pointer = "/spec/template/spec/containers/0/resources/requests/nvidia.com~1gpu";
  f.message = "short";
  CHECK(webhook::admission_text(f, 256) == "[limitrange-gpu-default-injection] spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: short");
  f.message = "the first sentence says what is wrong. The second says why, at length: " + std::string(300, 'x');
  std::string t = webhook::admission_text(f, 256);
  CHECK(t.size() <= 256);
  // The latest boundary that fits: here the clause before the colon, past the first sentence's end.
  CHECK(t == "[limitrange-gpu-default-injection] spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: "
             "the first sentence says what is wrong. The second says why, at length; see gpuguard explain limitrange-gpu-default-injection");
  f.message = "the first sentence says what is wrong. The second " + std::string(300, 'x');
  CHECK(webhook::admission_text(f, 256) ==
        "[limitrange-gpu-default-injection] spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: "
        "the first sentence says what is wrong; see gpuguard explain limitrange-gpu-default-injection");
  f.message = "the first sentence says what is wrong, e.g. this one " + std::string(300, 'x');
  CHECK(webhook::admission_text(f, 256) ==
        "[limitrange-gpu-default-injection] spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: "
        "the first sentence says what is wrong; see gpuguard explain limitrange-gpu-default-injection");
  // Never inside parentheses or `code`: the clause before them.
  f.message = "what is wrong, said at some length so that a cut is worth it (an aside; more) `code; here` " + std::string(300, 'x');
  CHECK(webhook::admission_text(f, 256) ==
        "[limitrange-gpu-default-injection] spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: "
        "what is wrong, said at some length so that a cut is worth it; see gpuguard explain limitrange-gpu-default-injection");
  // No boundary at all: a word, with an ellipsis; none either: between characters (UTF-8 whole).
  f.pointer = "";
  f.message = std::string(100, 'a') + " " + std::string(300, 'b');
  t = webhook::admission_text(f, 256);
  CHECK(t.rfind("[limitrange-gpu-default-injection] " + std::string(100, 'a') + "\u2026; see gpuguard explain", 0) == 0);
  f.message.clear();
  for (int i = 0; i < 200; ++i) f.message += "\u00e9";  // 2 bytes each
  t = webhook::admission_text(f, 256);
  CHECK(t.size() <= 256);
  CHECK(valid_utf8(t));
  // A path longer than the limit is cut; the id and the pointer to explain stay.
  f.pointer = "/metadata/annotations/" + std::string(1000, 'k');
  f.message = "a message, of some length; " + std::string(200, 'm');
  t = webhook::admission_text(f, 256);
  CHECK(t.size() <= 256);
  CHECK(t.rfind("[limitrange-gpu-default-injection] metadata.annotations.kkk", 0) == 0);
  CHECK(t.find("\u2026: a message") != std::string::npos);
  CHECK(t.ends_with("; see gpuguard explain limitrange-gpu-default-injection"));
  // The note of an annotation that was not honoured stays, too.
  f.annotation = engine::Finding::Annotation::not_honoured;
  f.suppression = std::string(engine::honour_note(engine::NotHonoured::user));
  t = webhook::admission_text(f, 256);
  CHECK(t.size() <= 256);
  CHECK(t.find("(gpuguard.io/ignore not honoured at admission for this user)") != std::string::npos);
}

TEST_CASE("denial message: whole errors that fit, then how many more") {
  std::vector<std::string> errors;
  for (int i = 0; i < 40; ++i) errors.push_back("[rule-" + std::to_string(i) + "] spec.x: " + std::string(200, 'e'));
  const std::string m = webhook::denial_message(errors, 4000);
  CHECK(m.size() <= 4000);
  CHECK(m.rfind("gpuguard: 40 errors: [rule-0] spec.x: ", 0) == 0);
  // 21 bytes of head, 217 of the first error, 219 or 220 each with its "; ": 17 fit with room for the rest's count.
  CHECK(m.ends_with("; [rule-16] spec.x: " + std::string(200, 'e') + "; and 23 more (gpuguard lint shows them)"));
  CHECK(m.find("[rule-17]") == std::string::npos);
  CHECK(webhook::denial_message({"[a] b"}, 4000) == "gpuguard: 1 error: [a] b");
}

TEST_CASE("every rule's longest message, as a warning and as a denial: the rule id first, within Kubernetes' limits, UTF-8") {
  const webhook::Limits limits;
  REQUIRE(limits.max_warning_chars <= 256);        // facts/webhook.md §1: the API server may truncate past 256
  REQUIRE(limits.max_warnings_total <= 4096);      // and drops warnings past 4096 from all sources
  size_t rules = 0;
  for (const engine::Rule* rule : test::registry().rules()) {
    const std::string id = rule->info().id;
    CAPTURE(id);
    if (id == "schema-invalid" && !test::shared_schemas()) continue;  // its fixtures need ../shared/k8s-schemas
    std::optional<engine::Finding> longest;
    for (const auto& file : rule_fixtures(id, "disallowed")) {
      const auto fixture = lint_fixture(file);
      for (const auto& f : fixture.findings)
        if (f.rule == id && (!longest || field_path_size(f) > field_path_size(*longest))) longest = f;
    }
    REQUIRE_MESSAGE(longest.has_value(), "no finding of the rule over its disallowed fixtures");
    ++rules;
    const std::string warning = webhook::admission_text(*longest, limits.max_warning_chars);
    CHECK_MESSAGE(warning.rfind("[" + id + "] ", 0) == 0, warning);
    CHECK_MESSAGE(warning.size() <= limits.max_warning_chars, warning);
    CHECK_MESSAGE(valid_utf8(warning), warning);
    CHECK_MESSAGE(warning.rfind("Warning:", 0) != 0, warning);
    if (warning.find(longest->message) == std::string::npos)  // cut: the rest is a command away
      CHECK_MESSAGE(warning.ends_with("; see gpuguard explain " + id), warning);
    const std::string denied = webhook::denial_message({warning, warning}, limits.max_message_chars);
    CHECK(denied.rfind("gpuguard: 2 errors: [" + id + "] ", 0) == 0);
    CHECK(denied.find("; [" + id + "] ") != std::string::npos);
    CHECK(denied.size() <= limits.max_message_chars);
    CHECK(valid_utf8(denied));
  }
  CHECK(rules + (test::shared_schemas() ? 0 : 1) == test::registry().rules().size());
}

TEST_CASE("field paths for warnings") {
  CHECK(webhook::field_path("/spec/containers/0/resources/requests/nvidia.com~1gpu") ==
        "spec.containers[0].resources.requests[nvidia.com/gpu]");
  CHECK(webhook::field_path("/metadata/name") == "metadata.name");
  CHECK(webhook::field_path("") == "");
  CHECK(webhook::base64_encode("hello") == "aGVsbG8=");
}

}  // TEST_SUITE

TEST_CASE("a Volcano queue tree already out of order: an update that leaves it so is allowed by default, a new child denied") {
  // The children's deserved GPUs (3 + 3) are above the parent's 4: made before Volcano v1.15, or
  // while its webhook was off. Volcano checks the hierarchy only when a parent or resources change;
  // gpuguard reports on an UPDATE only what the old object did not already have (onUpdate default).
  auto queue = [](const std::string& name, const std::string& parent, int gpus, int weight) {
    json q = {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
              {"kind", "Queue"},
              {"metadata", {{"name", name}}},
              {"spec", {{"weight", weight}, {"deserved", {{"nvidia.com/gpu", gpus}}}}}};
    if (!parent.empty()) q["spec"]["parent"] = parent;
    return q;
  };
  auto queue_review = [](const json& object, const std::string& op, const json& old_object = nullptr) {
    json r = review(object, op, "v1", old_object);
    r["request"]["kind"] = {{"group", "scheduling.volcano.sh"}, {"version", "v1beta1"}, {"kind", "Queue"}};
    r["request"]["resource"] = {{"group", "scheduling.volcano.sh"}, {"version", "v1beta1"}, {"resource", "queues"}};
    r["request"].erase("namespace");
    return r;
  };
  std::string yaml;
  for (const json& q : {queue("research", "", 4, 1), queue("train", "research", 3, 1), queue("dev", "research", 3, 1)})
    yaml += "---\n" + q.dump() + "\n";
  auto by_default = config();
  auto state = state_of(yaml, *by_default);
  Admission a(test::registry(), by_default);
  // The weight of a child changes: the sum is as it was.
  auto u = call(a, Endpoint::validate, queue_review(queue("dev", "research", 3, 2), "UPDATE", queue("dev", "research", 3, 1)).dump(), state);
  CHECK(u.body["response"]["allowed"] == json(true));
  // With onUpdate: all, the same update is denied until the tree is put in order.
  auto all = config("webhook: {onUpdate: all}\n");
  Admission strict(test::registry(), all);
  auto d = call(strict, Endpoint::validate, queue_review(queue("dev", "research", 3, 2), "UPDATE", queue("dev", "research", 3, 1)).dump(),
                state_of(yaml, *all));
  CHECK(d.body["response"]["allowed"] == json(false));
  CHECK(d.body["response"]["status"]["message"].get<std::string>().find("[volcano-queue-order-invalid]") != std::string::npos);
  // A new child adds to the sum: denied.
  auto c = call(a, Endpoint::validate, queue_review(queue("eval", "research", 1, 1), "CREATE").dump(), state);
  CHECK(c.body["response"]["allowed"] == json(false));
}
