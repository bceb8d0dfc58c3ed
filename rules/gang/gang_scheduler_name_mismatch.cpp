// gang-scheduler-name-mismatch: a pod that names a gang its scheduler does not know about.

#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/gang/membership.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// Kinds whose operator sets the pods' scheduler itself (Volcano Job: spec.schedulerName; the
// Kubeflow training operator and KubeRay: their gang-scheduler flags), so a template's own
// schedulerName is not the last word.
bool operator_managed(const Object& obj) {
  return obj.gvk.group == "batch.volcano.sh" || obj.gvk.group == "kubeflow.org" || obj.gvk.group == "ray.io";
}

class GangSchedulerNameMismatch final : public Rule {
 public:
  GangSchedulerNameMismatch() {
    info_.id = "gang-scheduler-name-mismatch";
    info_.severity = Severity::error;
    info_.category = "gang";
    info_.seed = "9.4";
    info_.summary = "A pod names a PodGroup, but is scheduled by a scheduler that does not gang";
    info_.rationale =
        "A pod joins a gang by naming its PodGroup, but only the gang scheduler reads that name:\n\n"
        "- the Volcano annotation `scheduling.k8s.io/group-name` (or `scheduling.volcano.sh/group-name`) "
        "is read by the Volcano scheduler, which only schedules pods with `schedulerName: volcano`;\n"
        "- the coscheduling label `scheduling.x-k8s.io/pod-group` is read by the Coscheduling plugin, "
        "which runs in the scheduler-plugins scheduler (installed as a second scheduler, "
        "`scheduler-plugins-scheduler`, or as the default scheduler's profile).\n\n"
        "A pod that names a group but goes to another scheduler is bound on its own, as soon as it "
        "fits: the group's `minMember` is never consulted and the job is not gang scheduled at all "
        "(partial starts, GPUs held by half-started jobs, the deadlock gangs exist to prevent).\n\n"
        "Where the coscheduling plugin runs inside `default-scheduler` (the upstream sample "
        "`manifests/coscheduling/scheduler-config.yaml` does that), set `coschedulingScheduler` to "
        "`default-scheduler` and the label alone is right. Pods of Volcano Jobs, Kubeflow jobs and "
        "Ray clusters are not checked: their operators set `schedulerName` themselves.";
    info_.remediation =
        "Set `schedulerName: volcano` on pods with the Volcano group annotation, and the "
        "scheduler-plugins scheduler's name on pods with the coscheduling label. The fix (and the "
        "mutating webhook) sets it; for coscheduling only when `coschedulingScheduler` is set.";
    info_.checks.clear();
    for (const auto& k : pod_template_kinds())
      if (k.group != "batch.volcano.sh" && k.group != "kubeflow.org" && k.group != "ray.io") info_.checks.push_back(k);
    info_.params = {
        ParamSpec{"volcanoScheduler", ParamType::string, "volcano", "the Volcano scheduler's name (its `--scheduler-name`)",
                  std::nullopt, std::nullopt},
        ParamSpec{"coschedulingScheduler", ParamType::string, "scheduler-plugins-scheduler",
                  "the name of the scheduler profile that runs Coscheduling (`default-scheduler` when it replaces the "
                  "default scheduler; \"\" to report without a fix)",
                  std::nullopt, std::nullopt},
    };
    info_.has_fix = true;
    info_.reads_parts = kPartScheduler | kPartLabels;  // the coscheduling label; the fix names the scheduler it asks for
    info_.fix_settles = true;
    info_.facts = {
        "facts/kubernetes-and-queues.md §2 — the Volcano scheduler reads the pod annotation "
        "`scheduling.k8s.io/group-name` (`getJobID`, volcano `pkg/scheduler/api/job_info.go`); the "
        "vcjob mutating webhook defaults `schedulerName` to `volcano`.",
        "facts/kubernetes-and-queues.md §4 — coscheduling reads the pod label `scheduling.x-k8s.io/pod-group` "
        "(`pkg/util/podgroup.go`); §5 — KubeRay's scheduler-plugins pods use `scheduler-plugins-scheduler`. "
        "The upstream sample `manifests/coscheduling/scheduler-config.yaml` (../shared/corpus/scheduler-plugins) "
        "enables Coscheduling in the `default-scheduler` profile, hence the parameter.",
        "facts/kubernetes-and-queues.md §5 — the training operator and KubeRay set `schedulerName` and the "
        "group annotation or label on the pods they create.",
    };
    info_.example_bad = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  parallelism: 4
  template:
    metadata:
      annotations:
        scheduling.k8s.io/group-name: train-pg
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
)";
    info_.example_good = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  parallelism: 4
  template:
    metadata:
      annotations:
        scheduling.k8s.io/group-name: train-pg
    spec:
      schedulerName: volcano
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
)";
  }

  const RuleInfo& info() const override { return info_; }

  std::optional<std::string> validate_params(const Params& p) const override {
    if (p.string("volcanoScheduler").empty()) return "volcanoScheduler must not be empty";
    return std::nullopt;
  }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (operator_managed(obj)) return;
    const std::string volcano = ctx.params().string("volcanoScheduler");
    const std::string cosched = ctx.params().string("coschedulingScheduler");
    for (const auto& t : pod_templates(obj)) {
      auto m = gang::template_membership(t);
      if (!m) continue;
      const std::string current = gang::scheduler_name(t);
      const bool named = string_at(t.spec, "schedulerName").has_value();
      const std::string ptr = named ? t.spec_pointer() + "/schedulerName" : t.spec_pointer();
      const std::string as = named ? "schedulerName " + current : "no schedulerName (so default-scheduler)";
      if (m->via == gang::Via::volcano) {
        if (current == volcano) continue;
        ctx.report(ptr,
                   "names the Volcano PodGroup \"" + m->group + "\" (" + m->evidence + ") but has " + as + ": only the Volcano scheduler (" +
                       volcano + ") reads the group, so these pods are bound one at a time and are not gang scheduled; set schedulerName: " +
                       volcano,
                   fix(t, volcano, ctx));
      } else if (m->via == gang::Via::coscheduling) {
        if (current != std::string(gang::kDefaultScheduler) || cosched == gang::kDefaultScheduler) continue;
        std::string msg = "names the coscheduling PodGroup \"" + m->group + "\" (" + m->evidence + ") but has " + as +
                          ", which does not run the Coscheduling plugin: these pods are bound one at a time and are not gang scheduled; ";
        if (cosched.empty()) {
          ctx.report(ptr, msg + "set schedulerName to the scheduler-plugins scheduler");
        } else {
          ctx.report(ptr, msg + "set schedulerName: " + cosched, fix(t, cosched, ctx));
        }
      }
    }
  }

 private:
  static std::optional<json> fix(const PodTemplate& t, const std::string& scheduler, const CheckContext& ctx) {
    if (!ctx.fixes_wanted()) return std::nullopt;
    return patch_of(patch_op("add", t.spec_pointer() + "/schedulerName", scheduler));
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gang_scheduler_name_mismatch() { return std::make_unique<GangSchedulerNameMismatch>(); }

}  // namespace gpuguard::rules
