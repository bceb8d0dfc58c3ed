// kueue-lending-over-nominal: a ClusterQueue lends more of a resource than its nominal quota.

#include "engine/quantity.h"
#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class KueueLendingOverNominal final : public Rule {
 public:
  KueueLendingOverNominal() {
    info_.id = "kueue-lending-over-nominal";
    info_.severity = Severity::error;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "A Kueue ClusterQueue's `lendingLimit` exceeds the `nominalQuota` of the same flavor resource";
    info_.rationale =
        "`lendingLimit` is the part of a ClusterQueue's own nominal quota that other queues of its "
        "cohort may borrow. A queue cannot lend what it does not have: Kueue's ClusterQueue webhook "
        "rejects a `lendingLimit` above the `nominalQuota` of the same flavor and resource "
        "(`must be less than or equal to the nominalQuota`), in v1beta1 and v1beta2 alike.\n\n"
        "Cohorts (`kind: Cohort`) are not reported: the Cohort webhook does not make this check "
        "(`enforceNominalGreaterThanLending: false`), because a Cohort's `lendingLimit` bounds what "
        "its whole subtree lends to the parent, measured against the subtree's quota (its own "
        "`nominalQuota` plus its children's), not against its own `nominalQuota` alone.";
    info_.remediation =
        "Lower `lendingLimit` to at most `nominalQuota` (lending all of it is `lendingLimit` equal "
        "to `nominalQuota`, or no `lendingLimit` at all), or raise the nominal quota.";
    info_.facts = {
        "facts/kubernetes-and-queues.md §3 — kueue `pkg/webhooks/clusterqueue_webhook.go` @ff69552e: "
        "lendingLimit ≤ nominalQuota, `must be less than or equal to the nominalQuota`, ClusterQueue "
        "only.",
        "Cohort, read at kubernetes-sigs/kueue v0.19.2 (the same at @ff69552e): `pkg/webhooks/cohort_webhook.go` "
        "`validateCohort` sets `enforceNominalGreaterThanLending: false`; `pkg/cache/scheduler/resource_node.go` "
        "`localQuota` = max(0, SubtreeQuota − lendingLimit).",
    };
    info_.checks = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}};
    info_.example_bad = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
        lendingLimit: 16
)";
    info_.example_good = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
        lendingLimit: 4
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!queue::is_cluster_queue(obj)) return;
    for (const auto& fr : queue::flavor_resources(obj)) {
      const Node lending = member(fr.body, "lendingLimit");
      const Node nominal = member(fr.body, "nominalQuota");
      if (lending.is_null() || !nominal) continue;
      auto l = Quantity::from_node(lending);
      auto n = Quantity::from_node(nominal);
      if (!l || !n || *l <= *n) continue;
      ctx.report(pointer_join(fr.pointer, "lendingLimit"),
                 "lendingLimit " + l->to_string() + " of " + fr.resource + " in flavor " + fr.flavor +
                     " is more than its nominalQuota " + n->to_string() + " in ClusterQueue " + obj.name +
                     ": a queue can lend only its own quota, and Kueue's ClusterQueue webhook rejects it "
                     "(\"must be less than or equal to the nominalQuota\")");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kueue_lending_over_nominal() { return std::make_unique<KueueLendingOverNominal>(); }

}  // namespace gpuguard::rules
