// queue-borrow-limit-missing: a dev/test queue that can borrow GPUs without bound.

#include <re2/re2.h>

#include <set>

#include "engine/inventory.h"

#include "rules/all.h"
#include "rules/queue/kai_queue.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// KAI Queues seen in check: a dev/test queue with gpu.limit -1 is reported in finish unless an
// ancestor's limit bounds it (KAI checks the limit of the job's queue and of every ancestor).
struct KaiPending {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string name;
  std::string parent;
  std::string why;
};

struct KaiState final : RuleState {
  engine::Records<KaiPending> pending;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(pending, static_cast<KaiState&>(later).pending); }
};

constexpr std::string_view kDefaultDevPattern = "(^|[-_.])(dev|test|sandbox|debug|experiment)([-_.]|$)";

class QueueBorrowLimitMissing final : public Rule {
 public:
  QueueBorrowLimitMissing() {
    info_.id = "queue-borrow-limit-missing";
    info_.severity = Severity::warning;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "A dev/test queue can borrow GPUs without bound (no Kueue `borrowingLimit`, no Volcano GPU `capability`)";
    info_.rationale =
        "Dev, test and experiment queues should be able to use idle GPUs, but only up to a limit "
        "(\"set borrow limits on dev/test queues\", seed 9.5); otherwise a burst of notebooks and "
        "debug runs occupies the GPUs that training and inference will need, and getting them back "
        "depends on preemption.\n\n"
        "- **Kueue**: a ClusterQueue in a cohort (`spec.cohort` in v1beta1, `spec.cohortName` in "
        "v1beta2) may borrow the unused quota of every other queue of the cohort; a flavor resource "
        "without `borrowingLimit` borrows without bound. A queue in no cohort cannot borrow and is "
        "not reported.\n"
        "- **Kueue Cohort** (hierarchical cohorts): a dev/test Cohort with a parent (`spec.parentName`) "
        "lets its whole subtree borrow from the rest of the parent's tree; a GPU flavor resource of its "
        "`resourceGroups` without `borrowingLimit` borrows without bound. A root Cohort cannot borrow "
        "(Kueue refuses limits there) and is not reported.\n"
        "- **Volcano**: `capability` is a Queue's only hard ceiling; without a GPU capability the "
        "queue can grow to every idle GPU of the cluster. With `reclaimable: true` (the default) "
        "other queues can reclaim the excess by preemption; with `reclaimable: false` they cannot, "
        "which is worse, so both are reported. A DRA device-count key `deviceclass/<class>` of a "
        "class in `gpuDeviceClasses` counts as a GPU capability (Volcano v1.15's capacity plugin).\n\n"
        "A queue counts as dev/test when its name, or the value of one of its labels, matches "
        "`devQueuePattern` (RE2, partial match).";
    info_.remediation =
        "Kueue: give the GPU resources of the dev queue's (or dev Cohort's) flavors a `borrowingLimit` "
        "(0 forbids borrowing). Volcano: set a GPU `capability` on the dev queue, e.g. `nvidia.com/gpu: 8`.";
    info_.facts = {
        "Seed 9.5 (design.md §1): Queue weight and capability; borrow limits on dev/test queues.",
        "facts/kubernetes-and-queues.md §3 — ClusterQueue `flavors[].resources[]` `{name, nominalQuota, "
        "borrowingLimit, lendingLimit}`; v1beta1 `spec.cohort` → v1beta2 `spec.cohortName` (kueue "
        "`apis/kueue/v1beta2/clusterqueue_types.go` @ff69552e).",
        "Cohort, read at kubernetes-sigs/kueue v0.19.2 (the same at @ff69552e): `apis/kueue/v1beta2/cohort_types.go` "
        "(\"BorrowingLimit limits how much members of this Cohort subtree can borrow from the parent subtree\"; "
        "limits only with a parent, else the webhook rejects them: `pkg/webhooks/cohort_webhook.go`).",
        "facts/kubernetes-and-queues.md §2 — Volcano Queue `capability`, `reclaimable` (mutating "
        "webhook default true). The Volcano API: \"Reclaimable indicate whether the queue can be "
        "reclaimed by other queue\" (read with `search`): `reclaimable: false` keeps what the queue "
        "took, so a dev queue without GPU capability is reported whatever its `reclaimable`.",
        // KAI Scheduler (in the list: g++ 12 -O2 reports a false -Warray-bounds on a push_back here).
        "facts/modern-stack.md §2 — KAI Queue `spec.resources.gpu.{quota, limit, overQuotaWeight}`, `-1` unlimited, "
        "`parentQueue`; re-read at NVIDIA/KAI-Scheduler @72de64fc: `pkg/apis/scheduling/v2/resources.go`, "
        "`max_allowed_check.go` (resultsOverLimit walks the parent chain).",
    };
    info_.params = {
        ParamSpec{"devQueuePattern", ParamType::regex, std::string(kDefaultDevPattern),
                  "RE2 matched (partially) against the queue's name and label values to tell dev/test queues",
                  std::nullopt, std::nullopt},
        ParamSpec{"gpuDeviceClasses", ParamType::string_list, json(queue::default_gpu_device_classes()),
                  "DeviceClasses whose Volcano DRA count key (`deviceclass/<class>`) caps GPUs, besides those of the config's top-level `gpuDeviceClasses`", std::nullopt, std::nullopt},
    };
    info_.checks = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}, KindRef{"kueue.x-k8s.io", "Cohort"},
                    KindRef{"scheduling.volcano.sh", "Queue"}};
    // KAI Scheduler (its own lines, kept apart from the Kueue and Volcano ones above).
    info_.rationale +=
        "\n\n**KAI Scheduler** (`scheduling.run.ai/v2` Queue): beyond its `spec.resources.gpu.quota` a queue takes "
        "idle GPUs over quota (shared by `overQuotaWeight`, reclaimable by other queues) up to `gpu.limit`; "
        "`limit: -1` means no limit. A dev/test queue with `gpu.limit: -1` whose ancestors (`parentQueue`) set no "
        "GPU limit either can take every idle GPU of the cluster. KAI checks the limit of the job's queue and of "
        "each ancestor (`isOverLimit` in `pkg/scheduler/plugins/proportion/capacity_policy/max_allowed_check.go`, "
        "NVIDIA/KAI-Scheduler @72de64fc, v0.13.0-rc1+142): an ancestor's limit bounds the queue, and one not in "
        "the input is taken as unbounded. An unset `limit` is 0 in KAI's code, not -1 (see "
        "`queue-capability-missing`), so only `-1` is reported here.";
    info_.remediation += " KAI: set `spec.resources.gpu.limit` on the dev queue (or a parent) to a bound instead of -1.";
    info_.checks.push_back(KindRef{std::string(sched::kKaiQueueGroup), "Queue"});
    info_.reads.push_back(KindRef{std::string(sched::kKaiQueueGroup), "Queue"});
    info_.example_bad = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a-dev
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 4
)";
    info_.example_good = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a-dev
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 4
        borrowingLimit: 4
)";
  }

  const RuleInfo& info() const override { return info_; }

  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<KaiState>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (sched::is_kai_queue(obj)) {
      check_kai(obj, ctx);
      return;
    }
    const bool cq = queue::is_cluster_queue(obj);
    const bool cohort = queue::is_kueue_cohort(obj);
    if (!cq && !cohort && !queue::is_volcano_queue(obj)) return;
    const std::string why = dev_reason(obj, ctx.params().regex("devQueuePattern"));
    if (why.empty()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    if (cohort) {
      const queue::CohortParent parent = queue::cohort_parent(obj);
      if (parent.name.empty()) return;
      for (const auto& fr : queue::flavor_resources(obj)) {
        if (!gpus.matches(fr.resource) || !member(fr.body, "borrowingLimit").is_null()) continue;
        ctx.report(fr.pointer, "Cohort " + obj.name + " is a dev/test cohort (" + why + ") under " + parent.name + ", and " +
                                   fr.resource + " in flavor " + fr.flavor +
                                   " has no borrowingLimit: its subtree can borrow every unused " + fr.resource + " of " +
                                   parent.name + "'s tree; set a borrowingLimit (seed 9.5: borrow limits on dev/test queues)");
      }
      return;
    }
    if (cq) {
      const queue::CohortRef cohort = queue::cluster_queue_cohort(obj);
      if (cohort.name.empty()) return;
      for (const auto& fr : queue::flavor_resources(obj)) {
        if (!gpus.matches(fr.resource)) continue;
        const Node limit = member(fr.body, "borrowingLimit");
        if (!limit.is_null()) continue;
        ctx.report(fr.pointer, "ClusterQueue " + obj.name + " is a dev/test queue (" + why + ") in cohort " + cohort.name +
                                   ", and " + fr.resource + " in flavor " + fr.flavor +
                                   " has no borrowingLimit: it can borrow every unused " + fr.resource +
                                   " of the cohort; set a borrowingLimit (seed 9.5: borrow limits on dev/test queues)");
      }
      return;
    }
    const Node spec = member(obj.root(), "spec");
    const Node cap = member(spec, "capability");
    const auto& classes = ctx.params().strings("gpuDeviceClasses");
    if (cap.is_object())
      for (const auto [name, value] : cap.items())
        if (queue::volcano_gpu_key(name, gpus, classes, ctx.settings().gpu_device_classes)) return;
    const auto reclaimable = bool_at(spec, "reclaimable");
    const bool kept = reclaimable.has_value() && !*reclaimable;
    ctx.report(cap ? "/spec/capability" : spec ? "/spec" : "",
               "Queue " + obj.name + " is a dev/test queue (" + why + ") with no GPU capability: it can take every idle GPU "
               "in the cluster" + (kept ? ", and with reclaimable: false other queues cannot reclaim them"
                                        : " until other queues reclaim them by preemption") +
                   "; set e.g. `capability: {nvidia.com/gpu: N}` (seed 9.5: borrow limits on dev/test queues)");
  }

 void finish(FinishContext& ctx) const override {
    auto* st = static_cast<KaiState*>(ctx.state());
    if (!st || st->pending.empty()) return;
    const Inventory& inv = ctx.inventory();
    for (const auto& p : st->pending) {
      // The first ancestor whose GPU limit is not -1 bounds the queue (an unset limit is 0).
      std::string bound;
      std::string missing;
      std::set<std::string, std::less<>> seen{p.name};
      for (std::string parent = p.parent; !parent.empty() && seen.insert(parent).second;) {
        const Object* q = inv.find(sched::kKaiQueueGroup, "Queue", "", parent);
        if (!q) {
          missing = parent;
          break;
        }
        const queue::KaiGpu g = queue::kai_gpu(*q);
        if (g.odd || !g.limit || *g.limit != queue::kKaiUnlimited) {
          bound = parent;
          break;
        }
        parent = std::string(string_at(member(q->root(), "spec"), "parentQueue").value_or(""));
      }
      if (!bound.empty()) continue;
      ctx.report(p.ref, p.pointer, p.pos,
                 "KAI Queue " + p.name + " is a dev/test queue (" + p.why + ") with gpu.limit -1 (no limit)" +
                     (p.parent.empty() ? std::string()
                                       : missing.empty() ? ", and no ancestor sets a GPU limit"
                                                         : ", and its parent chain reaches " + missing + ", which is not in the input") +
                     ": beyond its quota it can take every idle GPU of the cluster, until other queues reclaim them; set "
                     "gpu.limit to a bound (seed 9.5: borrow limits on dev/test queues)");
    }
  }

 private:
  void check_kai(const Object& obj, CheckContext& ctx) const {
    const std::string why = dev_reason(obj, ctx.params().regex("devQueuePattern"));
    if (why.empty()) return;
    const queue::KaiGpu g = queue::kai_gpu(obj);
    if (g.odd || g.limit != std::optional<double>(queue::kKaiUnlimited)) return;
    const std::string pointer = "/spec/resources/gpu/limit";
    static_cast<KaiState*>(ctx.state())
        ->pending.push_back(KaiPending{ctx.ref(), pointer, ctx.position_of(pointer), obj.name,
                                       std::string(string_at(member(obj.root(), "spec"), "parentQueue").value_or("")), why});
  }

  static std::string dev_reason(const Object& obj, const re2::RE2* re) {
    if (!re) return "";
    if (RE2::PartialMatch(obj.name, *re)) return "its name matches devQueuePattern";
    // The first matching label in key order (the document has them as written).
    std::optional<engine::NodeEntry> first;
    for (const auto entry : path(obj.root(), {"metadata", "labels"}).items())
      if (entry.value.is_string() && (!first || entry.key < first->key) && RE2::PartialMatch(entry.value.str(), *re))
        first = entry;
    return first ? "label " + std::string(first->key) + "=" + std::string(first->value.str()) : std::string();
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_queue_borrow_limit_missing() { return std::make_unique<QueueBorrowLimitMissing>(); }

}  // namespace gpuguard::rules
