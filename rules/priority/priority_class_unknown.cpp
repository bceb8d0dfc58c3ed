// priority-class-unknown: a workload names a PriorityClass (or WorkloadPriorityClass) that does not exist.

#include <set>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/priority/names.h"

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
        "- **PodGroups, Kubeflow `runPolicy.schedulingPolicy.priorityClass`, KubeRay's "
        "`ray.io/priority-class-name`**: the name goes to the gang's PodGroup (KubeRay also puts it on the "
        "pods), whose priority the gang scheduler cannot resolve.\n"
        "- **Kueue's `kueue.x-k8s.io/priority-class` label** names a *WorkloadPriorityClass* (not a "
        "PriorityClass): Kueue looks it up to build the Workload, fails, and the job is never admitted.\n\n"
        "The built-in `system-node-critical` and `system-cluster-critical` always exist. The rule needs "
        "every class of the cluster, so it speaks only where the inventory is complete.";
    info_.remediation = "Fix the name, or create the class (as a PriorityClass, or a WorkloadPriorityClass for the Kueue label).";
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{"scheduling.volcano.sh", "PodGroup"});
    info_.reads = {KindRef{"scheduling.k8s.io", "PriorityClass"}, KindRef{"kueue.x-k8s.io", "WorkloadPriorityClass"}};
    info_.needs_complete = true;
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.4 — the `Priority` admission plugin rejects a pod whose class does "
        "not exist: \"no PriorityClass with name %v was found\" (kubernetes "
        "`plugin/pkg/admission/priority/admission.go` @acd88a09); built-ins in `pkg/apis/scheduling/v1/helpers.go`.",
        "facts/kubernetes-and-queues.md §2 — Volcano Job and PodGroup `priorityClassName`. Checked with search "
        "(code corpus, volcano-sh/volcano job controller `createJobPod`): \"If no priority class specified in pod "
        "template, use priority class specified in job\", and the PodGroup gets the job's class. What Volcano's "
        "scheduler does with a PodGroup class it cannot find is not verified [U].",
        "facts/kubernetes-and-queues.md §5 — Kubeflow `runPolicy.schedulingPolicy.priorityClass` goes to the "
        "PodGroup (training-operator `ReconcilePodGroups`); KubeRay's `ray.io/priority-class-name` label goes to "
        "the PodGroup and, checked with search (kuberay `volcano_scheduler.go` `AddMetadataToPod`), to "
        "`pod.Spec.PriorityClassName`.",
        "facts/kubernetes-and-queues.md §3 — the Kueue label `kueue.x-k8s.io/priority-class` names a "
        "WorkloadPriorityClass; checked with search (kueue `pkg/util/priority/priority.go` "
        "`GetPriorityFromWorkloadPriorityClass`): the lookup error is returned, so no Workload is built.",
    };
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
    auto named = priority::named_priority_classes(obj);
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
        consequence = "the gang scheduler cannot resolve the gang's priority";
      else if (n.where.starts_with("the KubeRay label"))
        consequence = "KubeRay puts it on the PodGroup and on the pods, and the Priority admission plugin rejects the pods";
      else
        consequence = "the operator puts it on the gang's PodGroup, whose priority the gang scheduler cannot resolve";
      ctx.report(r.object, n.pointer, r.pos,
                 who + ": " + std::string(n.where) + " names PriorityClass \"" + n.name + "\", which does not exist (\"no PriorityClass with name " +
                     n.name + " was found\"): " + consequence);
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_priority_class_unknown() { return std::make_unique<PriorityClassUnknown>(); }

}  // namespace gpuguard::rules
