// gang-queue-missing: a Volcano gang that names no queue and lands in `default`.

#include "engine/inventory.h"
#include "rules/all.h"
#include "rules/gang/membership.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

constexpr std::string_view kNamespaceQueueAnnotation = "scheduling.volcano.sh/queue-name";

struct Pending {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string message;
};

struct State final : RuleState {
  engine::Records<Pending> pending;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(pending, static_cast<State&>(later).pending); }
};

class GangQueueMissing final : public Rule {
 public:
  GangQueueMissing() {
    info_.id = "gang-queue-missing";
    info_.severity = Severity::warning;
    info_.category = "gang";
    info_.seed = "9.4";
    info_.summary = "A Volcano PodGroup, Volcano Job or Volcano-scheduled Kubeflow job names no queue and lands in `default`";
    info_.rationale =
        "The queue decides whose share of the cluster a gang uses, its weight and its capability (seed "
        "9.4 lists `queue` among a PodGroup's key parameters; 9.5 separates training, inference and "
        "development queues). A Volcano PodGroup or Volcano Job without `queue` is put in `default` (the "
        "CRD default and the vcjob mutating webhook), the queue with the lowest weight that every team "
        "shares: the team's own queue, its guarantee and its limits are bypassed.\n\n"
        "Kubeflow jobs are checked when they may be gang scheduled through Volcano: they have "
        "`runPolicy.schedulingPolicy` (the operator copies `schedulingPolicy.queue` into the Volcano "
        "PodGroup it creates with `--gang-scheduler-name=volcano`; with scheduler-plugins the queue is "
        "unused and the finding can be ignored), or pods with `schedulerName: volcano`; not when their "
        "pods go to KAI Scheduler (`kaiScheduler`), whose queue is the label `kai.scheduler/queue` on "
        "the workload or the pod, else its `project` label, else `default-queue` (NVIDIA/KAI-Scheduler "
        "`pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go` CalcPodGroupQueue @72de64fc). Volcano's PodGroup mutating webhook replaces "
        "`default` with the namespace's annotation `scheduling.volcano.sh/queue-name`; when that "
        "Namespace is in the input and carries the annotation, the rule is silent. With `gpuOnly` "
        "(the default) only Volcano Jobs and Kubeflow jobs that request GPUs are checked; PodGroups "
        "always.";
    info_.remediation =
        "Set `spec.queue` (PodGroup, Volcano Job) or `runPolicy.schedulingPolicy.queue` (Kubeflow) to "
        "the team's queue, or annotate the namespace with `scheduling.volcano.sh/queue-name`.";
    info_.checks = {{"scheduling.volcano.sh", "PodGroup"}, {"batch.volcano.sh", "Job"},     {"kubeflow.org", "PyTorchJob"},
                    {"kubeflow.org", "TFJob"},             {"kubeflow.org", "MPIJob"},      {"kubeflow.org", "JAXJob"},
                    {"kubeflow.org", "XGBoostJob"},        {"kubeflow.org", "PaddleJob"}};
    info_.reads = {KindRef{"", "Namespace"}};
    info_.params = {
        ParamSpec{"gpuOnly", ParamType::boolean, true, "check Volcano Jobs and Kubeflow jobs only when they request GPUs",
                  std::nullopt, std::nullopt},
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    info_.facts = {
        "Seed 9.4 (design.md §1): PodGroup key parameters `minMember`, `queue`, `priorityClassName`, `minResources`.",
        "facts/kubernetes-and-queues.md §2 — PodGroup `queue` default `\"default\"` (CRD: `default: default`, "
        "../shared/k8s-schemas/crds), vcjob `queue` default `default`; the PodGroup mutating webhook replaces "
        "`queue: default` with the namespace annotation `scheduling.volcano.sh/queue-name`.",
        "facts/kubernetes-and-queues.md §5 — Kubeflow `runPolicy.schedulingPolicy.queue`; with "
        "`--gang-scheduler-name=volcano` the operator sets `schedulerName: volcano` on the pods.",
        "Releases checked (the code read above is the same there): KAI Scheduler v0.13.0 (5d35ecab; the groupers, the topology plugin and docs/priority, docs/topology, docs/batch unchanged up to @72de64fc), LeaderWorkerSet v0.10.0 (2161f38), Volcano v1.15.1 (0a56ed33: IsHardTopologyMode, parseNetworkTopologyFromPod, the highestTierName translation and the cache's priority look-up as at @ed72c7c8), KubeRay v1.7.0 and v1.6.2, kubeflow/trainer v1.9.4, JobSet v0.12.0.",
    };
    info_.example_bad = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: train-pg
spec:
  minMember: 4
  priorityClassName: training
)";
    info_.example_good = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: train-pg
spec:
  minMember: 4
  queue: team-a-training
  priorityClassName: training
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    const bool gpu_only = ctx.params().boolean("gpuOnly");
    auto pend = [&](const std::string& pointer, std::string message) {
      st->pending.push_back(Pending{ctx.ref(), pointer, ctx.position_of(pointer), std::move(message)});
    };
    auto empty_at = [](Node j) { return !j || (j.is_string() && j.str().empty()); };
    const Node root = obj.root();
    const bool has_spec = static_cast<bool>(member(root, "spec"));
    if (gang::is_volcano_podgroup(obj)) {
      if (empty_at(path(root, {"spec", "queue"})))
        pend(has_spec ? "/spec" : "", "PodGroup names no queue, so Volcano puts it in the shared `default` queue (lowest weight, no "
                                      "team limits); set spec.queue to the team's queue");
      return;
    }
    if (obj.is("batch.volcano.sh", "Job")) {
      if (gpu_only && !requests_gpu(obj, ctx.settings().gpu_resources)) return;
      if (empty_at(path(root, {"spec", "queue"})))
        pend(has_spec ? "/spec" : "", "Volcano Job names no queue, so the webhook puts it in the shared `default` queue (lowest "
                                      "weight, no team limits); set spec.queue to the team's queue");
      return;
    }
    if (!gang::detail::is_kubeflow_job(obj)) return;
    if (gpu_only && !requests_gpu(obj, ctx.settings().gpu_resources)) return;
    const Node sp = path(root, {"spec", "runPolicy", "schedulingPolicy"});
    bool volcano_pods = false;
    for (const auto& t : pod_templates(obj)) volcano_pods = volcano_pods || gang::scheduler_name(t) == "volcano";
    // Pods that go to KAI Scheduler: Volcano never sees the job, and KAI's queue is its label.
    if (!volcano_pods && sched::kai_scheduled(obj, ctx.params().string(sched::kKaiSchedulerParam), ctx.settings().gpu_resources)) return;
    if (sp.is_object()) {
      if (empty_at(member(sp, "queue")))
        pend("/spec/runPolicy/schedulingPolicy",
             "schedulingPolicy names no queue: where the training operator gangs with Volcano (--gang-scheduler-name=volcano), "
             "the PodGroup it creates goes to the shared `default` queue (lowest weight, no team limits); set "
             "runPolicy.schedulingPolicy.queue (it cannot be changed later)");
    } else if (volcano_pods) {
      pend("/spec", "Kubeflow job scheduled by Volcano without runPolicy.schedulingPolicy: its PodGroup goes to Volcano's shared "
                    "`default` queue (lowest weight, no team limits); set runPolicy.schedulingPolicy.queue");
    }
  }

  void finish(FinishContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    const Inventory& inv = ctx.inventory();
    for (const auto& p : st->pending) {
      if (!p.ref.namespace_().empty()) {
        if (const Object* ns = inv.find("", "Namespace", "", p.ref.namespace_())) {
          if (const Node q = ns->annotation(kNamespaceQueueAnnotation); q.is_string() && !q.str().empty())
            continue;
        }
      }
      ctx.report(p.ref, p.pointer, p.pos, p.message);
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gang_queue_missing() { return std::make_unique<GangQueueMissing>(); }

}  // namespace gpuguard::rules
