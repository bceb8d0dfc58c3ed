// gang-scheduling-missing: a distributed GPU workload that is not gang scheduled.

#include "rules/all.h"
#include "rules/gang/membership.h"
#include "rules/gang/podgroups.h"

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
        "GPU workers, Jobs and CronJobs with `parallelism` > 1 and StatefulSets with more than one "
        "replica, all requesting GPUs. Any of these makes a workload a gang:\n\n"
        "- Volcano: a pod template with the annotation `scheduling.k8s.io/group-name` (its PodGroup), "
        "or `schedulerName: volcano` with the workload annotation `scheduling.volcano.sh/group-min-member` "
        "(Volcano then creates the PodGroup with that minMember). `schedulerName: volcano` alone is "
        "not enough: the PodGroup Volcano creates for a plain workload has `minMember: 1`;\n"
        "- scheduler-plugins coscheduling: the pod label `scheduling.x-k8s.io/pod-group`;\n"
        "- Kueue: the label `kueue.x-k8s.io/queue-name` (the workload is admitted all at once);\n"
        "- Kubeflow: `runPolicy.schedulingPolicy` (or the parameter `kubeflowGangScheduling` when the "
        "training operator runs with `--gang-scheduler-name` and gangs every job);\n"
        "- KubeRay: the RayCluster labels `ray.io/gang-scheduling-enabled`, `volcano.sh/queue-name`, "
        "`kai.scheduler/queue` or `ray.io/scheduler-name` (or the parameter `kuberayBatchScheduler`).\n\n"
        "Volcano Jobs (`batch.volcano.sh`) are gangs by construction (their controller creates a "
        "PodGroup with `minMember = minAvailable`) and are never reported. Deployments, "
        "LeaderWorkerSets and RayServices (serving, whose replicas do not wait for each other) are not "
        "checked. A Volcano PodGroup with `minMember: 0` (or none), which Volcano accepts and never "
        "gangs, is reported here too, as is a scheduler-plugins PodGroup without `minMember`.";
    info_.remediation =
        "Submit the job through Volcano (a Volcano Job, or the group annotation and `schedulerName: "
        "volcano`), label it for Kueue (`kueue.x-k8s.io/queue-name`), give a Kubeflow job "
        "`runPolicy.schedulingPolicy` (with `minAvailable`, `queue`, `priorityClass`), or label the pods "
        "for coscheduling. If your operators gang every job, set `kubeflowGangScheduling` / "
        "`kuberayBatchScheduler`.";
    info_.checks = {
        {"kubeflow.org", "PyTorchJob"}, {"kubeflow.org", "TFJob"},         {"kubeflow.org", "MPIJob"},
        {"kubeflow.org", "JAXJob"},     {"kubeflow.org", "XGBoostJob"},    {"kubeflow.org", "PaddleJob"},
        {"jobset.x-k8s.io", "JobSet"},  {"ray.io", "RayCluster"},          {"ray.io", "RayJob"},
        {"batch", "Job"},               {"batch", "CronJob"},              {"apps", "StatefulSet"},
        {"scheduling.volcano.sh", "PodGroup"}, {"scheduling.x-k8s.io", "PodGroup"},
    };
    info_.params = {
        ParamSpec{"kubeflowGangScheduling", ParamType::boolean, false,
                  "the training operator runs with `--gang-scheduler-name`, so every Kubeflow job is gang scheduled", std::nullopt,
                  std::nullopt},
        ParamSpec{"kuberayBatchScheduler", ParamType::boolean, false,
                  "the KubeRay operator runs with `--batch-scheduler`, so every RayCluster is gang scheduled", std::nullopt,
                  std::nullopt},
    };
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
        "the code index, not in training-operator release-1.9 itself), hence `kubeflowGangScheduling`.",
    };
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

  void check(const Object& obj, CheckContext& ctx) const override {
    if (gang::is_podgroup(obj)) {
      check_podgroup(obj, ctx);
      return;
    }
    if (!in_scope(obj)) return;
    const auto& gpus = ctx.settings().gpu_resources;
    const auto& templates = pod_templates(obj);
    int64_t pods = 0;
    bool gpu = false;
    std::string parts;
    for (const auto& t : templates) {
      if (!t.replicas) return;  // depends on the cluster
      pods = sat_add(pods, std::max<int64_t>(*t.replicas, 0));  // (the API refuses negative replicas)
      const bool worker_gpu = requests_gpu(t, gpus) && !(obj.gvk.group == "ray.io" && (t.role == "head" || t.role == "submitter"));
      gpu = gpu || worker_gpu;
      if (!t.role.empty()) parts += (parts.empty() ? "" : ", ") + t.role + " " + std::to_string(*t.replicas);
    }
    if (!gpu || pods < 2) return;
    const Params& p = ctx.params();
    if (gang::workload_membership(obj, p.boolean("kubeflowGangScheduling"), p.boolean("kuberayBatchScheduler"))) return;

    std::string what = std::to_string(pods) + " GPU pods" + (parts.empty() ? "" : " (" + parts + ")");
    std::string how;
    bool volcano_alone = false;
    for (const auto& t : templates) volcano_alone = volcano_alone || gang::scheduler_name(t) == "volcano";
    if (volcano_alone)
      how = " schedulerName volcano without a group annotation is not enough: the PodGroup Volcano creates for it has "
            "minMember 1.";
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
    ctx.report("/spec", what + " and no gang scheduling: the scheduler binds them one at a time, so jobs can each hold part of "
                               "the GPUs and wait for ever for the rest." + how + " To gang it, " + remedy);
  }

 private:
  static bool in_scope(const Object& obj) {
    if (is_kubeflow(obj)) return true;
    return obj.is("jobset.x-k8s.io", "JobSet") || obj.is("ray.io", "RayCluster") || obj.is("ray.io", "RayJob") ||
           obj.is("batch", "Job") || obj.is("batch", "CronJob") || obj.is("apps", "StatefulSet");
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
