// namespace-gpu-quota-missing: a namespace runs GPU workloads and no ResourceQuota caps its GPUs.

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/quota/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct Workload {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
};

// What finish() reports of a namespace's GPU workloads: the first one in input order, and how
// many there are (not each one: 100,000 objects kept 9 MiB of them).
struct NamespaceUse {
  std::optional<Workload> first;
  size_t workloads = 0;
  std::set<std::string> resources;         // GPU resources they ask for
};

struct State final : RuleState {
  std::map<std::string, NamespaceUse> namespaces;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override {
    for (auto& [name, use] : static_cast<State&>(later).namespaces) {
      NamespaceUse& mine = namespaces[name];
      // Each state keeps the first of its own objects: this one's are earlier than `later`'s.
      if (!mine.first) mine.first = std::move(use.first);
      mine.workloads += use.workloads;
      mine.resources.merge(use.resources);
    }
  }
};

std::string display(const ObjectRef& r) {
  return r.kind() + " " + (r.namespace_().empty() ? "" : r.namespace_() + "/") + r.name();
}

class NamespaceGpuQuotaMissing final : public Rule {
 public:
  NamespaceGpuQuotaMissing() {
    info_.id = "namespace-gpu-quota-missing";
    info_.severity = Severity::warning;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A namespace runs GPU workloads but no ResourceQuota caps its GPU requests";
    info_.rationale =
        "The seed's first layer (9.5) is a hard cap per team: one namespace and one ResourceQuota per "
        "team, so that no team can take every GPU of the cluster. A namespace whose pods ask for GPUs but "
        "that has no ResourceQuota with `requests.nvidia.com/gpu` (or the key of the MIG or shared resource "
        "its pods use) has no cap at all.\n\n"
        "Only `requests.<gpu>` keys count: the quota system ignores `limits.nvidia.com/gpu` and the bare "
        "`nvidia.com/gpu` (see `quota-gpu-key-ignored`), so a quota with only those keys does not cap "
        "anything either. Quotas with scopes count as caps. The rule reports something missing, so it "
        "speaks only where the inventory is complete (`gpuguard lint --complete`, the webhook's cluster "
        "state).";
    info_.remediation =
        "Give the namespace a ResourceQuota with `requests.<gpu>: <cap>` for every GPU resource its pods "
        "use, for example `requests.nvidia.com/gpu: 32`.";
    info_.checks = pod_template_kinds();
    info_.reads = {KindRef{"", "ResourceQuota"}};
    info_.needs_complete = true;
    info_.facts = {
        "Seed 9.5 (design.md §1): ResourceQuota is the hard cap of the four layers; one namespace and quota per team.",
        "facts/kubernetes-and-queues.md §1.1 — kubernetes `pkg/quota/v1/evaluator/core/pods.go` @05e7cb29 "
        "counts an extended resource only as `requests.<name>`; `limits.` and bare keys are accepted and ignored.",
    };
    info_.example_bad = R"(# gpuguard lint --complete: a GPU job and no quota in team-a
apiVersion: batch/v1
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
    info_.example_good = R"(# gpuguard lint --complete: the same job under a GPU quota
apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 32
---
apiVersion: batch/v1
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
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is_kubernetes_object() || obj.cluster_scoped()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    std::set<std::string> used;
    std::string first;
    for (const auto& t : pod_templates(obj))
      for (const auto& [name, q] : pod_gpus(t, gpus)) {
        used.insert(name);
        if (first.empty()) first = t.spec_pointer();
      }
    if (used.empty()) return;
    auto& ns = static_cast<State*>(ctx.state())->namespaces[ctx.namespace_of_object()];
    if (!ns.first) ns.first = Workload{ctx.ref(), first, ctx.position_of(first)};
    ++ns.workloads;
    ns.resources.insert(used.begin(), used.end());
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    for (const auto& [ns, use] : static_cast<State*>(ctx.state())->namespaces) {
      std::set<std::string_view, std::less<>> capped;  // names in the quotas' kept projections
      std::vector<std::string> inert;  // quotas with only ignored GPU keys
      const std::set<std::string>& used = use.resources;  // (clang 14 cannot capture a structured binding)
      auto all_capped = [&] {
        return std::all_of(used.begin(), used.end(), [&](const std::string& r) { return capped.contains(r); });
      };
      for (const Object* q : inv.list("", "ResourceQuota", ns)) {
        const auto& tracked = quota::tracked_gpus(*q, gpus);
        for (const auto& [name, amount] : tracked) capped.insert(name);
        if (!tracked.empty() && all_capped()) break;  // nothing missing: the other quotas do not matter
        if (tracked.empty()) {
          // The first such key in key order (the document has them as written).
          std::optional<std::string_view> ignored;
          for (const auto [key, v] : path(q->root(), {"spec", "hard"}).items())
            if ((!ignored || key < *ignored) && gpus.matches(key.starts_with("limits.") ? key.substr(7) : key)) ignored = key;
          if (ignored) inert.push_back("ResourceQuota " + q->name + " sets only `" + std::string(*ignored) + "`, which quota ignores");
        }
      }
      std::vector<std::string> missing;
      for (const auto& r : use.resources)
        if (!capped.contains(r)) missing.push_back(r);
      if (missing.empty()) continue;
      std::string keys;
      for (const auto& r : missing) keys += (keys.empty() ? "requests." : ", requests.") + r;
      const Workload& w = *use.first;
      std::string who = display(w.ref);
      if (use.workloads > 1) who += " and " + std::to_string(use.workloads - 1) + " more GPU workload" + (use.workloads > 2 ? "s" : "");
      std::string msg = "namespace " + ns + " runs GPU workloads (" + who + ") but no ResourceQuota caps " + keys +
                        ": nothing stops this namespace from taking every GPU of the cluster; add a ResourceQuota that sets " +
                        keys + " (seed 9.5)";
      if (!inert.empty()) msg += " (" + inert.front() + ")";
      ctx.report(w.ref, w.pointer, w.pos, msg);
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_namespace_gpu_quota_missing() { return std::make_unique<NamespaceGpuQuotaMissing>(); }

}  // namespace gpuguard::rules
