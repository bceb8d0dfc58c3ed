// gpu-priority-class-missing: a GPU pod template names no PriorityClass.

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/priority/names.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

inline constexpr std::string_view kNamespaceDefaultAnnotation = "gpuguard.io/default-priority-class";

struct Template {
  ObjectRef object;
  std::string spec_pointer;
  Pos pos;
  std::string what;
  bool has_priority = false;  // spec.priority is set: adding a class could contradict it
  bool kai = false;           // its pods go to KAI Scheduler, which reads a label first
  // No GPU in its containers' resources, but claims: a GPU template if they resolve to GPUs (finish).
  std::vector<PodClaim> claims;
};

struct State final : RuleState {
  engine::Records<Template> templates;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(templates, static_cast<State&>(later).templates); }
};

class GpuPriorityClassMissing final : public Rule {
 public:
  GpuPriorityClassMissing() {
    info_.id = "gpu-priority-class-missing";
    info_.severity = Severity::warning;
    info_.category = "priority";
    info_.seed = "9.5";
    info_.summary = "A GPU pod template names no PriorityClass";
    info_.rationale =
        "When GPUs run out, priority decides who waits and who is preempted (seed 9.4, 9.5: \"preemption via "
        "PriorityClass\", a ladder of 3–5 classes). A GPU pod without `priorityClassName` gets the global "
        "default class, or priority 0 if there is none: a critical training run and a forgotten notebook are "
        "then equal, and neither can preempt the other.\n\n"
        "Each scheduler's own way of giving the class counts:\n\n"
        "- a Volcano Job's `spec.priorityClassName`, which the job controller copies to the pods of tasks "
        "that name none;\n"
        "- KubeRay's `ray.io/priority-class-name` label, read by KubeRay's Volcano batch scheduler: since "
        "v1.5 it sets the Volcano PodGroup's `priorityClassName` (by which Volcano orders the cluster and "
        "preempts between jobs: the priority plugin's preemptableFn compares job priorities, volcano-sh/volcano "
        "`pkg/scheduler/plugins/priority/priority.go` @ed72c7c8) and a pod label, no longer the pods' "
        "`spec.priorityClassName` as v1.4 did (ray-project/kuberay `batchscheduler/volcano/volcano_scheduler.go` "
        "at v1.4.2, v1.5.0, v1.6.2 and v1.7.0, the current release: the rule follows v1.5 and later). Not "
        "when the cluster goes to KAI (`kai.scheduler/queue`, or its templates' `schedulerName`): KubeRay's "
        "KAI plugin does not read it;\n"
        "- for pods that go to KAI Scheduler (`kaiScheduler`): the label `priorityClassName` on the workload "
        "or on the pod template, which KAI reads before `spec.priorityClassName` for the PodGroup by whose "
        "class it orders and preempts (NVIDIA/KAI-Scheduler `docs/priority/README.md`, calcPodGroupPriorityClass "
        "in `pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go` @72de64fc, v0.13.0-rc1+142). "
        "Without any, KAI uses its default class for the kind (`train`; `inference` for a Deployment), and "
        "the message says so.\n\n"
        "Kubeflow's `runPolicy.schedulingPolicy.priorityClass` and Kueue's `kueue.x-k8s.io/priority-class` "
        "label do not reach the pods (they set the PodGroup's or the Kueue Workload's priority, and the "
        "training operator may gang with scheduler-plugins, whose PodGroup has no priority), so the pods "
        "still need a class of their own.\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.remediation =
        "Set `priorityClassName` on the pod template. The fix (and the mutating webhook, for Pods) sets the "
        "namespace's default class: `params.defaults` in the config (`{team-a: training}`), else the "
        "annotation `gpuguard.io/default-priority-class` on the Namespace object. Where neither names a class "
        "there is no fix; with a complete inventory, neither is there one for a class that does not exist, or "
        "for a pod that sets `spec.priority` itself.";
    info_.checks = pod_template_kinds();
    info_.reads = {KindRef{"", "Namespace"}, KindRef{"scheduling.k8s.io", "PriorityClass"}};
    info_.reads.insert(info_.reads.end(), dra_kinds().begin(), dra_kinds().end());
    info_.has_fix = true;
    info_.reads_parts = kPartPriority | kPartLabels | kPartScheduler;  // a KubeRay object's or KAI's priority label, the schedulerName (KAI); the fix sets a class name, which it then finds
    info_.fix_settles = true;
    info_.params = {
        ParamSpec{"defaults", ParamType::string_map, json::object(),
                  "default PriorityClass per namespace, used by the fix (before the Namespace annotation "
                  "gpuguard.io/default-priority-class)",
                  std::nullopt, std::nullopt},
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "Seed 9.4/9.5 (design.md §1): preemption via PriorityClass; 3–5 classes.",
        "facts/kubernetes-and-queues.md §1.4 — a pod without a class gets the globalDefault class's value, or 0 "
        "(`plugin/pkg/admission/priority/admission.go` @acd88a09).",
        "Checked with search (code corpus): volcano-sh/volcano job controller `createJobPod` copies "
        "`job.Spec.PriorityClassName` to pods whose template names none; kuberay `volcano_scheduler.go` "
        "`AddMetadataToPod` sets `pod.Spec.PriorityClassName` from the `ray.io/priority-class-name` label; "
        "training-operator passes `schedulingPolicy.priorityClass` only to the PodGroup; Kueue's "
        "WorkloadPriorityClass is \"independent from pod's priority\" (Kueue docs).",
        "KubeRay re-verified at its current release v1.7.0 and the previous one, v1.6.2 (and v1.5.0, v1.4.2): "
        "`AddMetadataToChildResource` copies `volcano.sh/queue-name` and `ray.io/priority-class-name` as pod "
        "labels, sets the group annotation and `schedulerName`, and `createPodGroup` puts the class on the "
        "PodGroup; v1.4.2's `AddMetadataToPod` set `pod.Spec.PriorityClassName`.",
        "The Priority admission plugin's default (the lowest globalDefault class, else 0), re-verified in a current "
        "copy of kubernetes `plugin/pkg/admission/priority/admission.go` (with the 1.36 Workload API; read in the code "
        "index, commit not pinned).",
        "Releases checked (the code read above is the same there): KAI Scheduler v0.13.0 (5d35ecab; the groupers, the topology plugin and docs/priority, docs/topology, docs/batch unchanged up to @72de64fc), LeaderWorkerSet v0.10.0 (2161f38), Volcano v1.15.1 (0a56ed33: IsHardTopologyMode, parseNetworkTopologyFromPod, the highestTierName translation and the cache's priority look-up as at @ed72c7c8), KubeRay v1.7.0 and v1.6.2, kubeflow/trainer v1.9.4, JobSet v0.12.0.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            limits:
              nvidia.com/gpu: 8
)";
    info_.example_good = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
spec:
  template:
    spec:
      priorityClassName: training
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            limits:
              nvidia.com/gpu: 8
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is_kubernetes_object()) return;
    const std::string kai = ctx.params().string(sched::kKaiSchedulerParam);
    if (priority::inherited_pod_priority_class(obj, kai)) return;
    for (const auto& t : pod_templates(obj)) {
      std::vector<PodClaim> claims;
      if (!requests_gpu(t, ctx.settings().gpu_resources)) {
        claims = pod_claims(t.spec);  // GPUs through DRA, perhaps: decided in finish
        if (claims.empty()) continue;
      }
      const Node name = member(t.spec, "priorityClassName");
      if (name.is_string() && !name.str().empty()) continue;
      const bool to_kai = sched::kai_template(obj, t, kai);
      if (to_kai && !sched::kai_priority_label(obj, t).empty()) continue;
      Template tpl;
      tpl.object = ctx.ref();
      tpl.spec_pointer = t.spec_pointer();
      tpl.pos = ctx.position_of(tpl.spec_pointer);
      tpl.what = t.pointer.empty() ? "pod" : t.role.empty() ? "pod template" : "pod template (" + t.role + ")";
      tpl.has_priority = static_cast<bool>(member(t.spec, "priority"));
      tpl.kai = to_kai;
      tpl.claims = std::move(claims);
      static_cast<State*>(ctx.state())->templates.push_back(std::move(tpl));
    }
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    const json* defaults = member(ctx.params().values(), "defaults");
    // The global default class, to say what the pods get now.
    const Object* global = nullptr;
    for (const Object* pc : inv.list("scheduling.k8s.io", "PriorityClass"))
      if (bool_at(pc->root(), "globalDefault") == std::optional<bool>(true)) {
        const Node v = member(pc->root(), "value");
        const Node gv = global ? member(global->root(), "value") : Node();
        if (!global || (v && gv && as_int(v) < as_int(gv))) global = pc;  // the lowest wins
      }
    std::string now = "priority 0 (no globalDefault class)";
    if (global) {
      const Node v = member(global->root(), "value");
      now = "the globalDefault class " + global->name +
            (as_int(v) ? " (" + std::to_string(*as_int(v)) + ")" : std::string());
    } else if (!inv.complete()) {
      now = "the globalDefault class if the cluster has one, else priority 0";
    }
    for (const auto& t : static_cast<State*>(ctx.state())->templates) {
      const std::string& ns = t.object.namespace_();
      std::string gpus = "requests GPUs";
      if (!t.claims.empty()) {
        const DraGpus dra = resolve_dra_gpus(inv, ns, t.claims, ctx.settings().gpu_device_classes);
        if (!dra.any()) continue;  // no GPU claim, or claims the input does not hold: nothing to say
        gpus += " " + dra_summary(dra);
      }
      std::string msg = t.kai ? t.what + " " + gpus + " and goes to KAI Scheduler but names no class (the label priorityClassName on the "
                                         "workload or the pod, or spec.priorityClassName): KAI gives it its default class for the kind "
                                         "(train, or inference for a Deployment), so GPU preemption cannot tell it from other work of that kind (seed 9.5)"
                              : t.what + " " + gpus + " but names no priorityClassName: " + (t.what == "pod" ? "it gets " : "its pods get ") + now +
                                    ", so GPU preemption cannot tell it from any other pod (seed 9.5)";
      std::string cls, from;
      if (const json* d = defaults ? member(*defaults, ns) : nullptr; d && d->is_string() && !d->get_ref<const std::string&>().empty()) {
        cls = d->get<std::string>();
        from = "params.defaults of gpu-priority-class-missing";
      } else if (const Object* n = inv.find("", "Namespace", "", ns)) {
        if (const Node a = n->annotation(kNamespaceDefaultAnnotation); a.is_string() && !a.str().empty()) {
          cls = std::string(a.str());
          from = "annotation " + std::string(kNamespaceDefaultAnnotation) + " of Namespace " + ns;
        }
      }
      std::optional<json> fix;
      if (cls.empty()) {
        msg += "; set priorityClassName (no default class is configured for namespace " + ns + ")";
      } else if (t.has_priority) {
        msg += "; set priorityClassName (not " + cls + " automatically: the template sets spec.priority, which must match the class)";
      } else if (inv.complete() && !priority::is_builtin_priority_class(cls) && !inv.find("scheduling.k8s.io", "PriorityClass", "", cls)) {
        msg += "; namespace " + ns + "'s default class " + cls + " (" + from + ") does not exist, so it is not applied";
      } else {
        msg += "; the fix sets " + cls + ", namespace " + ns + "'s default (" + from + ")";
        if (ctx.fixes_wanted()) fix = patch_of(patch_op("add", t.spec_pointer + "/priorityClassName", cls));
      }
      ctx.report(t.object, t.spec_pointer, t.pos, msg, std::move(fix));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_priority_class_missing() { return std::make_unique<GpuPriorityClassMissing>(); }

}  // namespace gpuguard::rules
