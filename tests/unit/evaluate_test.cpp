#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <variant>

#include "engine/evaluate.h"
#include "engine/json_parse.h"
#include "engine/mutate.h"
#include "engine/positions.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;
using gpuguard::test::lint;

namespace {
const char* kBadPod =
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ml\n%ANN%spec:\n  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n  containers:\n  - name: c\n    resources:\n"
    "      requests: {nvidia.com/gpu: 1}\n  priorityClassName: training\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n";  // the model pinned: gpu-product-affinity-missing is quiet

std::string bad_pod(const std::string& annotations = "") {
  std::string s = kBadPod;
  s.replace(s.find("%ANN%"), 5, annotations);
  return s;
}

// A complete cluster state of these kinds, as the webhook holds it, and the options that evaluate
// an admitted object against it.
std::shared_ptr<Inventory> complete_state(std::set<KindRef> kinds, const std::string& yaml) {
  auto base = std::make_shared<Inventory>(std::move(kinds));
  base->set_complete(true);
  uint32_t id = 0;
  for (auto& o : gpuguard::test::load_objects(yaml)) {
    o.id = id++;
    std::string ns = o.namespace_;
    base->add(std::make_shared<Object>(std::move(o)), std::move(ns));
  }
  return base;
}

EvalOptions admitting_over(std::shared_ptr<Inventory> base) {
  EvalOptions eo;
  eo.base = std::move(base);
  eo.focus_on_added = true;
  return eo;
}

size_t unsuppressed(const Result& r) {
  size_t n = 0;
  for (const auto& f : r.findings) n += f.suppressed ? 0 : 1;
  return n;
}
// Random JSON trees, and random edits of them (for json_diff against nlohmann's diff).
struct RandomTrees {
  explicit RandomTrees(unsigned seed = 20261204, bool nan = true) : rng(seed), nan(nan) {}
  std::mt19937 rng;
  bool nan;
  const std::vector<std::string> keys = {"a", "b", "c/d", "e~f", "~", "/", "", "spec"};

  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
  const std::string& key() { return keys[static_cast<size_t>(pick(static_cast<int>(keys.size())))]; }
  static std::string below(const std::string& path, const std::string& key) {
    std::string out = path + "/";
    append_pointer_escaped(out, key);
    return out;
  }

  json make(int depth) {
    switch (depth > 3 ? pick(6) : pick(8)) {
      case 0: return nullptr;
      case 1: return pick(2) == 0;
      case 2: return pick(5) - 2;
      case 3: {
        const bool not_a_number = pick(3) == 0 && nan;
        return not_a_number ? std::nan("") : pick(4) * 0.5;
      }
      case 4: return static_cast<unsigned>(pick(3));
      case 5: return key();
      case 6: {
        json a = json::array();
        for (int i = pick(4); i > 0; --i) a.push_back(make(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (int i = pick(4); i > 0; --i) o[key()] = make(depth + 1);
        return o;
      }
    }
  }

  // An edit of `j` (at `path`); each change's pointer noted in `written`, an array's as the array.
  json edit(const json& j, int depth, const std::string& path = "", std::vector<std::string>* written = nullptr) {
    auto note = [&](const std::string& p) {
      if (written) written->push_back(p);
    };
    if (pick(5) == 0) {  // replaced outright (often by another type)
      note(path);
      return make(depth);
    }
    if (j.is_array()) {
      note(path);
      json a = json::array();
      for (const auto& v : j)
        if (pick(6) != 0) a.push_back(pick(3) == 0 ? edit(v, depth + 1) : v);
      for (int i = pick(3); i > 1; --i) a.push_back(make(depth + 1));
      return a;
    }
    if (j.is_object()) {
      json o = json::object();
      for (const auto& [k, v] : j.items()) {
        if (pick(6) == 0) {
          note(below(path, k));  // removed
          continue;
        }
        o[k] = pick(3) == 0 ? edit(v, depth + 1, below(path, k), written) : v;
      }
      if (pick(3) == 0) {
        json added = make(depth + 1);
        const std::string& k = key();
        note(below(path, k));
        o[k] = std::move(added);
      }
      return o;
    }
    if (j.is_number_integer() && pick(2) == 0) {  // equal, other type
      note(path);
      return static_cast<double>(j.get<int64_t>());
    }
    return j;
  }
};

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("findings carry rule, severity, object, pointer and position") {
  auto r = lint(bad_pod());
  REQUIRE(r.findings.size() == 1);
  const auto& f = r.findings[0];
  CHECK(f.rule == "gpu-request-limit-mismatch");
  CHECK(f.severity == Severity::error);
  CHECK(f.object.kind() == "Pod");
  CHECK(f.object.namespace_() == "ml");
  CHECK(f.pointer == "/spec/containers/0/resources/requests/nvidia.com~1gpu");
  CHECK(f.pos == Pos{11, 18});
  REQUIRE(f.fix.has_value());
}

TEST_CASE("the ignore annotation suppresses named rules and keeps the reason") {
  auto r = lint(bad_pod("  annotations:\n    gpuguard.io/ignore: \"gpu-request-limit-mismatch\"\n    gpuguard.io/ignore-reason: legacy\n"));
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].suppressed);
  CHECK(r.findings[0].suppression == "legacy");
  CHECK(r.diagnostics.empty());
  auto all = lint(bad_pod("  annotations: {gpuguard.io/ignore: \"*\"}\n"));
  CHECK(unsuppressed(all) == 0);
}

TEST_CASE("an unknown rule in the ignore annotation is an error at the annotation") {
  auto r = lint(bad_pod("  annotations:\n    gpuguard.io/ignore: \"gpu-request-limit-mismatch, no-such-rule\"\n"));
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].pos == Pos{7, 5});
  CHECK(r.diagnostics[0].message.find("no-such-rule") != std::string::npos);
  CHECK(unsuppressed(r) == 0);  // the known id still applies
}

TEST_CASE("a pod template's ignore annotation covers findings inside the template") {
  auto r = lint(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    metadata:\n"
      "      annotations: {gpuguard.io/ignore: \"gpu-request-limit-mismatch, gpu-toleration-missing\"}\n    spec:\n      containers:\n"
      "      - name: c\n        resources: {requests: {nvidia.com/gpu: 1}}\n      priorityClassName: training\n      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n");
  REQUIRE(r.findings.size() == 2);
  CHECK(r.findings[0].suppressed);
  CHECK(r.findings[1].suppressed);
}

