// queue-capability-missing: a Volcano Queue without a GPU capability.

#include "rules/all.h"
#include "rules/queue/kai_queue.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class QueueCapabilityMissing final : public Rule {
 public:
  QueueCapabilityMissing() {
    info_.id = "queue-capability-missing";
    info_.severity = Severity::warning;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary =
        "A Volcano Queue sets no `capability` for any GPU resource, so one user can fill every GPU; a KAI Scheduler "
        "Queue has a GPU quota and no GPU `limit`, which KAI reads as 0";
    info_.rationale =
        "The seed's fourth layer is the queue: its weight shares the cluster, its `capability` caps "
        "it (\"rate-limit: keep one user from filling the queue\", 9.5). `capability` is a Volcano "
        "Queue's hard ceiling; a resource missing from it is unbounded (the queue webhook itself "
        "says so: \"If the capability is not configured considers that the capability is not "
        "restricted\"). A queue without a GPU capability lets its jobs take every idle GPU of the "
        "cluster, and keep them until reclaim (or forever, with `reclaimable: false`).\n\n"
        "Queues with a `parent` other than `root` are skipped: they are bounded by their ancestors' "
        "capability, and the ancestor gets the finding.\n\n"
        "GPUs requested through Dynamic Resource Allocation are capped by Volcano's DRA keys "
        "(capacity plugin, v1.15): `deviceclass/<DeviceClass>` caps the devices of that class the "
        "queue's claims hold. Such a key counts as a GPU capability when its class is in "
        "`gpuDeviceClasses` (NVIDIA's DRA driver classes by default). The consumable-capacity keys "
        "(`memory.deviceclass/<class>`, ...) cap one dimension of the devices, not their number, and "
        "do not count. The capacity plugin enforces the DRA keys when the DynamicResourceAllocation "
        "feature gate is on (GA in Kubernetes 1.34) unless `capacity.DynamicResourceAllocationEnable` "
        "is false; the proportion plugin ignores them.\n\n"
        "**KAI Scheduler** (`scheduling.run.ai/v2` Queue): the ceiling is `spec.resources.gpu.limit`, `-1` for none. "
        "KAI's docs disagree on an unset limit (`docs/queues/README.md`: \"0 or unset → No additional resources "
        "allowed (default)\", and under its last example \"default value is -1\"); its code reads an unset limit as "
        "0: the field is a float64 with no default in the API (`pkg/apis/scheduling/v2/resources.go`) or the CRD, "
        "the proportion plugin copies it into the queue's MaxAllowed (`pkg/scheduler/plugins/proportion/"
        "proportion.go`, createQueueResourceAttrs), and `isOverLimit` (`capacity_policy/max_allowed_check.go`) "
        "refuses any job asking for a GPU when MaxAllowed is not -1 and below allocated + requested, for the "
        "job's queue and every ancestor (NVIDIA/KAI-Scheduler @72de64fc, v0.13.0-rc1+142; the same at v0.13.0; "
        "inferred from the code, not run). A queue given a GPU `quota` (or `-1`) but no `limit` (or `limit: 0`) "
        "therefore runs no GPU job, nor do its children: its quota is never used. The upstream examples all "
        "write `limit` (`docs/quickstart/default-queues.yaml`: `-1`).";
    info_.remediation =
        "Add a GPU ceiling to `spec.capability`, e.g. `nvidia.com/gpu: 16`, sized to the team's "
        "share; keep `deserved` (capacity plugin) or `weight` (proportion plugin) for the fair share.";
    info_.facts = {
        "Seed 9.5 (design.md §1): Queue weight and capability; \"rate-limit: keep one user from "
        "filling the queue\".",
        "facts/kubernetes-and-queues.md §2 — Queue `spec.capability` (ResourceList), `reclaimable` "
        "defaulted to true, `parent`; volcano `pkg/webhooks/admission/queues/validate/validate_queue.go`: "
        "a resource without capability is not restricted (read with `search`).",
        "facts/modern-stack.md §1 — Volcano v1.15.0 capacity plugin DRA keys `deviceclass/<class>` (count) and "
        "`<dim>.deviceclass/<class>`; re-read at volcano-sh/volcano v1.15.1 and @ed72c7c8: "
        "`pkg/scheduler/plugins/capacity/capacity.go` (`DeviceClassCountPrefix = \"deviceclass/\"`, "
        "`DeviceClassCapacitySep = \".deviceclass/\"`; `dynamicResourceAllocationEnable` defaults to the "
        "DynamicResourceAllocation gate, argument `capacity.DynamicResourceAllocationEnable`), "
        "`docs/user-guide/how_to_use_dra_quota.md` (`deviceclass/gpu.nvidia.com: \"8\"` \"device count quota\").",
        "facts/modern-stack.md §2 — KAI Queue `spec.resources.gpu.{quota, limit}`, `-1` = unlimited; an unset limit "
        "is 0 = MaxAllowed in the code [I], re-read at NVIDIA/KAI-Scheduler @72de64fc: `pkg/apis/scheduling/v2/"
        "resources.go`, `pkg/scheduler/plugins/proportion/proportion.go` (createQueueResourceAttrs), "
        "`pkg/scheduler/plugins/proportion/capacity_policy/max_allowed_check.go` (isOverLimit, resultsOverLimit).",
    };
    info_.params = {
        ParamSpec{"gpuDeviceClasses", ParamType::string_list, json(queue::default_gpu_device_classes()),
                  "DeviceClasses whose Volcano DRA count key (`deviceclass/<class>`) caps GPUs, besides those of the config's top-level `gpuDeviceClasses`", std::nullopt, std::nullopt},
    };
    info_.checks = {KindRef{"scheduling.volcano.sh", "Queue"}, KindRef{std::string(sched::kKaiQueueGroup), "Queue"}};
    info_.example_bad = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: training
spec:
  weight: 4
  capability:
    cpu: "512"
)";
    info_.example_good = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: training
