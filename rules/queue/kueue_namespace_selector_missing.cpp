// kueue-namespace-selector-missing: a ClusterQueue without namespaceSelector admits no namespace.

#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class KueueNamespaceSelectorMissing final : public Rule {
 public:
  KueueNamespaceSelectorMissing() {
    info_.id = "kueue-namespace-selector-missing";
    info_.severity = Severity::warning;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "A Kueue ClusterQueue has no `namespaceSelector`, so it admits workloads from no namespace";
    info_.rationale =
        "A ClusterQueue's `namespaceSelector` says which namespaces may submit to it through their "
        "LocalQueues. Its meaning is the opposite of what an absent field suggests: a missing (nil) "
        "selector is a *nothing* selector, no namespace is eligible, and every workload that reaches "
        "the queue stays pending as inadmissible; the empty selector `{}` admits all namespaces. The "
        "API server accepts both, so the mistake shows only as jobs that never start.\n\n"
        "One namespace and one quota per team (seed 9.5) is best expressed by selecting the team's "
        "namespaces here.";
    info_.remediation =
        "Set `namespaceSelector` to the team's namespaces (for example `matchLabels: {team: a}`), or "
        "to `{}` to admit every namespace.";
    info_.facts = {
        "facts/kubernetes-and-queues.md §3 — kueue `apis/kueue/v1beta2/clusterqueue_types.go` "
        "@ff69552e: `namespaceSelector` nil = no namespaces, `{}` = all namespaces (the same in "
        "v1beta1).",
    };
    info_.checks = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}};
    info_.example_bad = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
)";
    info_.example_good = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  namespaceSelector:
    matchLabels:
      team: a
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!queue::is_cluster_queue(obj)) return;
    const Node spec = member(obj.root(), "spec");
    const Node sel = member(spec, "namespaceSelector");
    if (sel && !sel.is_null()) return;
    ctx.report(sel ? "/spec/namespaceSelector" : spec ? "/spec" : "",
               "ClusterQueue " + obj.name + " has no namespaceSelector: Kueue reads a missing selector as "
               "matching no namespace, so workloads submitted through its LocalQueues are never admitted; "
               "select the teams' namespaces, or write `namespaceSelector: {}` to admit all");
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kueue_namespace_selector_missing() { return std::make_unique<KueueNamespaceSelectorMissing>(); }

}  // namespace gpuguard::rules
