// kueue-limit-without-cohort: borrowingLimit or lendingLimit on a ClusterQueue in no cohort, or on a Cohort without a parent.

#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class KueueLimitWithoutCohort final : public Rule {
 public:
  KueueLimitWithoutCohort() {
    info_.id = "kueue-limit-without-cohort";
    info_.severity = Severity::error;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "A Kueue ClusterQueue in no cohort, or a Cohort without a parent, sets `borrowingLimit` or `lendingLimit`";
    info_.rationale =
        "Borrowing and lending happen only inside a cohort: a ClusterQueue lends its unused quota to, "
        "and borrows from, the other queues of its cohort. Without a cohort the limits mean nothing, "
        "and Kueue refuses them: the CRD's CEL rule (`borrowingLimit must be nil when cohort is "
        "empty`) and the ClusterQueue webhook (`must be nil when cohort is empty`, for both "
        "`borrowingLimit` and `lendingLimit`) reject the object, in v1beta1 and v1beta2 alike.\n\n"
        "The cohort field changed its name between the versions: v1beta1 has `spec.cohort`, v1beta2 "
        "`spec.cohortName`. The other version's field is not part of the schema: the API server "
        "prunes it (or refuses it under strict field validation), so a v1beta2 queue that writes "
        "`cohort:` is in no cohort, and its limits are rejected.\n\n"
        "**Cohorts** (`kind: Cohort`, hierarchical cohorts): a Cohort's `resourceGroups` may carry the "
        "same limits, which bound what its whole subtree borrows from, and lends to, its parent. A "
        "root Cohort (no `spec.parentName`) has nothing to borrow from or lend to, and Kueue's Cohort "
        "webhook rejects the limits there (`must be nil when parent is empty`). A `parentName` naming "
        "a Cohort that does not exist still counts as a parent (Kueue makes an implicit one), so the "
        "limits are accepted. A ClusterQueue's `cohortName` (v1beta2; `cohort` in v1beta1) names the "
        "Cohort object of that name when there is one, and an implicit cohort otherwise: either is a "
        "cohort for the ClusterQueue's limits. v1alpha1 Cohorts (Kueue before 0.13) named the parent "
        "`spec.parent`.";
    info_.remediation =
        "Put the queue into a cohort (`spec.cohortName` in v1beta2, `spec.cohort` in v1beta1), or "
        "remove `borrowingLimit` and `lendingLimit` from its flavors. For a Cohort: give it a "
        "`parentName`, or remove the limits (a root Cohort's quota is shared by its subtree without them).";
    info_.facts = {
        "facts/kubernetes-and-queues.md §3 — kueue `apis/kueue/v1beta2/clusterqueue_types.go` CEL "
        "`borrowingLimit must be nil when cohort is empty`; `pkg/webhooks/clusterqueue_webhook.go` "
        "rejects borrowingLimit and lendingLimit without a cohort (`must be nil when cohort is "
        "empty`) @ff69552e; v1beta1 `spec.cohort` → v1beta2 `spec.cohortName`.",
        "Cohort, read at kubernetes-sigs/kueue v0.19.2 (the files are the same at @ff69552e): "
        "`pkg/webhooks/cohort_webhook.go` `validateCohort` (`hasParent: cohort.Spec.ParentName != \"\"`) → "
        "`validateResourceGroups(..., isCohort=true)` → `validateLimit`: `must be nil when parent is empty`; "
        "`apis/kueue/v1beta2/cohort_types.go` (`parentName`: unset = root, a missing Cohort = an implicit "
        "default cohort; \"Borrowing and Lending limits must only be set when the Cohort has a parent\"); "
        "`pkg/cache/hierarchy/manager.go` `UpdateClusterQueueEdge` joins a ClusterQueue to the Cohort of its "
        "cohortName, creating an implicit one when no object has that name. v1alpha1 (`spec.parent`): "
        "v0.12.0 `cohort_webhook.go`, the same check.",
    };
    info_.checks = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}, KindRef{"kueue.x-k8s.io", "Cohort"}};
    info_.example_bad = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
        borrowingLimit: 4
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
        borrowingLimit: 4
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (queue::is_kueue_cohort(obj)) {
      check_cohort(obj, ctx);
      return;
    }
    if (!queue::is_cluster_queue(obj)) return;
    const queue::CohortRef cohort = queue::cluster_queue_cohort(obj);
    if (!cohort.name.empty()) return;
    std::string why = "ClusterQueue " + obj.name + " is in no cohort (spec." + cohort.field + " is empty";
    if (!cohort.misplaced.empty())
      why += "; spec." + cohort.misplaced + " is not a field of " + obj.gvk.version + " and is pruned";
    why += ")";
    for (const auto& fr : queue::flavor_resources(obj)) {
      for (std::string_view limit : {"borrowingLimit", "lendingLimit"}) {
        const Node v = member(fr.body, limit);
        if (v.is_null()) continue;
        ctx.report(pointer_join(fr.pointer, limit),
                   why + ", so there is nothing to " + (limit == "borrowingLimit" ? "borrow from" : "lend to") +
                       ": Kueue rejects " + std::string(limit) + " " + brief(v) + " of " + fr.resource +
                       " in flavor " + fr.flavor + " (\"must be nil when cohort is empty\", ClusterQueue " +
                       (limit == "borrowingLimit" ? "CEL rule and webhook" : "webhook") + ")");
      }
    }
  }

 private:
  static void check_cohort(const Object& obj, CheckContext& ctx) {
    const queue::CohortParent parent = queue::cohort_parent(obj);
    if (!parent.name.empty()) return;
    std::string why = "Cohort " + obj.name + " has no parent (spec." + parent.field + " is empty";
    const std::string other = parent.field == "parentName" ? "parent" : "parentName";
    if (auto s = string_at(member(obj.root(), "spec"), other); s && !s->empty())
      why += "; spec." + other + " is not a field of " + obj.gvk.version + " and is pruned";
    why += ")";
    for (const auto& fr : queue::flavor_resources(obj)) {
      for (std::string_view limit : {"borrowingLimit", "lendingLimit"}) {
        const Node v = member(fr.body, limit);
        if (v.is_null()) continue;
        ctx.report(pointer_join(fr.pointer, limit),
                   why + ", so its subtree has nothing to " +
                       (limit == "borrowingLimit" ? "borrow from" : "lend to") + ": Kueue's Cohort webhook rejects " +
                       std::string(limit) + " " + brief(v) + " of " + fr.resource + " in flavor " + fr.flavor +
                       " (\"must be nil when parent is empty\")");
      }
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kueue_limit_without_cohort() { return std::make_unique<KueueLimitWithoutCohort>(); }

}  // namespace gpuguard::rules
