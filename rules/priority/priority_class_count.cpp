// priority-class-count: the cluster's number of user PriorityClasses, against the seed's 3–5.

#include "engine/inventory.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class PriorityClassCount final : public Rule {
 public:
  PriorityClassCount() {
    info_.id = "priority-class-count";
    info_.severity = Severity::warning;
    info_.category = "priority";
    info_.seed = "9.5";
    info_.summary = "The cluster defines fewer or more user PriorityClasses than the recommended range (3–5)";
    info_.rationale =
        "Priority decides who preempts whom when GPUs run out. With too few classes, training, "
        "inference and experiments cannot be told apart, and a critical job cannot displace a "
        "notebook; with too many, preemption chains become hard to predict and jobs thrash (\"keep "
        "PriorityClasses to 3–5, to avoid excessive preemption and system jitter\", seed 9.5).\n\n"
        "Only user classes count: the built-in `system-node-critical` and `system-cluster-critical` "
        "(and any `system-` name, which the API reserves) are excluded. The rule needs the whole "
        "cluster to count, so it speaks only with a complete inventory (`gpuguard lint --complete`, "
        "the webhook's cluster state).";
    info_.remediation =
        "Define a small, named ladder, for example `inference-critical`, `training-high`, "
        "`training-default` (globalDefault) and `batch-preemptible`, and map teams' workloads onto "
        "it. Change `min`/`max` if your platform deliberately uses another range.";
    info_.checks = {KindRef{"scheduling.k8s.io", "PriorityClass"}};
    info_.reports_scope = true;  // a cluster with no user PriorityClass
    info_.facts = {
        "Seed 9.5 (design.md §1): \"PriorityClass 数量控制在 3-5 个，避免过度抢占导致系统抖动\".",
        "facts/kubernetes-and-queues.md §1.4 — `SystemPriorityClassPrefix = \"system-\"` and the "
        "built-ins `system-node-critical` (2000001000) and `system-cluster-critical` (2000000000) in "
        "kubernetes `pkg/apis/scheduling/types.go` @056a0155 and `v1/helpers.go` @16913111.",
    };
    info_.params = {
        ParamSpec{"min", ParamType::integer, 3, "fewest user PriorityClasses expected", 0, std::nullopt},
        ParamSpec{"max", ParamType::integer, 5, "most user PriorityClasses expected", 0, std::nullopt},
    };
    info_.reads = {KindRef{"scheduling.k8s.io", "PriorityClass"}};
    info_.needs_complete = true;
    info_.example_bad = R"(# gpuguard lint --complete: one class only
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training-critical
value: 1000000
)";
    info_.example_good = R"(# gpuguard lint --complete: three classes
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: inference-critical
value: 1000000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training
value: 10000
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: batch-preemptible
value: 100
)";
  }

  const RuleInfo& info() const override { return info_; }

  std::optional<std::string> validate_params(const Params& p) const override {
    if (p.integer("min") > p.integer("max"))
      return "min (" + std::to_string(p.integer("min")) + ") must not be greater than max (" + std::to_string(p.integer("max")) + ")";
    return std::nullopt;
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    std::vector<const Object*> user;
    for (const Object* pc : inv.list("scheduling.k8s.io", "PriorityClass"))
      if (!pc->name.starts_with("system-")) user.push_back(pc);
    const int64_t min = ctx.params().integer("min");
    const int64_t max = ctx.params().integer("max");
    const auto n = static_cast<int64_t>(user.size());
    if (n >= min && n <= max) return;
    const std::string range = std::to_string(min) + "–" + std::to_string(max);
    if (n == 0) {
      ctx.report_scope("the cluster defines no user PriorityClass; define " + range +
                       " (e.g. inference, training, batch) so that GPU preemption follows business priority (seed 9.5)");
      return;
    }
    std::string names;
    for (const Object* pc : user) names += (names.empty() ? "" : ", ") + pc->name;
    const Object* subject = ctx.subject(user);
    if (n < min)
      ctx.report(*subject, "/metadata/name",
                 "only " + std::to_string(n) + " user PriorityClass" + (n == 1 ? "" : "es") + " (" + names + "); define " +
                     range + " so that training, inference and batch work can preempt in a deliberate order (seed 9.5)");
    else
      ctx.report(*subject, "/metadata/name",
                 std::to_string(n) + " user PriorityClasses (" + names + "); keep " + range +
                     ": more classes make preemption chains hard to predict and jobs thrash (seed 9.5)");
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_priority_class_count() { return std::make_unique<PriorityClassCount>(); }

}  // namespace gpuguard::rules