TEST_CASE("config exclusions suppress by namespace, kind and name") {
  gpuguard::test::LintOptions o;
  o.config_yaml = "exclude:\n  - namespace: m.\n    name: p\n";
  auto r = lint(bad_pod(), o);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].suppressed);
  CHECK(r.findings[0].suppression == "excluded by .gpuguard.yaml:2");
  o.config_yaml = "exclude:\n  - namespace: m\n";  // full match only
  CHECK(unsuppressed(lint(bad_pod(), o)) == 1);
}

TEST_CASE("disabled rules and severity overrides") {
  gpuguard::test::LintOptions o;
  o.config_yaml = "rules: {gpu-request-limit-mismatch: false}\n";
  CHECK(lint(bad_pod(), o).findings.empty());
  o.config_yaml = "rules: {gpu-request-limit-mismatch: {severity: warning}}\n";
  auto r = lint(bad_pod(), o);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].severity == Severity::warning);
}

TEST_CASE("rules that report missing things speak only with a complete inventory") {
  const std::string one = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\n";
  CHECK(lint(one).findings.empty());
  gpuguard::test::LintOptions o;
  o.complete = true;
  auto r = lint(one, o);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].rule == "priority-class-count");
  CHECK(r.findings[0].pos == Pos{3, 12});
  auto none = lint("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n", o);
  REQUIRE(none.findings.size() == 1);
  CHECK(none.findings[0].object.id == kNoObject);
}

TEST_CASE("namespaced objects without a namespace get the default one") {
  gpuguard::test::LintOptions o;
  o.config_yaml = "defaultNamespace: team-a\n";
  std::string pod = bad_pod();
  pod.erase(pod.find("  namespace: ml\n"), 16);
  auto r = lint(pod, o);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].object.namespace_() == "team-a");
}

TEST_CASE("findings are sorted by file position, then rule") {
  auto r = lint(bad_pod() + "---\n" + bad_pod());
  REQUIRE(r.findings.size() == 2);
  CHECK(r.findings[0].pos.line < r.findings[1].pos.line);
}

TEST_CASE("an inventory lists in insertion order; a replaced object keeps its place; a removed one is gone") {
  Inventory inv(std::set<KindRef>{{"", "ConfigMap"}});
  auto add = [&](const std::string& name, const std::string& value) {
    auto o = gpuguard::test::load_objects("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: x}\ndata: {v: \"" +
                                          value + "\"}\n");
    o[0].id = inv.next_id();
    inv.add(std::make_shared<Object>(std::move(o[0])), "x");
  };
  add("a", "1");
  add("b", "1");
  add("c", "1");
  add("b", "2");  // replaced, as a later apply would
  auto names = [&](const std::vector<const Object*>& list) {
    std::string out;
    for (const Object* o : list) out += o->name + "=" + o->body()["data"]["v"].get<std::string>() + " ";
    return out;
  };
  CHECK(names(inv.list("", "ConfigMap")) == "a=1 b=2 c=1 ");
  CHECK(names(inv.list("", "ConfigMap", "x")) == "a=1 b=2 c=1 ");
  CHECK(inv.list("", "ConfigMap", "y").empty());
  inv.remove("", "ConfigMap", "x", "a");
  CHECK(names(inv.list("", "ConfigMap")) == "b=2 c=1 ");
  CHECK(names(inv.list("", "ConfigMap", "x")) == "b=2 c=1 ");
  CHECK(inv.find("", "ConfigMap", "x", "b")->body()["data"]["v"] == json("2"));
  CHECK(inv.size() == 2);
}

TEST_CASE("a layered inventory sees its base, minus what it replaces or removes") {
  auto base = std::make_shared<Inventory>(std::set<KindRef>{{"scheduling.k8s.io", "PriorityClass"}});
  auto objs = gpuguard::test::load_objects(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\n---\n"
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: b}\nvalue: 2\n");
  uint32_t id = 0;
  for (auto& o : objs) {
    o.id = id++;
    base->add(std::make_shared<Object>(std::move(o)), "");
  }
  Inventory layer = Inventory::layered(base);
  CHECK(layer.list("scheduling.k8s.io", "PriorityClass").size() == 2);
  auto repl = gpuguard::test::load_objects("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 7\n");
  repl[0].id = layer.next_id();
  layer.add(std::make_shared<Object>(std::move(repl[0])), "");
  auto list = layer.list("scheduling.k8s.io", "PriorityClass");
  REQUIRE(list.size() == 2);
  CHECK(layer.find("scheduling.k8s.io", "PriorityClass", "", "a")->body()["value"] == json(7));
  layer.remove("scheduling.k8s.io", "PriorityClass", "", "b");
  CHECK(layer.list("scheduling.k8s.io", "PriorityClass").size() == 1);
  CHECK(layer.find("scheduling.k8s.io", "PriorityClass", "", "b") == nullptr);
  CHECK(layer.size() == 1);
  CHECK(base->size() == 2);
}

TEST_CASE("the webhook's view: one admitted object over a complete state, in focus") {
  // Five classes in the state; admitting a sixth warns on the sixth, and only on it.
  std::string state;
  for (int i = 0; i < 5; ++i)
    state += "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: c" + std::to_string(i) + "}\nvalue: " +
             std::to_string(i) + "\n";
  Config config = default_config(gpuguard::test::registry());
  Evaluation eval(gpuguard::test::registry(), config,
                  admitting_over(complete_state({{"scheduling.k8s.io", "PriorityClass"}}, state)));
  auto sixth = gpuguard::test::load_objects("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: c5}\nvalue: 9\n");
  eval.add(std::move(sixth[0]));
  Result r = eval.finish();
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].object.name() == "c5");
  CHECK(r.findings[0].message.find("6 user PriorityClasses") != std::string::npos);
}

