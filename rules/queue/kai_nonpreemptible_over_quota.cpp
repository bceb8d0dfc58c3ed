// kai-nonpreemptible-over-quota: non-preemptible GPU work in a KAI Scheduler queue with no GPU quota.

#include <optional>
#include <set>
#include <string>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "engine/positions.h"
#include "rules/all.h"
#include "rules/queue/kai_queue.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// KAI's threshold: "A PriorityClass with a value of 100 or higher is considered as non-preemptible"
// (pkg/common/podgroup/preemptible.go nonPreemptiblePriorityThreshold).
constexpr int64_t kNonPreemptibleThreshold = 100;
// KAI's priority when the PodGroup's class does not exist and no class is globalDefault
// (constants.DefaultPodGroupPriority).
constexpr int64_t kKaiDefaultPriority = 50;

struct Pending {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string queue;
  bool queue_defaulted = false;   // no label: KAI's default-queue
  std::string label_why;          // "label kai.scheduler/preemptibility: non-preemptible" ("" when not set so)
  std::string named_class;        // the class the workload names (label or spec), "" when none
  std::string default_class;      // KAI's default class for the kind
};

struct State final : RuleState {
  engine::Records<Pending> pending;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(pending, static_cast<State&>(later).pending); }
};

class KaiNonpreemptibleOverQuota final : public Rule {
 public:
  KaiNonpreemptibleOverQuota() {
    info_.id = "kai-nonpreemptible-over-quota";
    info_.severity = Severity::warning;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "A GPU workload KAI Scheduler treats as non-preemptible goes to a KAI queue whose GPU quota is 0: it never starts";
    info_.rationale =
        "KAI Scheduler runs non-preemptible work only within its queue's quota: a job is refused when its queue's "
        "(or an ancestor's) `quota` is below the non-preemptible GPUs already allocated plus the job's request, "
        "unless the quota is -1 (`resultsWithNonPreemptibleOverQuota`, `isAllocatedNonPreemptibleOverQuota` in "
        "`pkg/scheduler/plugins/proportion/capacity_policy/quota_check.go`; `docs/priority/README.md`: \"Non "
        "preemptible can only consume in-quota resources\"). In a queue whose GPU quota is 0 (or unset, which is "
        "0) such a job never starts, however idle the cluster.\n\n"
        "What KAI treats as non-preemptible (NVIDIA/KAI-Scheduler @72de64fc, v0.13.0-rc1+142; the same at "
        "v0.13.0):\n\n"
        "- the label `kai.scheduler/preemptibility: non-preemptible` on the workload, else on the pod "
        "(`preemptible` makes it preemptible whatever its priority; another value is ignored) "
        "(calcPodGroupPreemptibilityWithDefaults, `default_grouper.go`);\n"
        "- otherwise a priority of 100 or more (`pkg/common/podgroup/preemptible.go`). The priority is the "
        "value of the PriorityClass named by the label `priorityClassName` on the workload, else on the pod, "
        "else by `spec.priorityClassName`, when that class exists; else of KAI's default class for the kind "
        "(`inference` for a Deployment, `train` for the others: `deployment_grouper.go`, `default_grouper.go`); "
        "a class that does not exist gives the globalDefault class's value, else 50 (`cluster_info.go` "
        "getPodGroupPriority, getDefaultPriority). KAI's chart ships `train` 50, `build-preemptible` 75, "
        "`build` 100 and `inference` 125: a Deployment that names no class is non-preemptible.\n\n"
        "The queue is the label `kai.scheduler/queue` on the workload, else on the pod, else `default-queue` "
        "(a workload labelled `project` is skipped: its queue depends on the node pool). Checked for pod "
        "templates whose pods go to KAI (`schedulerName`, parameter `kaiScheduler`) and ask for a GPU (a GPU "
        "resource, or the `gpu-fraction`/`gpu-memory` annotation), not for objects a controller owns (KAI reads "
        "the top owner). KAI's optional per-kind defaults ConfigMap (priority class and preemptibility per "
        "kind) is not read. The ancestors are checked as KAI does by default (`--full-hierarchy-fairness`, on). "
        "The rule needs the whole cluster (the queues and PriorityClasses), so it speaks only with a complete "
        "inventory (`gpuguard lint --complete`, the webhook's cluster state); a queue that does not exist is "
        "`queue-reference-unknown`'s finding.";
    info_.remediation =
        "Give the queue (and its ancestors) a GPU `quota` that covers the non-preemptible work, or make the "
        "workload preemptible: a PriorityClass below 100 (`train`, `build-preemptible`) or the label "
        "`kai.scheduler/preemptibility: preemptible`, so that it runs over quota and can be reclaimed.";
    info_.facts = {
        "facts/modern-stack.md §2 — KAI: a PriorityClass of 100 or more is non-preemptible, which \"can only "
        "consume in-quota resources\" (`docs/priority/README.md`); the label `kai.scheduler/preemptibility`; the "
        "shipped classes. Re-read in the code at NVIDIA/KAI-Scheduler @72de64fc: `capacity_policy/quota_check.go`, "
        "`pkg/common/podgroup/preemptible.go`, `default_grouper.go`, `deployment_grouper.go`, `cluster_info.go`, "
        "`deployments/kai-scheduler/templates/priorityclasses/*.yaml`.",
    };
    info_.params = {
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    info_.checks = pod_template_kinds();
    info_.reads = {KindRef{std::string(sched::kKaiQueueGroup), "Queue"}, KindRef{"scheduling.k8s.io", "PriorityClass"}};
    info_.needs_complete = true;
    info_.example_bad = R"(# gpuguard lint --complete
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: team-a
spec:
  resources:
    gpu: {quota: 0, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: inference
value: 125
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat-api
  namespace: team-a
  labels:
    kai.scheduler/queue: team-a
spec:
  replicas: 1
  selector:
    matchLabels: {app: chat-api}
  template:
    metadata:
      labels: {app: chat-api}
    spec:
      schedulerName: kai-scheduler
      containers:
        - name: server
          image: vllm/vllm-openai:v0.6.0
          resources:
            limits:
              nvidia.com/gpu: 1
)";
    info_.example_good = R"(# gpuguard lint --complete
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: team-a
spec:
  resources:
    gpu: {quota: 4, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: inference
value: 125
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat-api
  namespace: team-a
  labels:
    kai.scheduler/queue: team-a
spec:
  replicas: 1
  selector:
    matchLabels: {app: chat-api}
  template:
    metadata:
      labels: {app: chat-api}
    spec:
      schedulerName: kai-scheduler
      containers:
        - name: server
          image: vllm/vllm-openai:v0.6.0
          resources:
            limits:
              nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    const std::string kai = ctx.params().string(sched::kKaiSchedulerParam);
    if (kai.empty() || sched::controlled(obj)) return;
    const auto& gpus = ctx.settings().gpu_resources;
    auto* st = static_cast<State*>(ctx.state());
    std::set<std::string, std::less<>> queues;  // one finding per queue and workload
    for (const auto& t : pod_templates(obj)) {
      if (!sched::kai_template(obj, t, kai)) continue;
      if (!requests_gpu(t, gpus) && !sched::kai_gpu_share(t)) continue;
      Pending p;
      if (auto q = sched::kai_queue_label(obj, t)) {
        p.queue = q->name;
        p.pointer = q->pointer;
      } else {
        constexpr std::string_view kProject = "project";
        if (obj.label(kProject) || member(member(t.metadata(), "labels"), kProject)) continue;
        p.queue = std::string(sched::kKaiDefaultQueue);
        p.queue_defaulted = true;
        p.pointer = t.spec_pointer();
      }
      if (!queues.insert(p.queue).second) continue;
      // Preemptibility label: the workload's, else the pod's; a value KAI cannot parse is skipped.
      bool preemptible = false;
      for (const auto& [md, base] : {std::pair{obj.metadata(), std::string("/metadata/labels")},
                                     std::pair{t.metadata(), t.pointer + "/metadata/labels"}}) {
        auto v = string_at(member(md, "labels"), sched::kKaiPreemptibilityLabel);
        if (!v || (*v != "preemptible" && *v != "non-preemptible")) continue;
        preemptible = *v == "preemptible";
        if (!preemptible) p.label_why = "label " + std::string(sched::kKaiPreemptibilityLabel) + ": non-preemptible";
        break;
      }
      if (preemptible) continue;
      p.named_class = sched::kai_priority_label(obj, t);
      if (p.named_class.empty()) p.named_class = std::string(string_at(t.spec, "priorityClassName").value_or(""));
      p.default_class = obj.is("apps", "Deployment") ? "inference" : "train";
      p.ref = ctx.ref();
      p.pos = ctx.position_of(p.pointer);
      st->pending.push_back(std::move(p));
    }
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    auto* st = static_cast<State*>(ctx.state());
    if (st->pending.empty()) return;
    std::optional<int64_t> global_default;
    for (const Object* pc : inv.list("scheduling.k8s.io", "PriorityClass"))
      if (bool_at(pc->root(), "globalDefault") == std::optional<bool>(true)) {
        global_default = as_int(member(pc->root(), "value"));
        break;
      }
    auto value_of = [&](const std::string& name) -> std::optional<int64_t> {
      if (name.empty()) return std::nullopt;
      const Object* pc = inv.find("scheduling.k8s.io", "PriorityClass", "", name);
      if (!pc) return std::nullopt;
      return as_int(member(pc->root(), "value"));
    };
    for (const auto& p : st->pending) {
      std::string why = p.label_why;
      if (why.empty()) {
        int64_t value = 0;
        if (auto v = value_of(p.named_class)) {
          value = *v;
          why = "PriorityClass " + p.named_class + " has value " + std::to_string(value);
        } else if (auto d = value_of(p.default_class)) {
          value = *d;
          why = (p.named_class.empty() ? "it names no class, so KAI gives it its default class " : "class " + p.named_class +
                                                                                                       " does not exist, so KAI gives it its default class ") +
                p.default_class + " (value " + std::to_string(value) + ")";
        } else {
          value = global_default.value_or(kKaiDefaultPriority);
        }
        if (value < kNonPreemptibleThreshold) continue;
        if (why.empty()) why = "its priority is the globalDefault class's value " + std::to_string(value);
        why += ", 100 or more";
      }
      // The queue and its ancestors, as KAI walks them.
      const Object* q = inv.find(sched::kKaiQueueGroup, "Queue", "", p.queue);
      std::set<std::string, std::less<>> seen;
      while (q && seen.insert(q->name).second) {
        const queue::KaiGpu g = queue::kai_gpu(*q);
        if (g.odd) break;
        const double quota = g.quota.value_or(0);
        if (quota == 0) {
          const std::string where = q->name == p.queue ? "whose GPU quota" : "whose ancestor " + q->name + "'s GPU quota";
          ctx.report(p.ref, p.pointer, p.pos,
                     p.ref.kind() + " " + p.ref.name() + " is non-preemptible to KAI Scheduler (" + why + ") and goes to Queue " +
                         p.queue + (p.queue_defaulted ? " (KAI's default: no kai.scheduler/queue label)" : "") + ", " + where +
                         (g.quota ? std::string(" is 0") : std::string(" is unset (0)")) +
                         ": KAI runs non-preemptible work only within quota, so it never starts; give the queue a GPU quota, or "
                         "make the workload preemptible (a class below 100, or the label kai.scheduler/preemptibility: preemptible)");
          break;
        }
        // A quota (enough or not) or -1: KAI goes on to the parent, whose quota binds too.
        auto parent = string_at(member(q->root(), "spec"), "parentQueue");
        q = parent && !parent->empty() ? inv.find(sched::kKaiQueueGroup, "Queue", "", *parent) : nullptr;
      }
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kai_nonpreemptible_over_quota() { return std::make_unique<KaiNonpreemptibleOverQuota>(); }

}  // namespace gpuguard::rules
