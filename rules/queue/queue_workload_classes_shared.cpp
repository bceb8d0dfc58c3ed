// queue-workload-classes-shared: training, inference and dev workloads submitted to one queue.

#include <map>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct Seen {
  ObjectRef ref;
  std::string pointer;  // the class label
  Pos pos;
  std::string cls;
  std::string kueue_ns, kueue_lq;  // Kueue LocalQueue, if any
  std::string volcano;             // Volcano Queue, if any
};

struct State final : RuleState {
  std::vector<Seen> seen;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(seen, static_cast<State&>(later).seen); }
};

class QueueWorkloadClassesShared final : public Rule {
 public:
  QueueWorkloadClassesShared() {
    info_.id = "queue-workload-classes-shared";
    info_.severity = Severity::info;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "Workloads of different classes (training, inference, dev) are submitted to the same queue";
    info_.rationale =
        "The seed separates queues by workload class (9.5): training, online inference and "
        "development have different shapes (long gangs, steady latency-bound replicas, short bursty "
        "sessions) and need different weights, capabilities, borrow limits and preemption. In one "
        "queue they compete under one policy: a training gang can hold the quota that inference "
        "needs to scale, and dev sessions queue behind multi-hour jobs.\n\n"
        "A workload's class is the value of the label `classLabel` (default `workload-type`) on the "
        "workload or on its first pod template. Its queue is its Kueue ClusterQueue (label "
        "`kueue.x-k8s.io/queue-name` → LocalQueue in its namespace → `spec.clusterQueue`; the "
        "LocalQueue itself when it is not in the inventory), or its Volcano Queue (`spec.queue` of a "
        "Volcano Job or PodGroup, `default` when empty; a Pod's `scheduling.volcano.sh/queue-name` "
        "annotation; a Ray object's `volcano.sh/queue-name` label; a Kubeflow job's "
        "`runPolicy.schedulingPolicy.queue`). One finding per shared queue, on its last workload.\n\n"
        "It needs the whole cluster, so it speaks only with a complete inventory. In the webhook it "
        "sees only the admitted workload, so it stays quiet there.\n\n"
        "It does not ask whether a workload uses GPUs, nor how: a workload whose GPUs come through Dynamic Resource "
        "Allocation (`spec.resourceClaims`, no `nvidia.com/gpu` in its resources) counts like any other.";
    info_.remediation =
        "Give each class its own queue (for example `training`, `inference` and `dev` Volcano "
        "Queues, or ClusterQueues in one cohort), each with its own weight, capability and borrow "
        "limit, and submit each workload to the queue of its class.";
    info_.facts = {
        "Seed 9.5 (design.md §1): separate training / inference / dev queues.",
        "facts/kubernetes-and-queues.md §2 — Volcano `queue` of PodGroup and vcjob (default `default`), "
        "pod annotation `scheduling.volcano.sh/queue-name`; §3 — Kueue label `kueue.x-k8s.io/queue-name`, "
        "LocalQueue `spec.clusterQueue`; §5 — KubeRay label `volcano.sh/queue-name`, Kubeflow "
        "`runPolicy.schedulingPolicy.queue`.",
    };
    info_.params = {
        ParamSpec{"classLabel", ParamType::string, "workload-type",
                  "label whose value is a workload's class (training, inference, dev, ...)", std::nullopt, std::nullopt},
    };
    info_.checks = pod_template_kinds();
    info_.reads = {KindRef{"kueue.x-k8s.io", "LocalQueue"}};
    info_.needs_complete = true;
    info_.example_bad = R"(# gpuguard lint --complete
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: llama-finetune
  labels:
    workload-type: training
spec:
  queue: gpu
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: worker
          image: trainer:1
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: llama-serve
  labels:
    workload-type: inference
spec:
  queue: gpu
  tasks:
  - name: server
    replicas: 1
    template:
      spec:
        containers:
        - name: server
          image: server:1
)";
    info_.example_good = R"(# gpuguard lint --complete
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: llama-finetune
  labels:
    workload-type: training
spec:
  queue: training
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: worker
          image: trainer:1
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: llama-serve
  labels:
    workload-type: inference
spec:
  queue: inference
  tasks:
  - name: server
    replicas: 1
    template:
      spec:
        containers:
        - name: server
          image: server:1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!queue::is_workload(obj)) return;
    const std::string key = ctx.params().string("classLabel");
    std::string pointer;
    Node cls = obj.label(key);
    if (cls.is_string()) {
      pointer = pointer_join("/metadata/labels", key);
    } else {
      cls = Node();
      const auto& templates = pod_templates(obj);
      if (!templates.empty()) {
        const Node v = member(member(templates.front().metadata(), "labels"), key);
        if (v.is_string()) {
          cls = v;
          pointer = pointer_join(pointer_join(templates.front().pointer + "/metadata", "labels"), key);
        }
      }
    }
    if (cls.str().empty()) return;
    Seen s{ctx.ref(), pointer, ctx.position_of(pointer), std::string(cls.str()), "", "", ""};
    if (auto lq = queue::kueue_queue_name(obj)) {
      s.kueue_ns = ctx.namespace_of_object();
      s.kueue_lq = lq->name;
    }
    if (auto vq = queue::volcano_queue_name(obj)) s.volcano = vq->name;
    if (s.kueue_lq.empty() && s.volcano.empty()) return;
    static_cast<State*>(ctx.state())->seen.push_back(std::move(s));
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    auto* st = static_cast<State*>(ctx.state());
    // queue → indexes of its workloads, in source order; std::map for a deterministic order.
    std::map<std::string, std::vector<size_t>> by_queue;
    for (size_t i = 0; i < st->seen.size(); ++i) {
      const Seen& s = st->seen[i];
      if (!s.kueue_lq.empty()) {
        std::string q = "LocalQueue " + s.kueue_ns + "/" + s.kueue_lq;
        if (const Object* lq = inv.find("kueue.x-k8s.io", "LocalQueue", s.kueue_ns, s.kueue_lq)) {
          auto cq = string_at(member(lq->root(), "spec"), "clusterQueue");
          if (cq && !cq->empty()) q = "Kueue ClusterQueue " + std::string(*cq);
        }
        by_queue[q].push_back(i);
      }
      if (!s.volcano.empty()) by_queue["Volcano Queue " + s.volcano].push_back(i);
    }
    for (const auto& [q, idx] : by_queue) {
      std::map<std::string, std::vector<std::string>> classes;  // class → workloads
      for (size_t i : idx) classes[st->seen[i].cls].push_back(st->seen[i].ref.kind() + " " + st->seen[i].ref.name());
      if (classes.size() < 2) continue;
      std::string list;
      for (const auto& [cls, names] : classes) {
        std::string who;
        for (size_t k = 0; k < names.size() && k < 3; ++k) who += (k ? ", " : "") + names[k];
        if (names.size() > 3) who += ", +" + std::to_string(names.size() - 3) + " more";
        list += (list.empty() ? "" : "; ") + cls + " (" + who + ")";
      }
      const Seen& last = st->seen[idx.back()];
      ctx.report(last.ref, last.pointer, last.pos,
                 std::to_string(classes.size()) + " workload classes share " + q + ": " + list +
                     "; give each class its own queue with its own weight, capability and borrow limit (seed 9.5)");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_queue_workload_classes_shared() { return std::make_unique<QueueWorkloadClassesShared>(); }

}  // namespace gpuguard::rules