TEST_CASE("the webhook's view: cross-object LimitRange rules report on the admitted LimitRange only") {
  // The state's LimitRange exceeds the quota too; admitting another reports the admitted one.
  auto base = complete_state(
      {{"", "LimitRange"}, {"", "ResourceQuota"}},
      "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpu, namespace: team-a}\nspec: {hard: {requests.nvidia.com/gpu: 4}}\n"
      "---\napiVersion: v1\nkind: LimitRange\nmetadata: {name: old, namespace: team-a}\n"
      "spec: {limits: [{type: Container, max: {nvidia.com/gpu: 8}, default: {nvidia.com/gpu: 0}}]}\n");
  Config config = default_config(gpuguard::test::registry());
  EvalOptions eo = admitting_over(base);
  eo.only_rules = {"limitrange-exceeds-quota"};
  Evaluation eval(gpuguard::test::registry(), config, eo);
  auto admitted = gpuguard::test::load_objects(
      "apiVersion: v1\nkind: LimitRange\nmetadata: {name: new, namespace: team-a}\n"
      "spec: {limits: [{type: Container, max: {nvidia.com/gpu: 6}, default: {nvidia.com/gpu: 0}}]}\n");
  eval.add(std::move(admitted[0]));
  Result r = eval.finish();
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].rule == "limitrange-exceeds-quota");
  CHECK(r.findings[0].object.name() == "new");
  CHECK(r.findings[0].pointer == "/spec/limits/0/max/nvidia.com~1gpu");
}

TEST_CASE("finish frees the kept objects unless told to leave them to the end of the process") {
  const std::string yaml =
      "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr, namespace: team-a}\n"
      "spec: {limits: [{type: Container, default: {nvidia.com/gpu: 1}}]}\n"
      "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: team-a}\nspec: {hard: {requests.nvidia.com/gpu: 4}}\n"
      "---\n" + bad_pod();
  Config config = default_config(gpuguard::test::registry());
  std::vector<std::string> reports;
  for (bool teardown : {true, false})
    for (unsigned jobs : {1u, 2u}) {
      CAPTURE(teardown);
      CAPTURE(jobs);
      EvalOptions eo;
      eo.complete = true;
      eo.jobs = jobs;
      eo.teardown = teardown;
      Evaluation eval(gpuguard::test::registry(), config, eo);
      const PositionIndex* loaded = nullptr;  // the LimitRange's document as the loader made it
      for (auto& o : gpuguard::test::load_objects(yaml)) {
        if (o.is("", "LimitRange")) {
          CHECK(o.doc.use_count() == 2);  // the object's alone: its document and its positions
          loaded = o.doc.get();
        }
        eval.add(std::move(o));
      }
      const size_t kept = eval.inventory().size();
      CHECK(kept >= 2);  // the LimitRange and the ResourceQuota, read by cross-object rules
      // A kept object's document is a compact copy of the loader's (no spare capacity), made
      // before the rules read it.
      const Object* lr = eval.inventory().find("", "LimitRange", "team-a", "lr");
      REQUIRE(lr);
      CHECK(lr->doc.get() != loaded);
      CHECK(lr->doc == lr->positions);
      CHECK(lr->name == "lr");
      Result r = eval.finish();
      CHECK(eval.inventory().size() == (teardown ? 0 : kept));
      std::string report;
      for (const auto& f : r.findings) report += f.rule + " " + f.pointer + " " + f.message + "\n";
      CHECK(!r.findings.empty());
      reports.push_back(report);
    }
  for (const auto& report : reports) CHECK(report == reports.front());
}

TEST_CASE("precheck checks a run piece by piece as it is parsed, and frees the bodies it is done with") {
  // Kept kinds (the LimitRange, the ResourceQuota) and objects only checked (the pods), in two runs
  // checked ahead in pieces of one, two and three objects, as `lint --jobs` does while it parses:
  // the second run first, as a second thread may, before the first is counted, with documents
  // numbered from its own start (a later part of a split file). Rules report on pods of the second
  // run in `finish`, from refs their states kept, and one such pod is exempt from one of them.
  std::string yaml =
      "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr, namespace: team-a}\n"
      "spec: {limits: [{type: Container, default: {nvidia.com/gpu: 1}}]}\n"
      "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: team-a}\nspec: {hard: {requests.nvidia.com/gpu: 4}}\n";
  for (int i = 0; i < 6; ++i) {
    std::string pod = bad_pod(i == 4 ? "  annotations: {gpuguard.io/ignore: priority-class-unknown}\n" : "");
    pod.replace(pod.find("name: "), 6, "name: p" + std::to_string(i) + "-");
    if (i % 2 == 0) pod.replace(pod.find("namespace: ml"), 13, "namespace: team-a");  // under the LimitRange
    yaml += "---\n" + pod;
  }
  Config config = default_config(gpuguard::test::registry());
  EvalOptions eo;
  eo.complete = true;
  eo.list_checked = true;  // the report below lists the objects checked
  auto report = [](const Result& r) {
    std::string s;
    for (const auto& f : r.findings)
      s += f.rule + " " + f.object.name() + " " + std::to_string(f.object.id) + " " + std::to_string(f.object.document) +
           " " + f.pointer + " " + std::to_string(f.pos.line) + ":" + std::to_string(f.pos.col) + " " + f.message +
           (f.suppressed ? " (suppressed)" : "") + "\n";
    for (const auto& c : r.checked)  // the objects checked (JUnit's test cases)
      s += "checked " + c.name() + " " + std::to_string(c.id) + " " + std::to_string(c.document) + "\n";
    return s;
  };
  Evaluation plain(gpuguard::test::registry(), config, eo);
  for (auto& o : gpuguard::test::load_objects(yaml)) plain.add(std::move(o));
  const std::string expected = report(plain.finish());
  REQUIRE(!expected.empty());
  CHECK(expected.find("priority-class-unknown p4-p 6 6 ") != std::string::npos);
  CHECK(expected.find("dcgm-exporter-disabled p5-p 7 7 ") != std::string::npos);
  CHECK(expected.find("(suppressed)") != std::string::npos);

  Evaluation ahead(gpuguard::test::registry(), config, eo);
  std::vector<Object> all = gpuguard::test::load_objects(yaml);
  REQUIRE(all.size() == 8);
  std::vector<std::vector<Object>> runs(2);
  const size_t pieces[2][3] = {{1, 2, 1}, {3, 1, 0}};  // run 1: objects 0..3, run 2: 4..7
  for (size_t r : {1, 0}) {
    size_t next = r * 4;
    for (size_t piece : pieces[r]) {
      const size_t from = runs[r].size();
      for (size_t k = 0; k < piece; ++k) {
        runs[r].push_back(std::move(all[next++]));
        runs[r].back().document -= static_cast<uint32_t>(r * 4);
        runs[r].back().id = 1000;  // not an id: `add` gives it
      }
      ahead.precheck(runs[r], from);
    }
    REQUIRE(next == r * 4 + 4);
  }
  size_t freed = 0;
  for (auto& run : runs)
    for (auto& o : run) {
      CAPTURE(o.gvk.kind);
      if (ahead.inventory().keeps(o.gvk.group, o.gvk.kind)) {
        CHECK(member(o.root(), "spec"));  // still read by the cross-object rules
      } else {
        CHECK_FALSE(o.root());  // done with: every rule that reads a pod checked it ahead
        CHECK(o.body().empty());
        CHECK(o.positions == nullptr);
        ++freed;
      }
    }
  CHECK(freed == 6);
  for (size_t r = 0; r < 2; ++r)
    for (auto& o : runs[r]) {
      o.document += static_cast<uint32_t>(r * 4);  // where its run starts, now known
      ahead.add(std::move(o));
    }
  CHECK(report(ahead.finish()) == expected);
}

