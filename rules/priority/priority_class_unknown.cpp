// priority-class-unknown: a workload names a PriorityClass (or WorkloadPriorityClass) that does not exist.

#include <set>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/priority/names.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct Ref {
  ObjectRef object;
  priority::NamedClass named;
  Pos pos;
};

struct State final : RuleState {
  engine::Records<Ref> refs;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(refs, static_cast<State&>(later).refs); }
};

std::string display(const ObjectRef& r) {
  return r.kind() + " " + (r.namespace_().empty() ? "" : r.namespace_() + "/") + r.name();
}

class PriorityClassUnknown final : public Rule {
 public:
  PriorityClassUnknown() {
    info_.id = "priority-class-unknown";
    info_.severity = Severity::error;
    info_.category = "priority";
    info_.seed = "9.4";
    info_.summary = "A workload names a PriorityClass or WorkloadPriorityClass that does not exist";
    info_.rationale =
        "A class name is only a reference; nothing checks it when a Deployment, Job or training job is "
        "created. It is resolved later, and then it fails:\n\n"
        "- **Pods** (and the pods every controller stamps from a template): the `Priority` admission plugin "
        "rejects them (\"no PriorityClass with name training-hgih was found\"). The workload is accepted and "
        "never runs a pod.\n"
        "- **Volcano Jobs**: the job controller copies `spec.priorityClassName` into each task's pods that "
        "name none (and into the PodGroup), so the same rejection follows.\n"
        "- **PodGroups, Kubeflow `runPolicy.schedulingPolicy.priorityClass`**: the name goes to the "
        "gang's PodGroup, and Volcano silently orders and preempts the gang at the default priority "
        "(the globalDefault class's value, or 0: the scheduler cache's snapshot looks the class up and "
        "keeps the default when it is missing, volcano-sh/volcano `pkg/scheduler/cache/cache.go` @ed72c7c8).\n"
        "- **KubeRay's `ray.io/priority-class-name`** (read by KubeRay's Volcano batch scheduler only): "
        "since KubeRay v1.5 it goes to the Volcano PodGroup, as above, and to the pods as a label; "
        "KubeRay v1.4 set it as the pods' `spec.priorityClassName`, which the Priority admission plugin "
        "rejects (ray-project/kuberay `batchscheduler/volcano/volcano_scheduler.go`: `AddMetadataToPod` "
        "at v1.4.2, `AddMetadataToChildResource` at v1.5.0, v1.6.2 and v1.7.0, the current release; "
        "the rule follows v1.5 and later).\n"
        "- **KAI Scheduler's label `priorityClassName`** on the workload or a pod template, for pods "
        "that go to KAI (`kaiScheduler`): KAI reads it before `spec.priorityClassName`, and when no "
        "PriorityClass has that name it logs it and uses the default class of the workload's kind "
        "instead (`train`; `inference` for a Deployment; `build` for a Notebook), without an event or "
        "an error (calcPriorityClassWithDefaults, NVIDIA/KAI-Scheduler "
        "`pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go` @72de64fc, v0.13.0-rc1+142).\n"
        "- **Kueue's `kueue.x-k8s.io/priority-class` label** names a *WorkloadPriorityClass* (not a "
        "PriorityClass): Kueue looks it up to build the Workload, fails, and the job is never admitted.\n\n"
        "The built-in `system-node-critical` and `system-cluster-critical` always exist. The rule needs "
        "every class of the cluster, so it speaks only where the inventory is complete.";
    info_.remediation = "Fix the name, or create the class (as a PriorityClass, or a WorkloadPriorityClass for the Kueue label).";
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{"scheduling.volcano.sh", "PodGroup"});
    info_.reads = {KindRef{"scheduling.k8s.io", "PriorityClass"}, KindRef{"kueue.x-k8s.io", "WorkloadPriorityClass"}};
    info_.needs_complete = true;
    info_.params = {
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.4 — the `Priority` admission plugin rejects a pod whose class does "
        "not exist: \"no PriorityClass with name %v was found\" (kubernetes "
        "`plugin/pkg/admission/priority/admission.go` @acd88a09); built-ins in `pkg/apis/scheduling/v1/helpers.go`.",
        "facts/kubernetes-and-queues.md §2 — Volcano Job and PodGroup `priorityClassName`. Checked with search "
        "(code corpus, volcano-sh/volcano job controller `createJobPod`): \"If no priority class specified in pod "
        "template, use priority class specified in job\", and the PodGroup gets the job's class. What Volcano's "
        "scheduler does with a PodGroup class it cannot find, [U] there, is read now: the default priority "
        "(`pkg/scheduler/cache/cache.go` Snapshot, @ed72c7c8).",
        "facts/kubernetes-and-queues.md §5 — Kubeflow `runPolicy.schedulingPolicy.priorityClass` goes to the "
        "PodGroup (re-verified at kubeflow/trainer v1.9.4, 4445c12a: `pkg/controller.v1/common/job.go` "
        "ReconcileJobs); KubeRay's `ray.io/priority-class-name` label goes to the PodGroup, and to "
        "`pod.Spec.PriorityClassName` only up to v1.4 (ray-project/kuberay `volcano_scheduler.go` at v1.4.2, "
        "v1.5.0, v1.6.2, v1.7.0).",
        "facts/modern-stack.md §2 — KAI's label `priorityClassName` and its silent fallback, read in "
        "`default_grouper.go` at NVIDIA/KAI-Scheduler @72de64fc.",
        "The Priority admission plugin's rejection and default, re-verified in a current copy of kubernetes "
        "`plugin/pkg/admission/priority/admission.go` (the one with the 1.36 Workload API, WorkloadAwarePreemption "
        "gate; read in the code index, commit not pinned): `no PriorityClass with name %v was found` for pods, the "
        "lowest globalDefault class or 0 otherwise.",
        "facts/kubernetes-and-queues.md §3 — the Kueue label `kueue.x-k8s.io/priority-class` names a "
        "WorkloadPriorityClass; checked with search (kueue `pkg/util/priority/priority.go` "
        "`GetPriorityFromWorkloadPriorityClass`): the lookup error is returned, so no Workload is built.",
        "Releases checked (the code read above is the same there): KAI Scheduler v0.13.0 (5d35ecab; the groupers, the topology plugin and docs/priority, docs/topology, docs/batch unchanged up to @72de64fc), LeaderWorkerSet v0.10.0 (2161f38), Volcano v1.15.1 (0a56ed33: IsHardTopologyMode, parseNetworkTopologyFromPod, the highestTierName translation and the cache's priority look-up as at @ed72c7c8), KubeRay v1.7.0 and v1.6.2, kubeflow/trainer v1.9.4, JobSet v0.12.0.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(# gpuguard lint --complete: the class is misspelt
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training-high
value: 100000
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      priorityClassName: training-hgih
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
)";
    info_.example_good = R"(# gpuguard lint --complete
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training-high
value: 100000
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      priorityClassName: training-high
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    // The classes themselves are read, not checked: a Kueue label on a PriorityClass names nothing.
    if (obj.is("scheduling.k8s.io", "PriorityClass") || obj.is("kueue.x-k8s.io", "WorkloadPriorityClass")) return;
    auto named = priority::named_priority_classes(obj, ctx.params().string(sched::kKaiSchedulerParam));
    if (named.empty()) return;
    auto& refs = static_cast<State*>(ctx.state())->refs;
    for (auto& n : named) {
      Pos pos = ctx.position_of(n.pointer);
      refs.push_back({ctx.ref(), std::move(n), pos});
    }
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    const auto& refs = static_cast<State*>(ctx.state())->refs;
    if (refs.empty()) return;  // nothing names a class (the webhook's pod, mostly)
    std::set<std::string, std::less<>> classes, workload_classes;
    for (const Object* pc : inv.list("scheduling.k8s.io", "PriorityClass")) classes.insert(pc->name);
    for (const Object* wpc : inv.list("kueue.x-k8s.io", "WorkloadPriorityClass")) workload_classes.insert(wpc->name);
    for (const auto& r : refs) {
      const auto& n = r.named;
      const std::string who = display(r.object);
      if (n.kind == priority::ClassKind::workload) {
        if (workload_classes.count(n.name)) continue;
        std::string msg = who + ": " + std::string(n.where) + " names WorkloadPriorityClass \"" + n.name +
                          "\", which does not exist: Kueue cannot resolve the workload's priority, builds no Workload, "
                          "and the job is never admitted";
        if (classes.count(n.name)) msg += " (a PriorityClass of that name exists, but this label names a Kueue WorkloadPriorityClass)";
        ctx.report(r.object, n.pointer, r.pos, msg);
        continue;
      }
      if (classes.count(n.name) || priority::is_builtin_priority_class(n.name)) continue;
      std::string consequence;
      if (r.object.kind() == "Pod" && n.where == "the pod")
        consequence = "the Priority admission plugin rejects the pod";
      else if (n.where == "the pod template")
        consequence = "the Priority admission plugin rejects every pod created from it, so " + who + " never runs";
      else if (n.where == "the Volcano Job")
        consequence = "the job controller gives this class to the pods of every task that names none, and the Priority "
                      "admission plugin rejects them";
      else if (n.where == "the PodGroup")
        consequence = "Volcano orders and preempts the gang at the default priority instead, without a word";
      else if (n.where.starts_with("the KubeRay label"))
        consequence = "KubeRay (v1.5 and later) puts it on the Volcano PodGroup, which Volcano then orders and preempts at the "
                      "default priority without a word (KubeRay v1.4 put it on the pods, which the Priority admission "
                      "plugin rejects)";
      else if (n.where == priority::kKaiLabelWhere)
        consequence = "KAI Scheduler reads it first, logs that it is not found and gives the workload its kind's default "
                      "class instead (train; inference for a Deployment), without an event or an error";
      else
        consequence = "the operator puts it on the gang's PodGroup, which Volcano then orders and preempts at the default "
                      "priority without a word";
      // The Priority admission plugin's words where it is the one that refuses (a pod's own class).
      const bool admission = n.where == "the pod" || n.where == "the pod template" || n.where == "the Volcano Job";
      ctx.report(r.object, n.pointer, r.pos,
                 who + ": " + std::string(n.where) + " names PriorityClass \"" + n.name + "\", which does not exist" +
                     (admission ? " (\"no PriorityClass with name " + n.name + " was found\")" : std::string()) + ": " + consequence);
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_priority_class_unknown() { return std::make_unique<PriorityClassUnknown>(); }

}  // namespace gpuguard::rules
