// lint's input set: inventory scopes (each path its own, --one-inventory, clusters: and --cluster),
// the config found upward from each path, controller-owned objects on stdin, empty inputs.
// The gpuguard binary end to end over real files in temporary folders.

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/json.h"
#include "tests/support/support.h"

using namespace gpuguard;
using engine::json;
namespace fs = std::filesystem;

namespace {

// Kueue: a ClusterQueue and a LocalQueue `gpu` in team-a.
const char* kQueues =
    "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: gpu-cq}\n"
    "spec:\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
    "    flavors: [{name: default, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]\n"
    "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: gpu, namespace: team-a}\nspec: {clusterQueue: gpu-cq}\n";
// A GPU Job of team-a sent to the LocalQueue `gpu`.
const char* kLabelledJob =
    "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\n  namespace: team-a\n  labels: {kueue.x-k8s.io/queue-name: gpu}\n"
    "spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
    "        - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n";
// The same without the label.
const char* kUnlabelledJob =
    "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: bare\n  namespace: team-a\n"
    "spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
    "        - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n";

// The findings of a JSON report: "rule file severity" for each, in report order.
std::vector<std::string> findings_of(const test::Run& r, const std::string& rule = "") {
  std::vector<std::string> out;
  const json doc = json::parse(r.out);
  for (const auto& f : doc["findings"]) {
    if (!rule.empty() && f["rule"] != json(rule)) continue;
    out.push_back(f["rule"].get<std::string>() + " " + f.value("file", std::string()) + " " + f["severity"].get<std::string>());
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("each path on the command line is its own inventory unless --one-inventory joins them") {
  test::TempDir dir;
  test::write_file(dir.path() / "east" / "queues.yaml", kQueues);
  test::write_file(dir.path() / "west" / "job.yaml", kLabelledJob);
  test::write_file(dir.path() / "west" / "bare.yaml", kUnlabelledJob);
  const std::string east = (dir.path() / "east").string(), west = (dir.path() / "west").string();
  const std::string job = west + "/job.yaml", bare = west + "/bare.yaml";

  // Apart: west's Job names a LocalQueue west does not have (a complete inventory says so), and
  // east's LocalQueue does not make team-a Kueue-managed in west.
  auto apart = test::run({"lint", "--no-config", "--complete", "--fail-on", "warning", "-f", "json", east, west});
  CHECK(apart.exit_code == 1);
  CHECK(has(findings_of(apart), "queue-reference-unknown " + job + " warning"));
  CHECK(findings_of(apart, "kueue-queue-name-missing").empty());

  // Joined: east's LocalQueue satisfies the reference and makes the unlabelled Job a finding.
  auto joined = test::run({"lint", "--no-config", "--complete", "--one-inventory", "-f", "json", east, west});
  CHECK(findings_of(joined, "queue-reference-unknown").empty());
  CHECK(findings_of(joined, "kueue-queue-name-missing") == std::vector<std::string>{"kueue-queue-name-missing " + bare + " warning"});

  // One folder holding both is one path, so one inventory, as before.
  auto parent = test::run({"lint", "--no-config", "--complete", "-f", "json", dir.path().string()});
  CHECK(findings_of(parent, "queue-reference-unknown").empty());
  CHECK(findings_of(parent, "kueue-queue-name-missing").size() == 1);

  // The config's oneInventory: true does what the flag does.
  test::write_file(dir.path() / "one.yaml", "oneInventory: true\n");
  auto config_joined = test::run({"lint", "--config", (dir.path() / "one.yaml").string(), "--complete", "-f", "json", east, west});
  CHECK(findings_of(config_joined, "queue-reference-unknown").empty());
  CHECK(findings_of(config_joined, "kueue-queue-name-missing").size() == 1);

  // One report of both scopes: the summary counts every file once.
  auto text = test::run({"lint", "--no-config", "--complete", "--color", "never", east, west, west});
  CHECK(text.out.find("(3 files)") != std::string::npos);
}

TEST_CASE("clusters: in the config are scopes; --cluster lints one, with its complete and rules") {
  test::TempDir dir;
  test::write_file(dir.path() / ".gpuguard.yaml",
                   "clusters:\n"
                   "  east: {paths: [east], complete: true}\n"
                   "  west:\n    paths: [west, shared]\n    complete: true\n"
                   "    rules: {queue-reference-unknown: {severity: info}}\n"
                   "  lab: [lab]\n");
  test::write_file(dir.path() / "east" / "queues.yaml", kQueues);
  test::write_file(dir.path() / "east" / "job.yaml", kLabelledJob);
  test::write_file(dir.path() / "west" / "job.yaml", kLabelledJob);
  test::write_file(dir.path() / "shared" / "bare.yaml", kUnlabelledJob);
  test::write_file(dir.path() / "lab" / "job.yaml", kLabelledJob);
  test::write_file(dir.path() / "loose" / "job.yaml", kLabelledJob);

  // --cluster west: its paths (west and shared), complete, its severity.
  auto west = test::run({"lint", "--cluster", "west", "-f", "json"}, "", dir.path());
  CHECK(west.exit_code == 0);  // the finding is info in west
  CHECK(findings_of(west, "queue-reference-unknown") == std::vector<std::string>{"queue-reference-unknown west/job.yaml info"});
  CHECK(json::parse(west.out)["summary"]["files"] == json(2));

  // --cluster east: its LocalQueue satisfies its Job.
  auto east = test::run({"lint", "--cluster", "east", "-f", "json"}, "", dir.path());
  CHECK(findings_of(east, "queue-reference-unknown").empty());

  // The whole folder: each file in its cluster's scope; lab is not complete, loose/ is in no cluster.
  auto all = test::run({"lint", "-f", "json", "."}, "", dir.path());
  const auto refs = findings_of(all, "queue-reference-unknown");
  CHECK(refs == std::vector<std::string>{"queue-reference-unknown ./west/job.yaml info"});
  CHECK(findings_of(all, "kueue-queue-name-missing").empty());  // shared/ is west's, which has no LocalQueue

  // No path: every cluster.
  auto every = test::run({"lint", "-f", "json"}, "", dir.path());
  CHECK(findings_of(every, "queue-reference-unknown") == std::vector<std::string>{"queue-reference-unknown west/job.yaml info"});

  // Paths with --cluster: linted as that cluster.
  auto as_east = test::run({"lint", "--cluster", "east", "-f", "json", "loose", "east/queues.yaml"}, "", dir.path());
  CHECK(findings_of(as_east, "queue-reference-unknown").empty());
  auto as_west = test::run({"lint", "--cluster", "west", "-f", "json", "loose"}, "", dir.path());
  CHECK(findings_of(as_west, "queue-reference-unknown") == std::vector<std::string>{"queue-reference-unknown loose/job.yaml info"});

  // An unknown name is a usage error listing the names.
  auto unknown = test::run({"lint", "--cluster", "north"}, "", dir.path());
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("(its clusters: east, lab, west)") != std::string::npos);
  auto none = test::run({"lint", "--no-config", "--cluster", "east"}, "", dir.path());
  CHECK(none.exit_code == 2);

  // The cluster's effective config.
  auto printed = test::run({"lint", "--cluster", "west", "--print-config"}, "", dir.path());
  CHECK(printed.exit_code == 0);
  CHECK(printed.out.find("  west:\n    paths: [west, shared]\n    complete: true\n") != std::string::npos);

  // A malformed clusters: entry is a config error with its place.
  test::write_file(dir.path() / "bad" / ".gpuguard.yaml", "clusters:\n  east: []\n  \"a b\": [x]\n  west: {paths: [w], colour: red}\n");
  test::write_file(dir.path() / "bad" / "x.yaml", kLabelledJob);
  auto bad = test::run({"lint", "bad"}, "", dir.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err.find(":2:3: error: clusters.east: expected a non-empty list of paths, got an empty list") != std::string::npos);
  CHECK(bad.err.find(":3:3: error: clusters: \"a b\" is not a cluster name") != std::string::npos);
  CHECK(bad.err.find(":4:22: error: clusters.west: unknown key \"colour\" (known: paths, complete, rules)") != std::string::npos);
}

TEST_CASE("the config is found upward from each path, not from the working directory") {
  test::TempDir dir;
  // The same Pod under two configs: one turns the rule off, one makes it an error.
  const char* pod =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a}\nspec:\n  containers:\n  - name: c\n"
      "    image: x\n    resources: {limits: {nvidia.com/gpu: 1}}\n";
  test::write_file(dir.path() / "quiet" / ".gpuguard.yaml", "rules:\n  gpu-priority-class-missing: false\n");
  test::write_file(dir.path() / "quiet" / "deep" / "pod.yaml", pod);
  test::write_file(dir.path() / "loud" / ".gpuguard.yml", "rules:\n  gpu-priority-class-missing: {severity: error}\n");
  test::write_file(dir.path() / "loud" / "pod.yaml", pod);
  const std::string quiet = (dir.path() / "quiet" / "deep").string(), loud = (dir.path() / "loud" / "pod.yaml").string();

  auto r = test::run({"lint", "-f", "json", quiet, loud}, "", dir.path() / "quiet");
  CHECK(r.exit_code == 1);
  CHECK(findings_of(r, "gpu-priority-class-missing") == std::vector<std::string>{"gpu-priority-class-missing " + loud + " error"});

  // --config forces one config for every path.
  auto forced = test::run({"lint", "-f", "json", "--config", (dir.path() / "quiet" / ".gpuguard.yaml").string(), quiet, loud});
  CHECK(findings_of(forced, "gpu-priority-class-missing").empty());
  // --no-config: the defaults (the rule's own severity) everywhere.
  auto defaults = test::run({"lint", "-f", "json", "--no-config", quiet, loud});
  CHECK(findings_of(defaults, "gpu-priority-class-missing").size() == 2);

  // A broken config under one path is an error naming it, whatever the working directory.
  test::write_file(dir.path() / "broken" / ".gpuguard.yaml", "rules: {no-such-rule: true}\n");
  test::write_file(dir.path() / "broken" / "pod.yaml", pod);
  auto broken = test::run({"lint", loud, (dir.path() / "broken" / "pod.yaml").string()});
  CHECK(broken.exit_code == 2);
  CHECK(broken.err.find("unknown rule \"no-such-rule\"") != std::string::npos);
}

TEST_CASE("lint - leaves out Pods a controller made, unless --include-owned") {
  // What `kubectl get pods -A -o yaml` prints: a List of a ReplicaSet's Pod, a Job's Pod, a Pod
  // whose only owner is not its controller, and a bare Pod; each requests a GPU without its limit.
  auto pod = [](const std::string& name, const std::string& owners) {
    return "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " + name + "\n    namespace: team-a\n" + owners +
           "  spec:\n    containers:\n    - name: c\n      image: x\n      resources: {requests: {nvidia.com/gpu: 1}}\n";
  };
  const std::string list =
      "apiVersion: v1\nkind: List\nitems:\n" +
      pod("web-7d9f-abcde", "    ownerReferences:\n    - {apiVersion: apps/v1, kind: ReplicaSet, name: web-7d9f, uid: u1, controller: true}\n") +
      pod("train-x7k2p", "    ownerReferences:\n    - {apiVersion: batch/v1, kind: Job, name: train, uid: u2, controller: true}\n") +
      pod("adopted", "    ownerReferences:\n    - {apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u3, controller: false}\n") +
      pod("bare", "");
  auto names = [](const test::Run& r) {
    std::vector<std::string> out;
    const json doc = json::parse(r.out);
    for (const auto& f : doc["findings"])
      if (f["rule"] == json("gpu-request-limit-mismatch")) out.push_back(f["object"]["name"].get<std::string>());
    return out;
  };
  auto skipped = test::run({"lint", "--no-config", "-f", "json", "-"}, list);
  CHECK(skipped.exit_code == 1);
  CHECK(names(skipped) == std::vector<std::string>{"adopted", "bare"});
  CHECK(skipped.err == "gpuguard lint: skipped 2 Pods and ReplicaSets made by a controller from stdin "
                       "(linted on the controller's template; --include-owned lints them)\n");
  CHECK(json::parse(skipped.out)["summary"]["objects"] == json(2));

  auto included = test::run({"lint", "--no-config", "-f", "json", "--include-owned", "-"}, list);
  CHECK(names(included) == std::vector<std::string>{"web-7d9f-abcde", "train-x7k2p", "adopted", "bare"});
  CHECK(included.err.empty());

  // A file is linted as written: every Pod in it is the author's.
  test::TempDir dir;
  test::write_file(dir.path() / "pods.yaml", list);
  auto file = test::run({"lint", "--no-config", "-f", "json", (dir.path() / "pods.yaml").string()});
  CHECK(names(file).size() == 4);
  CHECK(file.err.empty());
}

TEST_CASE("an empty input set is an error unless --allow-empty; a missing path always is") {
  test::TempDir dir;
  fs::create_directories(dir.path() / "empty" / "sub");
  test::write_file(dir.path() / "empty" / "README.md", "# not a manifest\n");
  test::write_file(dir.path() / "blank" / "x.yaml", "# only a comment\n");
  test::write_file(dir.path() / "ok" / "pod.yaml", kLabelledJob);
  const std::string empty = (dir.path() / "empty").string(), blank = (dir.path() / "blank").string();
  const std::string ok = (dir.path() / "ok").string(), typo = (dir.path() / "okk").string();

  auto r = test::run({"lint", "--no-config", "--color", "never", empty});
  CHECK(r.exit_code == 2);
  CHECK(r.out.find(empty + ": error: no Kubernetes manifests under " + empty) != std::string::npos);
  auto b = test::run({"lint", "--no-config", "--color", "never", blank, ok});
  CHECK(b.exit_code == 2);
  CHECK(b.out.find(blank + ": error: no Kubernetes manifests under " + blank + ": its files hold no YAML or JSON document") !=
        std::string::npos);
  auto t = test::run({"lint", "--no-config", "--color", "never", ok, typo});
  CHECK(t.exit_code == 2);
  CHECK(t.out.find(typo + ": error: no such file or directory") != std::string::npos);

  CHECK(test::run({"lint", "--no-config", "--allow-empty", empty}).exit_code == 0);
  CHECK(test::run({"lint", "--no-config", "--allow-empty", empty, blank, ok}).exit_code == 0);
  CHECK(test::run({"lint", "--no-config", "--allow-empty", typo}).exit_code == 2);
  // Stdin with nothing on it, and a List with no items (a cluster without pods), are not errors.
  CHECK(test::run({"lint", "--no-config", "-"}, "").exit_code == 0);
  CHECK(test::run({"lint", "--no-config", "-"}, "apiVersion: v1\nkind: List\nitems: []\n").exit_code == 0);
}

}  // TEST_SUITE