TEST_CASE("apply_fix changes an object as nlohmann's patch does, or throws and leaves it as it was") {
  const json object = json::parse(R"({"spec": {"name": "a", "n": 1, "list": [1, {"k": "v"}], "empty": null,
                                              "tolerations": [{"key": "x"}]}, "kind": "Pod"})");
  const char* fixes[] = {
      // one add, replace or remove: applied in place
      R"([{"op": "add", "path": "/spec/priorityClassName", "value": "tier-1"}])",
      R"([{"op": "add", "path": "/spec/name", "value": "a"}])",      // the same value: no change
      R"([{"op": "add", "path": "/spec/name", "value": "b"}])",
      R"([{"op": "add", "path": "/spec/n", "value": 1.0}])",         // equal as JSON: no change
      R"([{"op": "add", "path": "/spec/list/-", "value": 1}])",      // arrays grow even by an equal value
      R"([{"op": "add", "path": "/spec/list/0", "value": 1}])",
      R"([{"op": "add", "path": "/spec/list/2", "value": 3}])",
      R"([{"op": "add", "path": "/spec/list/3", "value": 3}])",      // past the end
      R"([{"op": "add", "path": "/spec/list/01", "value": 3}])",     // a leading zero
      R"([{"op": "add", "path": "/spec/empty/x", "value": 3}])",     // a null parent becomes an object
      R"([{"op": "add", "path": "/spec/missing/x", "value": 3}])",   // no parent
      R"([{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "nvidia.com/gpu"}}])",
      R"([{"op": "add", "path": "", "value": {"kind": "Pod"}}])",
      R"([{"op": "add", "path": "", "value": {"kind": "Pod", "spec": {"name": "a", "n": 1, "list": [1, {"k": "v"}],
          "empty": null, "tolerations": [{"key": "x"}]}}}])",
      R"([{"op": "add", "path": "spec", "value": 1}])",              // not a pointer
      R"([{"op": "add", "path": "/spec/x"}])",                       // no value
      R"([{"op": "replace", "path": "/spec/name", "value": "a"}])",
      R"([{"op": "replace", "path": "/spec/name", "value": "c"}])",
      R"([{"op": "replace", "path": "/spec/missing", "value": "c"}])",
      R"([{"op": "replace", "path": "/spec/list/1", "value": {"k": "v"}}])",
      R"([{"op": "replace", "path": "/spec/list/1", "value": {"k": "w"}}])",
      R"([{"op": "replace", "path": "/spec/list/2", "value": 1}])",
      R"([{"op": "replace", "path": "/spec/list/-", "value": 1}])",
      R"([{"op": "remove", "path": "/spec/name"}])",
      R"([{"op": "remove", "path": "/spec/name", "value": "a"}])",  // a remove's value means nothing
      R"([{"op": "remove", "path": "/spec/list/0", "value": 1}])",
      R"([{"op": "replace", "path": "/spec/empty/x", "value": 3}])",   // inside a null: nlohmann's answer
      R"([{"op": "replace", "path": "/spec/name/x", "value": 3}])",    // inside a string: nlohmann's answer
      R"([{"op": "remove", "path": "/spec/empty/x"}])",
      R"([{"op": "remove", "path": "/spec/missing"}])",
      R"([{"op": "remove", "path": "/spec/list/1"}])",
      R"([{"op": "remove", "path": "/spec/list/5"}])",
      R"([{"op": "remove", "path": ""}])",
      // others: applied to a copy
      R"([{"op": "test", "path": "/spec/name", "value": "a"}])",
      R"([{"op": "test", "path": "/spec/name", "value": "b"}])",
      R"([{"op": "move", "from": "/spec/name", "path": "/spec/other"}])",
      R"([{"op": "move", "from": "/spec/name", "path": "/spec/name"}])",
      R"([{"op": "move", "from": "/spec", "path": "/spec/inner"}])",       // into itself: no parent then
      R"([{"op": "move", "from": "/spec/list/0", "path": "/spec/list/-"}])",
      R"([{"op": "move", "from": "", "path": "/x"}])",
      R"([{"op": "move", "from": "/spec/missing", "path": "/x"}])",
      R"([{"op": "move", "from": 1, "path": "/x"}])",
      R"([{"op": "copy", "from": "/spec/list", "path": "/spec/list/1"}])",
      R"([{"op": "copy", "from": "/spec/name", "path": "/spec/empty/x"}])",
      R"([{"op": "copy", "path": "/spec/x"}])",
      R"([{"op": "add", "path": "/spec/a", "value": 1}, {"op": "test", "path": "/spec/a", "value": 1}])",
      R"([{"op": "add", "path": "/spec/a", "value": 1}, {"op": "test", "path": "/spec/a", "value": 2}])",
      R"([{"op": "remove", "path": "/spec/list/0"}, {"op": "replace", "path": "/spec/list/0", "value": 7}])",
      // nlohmann reads "path" before "from": its error comes first
      R"([{"op": "copy", "from": "/missing", "path": "x"}])",
      R"([{"op": "move", "from": "", "path": "x"}])",
      R"([{"op": "copy", "from": "/~2", "path": "x"}])",
      R"([{"op": "move", "from": "/-", "path": "/~2"}])",
      R"([{"op": "move", "from": "/spec/list/-", "path": "/x"}])",
      R"([{"op": "move", "path": "/x"}])",
      R"([{"op": "move", "from": "/kind"}])",
      R"([{"op": "copy", "from": "/kind", "path": 5}])",
      R"([{"op": "copy", "from": "/spec/name", "path": "/spec/missing/x"}])",
      R"([{"op": "add", "path": "/spec/a", "value": 1}, {"op": "add", "path": "/spec/missing/b", "value": 2}])",
      R"([{"op": "add", "path": "/spec/a", "value": 1}, {"op": "remove", "path": "/spec/a"}])",
      R"([{"op": "frob", "path": "/spec/a"}])",
      R"([{"path": "/spec/a", "value": 1}])",
      R"([])",
      R"({"op": "add", "path": "/spec/a", "value": 1})",
      R"([1])",
  };
  // A target inside a string or number does not exist (nlohmann's add would assert): an error,
  // also in a fix of several operations, and for a move's or copy's add.
  for (const char* text : {R"([{"op": "add", "path": "/spec/name/x", "value": 3}])", R"([{"op": "remove", "path": "/spec/name/x"}])",
                           R"([{"op": "add", "path": "/spec/n/x", "value": 3}])", R"([{"op": "remove", "path": "/spec/n/0"}])",
                           R"([{"op": "add", "path": "/spec/a", "value": 1}, {"op": "add", "path": "/spec/name/x", "value": 3}])",
                           R"([{"op": "add", "path": "/spec/a", "value": 1}, {"op": "remove", "path": "/spec/n/x"}])",
                           R"([{"op": "move", "from": "/kind", "path": "/spec/name/x"}])",
                           R"([{"op": "copy", "from": "/kind", "path": "/spec/n/-"}])"}) {
    CAPTURE(text);
    json got = object;
    CHECK_THROWS_AS(apply_fix(got, json::parse(text)), std::invalid_argument);
    CHECK(gpuguard::engine::identical(got, object));
  }
  // An object holding a NaN: a fix that adds the value already there changes nothing (comparing
  // whole objects saw a change every time, since NaN != NaN).
  {
    json with_nan = object;
    with_nan["spec"]["ratio"] = std::nan("");
    CHECK_FALSE(apply_fix(with_nan, json::parse(R"([{"op": "add", "path": "/spec/name", "value": "a"}])")));
    // Nor does a fix of several operations, a move or a copy that ends where it began.
    CHECK_FALSE(apply_fix(with_nan, json::parse(R"([{"op": "add", "path": "/spec/name", "value": "a"}, {"op": "test", "path": "/spec/name", "value": "a"}])")));
    CHECK_FALSE(apply_fix(with_nan, json::parse(R"([{"op": "copy", "from": "/spec/name", "path": "/spec/name"}])")));
    CHECK_FALSE(apply_fix(with_nan, json::parse(R"([{"op": "move", "from": "/spec/ratio", "path": "/spec/ratio"}])")));
    CHECK_FALSE(apply_fix(with_nan, json::parse(R"([{"op": "add", "path": "/spec/n", "value": 1.0}, {"op": "test", "path": "/spec/n", "value": 1}])")));
    // A NaN written over a NaN is no change either, alone or with others.
    for (const char* verb : {"add", "replace"}) {
      CHECK_FALSE(apply_fix(with_nan, patch_of(patch_op(verb, "/spec/ratio", std::nan("")))));
      json fix = patch_of(patch_op(verb, "/spec/ratio", std::nan("")));
      fix.push_back(patch_op("test", "/spec/name", "a"));
      CHECK_FALSE(apply_fix(with_nan, fix));
    }
    json other = with_nan;
    CHECK(apply_fix(other, patch_of(patch_op("replace", "/spec/ratio", 1))));
    CHECK(other["spec"]["ratio"] == 1);
    other = with_nan;
    CHECK(apply_fix(other, json::parse(R"([{"op": "add", "path": "/spec/x", "value": 1}, {"op": "move", "from": "/spec/ratio", "path": "/r"}])")));
    CHECK(std::isnan(other["r"].get<double>()));
    CHECK(apply_fix(with_nan, json::parse(R"([{"op": "add", "path": "/spec/name", "value": "b"}])")));
    CHECK(with_nan["spec"]["name"] == "b");
  }
  for (const char* text : fixes) {
    CAPTURE(text);
    const json fix = json::parse(text);
    json expected = object;
    int expected_error = 0;  // nlohmann's exception's id
    try {
      expected = object.patch(fix);
    } catch (const json::exception& e) {
      expected_error = e.id;
    }
    json got = object;
    if (expected_error != 0) {
      int error = 0;
      try {
        apply_fix(got, fix);
      } catch (const json::exception& e) {
        error = e.id;
      }
      CHECK(error == expected_error);
      CHECK(gpuguard::engine::identical(got, object));
    } else {
      bool changed = false;
      CHECK_NOTHROW(changed = apply_fix(got, fix));
      CHECK(changed == (expected != object));
      CHECK(gpuguard::engine::identical(got, changed ? expected : object));
    }
  }
}

