// gang-scheduling-missing: a distributed GPU workload that is not gang scheduled.

#include "engine/dra.h"
#include "rules/all.h"
#include "rules/gang/membership.h"
#include "rules/gang/podgroups.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

bool is_kubeflow(const Object& o) { return gang::detail::is_kubeflow_job(o); }

class GangSchedulingMissing final : public Rule {
 public:
  GangSchedulingMissing() {
    info_.id = "gang-scheduling-missing";
    info_.severity = Severity::warning;
    info_.category = "gang";
    info_.seed = "9.4";
    info_.summary = "A distributed GPU workload is not gang scheduled";
    info_.rationale =
        "A distributed training job needs all its pods at once: NCCL and MPI wait for every rank. The "
        "default scheduler binds pods one at a time, so two jobs that each need 16 GPUs on a 16-GPU "
        "cluster can each get 8 and wait for ever, holding GPUs nobody uses (seed 9.4: \"Gang "
        "Scheduling: all pods of a distributed job are scheduled together or not at all\").\n\n"
        "The rule looks at multi-pod GPU workloads: Kubeflow training jobs (PyTorchJob, TFJob, MPIJob, "
        "JAXJob, PaddleJob, XGBoostJob) and JobSets with more than one pod, RayClusters and RayJobs with "
        "GPU workers, Jobs and CronJobs with `parallelism` > 1, StatefulSets with more than one "
        "replica, and LeaderWorkerSets whose groups have more than one pod (`leaderWorkerTemplate.size` > 1: "
        "a group serves one model across its pods, and a group short of a pod idles the GPUs of the "
        "others), all requesting GPUs. Any of these makes a workload a gang:\n\n"
        "- Volcano: a pod template with the annotation `scheduling.k8s.io/group-name` (its PodGroup), "
        "or `schedulerName: volcano` with the workload annotation `scheduling.volcano.sh/group-min-member` "
        "(Volcano then creates the PodGroup with that minMember). `schedulerName: volcano` alone is "
        "not enough: the PodGroup Volcano creates for a plain workload has `minMember: 1`;\n"
        "- scheduler-plugins coscheduling: the pod label `scheduling.x-k8s.io/pod-group`;\n"
        "- Kueue: the label `kueue.x-k8s.io/queue-name` (the workload is admitted all at once; a "
        "LeaderWorkerSet as one Workload per group);\n"
        "- Kubeflow: `runPolicy.schedulingPolicy` (or the parameter `kubeflowGangScheduling` when the "
        "training operator runs with `--gang-scheduler-name` and gangs every job);\n"
        "- KubeRay: the RayCluster labels `ray.io/gang-scheduling-enabled`, `volcano.sh/queue-name` or "
        "`kai.scheduler/queue` (or the parameter `kuberayBatchScheduler`, when the operator's "
        "`--batch-scheduler` is Volcano, whose plugin gives every cluster a PodGroup, or KAI; its YuniKorn "
        "and scheduler-plugins plugins gang only clusters labelled `ray.io/gang-scheduling-enabled`: "
        "ray-project/kuberay `batchscheduler/*` at v1.7.0, the current release, and v1.6.2). "
        "`ray.io/scheduler-name` chose the batch scheduler per cluster up to v1.2; nothing reads it at "
        "v1.3.2, v1.4.2 or v1.5.0, and v1.6 dropped it (`utils/constant.go`), so it gangs nothing;\n"
        "- KAI Scheduler: pods with `schedulerName: kai-scheduler` (`kaiScheduler`) of a kind its "
        "pod-grouper gangs by itself: a Kubeflow PyTorchJob, TFJob, MPIJob, JAXJob or XGBoostJob, a "
        "JobSet (one PodGroup per replicated job), a LeaderWorkerSet (one per group), a Ray cluster "
        "(NVIDIA/KAI-Scheduler `pkg/podgrouper/podgrouper/plugins/*` @72de64fc, v0.13.0-rc1+142). KAI "
        "schedules the pods of a batch Job or CronJob separately (one PodGroup per pod: `docs/batch`, "
        "`plugins/job/job_grouper.go`) and gives a StatefulSet or a PaddleJob one PodGroup of minMember 1 "
        "(the default grouper): those are reported, and the message says so;\n"
        "- LeaderWorkerSet's Volcano provider: with the LWS controller's "
        "`gangSchedulingManagement.schedulerProvider: volcano` (the parameter `lwsVolcanoGangScheduling`) "
        "and the pods sent to Volcano (`schedulerName: volcano`), one PodGroup per group of minMember = "
        "`size`. Under `startupPolicy: LeaderReady` that PodGroup has **minMember 1** (its minResources "
        "still count the whole group), so Volcano binds the leader alone and the workers later: that is "
        "reported (kubernetes-sigs/lws `pkg/schedulerprovider/volcano_provider.go` @060ab4da, v0.10.0+11).\n\n"
        "Volcano Jobs (`batch.volcano.sh`) are gangs by construction (their controller creates a "
        "PodGroup with `minMember = minAvailable`) and are never reported. Deployments and RayServices "
        "(serving, whose replicas do not wait for each other) are not checked. A Volcano PodGroup with "
        "`minMember: 0` (or none), which Volcano accepts and never gangs, is reported here too, as is a "
        "scheduler-plugins PodGroup without `minMember`.\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.remediation =
        "Submit the job through Volcano (a Volcano Job, or the group annotation and `schedulerName: "
        "volcano`), label it for Kueue (`kueue.x-k8s.io/queue-name`), give a Kubeflow job "
        "`runPolicy.schedulingPolicy` (with `minAvailable`, `queue`, `priorityClass`), label the pods "
        "for coscheduling, or send its pods to KAI Scheduler if it is of a kind KAI gangs. A "
        "LeaderWorkerSet: label it for Kueue, send its pods to KAI, or run the LWS controller with the "
        "Volcano provider (`startupPolicy: LeaderCreated`). If your operators gang every job, set "
        "`kubeflowGangScheduling` / `kuberayBatchScheduler` / `lwsVolcanoGangScheduling`.";
    info_.checks = {
        {"kubeflow.org", "PyTorchJob"}, {"kubeflow.org", "TFJob"},         {"kubeflow.org", "MPIJob"},
        {"kubeflow.org", "JAXJob"},     {"kubeflow.org", "XGBoostJob"},    {"kubeflow.org", "PaddleJob"},
        {"jobset.x-k8s.io", "JobSet"},  {"ray.io", "RayCluster"},          {"ray.io", "RayJob"},
        {"batch", "Job"},               {"batch", "CronJob"},              {"apps", "StatefulSet"},
        {"scheduling.volcano.sh", "PodGroup"}, {"scheduling.x-k8s.io", "PodGroup"},
        {"leaderworkerset.x-k8s.io", "LeaderWorkerSet"},
    };
    info_.reads = dra_kinds();
    info_.params = {
        ParamSpec{"kubeflowGangScheduling", ParamType::boolean, false,
                  "the training operator runs with `--gang-scheduler-name`, so every Kubeflow job is gang scheduled", std::nullopt,
                  std::nullopt},
        ParamSpec{"kuberayBatchScheduler", ParamType::boolean, false,
                  "the KubeRay operator runs with `--batch-scheduler` volcano or kai-scheduler, so every RayCluster is gang scheduled "
                  "(its yunikorn and scheduler-plugins schedulers gang only clusters labelled `ray.io/gang-scheduling-enabled`)", std::nullopt,
                  std::nullopt},
        ParamSpec{"lwsVolcanoGangScheduling", ParamType::boolean, false,
                  "the LeaderWorkerSet controller runs with `gangSchedulingManagement.schedulerProvider: volcano`, so each group "
                  "of a LeaderWorkerSet whose pods go to Volcano gets a PodGroup",
                  std::nullopt, std::nullopt},
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "Seed 9.4 (design.md §1): gang scheduling with a Volcano PodGroup or Kueue.",
        "facts/kubernetes-and-queues.md §2 — the Volcano annotation `scheduling.k8s.io/group-name`; the "
        "PodGroup Volcano creates for a plain pod (`pg_controller_handler.go`) has minMember 1 unless the "
        "owner carries `scheduling.volcano.sh/group-min-member` (`getMinMemberFromUpperRes`, read in the "
        "code index); PodGroup CRD `minMember` minimum 0 (../shared/k8s-schemas/crds).",
        "facts/kubernetes-and-queues.md §3 (Kueue label `kueue.x-k8s.io/queue-name`), §4 (coscheduling "
        "label `scheduling.x-k8s.io/pod-group`), §5 (Kubeflow `runPolicy.schedulingPolicy` and "
        "`--gang-scheduler-name`; KubeRay `--batch-scheduler` and its RayCluster labels).",
        "Gang scheduling of Kubeflow jobs is an operator-wide switch: `JobController.ReconcileJobs` calls "
        "`CreateGang(job, replicas, runPolicy.SchedulingPolicy)` for every job when `EnableGangScheduling` "
        "is on, and `schedulingPolicy` only tunes the PodGroup (read in a kubeflow/common-derived copy in "
        "the code index, not in training-operator release-1.9 itself), hence `kubeflowGangScheduling`. "
        "Re-verified at kubeflow/trainer tag v1.9.4 (4445c12a, 2026-08-18, the current release of the v1 "
        "`kubeflow.org` jobs; master is Trainer v2): `pkg/controller.v1/common/job.go` ReconcileJobs syncs a "
        "PodGroup for every job whenever `EnableGangScheduling()` (minMember = all replicas unless "
        "`schedulingPolicy.minAvailable`), and `control/podgroup_control.go` puts the Volcano group annotation "
        "on the pods.",
        "facts/modern-stack.md §2, §4 — what KAI and LeaderWorkerSet gang, read in the upstream code (see above): "
        "KAI's groupers per kind at NVIDIA/KAI-Scheduler @72de64fc (the [I] \"min = group size under "
        "LeaderCreated\" confirmed in `lws_grouper.go`; under LeaderReady the leader alone, then the group); the "
        "LWS Volcano provider's minMember = size, 1 under LeaderReady, at kubernetes-sigs/lws @060ab4da "
        "(`docs/examples/sample/gang-scheduling/README.md` says the same).",
        "Releases checked (the code read above is the same there): KAI Scheduler v0.13.0 (5d35ecab; the groupers, the topology plugin and docs/priority, docs/topology, docs/batch unchanged up to @72de64fc), LeaderWorkerSet v0.10.0 (2161f38), Volcano v1.15.1 (0a56ed33: IsHardTopologyMode, parseNetworkTopologyFromPod, the highestTierName translation and the cache's priority look-up as at @ed72c7c8), KubeRay v1.7.0 and v1.6.2, kubeflow/trainer v1.9.4, JobSet v0.12.0.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.06-py3
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.06-py3
              resources:
                limits:
                  nvidia.com/gpu: 8
)";
    info_.example_good = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train
  labels:
    kueue.x-k8s.io/queue-name: team-a
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.06-py3
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.06-py3
              resources:
                limits:
                  nvidia.com/gpu: 8
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<DraHeldState>(); }
  void finish(FinishContext& ctx) const override { report_held(ctx, static_cast<DraHeldState*>(ctx.state())->held); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (gang::is_podgroup(obj)) {
      check_podgroup(obj, ctx);
      return;
    }
    if (!in_scope(obj)) return;
    if (sched::is_lws(obj)) {
      check_lws(obj, ctx);
      return;
    }
    const auto& gpus = ctx.settings().gpu_resources;
    const auto& templates = pod_templates(obj);
    int64_t pods = 0;
    bool gpu = false;
    std::vector<PodClaim> claims;  // of the workers without GPUs in their resources: resolved in finish
    std::string parts;
    for (const auto& t : templates) {
      if (!t.replicas) return;  // depends on the cluster
      pods = sat_add(pods, std::max<int64_t>(*t.replicas, 0));  // (the API refuses negative replicas)
      const bool worker = !(obj.gvk.group == "ray.io" && (t.role == "head" || t.role == "submitter"));
      const bool worker_gpu = worker && requests_gpu(t, gpus);
      gpu = gpu || worker_gpu;
      if (worker && !worker_gpu) {
        auto c = pod_claims(t.spec);
        claims.insert(claims.end(), std::make_move_iterator(c.begin()), std::make_move_iterator(c.end()));
      }
      if (!t.role.empty()) parts += (parts.empty() ? "" : ", ") + t.role + " " + std::to_string(*t.replicas);
    }
    if (gpu) claims.clear();
    if ((!gpu && claims.empty()) || pods < 2) return;
    const Params& p = ctx.params();
    const std::string kai = p.string(sched::kKaiSchedulerParam);
    if (gang::workload_membership(obj, p.boolean("kubeflowGangScheduling"), p.boolean("kuberayBatchScheduler"), kai, &gpus)) return;

    std::string what = std::to_string(pods) + " GPU pods" + (parts.empty() ? "" : " (" + parts + ")");
    std::string how;
    bool volcano_alone = false;
    for (const auto& t : templates) volcano_alone = volcano_alone || gang::scheduler_name(t) == "volcano";
    if (volcano_alone)
      how = " schedulerName volcano without a group annotation is not enough: the PodGroup Volcano creates for it has "
            "minMember 1.";
    if (sched::kai_scheduled(obj, kai, gpus)) {
      if (sched::kai_grouping(obj) == sched::KaiGrouping::per_pod)
        how += " KAI Scheduler schedules the pods of a " + obj.gvk.kind + " separately (one PodGroup per pod), and gangs only "
               "Kubeflow jobs, JobSets, LeaderWorkerSets and Ray clusters.";
      else
        how += " KAI Scheduler gives a " + obj.gvk.kind + " one PodGroup of minMember 1, and gangs only Kubeflow PyTorch, "
               "TF, MPI, JAX and XGBoost jobs, JobSets, LeaderWorkerSets and Ray clusters.";
    }
    std::string remedy;
    if (is_kubeflow(obj))
      remedy = "give it runPolicy.schedulingPolicy (minAvailable, queue, priorityClass), label it kueue.x-k8s.io/queue-name, or "
               "run the training operator with --gang-scheduler-name";
    else if (obj.gvk.group == "ray.io")
      remedy = "run KubeRay with --batch-scheduler (volcano, yunikorn, kai-scheduler, scheduler-plugins) and label the "
               "cluster for it, or label it kueue.x-k8s.io/queue-name";
    else
      remedy = "label it kueue.x-k8s.io/queue-name, or give its pods a PodGroup (Volcano: annotation scheduling.k8s.io/group-name "
               "and schedulerName volcano; coscheduling: label scheduling.x-k8s.io/pod-group)";
    report_or_hold(ctx, static_cast<DraHeldState*>(ctx.state())->held, claims, "/spec",
                   what + " and no gang scheduling: the scheduler binds them one at a time, so jobs can each hold part of "
                               "the GPUs and wait for ever for the rest." + how + " To gang it, " + remedy);
  }

