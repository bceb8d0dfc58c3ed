// podgroup-min-member-invalid: a PodGroup whose minMember the API refuses, or that its members can
// never reach.

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/gang/podgroups.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class PodgroupMinMemberInvalid final : public Rule {
 public:
  PodgroupMinMemberInvalid() {
    info_.id = "podgroup-min-member-invalid";
    info_.severity = Severity::error;
    info_.category = "gang";
    info_.seed = "9.4";
    info_.summary = "A PodGroup's minMember is refused by its CRD, or is more than the pods that will ever exist";
    info_.rationale =
        "`minMember` is the size of the gang: the scheduler binds none of the group's pods until it can "
        "bind that many at once (seed 9.4).\n\n"
        "- The scheduler-plugins PodGroup (`scheduling.x-k8s.io`) declares `minimum: 1` in its CRD: the "
        "API server refuses `minMember: 0` or less (`should be greater than or equal to 1`).\n"
        "- The Volcano PodGroup (`scheduling.volcano.sh`) declares `minimum: 0`: a negative value is "
        "refused. `minMember: 0` is accepted and simply never gangs: every pod is bound on its own; "
        "that is reported by `gang-scheduling-missing` (a warning), not here.\n"
        "- A `minMember` above the number of pods that will ever exist is accepted by the API, but the "
        "gang can never be complete: every member stays Pending for ever (Volcano: `pod group is not "
        "ready`; coscheduling: the pods wait at Permit and are rejected after the timeout, again and "
        "again). The rule counts the members it can see in the inventory: pods and pod templates that "
        "name the group (`scheduling.k8s.io/group-name` annotation, `scheduling.x-k8s.io/pod-group` "
        "label; each template counted with its replicas, a Job with its parallelism), or the workload "
        "the PodGroup names as its owner (a Volcano Job, a Kubeflow job, a RayCluster). With no member "
        "in the input, or members whose count depends on the cluster (a DaemonSet), it says nothing "
        "about the upper bound. In the webhook the cluster state holds only PodGroups and batch "
        "workloads (Volcano, Kubeflow, Ray, JobSet, Job, StatefulSet): pods and Deployments already in "
        "the cluster are not counted there, to keep the state small.";
    info_.remediation =
        "Set `minMember` to the number of pods that must run together, at least 1 and at most the pods "
        "the workload creates (for a PyTorchJob with 1 Master and 3 Workers: 4).";
    info_.checks = {KindRef{"scheduling.volcano.sh", "PodGroup"}, KindRef{"scheduling.x-k8s.io", "PodGroup"}};
    info_.reads = gang::podgroup_read_kinds();
    info_.observes = pod_template_kinds();  // members are recorded in check (small records, not kept)
    info_.facts = {
        "facts/kubernetes-and-queues.md §4 — scheduler-plugins `apis/scheduling/v1alpha1/types.go`: "
        "`minMember` has CRD minimum 1 (`manifests/coscheduling/crd.yaml`: `minimum: 1`); the pod label "
        "`scheduling.x-k8s.io/pod-group` (`PodGroupLabel`, `pkg/util/podgroup.go`).",
        "facts/kubernetes-and-queues.md §2 — Volcano PodGroup `minMember` ≥0 (CRD "
        "`config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml`: `minimum: 0`, checked in "
        "../shared/k8s-schemas/crds); the pod annotation `scheduling.k8s.io/group-name` (`getJobID` in "
        "`pkg/scheduler/api/job_info.go`).",
    };
    info_.example_bad = R"(apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: train
spec:
  minMember: 0
)";
    info_.example_good = R"(apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: train
spec:
  minMember: 4
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<gang::MemberState>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    gang::gather_members(obj, ctx);
    if (!gang::is_podgroup(obj)) return;
    const Node mm = path(obj.root(), {"spec", "minMember"});
    if (!mm) return;
    auto v = as_int(mm);
    if (!v) return;
    if (gang::is_coscheduling_podgroup(obj) && *v < 1)
      ctx.report("/spec/minMember", "minMember " + std::to_string(*v) +
                                        ": the scheduler-plugins PodGroup CRD requires at least 1, so the API server refuses "
                                        "it (spec.minMember should be greater than or equal to 1)");
    else if (gang::is_volcano_podgroup(obj) && *v < 0)
      ctx.report("/spec/minMember", "minMember " + std::to_string(*v) +
                                        ": the Volcano PodGroup CRD requires at least 0, so the API server refuses it "
                                        "(spec.minMember should be greater than or equal to 0)");
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    std::optional<gang::MemberIndex> index;
    for (const char* group : {"scheduling.volcano.sh", "scheduling.x-k8s.io"}) {
      for (const Object* pg : inv.list(group, "PodGroup")) {
        if (!ctx.in_focus(*pg)) continue;
        auto mm = as_int(path(pg->root(), {"spec", "minMember"}));
        if (!mm || *mm < 1) continue;
        if (!index) index.emplace(inv, ctx.settings().gpu_resources, static_cast<gang::MemberState*>(ctx.state())->marked);
        auto members = index->members_of(*pg);
        if (!members) continue;
        auto pods = members->pods();
        if (!pods || *mm <= *pods) continue;
        std::string list;
        for (const auto& t : members->templates)
          list += (list.empty() ? "" : ", ") + t.where + " ×" + std::to_string(*t.replicas);
        ctx.report(*pg, "/spec/minMember",
                   "minMember " + std::to_string(*mm) + " but only " + std::to_string(*pods) + " pod" + (*pods == 1 ? "" : "s") +
                       " will ever belong to the group (" + list +
                       "): the gang can never be complete and every member stays Pending; set minMember to at most " +
                       std::to_string(*pods));
      }
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_podgroup_min_member_invalid() { return std::make_unique<PodgroupMinMemberInvalid>(); }

}  // namespace gpuguard::rules