TEST_CASE("an object the caller shares is the caller's alone again once the evaluation finished") {
  auto objs = gpuguard::test::load_objects(bad_pod());
  Config config = default_config(gpuguard::test::registry());
  for (bool focus : {false, true}) {
    EvalOptions eo;
    eo.focus_on_added = focus;
    Evaluation eval(gpuguard::test::registry(), config, eo);
    auto shared = std::make_shared<Object>(objs[0]);
    eval.add(shared);
    Result r = eval.finish();
    CHECK_FALSE(r.findings.empty());
    CHECK(shared.use_count() == 1);  // mutate() takes the body back instead of copying it
  }
  Evaluation eval(gpuguard::test::registry(), config);
  CHECK_THROWS_AS(eval.add(std::shared_ptr<Object>()), std::invalid_argument);
}

TEST_CASE("json_diff makes nlohmann's diff, operation for operation") {
  // Random trees, and random edits of them: values changed, types changed (1 and 1.0 are equal),
  // members added and removed, arrays grown and shrunk, keys with ~ and /, NaN.
  RandomTrees trees;
  int with_ops = 0;
  for (int n = 0; n < 3000; ++n) {
    const json a = trees.make(0);
    const json b = trees.pick(4) == 0 ? a : trees.edit(a, 0);
    const json mine = json_diff(a, b);
    REQUIRE_MESSAGE(mine.dump() == json::diff(a, b).dump(), (a.dump() + " → " + b.dump()));  // dump: NaN is not == NaN
    if (!mine.empty()) ++with_ops;
  }
  CHECK(with_ops > 500);  // the edits made differences to find (802 of 3000 with this seed)
}

