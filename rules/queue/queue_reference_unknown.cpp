// queue-reference-unknown: a LocalQueue, job, PodGroup or Volcano Job names a queue that does not exist.

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

enum class Target : uint8_t { cluster_queue, local_queue, volcano_queue };

struct Pending {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  Target target = Target::cluster_queue;
  std::string ns;    // LocalQueue look-ups only
  std::string name;
};

struct State final : RuleState {
  engine::Records<Pending> pending;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(pending, static_cast<State&>(later).pending); }
};

class QueueReferenceUnknown final : public Rule {
 public:
  QueueReferenceUnknown() {
    info_.id = "queue-reference-unknown";
    info_.severity = Severity::error;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "A LocalQueue, a job's `kueue.x-k8s.io/queue-name`, or a Volcano PodGroup's or Job's `queue` names a queue that does not exist";
    info_.rationale =
        "Queues are referenced by name, and nothing checks the name when the reference is written "
        "in Kueue:\n\n"
        "- a LocalQueue whose `spec.clusterQueue` names no ClusterQueue is accepted but inactive; "
        "every workload submitted to it stays pending (and `clusterQueue` is immutable, so the "
        "LocalQueue must be recreated);\n"
        "- a job whose `kueue.x-k8s.io/queue-name` label names no LocalQueue in its namespace "
        "stays suspended as inadmissible, forever.\n\n"
        "Volcano checks on admission: its PodGroup webhook wants the queue to exist and be Open, its "
        "Job webhook rejects the job with `unable to find job queue`. Volcano's `default` queue "
        "always exists (Volcano creates it and its webhook refuses to delete it), as does `root`; an "
        "empty `queue` means `default`.\n\n"
        "scheduler-plugins' PodGroup (`scheduling.x-k8s.io`) has no queue field (its spec is "
        "`minMember`, `minResources`, `scheduleTimeoutSeconds`), so there is nothing to check there.\n\n"
        "The rule needs the whole cluster to say \"does not exist\", so it speaks only with a "
        "complete inventory (`gpuguard lint --complete`, the webhook's cluster state).";
    info_.remediation =
        "Create the queue, or fix the name: ClusterQueues and Volcano Queues are cluster-scoped, "
        "LocalQueues live in the job's namespace (`kubectl get localqueues -n <ns>`).";
    info_.facts = {
        "facts/kubernetes-and-queues.md §3 — Kueue job label `kueue.x-k8s.io/queue-name` "
        "(`pkg/controller/constants/constants.go`); LocalQueue `spec.clusterQueue` (immutable) @ff69552e.",
        "facts/kubernetes-and-queues.md §2 — Volcano PodGroup webhook: the queue must exist and be "
        "Open; vcjob webhook `admit_job.go`: `unable to find job queue`; `queue` defaults to `default`; "
        "deleting `default` or `root` is rejected (volcano @ed72c7c8).",
        "facts/kubernetes-and-queues.md §4 — scheduler-plugins PodGroup spec: minMember, minResources, "
        "scheduleTimeoutSeconds (no queue; confirmed in the CRD `manifests/coscheduling/crd.yaml`).",
    };
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{"kueue.x-k8s.io", "LocalQueue"});
    info_.checks.push_back(KindRef{"scheduling.volcano.sh", "PodGroup"});
    info_.reads = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}, KindRef{"kueue.x-k8s.io", "LocalQueue"},
                   KindRef{"scheduling.volcano.sh", "Queue"}};
    info_.needs_complete = true;
    info_.example_bad = R"(# gpuguard lint --complete
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: team-a
  namespace: team-a
spec:
  clusterQueue: team-a-cq
)";
    info_.example_good = R"(# gpuguard lint --complete
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a-cq
spec:
  namespaceSelector: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: team-a
  namespace: team-a
spec:
  clusterQueue: team-a-cq
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    auto add = [&](Target t, std::string pointer, std::string ns, std::string name) {
      Pos pos = ctx.position_of(pointer);
      st->pending.push_back(Pending{ctx.ref(), std::move(pointer), pos, t, std::move(ns), std::move(name)});
    };
    if (queue::is_local_queue(obj)) {
      auto cq = string_at(member(obj.root(), "spec"), "clusterQueue");
      if (cq && !cq->empty()) add(Target::cluster_queue, "/spec/clusterQueue", "", std::string(*cq));
      return;
    }
    if (queue::is_volcano_podgroup(obj) || queue::is_volcano_job(obj)) {
      auto q = queue::volcano_queue_name(obj);
      if (q && !q->defaulted && q->name != queue::kVolcanoDefaultQueue && q->name != queue::kVolcanoRootQueue)
        add(Target::volcano_queue, q->pointer, "", q->name);
    }
    if (!queue::is_workload(obj)) return;
    if (auto lq = queue::kueue_queue_name(obj)) add(Target::local_queue, lq->pointer, ctx.namespace_of_object(), lq->name);
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    auto* st = static_cast<State*>(ctx.state());
    for (const auto& p : st->pending) {
      switch (p.target) {
        case Target::cluster_queue:
          if (inv.find("kueue.x-k8s.io", "ClusterQueue", "", p.name)) break;
          ctx.report(p.ref, p.pointer, p.pos,
                     "LocalQueue " + p.ref.namespace_() + "/" + p.ref.name() + " points to ClusterQueue " + p.name +
                         ", which does not exist: Kueue keeps the LocalQueue inactive and admits none of its workloads "
                         "(clusterQueue is immutable: recreate the LocalQueue, or create the ClusterQueue)");
          break;
        case Target::local_queue:
          if (inv.find("kueue.x-k8s.io", "LocalQueue", p.ns, p.name)) break;
          ctx.report(p.ref, p.pointer, p.pos,
                     p.ref.kind() + " " + p.ref.name() + " is submitted to LocalQueue " + p.name + ", which does not exist in namespace " +
                         p.ns + ": Kueue keeps the workload suspended as inadmissible and it never runs");
          break;
        case Target::volcano_queue:
          if (inv.find("scheduling.volcano.sh", "Queue", "", p.name)) break;
          ctx.report(p.ref, p.pointer, p.pos,
                     p.ref.kind() + " " + p.ref.name() + " names Volcano Queue " + p.name + ", which does not exist: Volcano's " +
                         (p.ref.kind() == "PodGroup" ? "PodGroup webhook rejects it (the queue must exist and be Open)"
                                                   : "Job webhook rejects it (\"unable to find job queue\")"));
          break;
      }
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_queue_reference_unknown() { return std::make_unique<QueueReferenceUnknown>(); }

}  // namespace gpuguard::rules
