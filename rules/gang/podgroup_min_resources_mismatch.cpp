// podgroup-min-resources-mismatch: a PodGroup's minResources GPUs differ from what minMember of its
// member pods ask for.

#include <algorithm>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/gang/podgroups.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class PodgroupMinResourcesMismatch final : public Rule {
 public:
  PodgroupMinResourcesMismatch() {
    info_.id = "podgroup-min-resources-mismatch";
    info_.severity = Severity::warning;
    info_.category = "gang";
    info_.seed = "9.4";
    info_.summary = "A PodGroup's minResources GPUs differ from minMember × the GPUs of its member pods";
    info_.rationale =
        "`minResources` is what the gang needs at the least (seed 9.4: \"the least it needs\"). Volcano "
        "enqueues a PodGroup only when its queue can hold `minResources`, and coscheduling rejects a "
        "group early when the cluster cannot hold them. The number must match the pods: `minMember` "
        "members, each with its GPUs.\n\n"
        "- Too high: the group waits in the queue (Volcano: `Pending`, not enqueued) for GPUs it will "
        "never use, or for ever when the queue's capability is smaller.\n"
        "- Too low: the group is let in while the GPUs for its pods are not there; the pods then sit "
        "Pending holding the queue's share, which is what gang scheduling was meant to prevent.\n\n"
        "The rule compares every GPU resource when the members are in the inventory (pods and pod "
        "templates that name the group, or the owner workload: a Volcano Job, a Kubeflow job). When "
        "member pods differ (a launcher without GPUs and workers with 8), any `minMember` of them may "
        "be the first to run, so a value between the smallest and the largest such sum is accepted. "
        "A PodGroup without `minResources` is not checked.";
    info_.remediation =
        "Set `minResources.<gpu>` to `minMember` × the GPUs of one member pod (the seed's example: 4 "
        "members × 8 `nvidia.com/gpu` = 32), or remove `minResources` and let the scheduler count.";
    info_.checks = {KindRef{"scheduling.volcano.sh", "PodGroup"}, KindRef{"scheduling.x-k8s.io", "PodGroup"}};
    info_.reads = gang::podgroup_read_kinds();
    info_.observes = pod_template_kinds();  // members are recorded in check (small records, not kept)
    info_.facts = {
        "Seed 9.4 (design.md §1): a PodGroup's key parameters `minMember`, `queue`, `priorityClassName`, "
        "`minResources`; its example sets minMember 4 and `nvidia.com/gpu: 32` for 8-GPU members "
        "(examples/seed/9.4-podgroup.yaml).",
        "facts/kubernetes-and-queues.md §2 — Volcano PodGroup `minResources` (*ResourceList) and the "
        "pod annotation `scheduling.k8s.io/group-name`; §4 — scheduler-plugins PodGroup `minResources` "
        "and the label `scheduling.x-k8s.io/pod-group`; §5 — the Kubeflow/KubeRay operators own the "
        "PodGroups they create.",
    };
    info_.example_bad = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: train-pg
spec:
  minMember: 4
  minResources:
    nvidia.com/gpu: 16
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  parallelism: 4
  completions: 4
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
          resources:
            limits:
              nvidia.com/gpu: 8
)";
    info_.example_good = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: train-pg
spec:
  minMember: 4
  minResources:
    nvidia.com/gpu: 32
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  parallelism: 4
  completions: 4
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
          resources:
            limits:
              nvidia.com/gpu: 8
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<gang::MemberState>(); }

  void check(const Object& obj, CheckContext& ctx) const override { gang::gather_members(obj, ctx); }
  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    const auto& gpus = ctx.settings().gpu_resources;
    std::optional<gang::MemberIndex> index;
    for (const char* group : {"scheduling.volcano.sh", "scheduling.x-k8s.io"}) {
      for (const Object* pg : inv.list(group, "PodGroup")) {
        if (!ctx.in_focus(*pg)) continue;
        const Node pg_spec = member(pg->root(), "spec");
        const Node mr = member(pg_spec, "minResources");
        if (!mr.is_object()) continue;
        auto mm = as_int(member(pg_spec, "minMember"));
        if (!mm || *mm < 1) continue;
        if (!index) index.emplace(inv, gpus, static_cast<gang::MemberState*>(ctx.state())->marked);
        auto members = index->members_of(*pg);
        if (!members) continue;
        auto pods = members->pods();
        if (!pods || *mm > *pods) continue;  // podgroup-min-member-invalid says so
        check_group(*pg, mr, *mm, *members, gpus, ctx);
      }
    }
  }

 private:
  static void check_group(const Object& pg, Node min_resources, int64_t min_member, const gang::Members& members,
                          const ResourceMatcher& gpus, FinishContext& ctx) {
    std::set<std::string> names;
    for (const auto& [name, v] : min_resources.items())
      if (gpus.matches(name)) names.emplace(name);
    for (const auto& t : members.templates)
      for (const auto& [name, q] : t.gpus) names.insert(name);
    for (const auto& name : names) {
      // Per-pod amounts with their counts, smallest first.
      std::vector<std::pair<Quantity, int64_t>> per_pod;
      for (const auto& t : members.templates) {
        auto it = t.gpus.find(name);
        per_pod.emplace_back(it == t.gpus.end() ? Quantity() : it->second, std::max<int64_t>(*t.replicas, 0));
      }
      std::sort(per_pod.begin(), per_pod.end());
      auto sum_of = [&](auto first, auto last) {
        Quantity sum;
        int64_t left = min_member;
        for (auto it = first; it != last && left > 0; ++it) {
          int64_t take = std::min(left, it->second);
          sum = sum + it->first * take;
          left -= take;
        }
        return sum;
      };
      const Quantity low = sum_of(per_pod.begin(), per_pod.end());
      const Quantity high = sum_of(per_pod.rbegin(), per_pod.rend());
      const Node given = member(min_resources, name);
      Quantity want;
      if (given) {
        auto q = Quantity::from_node(given);
        if (!q) continue;  // not a quantity: the schema's business
        want = *q;
      }
      if (want >= low && want <= high) continue;
      const std::string ptr = given ? pointer_join("/spec/minResources", name) : "/spec/minResources";
      std::string expected;
      if (low == high) {
        // Every member pod asks for the same amount.
        const Quantity each = per_pod.front().first;
        expected = "minMember " + std::to_string(min_member) + " × " + each.to_string() + " " + name + " per member pod = " +
                   low.to_string();
      } else {
        expected = "any " + std::to_string(min_member) + " of its member pods ask for between " + low.to_string() + " and " +
                   high.to_string() + " " + name;
      }
      std::string what = given ? "minResources asks for " + want.to_string() + " " + name
                               : "minResources does not mention " + name;
      std::string effect = want > high ? ": the group waits to be enqueued for GPUs its pods never use"
                                       : ": the group is let in before the GPUs its pods need are free, and its pods sit Pending";
      ctx.report(pg, ptr, what + ", but " + expected + effect + "; set " + name + (low == high ? " to " + low.to_string() : " between " + low.to_string() + " and " + high.to_string()));
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_podgroup_min_resources_mismatch() { return std::make_unique<PodgroupMinResourcesMismatch>(); }

}  // namespace gpuguard::rules
