// kueue-limit-without-cohort: borrowingLimit or lendingLimit on a ClusterQueue in no cohort.

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
    info_.summary = "A Kueue ClusterQueue sets `borrowingLimit` or `lendingLimit` but belongs to no cohort";
    info_.rationale =
        "Borrowing and lending happen only inside a cohort: a ClusterQueue lends its unused quota to, "
        "and borrows from, the other queues of its cohort. Without a cohort the limits mean nothing, "
        "and Kueue refuses them: the CRD's CEL rule (`borrowingLimit must be nil when cohort is "
        "empty`) and the ClusterQueue webhook (`must be nil when cohort is empty`, for both "
        "`borrowingLimit` and `lendingLimit`) reject the object, in v1beta1 and v1beta2 alike.\n\n"
        "The cohort field changed its name between the versions: v1beta1 has `spec.cohort`, v1beta2 "
        "`spec.cohortName`. The other version's field is not part of the schema: the API server "
        "prunes it (or refuses it under strict field validation), so a v1beta2 queue that writes "
        "`cohort:` is in no cohort, and its limits are rejected.";
    info_.remediation =
        "Put the queue into a cohort (`spec.cohortName` in v1beta2, `spec.cohort` in v1beta1), or "
        "remove `borrowingLimit` and `lendingLimit` from its flavors.";
    info_.facts = {
        "facts/kubernetes-and-queues.md §3 — kueue `apis/kueue/v1beta2/clusterqueue_types.go` CEL "
        "`borrowingLimit must be nil when cohort is empty`; `pkg/webhooks/clusterqueue_webhook.go` "
        "rejects borrowingLimit and lendingLimit without a cohort (`must be nil when cohort is "
        "empty`) @ff69552e; v1beta1 `spec.cohort` → v1beta2 `spec.cohortName`.",
    };
    info_.checks = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}};
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
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kueue_limit_without_cohort() { return std::make_unique<KueueLimitWithoutCohort>(); }

}  // namespace gpuguard::rules
