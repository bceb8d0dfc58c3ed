// kueue-gpu-not-covered: GPU workloads sent to a ClusterQueue that does not cover the GPU resource.

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct Pending {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string ns;
  std::string local_queue;
  std::vector<std::string> gpus;  // GPU resources the workload's pods ask for
};

struct State final : RuleState {
  engine::Records<Pending> pending;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(pending, static_cast<State&>(later).pending); }
};

class KueueGpuNotCovered final : public Rule {
 public:
  KueueGpuNotCovered() {
    info_.id = "kueue-gpu-not-covered";
    info_.severity = Severity::error;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary = "GPU workloads are submitted to a Kueue ClusterQueue whose `coveredResources` do not include their GPU resource";
    info_.rationale =
        "Kueue admits a workload only when its ClusterQueue has quota for every resource the "
        "workload's pods request: a resource must be listed in the `coveredResources` of one of the "
        "queue's resource groups, with a flavor that gives it a quota. A job that requests "
        "`nvidia.com/gpu` through a LocalQueue whose ClusterQueue covers only `cpu` and `memory` is "
        "never admitted: it stays suspended with the reason that the resource is not covered. The "
        "API server accepts both objects; the mistake shows only as a queue that never moves.\n\n"
        "The rule follows the job's `kueue.x-k8s.io/queue-name` label to the LocalQueue of that name "
        "in the job's namespace, and its `spec.clusterQueue` to the ClusterQueue. Missing queues are "
        "`queue-reference-unknown`'s business. It needs the whole cluster, so it speaks only with a "
        "complete inventory. Kueue's own configuration can make it wrong: a resource that the "
        "Kueue Configuration excludes (`resources.excludeResourcePrefixes`) or transforms is not "
        "counted as requested; exclude the rule for such clusters.";
    info_.remediation =
        "Add the GPU resource to the ClusterQueue: list it in a resource group's `coveredResources` "
        "and give each flavor of the group a `nominalQuota` for it (the flavors' resources must "
        "match `coveredResources` in number and order). Or submit the job to a queue for GPU work.";
    info_.facts = {
        "facts/kubernetes-and-queues.md §3 — ClusterQueue `resourceGroups[].coveredResources` and "
        "`flavors[].resources[]` (kueue `apis/kueue/v1beta2/clusterqueue_types.go` @ff69552e); job label "
        "`kueue.x-k8s.io/queue-name`; LocalQueue `spec.clusterQueue`.",
    };
    info_.checks = pod_template_kinds();
    info_.reads = {KindRef{"kueue.x-k8s.io", "ClusterQueue"}, KindRef{"kueue.x-k8s.io", "LocalQueue"}};
    info_.needs_complete = true;
    info_.example_bad = R"(# gpuguard lint --complete
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cpu-only
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: 64
      - name: memory
        nominalQuota: 256Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: user-queue
  namespace: team-a
spec:
  clusterQueue: cpu-only
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: trainer:1
        resources:
          limits:
            nvidia.com/gpu: 1
)";
    info_.example_good = R"(# gpuguard lint --complete
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: gpu
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: cpu
        nominalQuota: 64
      - name: memory
        nominalQuota: 256Gi
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: user-queue
  namespace: team-a
spec:
  clusterQueue: gpu
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: trainer:1
        resources:
          limits:
            nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!queue::is_workload(obj)) return;
    auto lq = queue::kueue_queue_name(obj);
    if (!lq) return;
    std::set<std::string> gpus;
    for (const auto& t : pod_templates(obj))
      for (const auto& [name, q] : pod_gpus(t, ctx.settings().gpu_resources)) gpus.insert(name);
    if (gpus.empty()) return;
    auto* st = static_cast<State*>(ctx.state());
    st->pending.push_back(Pending{ctx.ref(), lq->pointer, ctx.position_of(lq->pointer), ctx.namespace_of_object(), lq->name,
                                  std::vector<std::string>(gpus.begin(), gpus.end())});
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    auto* st = static_cast<State*>(ctx.state());
    for (const auto& p : st->pending) {
      const Object* lq = inv.find("kueue.x-k8s.io", "LocalQueue", p.ns, p.local_queue);
      if (!lq) continue;
      auto cq_name = string_at(member(lq->root(), "spec"), "clusterQueue");
      if (!cq_name || cq_name->empty()) continue;
      const Object* cq = inv.find("kueue.x-k8s.io", "ClusterQueue", "", *cq_name);
      if (!cq) continue;
      const auto covered = queue::covered_resources(*cq);
      std::string missing;
      for (const auto& g : p.gpus)
        if (!covered.contains(g)) missing += (missing.empty() ? "" : ", ") + g;
      if (missing.empty()) continue;
      std::string have;
      for (const auto& c : covered) have += (have.empty() ? "" : ", ") + c;
      ctx.report(p.ref, p.pointer, p.pos,
                 p.ref.kind() + " " + p.ref.name() + " requests " + missing + " and is submitted through LocalQueue " + p.ns + "/" +
                     p.local_queue + " to ClusterQueue " + std::string(*cq_name) + ", whose coveredResources (" +
                     (have.empty() ? std::string("none") : have) + ") do not include " + missing +
                     ": Kueue never admits the workload; cover the GPU resource in the ClusterQueue or use a GPU queue");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kueue_gpu_not_covered() { return std::make_unique<KueueGpuNotCovered>(); }

}  // namespace gpuguard::rules
