// kueue-cohort-cycle: Kueue Cohorts whose parentName chain is a cycle, and the cohorts and
// ClusterQueues under it, which Kueue stops admitting for.

#include <algorithm>
#include <map>
#include <memory>

#include "engine/inventory.h"
#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

constexpr std::string_view kGroup = "kueue.x-k8s.io";

class KueueCohortCycle final : public Rule {
 public:
  KueueCohortCycle() {
    info_.id = "kueue-cohort-cycle";
    info_.severity = Severity::error;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "Kueue Cohorts whose `parentName` links form a cycle: no ClusterQueue under them admits a workload";
    info_.rationale =
        "Kueue's hierarchical cohorts (`kind: Cohort`) form a tree through `spec.parentName`. "
        "Nothing refuses a `parentName` that closes a loop (the Cohort webhook checks only the "
        "resource groups and fair sharing), and Kueue then disables the whole tree: the Cohort "
        "type says \"If a cycle is created, we disable all members of the Cohort, including "
        "ClusterQueues, until the cycle is removed. We prevent further admission while the cycle "
        "exists.\" In the code, a Cohort \"has a cycle\" when its chain of parents meets a Cohort "
        "twice (`hierarchy.HasCycle`): the Cohorts on the loop and every Cohort whose parents lead "
        "into it. The scheduler's snapshot leaves those Cohorts out and marks every ClusterQueue "
        "whose cohort has a cycle inactive (`inactiveCQReasonHasCycle`), so their pending workloads "
        "wait until the loop is broken.\n\n"
        "The rule reports each Cohort on a loop (at its `parentName`), each Cohort whose parents "
        "lead into one, and each ClusterQueue whose `cohortName` (`cohort` in v1beta1) is such a "
        "Cohort. A `parentName` naming a Cohort that does not exist is no loop (Kueue makes an "
        "implicit root cohort), nor is a Cohort that names itself in another field. A loop needs "
        "only its own Cohorts to be certain, so the rule does not wait for a complete inventory: "
        "it speaks about the Cohorts and ClusterQueues that the input (or the webhook's cluster "
        "state) holds.";
    info_.remediation =
        "Break the loop: clear the `parentName` of the Cohort that should be the root, or point it "
        "at a Cohort outside the loop (`kubectl get cohorts -o custom-columns=NAME:.metadata.name,"
        "PARENT:.spec.parentName`).";
    info_.facts = {
        "facts/modern-stack.md §3 — Kueue Cohort (`apis/kueue/v1beta2/cohort_types.go`): `parentName` (a missing "
        "parent = an implicit default cohort); a cycle disables every member ClusterQueue.",
        "Read at kubernetes-sigs/kueue v0.19.2 (the files are the same at @ff69552e): "
        "`apis/kueue/v1beta2/cohort_types.go` (parentName: \"If a cycle is created, we disable all members of "
        "the Cohort, including ClusterQueues, until the cycle is removed. We prevent further admission while "
        "the cycle exists.\"); `pkg/cache/hierarchy/cycle.go` `HasCycle` (true when the parent chain meets a "
        "Cohort already seen); `pkg/cache/scheduler/snapshot.go` (Cohorts with a cycle are left out of the "
        "snapshot; `skipInactiveCQReason` → `inactiveCQReasonHasCycle` for a ClusterQueue whose parent has "
        "one); `pkg/cache/hierarchy/manager.go` (a parentName or cohortName with no Cohort object makes an "
        "implicit Cohort without a parent); `pkg/webhooks/cohort_webhook.go` (validates only resourceGroups "
        "and fairSharing, not parentName).",
        "v1alpha1 Cohorts (Kueue before 0.13) named the parent `spec.parent` (v0.12.0 `cohort_types.go`, the "
        "same cycle rule).",
    };
    info_.checks = {KindRef{std::string(kGroup), "Cohort"}, KindRef{std::string(kGroup), "ClusterQueue"}};
    info_.reads = info_.checks;
    info_.example_bad = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: research
spec:
  parentName: org
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: org
spec:
  parentName: research
)";
    info_.example_good = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: research
spec:
  parentName: org
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: org
)";
  }

  const RuleInfo& info() const override { return info_; }

  void finish(FinishContext& ctx) const override {
    // The webhook: nothing to say unless a Cohort or ClusterQueue is under admission.
    if (const auto* focus = ctx.focused(); focus && std::none_of(focus->begin(), focus->end(), [](const Object* o) {
          return queue::is_kueue_cohort(*o) || queue::is_cluster_queue(*o);
        }))
      return;
    const Inventory& inv = ctx.inventory();
    const std::vector<const Object*> cohorts = inv.list(kGroup, "Cohort");
    if (cohorts.empty()) return;
    // Each Cohort's parent (only Cohort objects have one: an implicit cohort is a root).
    std::map<std::string, const Object*, std::less<>> by_name;
    for (const Object* c : cohorts) by_name[c->name] = c;
    auto parent_of = [&](const std::string& name) -> const Object* {
      auto it = by_name.find(name);
      if (it == by_name.end()) return nullptr;
      const std::string p = queue::cohort_parent(*it->second).name;
      if (p.empty()) return nullptr;
      auto pit = by_name.find(p);
      return pit == by_name.end() ? nullptr : pit->second;
    };
    // Walk each chain once (linear in the number of Cohorts): 0 unvisited, 1 on the current walk,
    // 2 done. `loop` holds, for a Cohort on a loop, the loop's members in parent order (shared by
    // them) and its place there; `into`, for a Cohort whose parents lead into a loop, the first
    // Cohort of that loop it reaches.
    struct Place {
      std::shared_ptr<const std::vector<std::string>> members;
      size_t index = 0;
    };
    std::map<std::string, int, std::less<>> state;
    std::map<std::string, Place, std::less<>> loop;
    std::map<std::string, std::string, std::less<>> into;
    for (const auto& [start, _] : by_name) {
      if (state[start] != 0) continue;
      std::vector<std::string> walk;
      std::string cur = start;
      std::string reached;  // a Cohort with a cycle that this walk ran into ("" when none)
      while (true) {
        int& s = state[cur];
        if (s == 1) {  // a new loop: the part of the walk from cur on
          auto from = std::find(walk.begin(), walk.end(), cur);
          auto members = std::make_shared<const std::vector<std::string>>(from, walk.end());
          for (size_t i = 0; i < members->size(); ++i) loop[(*members)[i]] = Place{members, i};
          reached = cur;
          break;
        }
        if (s == 2) {
          if (loop.count(cur)) reached = cur;
          else if (auto it = into.find(cur); it != into.end()) reached = it->second;
          break;
        }
        s = 1;
        walk.push_back(cur);
        const Object* p = parent_of(cur);
        if (!p) break;
        cur = p->name;
      }
      for (const auto& w : walk) {
        state[w] = 2;
        if (!reached.empty() && !loop.count(w)) into[w] = reached;
      }
    }
    if (loop.empty()) return;

    // The loop in parent order from a member round to it again; a long loop shows its first
    // three members, the count and the last (a message per member must not hold the whole loop).
    auto chain = [](const Place& p) {
      const auto& m = *p.members;
      const size_t n = m.size();
      if (n == 0) return std::string();  // a loop has a member; said for the analyzer
      auto at = [&](size_t i) -> const std::string& { return m[(p.index + i) % n]; };
      std::string out;
      if (n <= 6) {
        for (size_t i = 0; i < n; ++i) out += at(i) + " → ";
      } else {
        for (size_t i = 0; i < 3; ++i) out += at(i) + " → ";
        out += "… (" + std::to_string(n) + " cohorts) → " + at(n - 1) + " → ";
      }
      return out + at(0);
    };
    const std::vector<const Object*>* focused = ctx.focused();
    auto wanted = [&](const Object& o) { return !focused || ctx.in_focus(o); };
    for (const Object* c : cohorts) {
      if (!wanted(*c)) continue;
      const queue::CohortParent parent = queue::cohort_parent(*c);
      const std::string ptr = "/spec/" + parent.field;
      if (auto it = loop.find(c->name); it != loop.end()) {
        ctx.report(*c, ptr,
                   "Cohort " + c->name + "'s " + parent.field + " " + parent.name + " closes a loop of cohorts (" +
                       chain(it->second) + "): Kueue disables every Cohort and ClusterQueue of the tree and admits no "
                       "workload until the loop is broken (\"If a cycle is created, we disable all members of the Cohort, "
                       "including ClusterQueues\")");
      } else if (auto jt = into.find(c->name); jt != into.end()) {
        ctx.report(*c, ptr,
                   "Cohort " + c->name + "'s parents lead into a loop of cohorts (" + chain(loop.at(jt->second)) +
                       "): Kueue treats it as part of the cycle and admits nothing in its subtree until the loop is broken");
      }
    }
    for (const Object* cq : inv.list(kGroup, "ClusterQueue")) {
      if (!wanted(*cq)) continue;
      const queue::CohortRef cohort = queue::cluster_queue_cohort(*cq);
      if (cohort.name.empty()) continue;
      std::string reached;
      if (loop.count(cohort.name)) reached = cohort.name;
      else if (auto it = into.find(cohort.name); it != into.end()) reached = it->second;
      if (reached.empty()) continue;
      ctx.report(*cq, "/spec/" + cohort.field,
                 "ClusterQueue " + cq->name + " is in cohort " + cohort.name + ", whose parents form a loop (" +
                     chain(loop.at(reached)) + "): Kueue marks the ClusterQueue inactive (HasCycle) and admits none of "
                     "its workloads until the loop is broken");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kueue_cohort_cycle() { return std::make_unique<KueueCohortCycle>(); }

}  // namespace gpuguard::rules
