// queue-capability-missing: a Volcano Queue without a GPU capability.

#include "rules/all.h"
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
    info_.summary = "A Volcano Queue sets no `capability` for any GPU resource, so one user can fill every GPU";
    info_.rationale =
        "The seed's fourth layer is the queue: its weight shares the cluster, its `capability` caps "
        "it (\"rate-limit: keep one user from filling the queue\", 9.5). `capability` is a Volcano "
        "Queue's hard ceiling; a resource missing from it is unbounded (the queue webhook itself "
        "says so: \"If the capability is not configured considers that the capability is not "
        "restricted\"). A queue without a GPU capability lets its jobs take every idle GPU of the "
        "cluster, and keep them until reclaim (or forever, with `reclaimable: false`).\n\n"
        "Queues with a `parent` other than `root` are skipped: they are bounded by their ancestors' "
        "capability, and the ancestor gets the finding.";
    info_.remediation =
        "Add a GPU ceiling to `spec.capability`, e.g. `nvidia.com/gpu: 16`, sized to the team's "
        "share; keep `deserved` (capacity plugin) or `weight` (proportion plugin) for the fair share.";
    info_.facts = {
        "Seed 9.5 (design.md §1): Queue weight and capability; \"rate-limit: keep one user from "
        "filling the queue\".",
        "facts/kubernetes-and-queues.md §2 — Queue `spec.capability` (ResourceList), `reclaimable` "
        "defaulted to true, `parent`; volcano `pkg/webhooks/admission/queues/validate/validate_queue.go`: "
        "a resource without capability is not restricted (read with `search`).",
    };
    info_.checks = {KindRef{"scheduling.volcano.sh", "Queue"}};
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
    if (!queue::is_volcano_queue(obj)) return;
    const Node spec = member(obj.root(), "spec");
    if (spec) {
      auto parent = string_at(spec, "parent");
      if (parent && !parent->empty() && *parent != queue::kVolcanoRootQueue) return;
    }
    const Node cap = member(spec, "capability");
    const auto& gpus = ctx.settings().gpu_resources;
    if (cap.is_object())
      for (const auto [name, value] : cap.items())
        if (gpus.matches(name)) return;
    std::string pointer = cap ? "/spec/capability" : spec ? "/spec" : "";
    ctx.report(pointer, "Queue " + obj.name + " has no capability for " +
                            (cap.is_object() && !cap.empty() ? std::string("any GPU resource (it caps only other resources)")
                                                                      : std::string("any resource")) +
                            ": its jobs can take every idle GPU in the cluster; set e.g. `capability: {nvidia.com/gpu: N}` "
                            "so that one user cannot fill the cluster (seed 9.5)");
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_queue_capability_missing() { return std::make_unique<QueueCapabilityMissing>(); }

}  // namespace gpuguard::rules