TEST_CASE("json_diff told where the target changed makes the same operations, from JSON or a document") {
  // The same random trees and edits (without NaN, which json_diff sees as changed wherever it is),
  // each edit noting its pointer as a fix's operations would; now and then a pointer that leads
  // nowhere, or text that is not a pointer (the whole is then diffed).
  RandomTrees trees(20261206, false);
  int with_ops = 0;
  for (int n = 0; n < 3000; ++n) {
    const json a = trees.make(0);
    std::vector<std::string> written;
    const json b = trees.pick(4) == 0 ? a : trees.edit(a, 0, "", &written);
    switch (trees.pick(8)) {
      case 0: written.emplace_back("/nowhere/at/all"); break;
      case 1: written.emplace_back("/a/~1/c~0d/0/-"); break;
      case 2: written.emplace_back("no pointer"); break;
      default: break;
    }
    const std::string expected = json::diff(a, b).dump();
    const std::string context = a.dump() + " → " + b.dump();
    REQUIRE_MESSAGE(json_diff(a, b, written).dump() == expected, context);
    const auto doc = PositionIndex::from_json(a);
    REQUIRE_MESSAGE(json_diff(Node(doc.get(), 0), b, written).dump() == expected, context);
    if (expected != "[]") ++with_ops;
  }
  CHECK(with_ops > 500);
  // Only where it is told: a NaN elsewhere is not replaced by itself, a change elsewhere not seen.
  const json a = json::parse(R"({"spec": {"name": "a", "list": [1, 2]}, "kind": "Pod"})");
  json b = a;
  b["spec"]["name"] = "b";
  b["kind"] = "Job";
  CHECK(json_diff(a, b, {"/spec/name"}) == json::parse(R"([{"op": "replace", "path": "/spec/name", "value": "b"}])"));
  CHECK(json_diff(a, b, {}).empty());
  json x = a, y = b;
  x["spec"]["ratio"] = y["spec"]["ratio"] = std::nan("");
  CHECK(json_diff(x, y, {"/spec/name", "/kind"}) == json_diff(a, b));
  CHECK(json_diff(x, y).size() == 3);
}

namespace {

// What apply_fix must do with a fix, found by nlohmann's patch itself, one operation at a time:
// the fixed object; or the id of the json::exception nlohmann throws; or kRefused where nlohmann
// would assert (an add, also a move's or copy's, inside a string, number or boolean) or do nothing
// (a remove there), which apply_fix refuses with std::invalid_argument.
constexpr int kRefused = -1;

std::variant<json, int> patched(json object, const json& fix) {
  if (!fix.is_array()) {
    try {
      (void)object.patch(fix);
    } catch (const json::exception& e) {
      return e.id;
    }
  }
  for (const json& op : fix) {
    auto text = [&](const char* field) -> std::optional<std::string> {
      if (op.is_object() && op.contains(field) && op[field].is_string()) return op[field].get<std::string>();
      return std::nullopt;
    };
    const std::string verb = text("op").value_or("");
    const auto path = text("path");
    const auto from = text("from");
    bool refused = false;
    if (path && (verb == "remove" || (verb == "add" && op.contains("value")) || ((verb == "move" || verb == "copy") && from))) {
      try {  // whatever throws here, nlohmann's patch throws below
        const json::json_pointer ptr(*path);
        json scratch = object;  // what the operation adds to: for a move, once "from" is removed
        if (from && verb != "add" && verb != "remove") {
          (void)scratch.at(json::json_pointer(*from));
          if (verb == "move") scratch = scratch.patch(patch_of(patch_op("remove", *from)));
        }
        if (!ptr.empty()) {
          const json& parent = std::as_const(scratch).at(ptr.parent_pointer());
          refused = !parent.is_object() && !parent.is_array() && !parent.is_null();
        }
      } catch (const json::exception&) {
      }
    }
    if (refused) return kRefused;
    try {
      object = object.patch(json::array({op}));
    } catch (const json::exception& e) {
      return e.id;
    }
  }
  return object;
}

}  // namespace

