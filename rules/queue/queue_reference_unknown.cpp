// queue-reference-unknown: a LocalQueue, job, PodGroup or Volcano Job names a queue that does not exist.

#include <map>
#include <optional>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/queue/refs.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

enum class Target : uint8_t { cluster_queue, local_queue, volcano_queue, kai_queue };

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
    // A warning: a reference made before its queue exists is valid (see the rationale); an error
    // would deny such a workload at admission.
    info_.severity = Severity::warning;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary =
        "A LocalQueue, a job's `kueue.x-k8s.io/queue-name`, a Volcano PodGroup's or Job's `queue`, or a KAI Scheduler "
        "`kai.scheduler/queue` label names a queue that does not exist (KAI: or a parent queue)";
    info_.rationale =
        "Queues are referenced by name, and nothing checks the name when the reference is written "
        "in Kueue:\n\n"
        "- a LocalQueue whose `spec.clusterQueue` names no ClusterQueue is accepted but inactive; "
        "every workload submitted to it stays pending until that ClusterQueue is created "
        "(`clusterQueue` is immutable: a misspelt name means recreating the LocalQueue);\n"
        "- a job whose `kueue.x-k8s.io/queue-name` label names no LocalQueue in its namespace "
        "stays suspended as inadmissible until that LocalQueue is created (Kueue's queue manager "
        "then queues the workloads that name it).\n\n"
        "Volcano checks on admission: its PodGroup webhook wants the queue to exist and be Open, its "
        "Job webhook rejects the job with `unable to find job queue`. Volcano's `default` queue "
        "always exists (Volcano creates it and its webhook refuses to delete it), as does `root`; an "
        "empty `queue` means `default`.\n\n"
        "scheduler-plugins' PodGroup (`scheduling.x-k8s.io`) has no queue field (its spec is "
        "`minMember`, `minResources`, `scheduleTimeoutSeconds`), so there is nothing to check there.\n\n"
        "KAI Scheduler takes a workload's queue from the label `kai.scheduler/queue` on the top owner, else on "
        "the pod (`CalcPodGroupQueue`, `pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go`), "
        "and nothing checks the name at admission: a PodGroup whose queue is not a `scheduling.run.ai/v2` Queue "
        "gets the fit error `Queue '<name>' does not exist` and is never scheduled (`validatePodgroupQueue`, "
        "`pkg/scheduler/cache/cluster_info/cluster_info.go`). Only leaf queues take jobs: a job of a queue that "
        "another Queue names as its `parentQueue` is skipped (`pkg/scheduler/actions/utils/input_jobs.go`: "
        "\"Skip jobs whose queue is not a leaf queue\"; `docs/queues/README.md`: \"Only leaf queues (queues "
        "with no children) can be used for scheduling jobs\"). Read at NVIDIA/KAI-Scheduler @72de64fc "
        "(v0.13.0-rc1+142; the same at v0.13.0). Checked for workloads whose pods go to KAI "
        "(`schedulerName`, parameter `kaiScheduler`) and that no controller owns (KAI reads the top owner's "
        "label first, which an owned object does not show); a workload without the label (KAI then takes the "
        "label `project`, else `default-queue`) is not checked.\n\n"
        "The rule needs the whole cluster to say \"does not exist\", so it speaks only with a "
        "complete inventory (`gpuguard lint --complete`, the webhook's cluster state). It is a "
        "warning, never a denial: a reference made before its queue exists is valid, and made so all "
        "the time. Helm installs the kinds its install order does not list (LocalQueues, "
        "ClusterQueues and Queues among them: helm `pkg/releaseutil/kind_sorter.go`) after the Jobs "
        "and Deployments of the same release, and a queue created a moment earlier may not have "
        "reached the webhook's watch yet; Kueue and KAI then run the workload once the queue exists. "
        "Volcano's own webhook still refuses a Job or PodGroup whose queue does not exist.";
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
        "facts/modern-stack.md §2 — KAI Queue `scheduling.run.ai/v2` (cluster-scoped), the label "
        "`kai.scheduler/queue` on the top owner or the pod, only leaf queues take jobs; re-read in the code "
        "at NVIDIA/KAI-Scheduler @72de64fc (`cluster_info.go` validatePodgroupQueue, `input_jobs.go`, "
        "`queue_info.go` IsLeafQueue).",
    };
    info_.params = {
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{"kueue.x-k8s.io", "LocalQueue"});
    info_.checks.push_back(KindRef{"scheduling.volcano.sh", "PodGroup"});
    info_.reads = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}, KindRef{"kueue.x-k8s.io", "LocalQueue"},
                   KindRef{"scheduling.volcano.sh", "Queue"}, KindRef{std::string(sched::kKaiQueueGroup), "Queue"}};
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
    // KAI: the label on the workload, else on each template whose pods go to KAI (each name once).
    const std::string kai = ctx.params().string(sched::kKaiSchedulerParam);
    if (kai.empty() || sched::controlled(obj)) return;
    std::string last;
    for (const auto& t : pod_templates(obj)) {
      if (!sched::kai_template(obj, t, kai)) continue;
      auto q = sched::kai_queue_label(obj, t);
      if (!q || q->name == last) continue;
      last = q->name;
      add(Target::kai_queue, q->pointer, "", q->name);
      if (!t.pointer.empty() && q->pointer.starts_with("/metadata/")) break;  // the workload's label: once
    }
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    auto* st = static_cast<State*>(ctx.state());
    std::optional<std::map<std::string, std::string, std::less<>>> kai_parents;  // made on first use
    for (const auto& p : st->pending) {
      switch (p.target) {
        case Target::cluster_queue:
          if (inv.find("kueue.x-k8s.io", "ClusterQueue", "", p.name)) break;
          ctx.report(p.ref, p.pointer, p.pos,
                     "LocalQueue " + p.ref.namespace_() + "/" + p.ref.name() + " points to ClusterQueue " + p.name +
                         ", which does not exist: Kueue keeps the LocalQueue inactive and admits none of its workloads until it exists "
                         "(clusterQueue is immutable: recreate the LocalQueue, or create the ClusterQueue)");
          break;
        case Target::local_queue:
          if (inv.find("kueue.x-k8s.io", "LocalQueue", p.ns, p.name)) break;
          ctx.report(p.ref, p.pointer, p.pos,
                     p.ref.kind() + " " + p.ref.name() + " is submitted to LocalQueue " + p.name + ", which does not exist in namespace " +
                         p.ns + ": Kueue keeps the workload suspended as inadmissible until that LocalQueue exists");
          break;
        case Target::volcano_queue:
          if (inv.find("scheduling.volcano.sh", "Queue", "", p.name)) break;
          ctx.report(p.ref, p.pointer, p.pos,
                     p.ref.kind() + " " + p.ref.name() + " names Volcano Queue " + p.name + ", which does not exist: Volcano's " +
                         (p.ref.kind() == "PodGroup" ? "PodGroup webhook rejects it (the queue must exist and be Open)"
                                                   : "Job webhook rejects it (\"unable to find job queue\")"));
          break;
        case Target::kai_queue:
          if (!kai_parents) kai_parents = parents(inv);
          report_kai(ctx, inv, *kai_parents, p);
          break;
      }
    }
  }

 private:
  // KAI: the queue must exist and be a leaf (no Queue names it as its parentQueue).
  // KAI parent queue → a Queue that names it as its parentQueue.
  static std::map<std::string, std::string, std::less<>> parents(const Inventory& inv) {
    std::map<std::string, std::string, std::less<>> out;
    for (const Object* q : inv.list(sched::kKaiQueueGroup, "Queue"))
      if (auto parent = string_at(member(q->root(), "spec"), "parentQueue"); parent && !parent->empty())
        out.emplace(std::string(*parent), q->name);
    return out;
  }

  static void report_kai(FinishContext& ctx, const Inventory& inv, const std::map<std::string, std::string, std::less<>>& parents,
                         const Pending& p) {
    const std::string who = p.ref.kind() + " " + p.ref.name();
    if (!inv.find(sched::kKaiQueueGroup, "Queue", "", p.name)) {
      ctx.report(p.ref, p.pointer, p.pos,
                 who + " names KAI Queue " + p.name + ", which does not exist: KAI Scheduler marks its PodGroup \"Queue '" + p.name +
                     "' does not exist\" and never schedules it (create the scheduling.run.ai/v2 Queue, or fix the label)");
      return;
    }
    if (auto it = parents.find(p.name); it != parents.end())
      ctx.report(p.ref, p.pointer, p.pos,
                 who + " names KAI Queue " + p.name + ", a parent queue (Queue " + it->second +
                     " names it as parentQueue): KAI schedules only jobs of leaf queues and skips this one; submit to a leaf queue");
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_queue_reference_unknown() { return std::make_unique<QueueReferenceUnknown>(); }

}  // namespace gpuguard::rules