spec:
  weight: 4
  capability:
    cpu: "512"
    nvidia.com/gpu: 32
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (sched::is_kai_queue(obj)) {
      check_kai(obj, ctx);
      return;
    }
    if (!queue::is_volcano_queue(obj)) return;
    const Node spec = member(obj.root(), "spec");
    if (spec) {
      auto parent = string_at(spec, "parent");
      if (parent && !parent->empty() && *parent != queue::kVolcanoRootQueue) return;
    }
    const Node cap = member(spec, "capability");
    const auto& gpus = ctx.settings().gpu_resources;
    const auto& classes = ctx.params().strings("gpuDeviceClasses");
    if (cap.is_object())
      for (const auto [name, value] : cap.items())
        if (queue::volcano_gpu_key(name, gpus, classes, ctx.settings().gpu_device_classes)) return;
    std::string pointer = cap ? "/spec/capability" : spec ? "/spec" : "";
    ctx.report(pointer, "Queue " + obj.name + " has no capability for " +
                            (cap.is_object() && !cap.empty() ? std::string("any GPU resource (it caps only other resources)")
                                                                      : std::string("any resource")) +
                            ": its jobs can take every idle GPU in the cluster; set e.g. `capability: {nvidia.com/gpu: N}` "
                            "so that one user cannot fill the cluster (seed 9.5)");
  }

 private:
  // A GPU quota (or -1) with no GPU limit, or limit 0: KAI reads an unset limit as 0.
  static void check_kai(const Object& obj, CheckContext& ctx) {
    const queue::KaiGpu g = queue::kai_gpu(obj);
    if (g.odd || !g.quota || *g.quota == 0) return;
    if (g.limit && *g.limit != 0) return;
    const std::string quota = *g.quota == queue::kKaiUnlimited ? std::string("-1 (unlimited)") : queue::kai_amount(*g.quota);
    ctx.report(g.limit ? "/spec/resources/gpu/limit" : g.pointer,
               "KAI Queue " + obj.name + " has GPU quota " + quota + " and " +
                   (g.limit ? std::string("gpu.limit 0") : std::string("no gpu.limit, which KAI's scheduler reads as 0 (not -1)")) +
                   ": KAI refuses every job that asks for a GPU in this queue or its children as over limit "
                   "(isOverLimit: limit < allocated + requested), so the quota is never used; set gpu.limit to at least the "
                   "quota, or -1 for no limit (KAI's example queues write -1)");
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_queue_capability_missing() { return std::make_unique<QueueCapabilityMissing>(); }

}  // namespace gpuguard::rules