TEST_CASE("apply_fix applies random fixes as nlohmann's patch does, and json_diff told where they wrote makes nlohmann's diff") {
  // Random fixes of one to three operations of every kind (add, remove, replace, move, copy, test),
  // at pointers of the tree's own members and items, below them (also below a string or number),
  // through arrays, at "-", into nulls; applied with apply_fix as mutate applies them, each checked
  // against patched() above, their pointers noted with note_written.
  RandomTrees trees(20261207, false);
  auto pointers = [](const json& j) {
    std::vector<std::string> out;
    std::function<void(const json&, const std::string&)> walk = [&](const json& v, const std::string& at) {
      if (!at.empty()) out.push_back(at);  // (the root is not a target)
      if (v.is_object())
        for (const auto& [k, m] : v.items()) walk(m, RandomTrees::below(at, k));
      if (v.is_array())
        for (size_t i = 0; i < v.size(); ++i) walk(v[i], at + "/" + std::to_string(i));
    };
    walk(j, "");
    return out;
  };
  int applied = 0, moved = 0, several = 0, refused = 0, failed = 0;
  for (int n = 0; n < 4000; ++n) {
    json a = json::object();
    for (int m = trees.pick(3); m >= 0; --m) {
      json value = trees.make(1);
      a[trees.key()] = std::move(value);
    }
    json b = a;
    std::vector<std::string> written;
    for (int f = trees.pick(4); f >= 0; --f) {
      const std::vector<std::string> at = pointers(b);
      if (at.empty()) break;  // every member removed
      auto some = [&] { return at[static_cast<size_t>(trees.pick(static_cast<int>(at.size())))]; };
      json fix = json::array();
      for (int o = trees.pick(3); o >= 0; --o) {
        static const char* kOps[] = {"add", "remove", "replace", "move", "copy", "test"};
        const std::string verb = kOps[trees.pick(6)];
        std::string path = some();
        switch (trees.pick(4)) {
          case 0: path = RandomTrees::below(path, trees.key()); break;  // a member that may not be there
          case 1: path += trees.pick(2) == 0 ? "/-" : "/0"; break;       // an array's end or start
          default: break;
        }
        json op = patch_op(verb, path, trees.make(2));
        if (verb == "move" || verb == "copy") op["from"] = some();
        switch (trees.pick(16)) {  // now and then an operation nlohmann refuses, for its error
          case 0: op["path"] = trees.pick(2) == 0 ? "x" : "/~2"; break;                  // not a pointer
          case 1: op["from"] = std::vector<std::string>{"", "/-", "/~2", "y"}[static_cast<size_t>(trees.pick(4))]; break;
          case 2: op.erase(std::vector<std::string>{"op", "path", "value", "from"}[static_cast<size_t>(trees.pick(4))]); break;
          case 3: op["op"] = trees.pick(2) == 0 ? json("frob") : json(1); break;
          case 4: op = trees.pick(2) == 0 ? json(7) : json::array(); break;
          default: break;
        }
        fix.push_back(std::move(op));
      }
      const std::variant<json, int> expected = patched(b, fix);
      const std::string context = b.dump() + " + " + fix.dump();
      json before = b;
      bool changed = false;
      if (const int* id = std::get_if<int>(&expected)) {
        if (*id == kRefused) {
          REQUIRE_THROWS_AS_MESSAGE(apply_fix(b, fix), std::invalid_argument, context);
          ++refused;
        } else {
          int got = 0;
          try {
            apply_fix(b, fix);
          } catch (const json::exception& e) {
            got = e.id;
          }
          REQUIRE_MESSAGE(got == *id, context);  // nlohmann's error, the same one
          ++failed;
        }
        REQUIRE_MESSAGE(gpuguard::engine::identical(b, before), context);
        continue;
      }
      const json& fixed = std::get<json>(expected);
      REQUIRE_NOTHROW_MESSAGE(changed = apply_fix(b, fix), context);
      REQUIRE_MESSAGE(changed == (fixed != before), context);
      REQUIRE_MESSAGE(gpuguard::engine::identical(b, changed ? fixed : before), context);
      if (changed) {
        note_written(fix, written);
        ++applied;
        several += fix.size() > 1 ? 1 : 0;
        moved += std::any_of(fix.begin(), fix.end(), [](const json& op) { return op["op"] == "move"; }) ? 1 : 0;
      }
    }
    const std::string expected = json::diff(a, b).dump();
    const std::string context = a.dump() + " → " + b.dump();
    REQUIRE_MESSAGE(json_diff(a, b, written).dump() == expected, context);
    const auto doc = PositionIndex::from_json(a);
    REQUIRE_MESSAGE(json_diff(Node(doc.get(), 0), b, written).dump() == expected, context);
  }
  MESSAGE("fixes applied: " << applied << ", of several operations: " << several << ", with a move: " << moved
                            << "; refused: " << refused << "; nlohmann's errors: " << failed);
  CHECK(applied > 1200);  // 1,379 with this seed
  CHECK(several > 350);   // 436
  CHECK(moved > 180);     // 226
  CHECK(refused > 1400);  // 1,722
  CHECK(failed > 5000);   // 6,486 (most fixes of several operations meet one that does not apply)
  // A move's "from" is where it wrote too.
  std::vector<std::string> written;
  note_written(json::parse(R"([{"op": "move", "from": "/a", "path": "/b"}, {"op": "copy", "from": "/c", "path": "/d"}])"), written);
  CHECK(written == std::vector<std::string>{"/b", "/a", "/d"});
}

TEST_CASE("patch_op makes the operation the initializer list makes") {
  CHECK(patch_op("add", "/a/b", json::array({1, "x"})) == json({{"op", "add"}, {"path", "/a/b"}, {"value", json::array({1, "x"})}}));
  CHECK(patch_op("remove", "/a") == json({{"op", "remove"}, {"path", "/a"}}));
  CHECK(patch_of(patch_op("replace", "", nullptr)).dump() == R"([{"op":"replace","path":"","value":null}])");
}

TEST_CASE("mutate applies fixes to a fixed point and returns an RFC 6902 patch") {
  auto objs = gpuguard::test::load_objects(bad_pod());
  Config config = default_config(gpuguard::test::registry());
  MutateResult m = mutate(objs[0], gpuguard::test::registry(), config);
  CHECK(m.diagnostics.empty());
  CHECK(m.object["spec"]["containers"][0]["resources"]["limits"] == json({{"nvidia.com/gpu", 1}}));
  REQUIRE(m.patch.size() == 1);
  CHECK(m.patch[0]["path"] == json("/spec/containers/0/resources/limits"));
  CHECK(objs[0].body().patch(m.patch) == m.object);
  CHECK(json_diff(objs[0].body(), m.object) == m.patch);  // the original is as it was
  // Mutating the result again changes nothing.
  Object again = objs[0];
  again.set_body(m.object);
  again.positions = nullptr;
  CHECK(mutate(again, gpuguard::test::registry(), config).patch.empty());
}

