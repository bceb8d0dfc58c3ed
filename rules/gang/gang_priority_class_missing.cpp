// gang-priority-class-missing: a gang (Volcano PodGroup, Volcano Job, Kubeflow job) without a priority class.

#include "engine/dra.h"
#include "rules/all.h"
#include "rules/gang/membership.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class GangPriorityClassMissing final : public Rule {
 public:
  GangPriorityClassMissing() {
    info_.id = "gang-priority-class-missing";
    info_.severity = Severity::warning;
    info_.category = "gang";
    info_.seed = "9.4";
    info_.summary = "A Volcano PodGroup, Volcano Job or Kubeflow training job has no priority class";
    info_.rationale =
        "Seed 9.4 lists `priorityClassName` among a gang's key parameters, and 9.5 builds preemption on "
        "PriorityClasses. A gang without one has the cluster's default priority (the globalDefault "
        "class, or 0): Volcano orders and preempts whole jobs by the PodGroup's priority, so a critical "
        "training job without a class waits behind experiments and cannot reclaim GPUs from them.\n\n"
        "- Volcano PodGroup: `spec.priorityClassName`.\n"
        "- Volcano Job: `spec.priorityClassName` (copied into its PodGroup; a task template's "
        "`priorityClassName` orders pods inside the job, not the job among others).\n"
        "- Kubeflow training job: `runPolicy.schedulingPolicy.priorityClass`, a `priorityClassName` in "
        "its pod templates, or Kueue's `kueue.x-k8s.io/priority-class` label; when its pods go to KAI "
        "Scheduler (`kaiScheduler`), also the label `priorityClassName` on the job or on a pod template, "
        "which KAI reads before the pods' `spec.priorityClassName` (NVIDIA/KAI-Scheduler "
        "`docs/priority/README.md`, calcPodGroupPriorityClass in "
        "`pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go` @72de64fc, v0.13.0-rc1+142). "
        "Without any, KAI gives the job its default class for the kind, `train` (50, preemptible), and the "
        "message says so.\n\n"
        "A scheduler-plugins PodGroup has no priority field (its pods carry theirs) and is not checked. "
        "With `gpuOnly` (the default) only Volcano Jobs and training jobs that request GPUs are checked.\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.remediation =
        "Set the field to one of the cluster's classes (e.g. `training-high`), so that gangs preempt "
        "in the intended order.";
    info_.checks = {{"scheduling.volcano.sh", "PodGroup"}, {"batch.volcano.sh", "Job"},  {"kubeflow.org", "PyTorchJob"},
                    {"kubeflow.org", "TFJob"},             {"kubeflow.org", "MPIJob"},   {"kubeflow.org", "JAXJob"},
                    {"kubeflow.org", "XGBoostJob"},        {"kubeflow.org", "PaddleJob"}};
    info_.reads = dra_kinds();
    info_.params = {
        ParamSpec{"gpuOnly", ParamType::boolean, true, "check Volcano Jobs and training jobs only when they request GPUs",
                  std::nullopt, std::nullopt},
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "Seed 9.4 (design.md §1): PodGroup key parameters `minMember`, `queue`, `priorityClassName`, `minResources`; "
        "9.5: preemption through PriorityClasses.",
        "facts/kubernetes-and-queues.md §2 — Volcano PodGroup and vcjob `priorityClassName`; §5 — Kubeflow "
        "`runPolicy.schedulingPolicy.priorityClass`; §3 — Kueue's `kueue.x-k8s.io/priority-class` label; "
        "§1.4 — a pod without a class gets the globalDefault's value, or 0.",
        "facts/modern-stack.md §2 — KAI priority: the label `priorityClassName` on the workload or the pod, else "
        "`spec.priorityClassName`; a name that is not a PriorityClass is skipped for the kind's default (read in "
        "`default_grouper.go` calcPriorityClassWithDefaults at NVIDIA/KAI-Scheduler @72de64fc: [V]).",
        "Re-verified for the training operator at kubeflow/trainer v1.9.4 (4445c12a, 2026-08-18): "
        "`pkg/controller.v1/common/job.go` ReconcileJobs gives the PodGroup `schedulingPolicy.priorityClass`.",
        "Releases checked (the code read above is the same there): KAI Scheduler v0.13.0 (5d35ecab; the groupers, the topology plugin and docs/priority, docs/topology, docs/batch unchanged up to @72de64fc), LeaderWorkerSet v0.10.0 (2161f38), Volcano v1.15.1 (0a56ed33: IsHardTopologyMode, parseNetworkTopologyFromPod, the highestTierName translation and the cache's priority look-up as at @ed72c7c8), KubeRay v1.7.0 and v1.6.2, kubeflow/trainer v1.9.4, JobSet v0.12.0.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: train-pg
spec:
  minMember: 4
  queue: team-a
)";
    info_.example_good = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: train-pg
spec:
  minMember: 4
  queue: team-a
  priorityClassName: training-high
)";
  }

  const RuleInfo& info() const override { return info_; }

  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<DraHeldState>(); }
  void finish(FinishContext& ctx) const override { report_held(ctx, static_cast<DraHeldState*>(ctx.state())->held); }

  void check(const Object& obj, CheckContext& ctx) const override {
    const bool gpu_only = ctx.params().boolean("gpuOnly");
    auto& held = static_cast<DraHeldState*>(ctx.state())->held;
    // With gpuOnly, a job without GPUs in its resources but with claims: its finding waits for finish,
    // which resolves the claims.
    std::vector<PodClaim> dra;
    auto gpu_or_claims = [&] {
      if (!gpu_only || requests_gpu(obj, ctx.settings().gpu_resources)) return true;
      dra = pod_claims(obj);
      return !dra.empty();
    };
    auto set = [](Node j) { return j.is_string() && !j.str().empty(); };
    const Node root = obj.root();
    const std::string at = member(root, "spec") ? "/spec" : "";
    if (gang::is_volcano_podgroup(obj)) {
      if (!set(path(root, {"spec", "priorityClassName"})))
        ctx.report(at, "PodGroup has no priorityClassName: Volcano orders and preempts it with the default priority; set "
                       "spec.priorityClassName");
      return;
    }
    if (obj.is("batch.volcano.sh", "Job")) {
      if (!gpu_or_claims()) return;
      if (set(path(root, {"spec", "priorityClassName"}))) return;
      bool in_tasks = false;
      for (const auto& t : pod_templates(obj)) in_tasks = in_tasks || set(member(t.spec, "priorityClassName"));
      report_or_hold(ctx, held, dra, at, std::string("Volcano Job has no spec.priorityClassName: its PodGroup, which Volcano orders and preempts, "
                                 "gets the default priority") +
                         (in_tasks ? " (the tasks' priorityClassName only orders pods within the job)" : "") +
                         "; set spec.priorityClassName");
      return;
    }
    if (!gang::detail::is_kubeflow_job(obj)) return;
    if (!gpu_or_claims()) return;
    if (set(path(root, {"spec", "runPolicy", "schedulingPolicy", "priorityClass"}))) return;
    if (set(obj.label("kueue.x-k8s.io/priority-class"))) return;
    for (const auto& t : pod_templates(obj))
      if (set(member(t.spec, "priorityClassName"))) return;
    const bool kai = sched::kai_scheduled(obj, ctx.params().string(sched::kKaiSchedulerParam), ctx.settings().gpu_resources);
    if (kai)
      for (const auto& t : pod_templates(obj))
        if (!sched::kai_priority_label(obj, t).empty()) return;
    if (kai) {
      report_or_hold(ctx, held, dra, at, "training job has no priority class (the label priorityClassName on the job or a pod template, which KAI "
                     "Scheduler reads first, runPolicy.schedulingPolicy.priorityClass, a pod template's priorityClassName, or "
                     "the kueue.x-k8s.io/priority-class label): KAI gives it its default class for the kind (train, "
                     "preemptible); set one");
      return;
    }
    report_or_hold(ctx, held, dra, at, "training job has no priority class (runPolicy.schedulingPolicy.priorityClass, a pod template's "
                   "priorityClassName, or the kueue.x-k8s.io/priority-class label): it runs and is preempted with the "
                   "default priority; set one");
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gang_priority_class_missing() { return std::make_unique<GangPriorityClassMissing>(); }

}  // namespace gpuguard::rules