 private:
  static bool in_scope(const Object& obj) {
    if (is_kubeflow(obj)) return true;
    return obj.is("jobset.x-k8s.io", "JobSet") || obj.is("ray.io", "RayCluster") || obj.is("ray.io", "RayJob") ||
           obj.is("batch", "Job") || obj.is("batch", "CronJob") || obj.is("apps", "StatefulSet") || sched::is_lws(obj);
  }

  // A LeaderWorkerSet: each group of `size` pods must be placed together.
  static void check_lws(const Object& obj, CheckContext& ctx) {
    const auto& gpus = ctx.settings().gpu_resources;
    const int64_t size = sched::lws_size(obj);
    if (size < 2) return;
    std::vector<PodClaim> claims;  // resolved in finish
    if (!requests_gpu(obj, gpus)) {
      claims = pod_claims(obj);
      if (claims.empty()) return;
    }
    const int64_t groups = int_at(member(obj.root(), "spec"), "replicas").value_or(1);
    if (groups < 1) return;
    const Params& p = ctx.params();
    const std::string kai = p.string(sched::kKaiSchedulerParam);
    if (gang::workload_membership(obj, false, false, kai, &gpus)) return;
    bool volcano = true;
    for (const auto& t : pod_templates(obj)) volcano = volcano && gang::scheduler_name(t) == "volcano";
    const std::string what = "LeaderWorkerSet groups of " + std::to_string(size) + " GPU pods (" + std::to_string(groups) +
                             (groups == 1 ? " group)" : " groups)");
    if (volcano && p.boolean("lwsVolcanoGangScheduling")) {
      if (!sched::lws_leader_ready(obj)) return;
      report_or_hold(ctx, static_cast<DraHeldState*>(ctx.state())->held, claims, "/spec/startupPolicy",
                 what + " under startupPolicy LeaderReady: the PodGroup the LeaderWorkerSet's Volcano provider makes for each "
                        "group has minMember 1 (its minResources still count the whole group), so Volcano binds the leader "
                        "alone and the workers later, one at a time, and groups can each hold part of the GPUs. Use "
                        "startupPolicy LeaderCreated (minMember = size), or KAI Scheduler, which gangs the workers once the "
                        "leader runs");
      return;
    }
    std::string how;
    if (volcano)
      how = " schedulerName volcano alone is not enough: without the LeaderWorkerSet controller's Volcano provider "
            "(gangSchedulingManagement.schedulerProvider: volcano; then set lwsVolcanoGangScheduling), Volcano makes a "
            "PodGroup of minMember 1 for each StatefulSet of a group.";
    report_or_hold(ctx, static_cast<DraHeldState*>(ctx.state())->held, claims, "/spec",
                   what + " and no gang scheduling: the scheduler binds a group's pods one at a time, so groups can each "
                               "hold part of the GPUs and wait for ever for the rest." + how +
                               " To gang it, label it kueue.x-k8s.io/queue-name (one Workload per group), send its pods to KAI "
                               "Scheduler (schedulerName " + (kai.empty() ? std::string("kai-scheduler") : kai) +
                               "), or run the LeaderWorkerSet controller with the Volcano provider and schedulerName volcano");
  }

  static void check_podgroup(const Object& obj, CheckContext& ctx) {
    const Node root = obj.root();
    const Node mm = path(root, {"spec", "minMember"});
    if (gang::is_volcano_podgroup(obj)) {
      if (!mm)
        ctx.report(member(root, "spec") ? "/spec" : "",
                   "Volcano PodGroup without minMember: it counts as 0, which Volcano accepts and never gangs (every member "
                   "pod is bound on its own); set minMember to the number of pods that must start together");
      else if (as_int(mm) == std::optional<int64_t>(0))
        ctx.report("/spec/minMember",
                   "minMember 0: Volcano accepts it and never gangs (every member pod is bound on its own); set minMember to "
                   "the number of pods that must start together");
    } else if (!mm) {
      ctx.report(member(root, "spec") ? "/spec" : "",
                 "scheduler-plugins PodGroup without minMember: Coscheduling has no group size to wait for; set minMember to "
                 "the number of pods that must start together");
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gang_scheduling_missing() { return std::make_unique<GangSchedulingMissing>(); }

}  // namespace gpuguard::rules