namespace {
// The bad pod evaluated with an annotation policy (and a config and user for AnnotationExemptions::admission).
Result judged(const std::string& annotations, AnnotationExemptions policy, const std::string& config_yaml = "",
              const RequestUser* user = nullptr) {
  Config config = default_config(gpuguard::test::registry());
  if (!config_yaml.empty()) {
    auto c = load_config(config_yaml, ".gpuguard.yaml", gpuguard::test::registry());
    REQUIRE(c.has_value());
    config = std::move(*c);
  }
  EvalOptions eo;
  eo.annotations = policy;
  eo.user = user;
  Evaluation eval(gpuguard::test::registry(), config, eo);
  for (auto& o : gpuguard::test::load_objects(bad_pod(annotations))) eval.add(std::move(o));
  return eval.finish();
}
}  // namespace

TEST_CASE("annotation policies: honoured (lint), never (--no-annotation-exemptions), as the webhook's config allows") {
  const std::string ann = "  annotations: {gpuguard.io/ignore: \"*\", gpuguard.io/ignore-reason: legacy}\n";
  auto honour = judged(ann, AnnotationExemptions::honour);
  REQUIRE(honour.findings.size() == 1);
  CHECK(honour.findings[0].suppressed);
  CHECK(honour.findings[0].annotation == Finding::Annotation::exempted);
  CHECK(honour.findings[0].suppression == "legacy");

  auto never = judged(ann, AnnotationExemptions::never);
  REQUIRE(never.findings.size() == 1);
  CHECK_FALSE(never.findings[0].suppressed);
  CHECK(never.findings[0].annotation == Finding::Annotation::not_honoured);
  CHECK(never.findings[0].suppression == "gpuguard.io/ignore not honoured: --no-annotation-exemptions");

  auto off = judged(ann, AnnotationExemptions::admission);  // the default config: off
  REQUIRE(off.findings.size() == 1);
  CHECK_FALSE(off.findings[0].suppressed);
  CHECK(off.findings[0].suppression == honour_note(NotHonoured::off));

  const RequestUser ci{"ci", {}};
  const std::string by_user = "webhook: {exemptions: {annotations: true, allow: [{users: [ci]}]}}\n";
  CHECK(judged(ann, AnnotationExemptions::admission, by_user, &ci).findings[0].suppressed);
  CHECK(judged(ann, AnnotationExemptions::admission, by_user, nullptr).findings[0].suppression == honour_note(NotHonoured::user));

  // A reason is kept to its first 256 bytes, cut between characters.
  std::string long_reason;
  for (int i = 0; i < 5000; ++i) long_reason += "\u00e9";
  auto cut = judged("  annotations: {gpuguard.io/ignore: \"*\", gpuguard.io/ignore-reason: \"" + long_reason + "\"}\n",
                    AnnotationExemptions::honour);
  REQUIRE(cut.findings.size() == 1);
  CHECK(cut.findings[0].suppression.size() <= kMaxIgnoreReason);
  CHECK(cut.findings[0].suppression == long_reason.substr(0, 252) + "\u2026");

  // Without an annotation naming the rule: no note, whatever the policy.
  auto plain = judged("", AnnotationExemptions::never);
  REQUIRE(plain.findings.size() == 1);
  CHECK(plain.findings[0].annotation == Finding::Annotation::none);
  CHECK(plain.findings[0].suppression.empty());
  // A config exclusion is the operator's: it suppresses whatever the policy, and is no annotation's exemption.
  auto excluded = judged(ann, AnnotationExemptions::never, "exclude: [{namespace: ml, reason: lab}]\n");
  CHECK(excluded.findings[0].suppressed);
  CHECK(excluded.findings[0].annotation == Finding::Annotation::none);
  CHECK(excluded.findings[0].suppression == "lab");
}

TEST_CASE("mutate applies a rule's fix only in enforce mode and unless fix: false") {
  auto objs = gpuguard::test::load_objects(bad_pod());
  for (const char* yaml : {"rules: {gpu-request-limit-mismatch: {mode: audit}}\n", "rules: {gpu-request-limit-mismatch: {mode: warn}}\n",
                           "rules: {gpu-request-limit-mismatch: {fix: false}}\n"}) {
    CAPTURE(yaml);
    auto c = load_config(yaml, ".gpuguard.yaml", gpuguard::test::registry());
    REQUIRE(c.has_value());
    MutateResult m = mutate(objs[0], gpuguard::test::registry(), *c);
    CHECK(m.patch.empty());
    CHECK(m.rules.empty());
    CHECK(m.object == objs[0].body());
    const auto plan = mutation_plan(gpuguard::test::registry(), *c);
    REQUIRE(plan);
    CHECK(std::none_of(plan->rules().begin(), plan->rules().end(), [](const Rule* r) { return r->info().id == "gpu-request-limit-mismatch"; }));
  }
  auto c = load_config("rules: {gpu-request-limit-mismatch: {mode: enforce, fix: true}}\n", ".gpuguard.yaml", gpuguard::test::registry());
  REQUIRE(c.has_value());
  CHECK(mutate(objs[0], gpuguard::test::registry(), *c).rules == std::vector<std::string>{"gpu-request-limit-mismatch"});
}

TEST_CASE("mutate: an exempted fix is not applied and is listed; one whose annotation is not honoured is applied") {
  auto objs = gpuguard::test::load_objects(bad_pod("  annotations: {gpuguard.io/ignore: gpu-request-limit-mismatch, gpuguard.io/ignore-reason: r}\n"));
  const Config off = default_config(gpuguard::test::registry());
  MutateResult applied = mutate(objs[0], gpuguard::test::registry(), off);  // follows the webhook: off
  CHECK(applied.rules == std::vector<std::string>{"gpu-request-limit-mismatch"});
  CHECK(applied.exempted.empty());
  auto on = load_config("webhook: {exemptions: {annotations: true}}\n", ".gpuguard.yaml", gpuguard::test::registry());
  REQUIRE(on.has_value());
  MutateResult exempted = mutate(objs[0], gpuguard::test::registry(), *on);
  CHECK(exempted.patch.empty());
  REQUIRE(exempted.exempted.size() == 1);
  CHECK(exempted.exempted[0].rule == "gpu-request-limit-mismatch");
  CHECK(exempted.exempted[0].reason == "r");
  MutateOptions honour;
  honour.annotations = AnnotationExemptions::honour;
  CHECK(mutate(objs[0], gpuguard::test::registry(), off, honour).patch.empty());
}

}  // TEST_SUITE
