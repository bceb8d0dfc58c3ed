// namespace-gpu-quota-missing: a namespace runs GPU workloads and no ResourceQuota caps its GPUs.

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/dra.h"
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

// A workload whose templates name DRA claims and ask for no GPU in their resources: resolved in
// finish (only such workloads are kept; their claims are a small projection).
struct DraWorkload {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string ns;
  int64_t pods = 1;
  std::vector<PodClaim> claims;
};

struct State final : RuleState {
  std::map<std::string, NamespaceUse> namespaces;
  engine::Records<DraWorkload> dra;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override {
    engine::append(dra, static_cast<State&>(later).dra);
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
        "state).\n\n"
        "**Dynamic Resource Allocation.** Pods that get GPUs through ResourceClaims (a request of a GPU DeviceClass, "
        "in the input or the cluster state) are counted by the quota evaluator for ResourceClaims, under the key "
        "`<class>.deviceclass.resource.k8s.io/devices` (ExactCount `count`, `All` as 32, `firstAvailable` as its "
        "largest alternative). `requests.nvidia.com/gpu` counts their devices only where the DRAExtendedResource "
        "feature gate is on (beta, on by default from Kubernetes 1.36; config `kubernetesVersion`) **and** the "
        "DeviceClass sets `extendedResourceName: nvidia.com/gpu` (NVIDIA's `gpu.nvidia.com` does with its v1 chart; "
        "`mig.nvidia.com` and `vfio.gpu.nvidia.com` do not); with the gate the implicit key "
        "`requests.deviceclass.resource.kubernetes.io/<class>` counts too. So on 1.34 and 1.35, and for MIG slices "
        "on any version, a namespace capped only by `requests.nvidia.com/gpu` is uncapped for its DRA GPUs: reported, "
        "naming the quota that exists, the class it misses and how many devices the workloads ask for (pods × "
        "devices per pod; a shared ResourceClaim counted once). Read in kubernetes `pkg/quota/v1/evaluator/core/"
        "resource_claims.go` (MatchingResources by the suffix `.deviceclass.resource.k8s.io/devices`, Usage and "
        "setResourceQuantity adding `requests.<extendedResourceName>` under the gate; current source in the code "
        "index, commit not pinned) and facts/modern-stack.md §1 (gate timeline).";
    info_.remediation =
        "Give the namespace a ResourceQuota with `requests.<gpu>: <cap>` for every GPU resource its pods "
        "use, for example `requests.nvidia.com/gpu: 32`; for DRA GPUs, "
        "`gpu.nvidia.com.deviceclass.resource.k8s.io/devices: 32` (one key per GPU DeviceClass its claims use).";
    info_.checks = pod_template_kinds();
    info_.reads = {KindRef{"", "ResourceQuota"}};
    info_.reads.insert(info_.reads.end(), dra_kinds().begin(), dra_kinds().end());
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
    DraWorkload dra;
    for (const auto& t : pod_templates(obj)) {
      const auto& tg = pod_gpus(t, gpus);
      for (const auto& [name, q] : tg) {
        used.insert(name);
        if (first.empty()) first = t.spec_pointer();
      }
      if (!tg.empty()) continue;
      auto claims = pod_claims(t.spec);  // GPUs through DRA, perhaps: decided in finish
      if (claims.empty()) continue;
      if (dra.claims.empty()) {
        dra.pointer = t.spec_pointer();
        dra.pods = 0;
      }
      dra.pods = sat_add(dra.pods, std::max<int64_t>(t.replicas.value_or(1), 0));
      dra.claims.insert(dra.claims.end(), std::make_move_iterator(claims.begin()), std::make_move_iterator(claims.end()));
    }
    if (!dra.claims.empty()) {
      dra.ref = ctx.ref();
      dra.pos = ctx.position_of(dra.pointer);
      dra.ns = ctx.namespace_of_object();
      static_cast<State*>(ctx.state())->dra.push_back(std::move(dra));
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
    finish_dra(ctx);
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
  // DRA GPU workloads: per namespace, the devices of each GPU class, and whether a quota counts them.
  static void finish_dra(FinishContext& ctx) {
    const Inventory& inv = ctx.inventory();
    auto* st = static_cast<State*>(ctx.state());
    if (st->dra.empty()) return;
    const bool gate = dra_extended_resource_on(ctx.settings().kubernetes_version);
    struct Use {
      const DraWorkload* first = nullptr;
      size_t workloads = 0;
      std::map<std::string, int64_t> devices;  // class → devices asked for
      std::set<std::string> shared;            // shared ResourceClaims counted already
    };
    std::map<std::string, Use> by_ns;
    for (const auto& w : st->dra) {
      const DraGpus gpus = resolve_dra_gpus(inv, w.ns, w.claims, ctx.settings().gpu_device_classes);
      if (!gpus.any()) continue;
      Use& u = by_ns[w.ns];
      if (!u.first) u.first = &w;
      ++u.workloads;
      // firstAvailable: the quota counts the largest alternative of each class (worst case).
      std::map<std::pair<std::string, std::string>, int64_t> alternatives;  // (source/request, class) → max
      for (const auto& r : gpus.requests) {
        if (r.shared && u.shared.contains(r.source + "/" + r.request)) continue;
        const int64_t n = r.shared ? r.count : sat_mul(r.count, w.pods);
        if (r.alternative) {
          const std::string parent = r.source + "/" + r.request.substr(0, r.request.find('/'));
          int64_t& m = alternatives[{parent, r.device_class}];
          m = std::max(m, n);
        } else {
          u.devices[r.device_class] = sat_add(u.devices[r.device_class], n);
        }
      }
      for (const auto& [key, n] : alternatives) u.devices[key.second] = sat_add(u.devices[key.second], n);
      for (const auto& r : gpus.requests)
        if (r.shared) u.shared.insert(r.source + "/" + r.request);
    }
    for (const auto& [ns, u] : by_ns) {
      std::vector<const Object*> quotas = inv.list("", "ResourceQuota", ns);
      std::vector<std::string> missing;  // "gpu.nvidia.com (8 devices)"
      std::string first_class;
      std::string partial;               // what an existing quota caps that does not count these claims
      for (const auto& [cls, n] : u.devices) {
        const std::string device_key = cls + ".deviceclass.resource.k8s.io/devices";
        const std::string implicit_key = "requests.deviceclass.resource.kubernetes.io/" + cls;
        std::string ext;  // requests.<extendedResourceName> of the class
        if (const Object* dc = inv.find(kResourceGroup, "DeviceClass", "", cls))
          if (auto e = string_at(path(dc->root(), {"spec"}), "extendedResourceName"); e && !e->empty()) ext = "requests." + std::string(*e);
        bool counted = false;
        for (const Object* q : quotas) {
          const Node hard = path(q->root(), {"spec", "hard"});
          if (!hard.is_object()) continue;
          if (member(hard, device_key) || (gate && member(hard, implicit_key)) || (gate && !ext.empty() && member(hard, ext))) {
            counted = true;
            break;
          }
          if (!partial.empty()) continue;
          for (const auto [key, v] : hard.items()) {
            const std::string_view k = key;
            if (!k.starts_with("requests.") || !ctx.settings().gpu_resources.matches(k.substr(9))) continue;
            partial.reserve(200 + q->name.size() + k.size() + ext.size());
            partial.append("ResourceQuota ").append(q->name).append(" caps ").append(k).append(", which does not count DRA claims");
            if (!gate)
              partial.append(" on Kubernetes ").append(ctx.settings().kubernetes_version).append(" (DRAExtendedResource is off before 1.36)");
            else if (ext.empty())
              partial.append(" of DeviceClass ").append(cls).append(" (it sets no extendedResourceName)");
            else
              partial.append(" of DeviceClass ").append(cls).append(" (it maps to ").append(ext.substr(9)).append(")");
            break;
          }
        }
        if (counted) continue;
        if (first_class.empty()) first_class = cls;
        missing.push_back(device_key + " (" + std::to_string(n) + (n == 1 ? " device" : " devices") + ")");
      }
      if (missing.empty()) continue;
      std::string keys;
      for (const auto& m : missing) keys.append(keys.empty() ? "" : ", ").append(m);
      const DraWorkload& w = *u.first;
      std::string msg;
      msg.reserve(400 + ns.size() + keys.size() + partial.size() + w.ref.name().size());
      msg.append("namespace ").append(ns).append(" runs GPU workloads through DRA (").append(display(w.ref));
      if (u.workloads > 1)
        msg.append(" and ").append(std::to_string(u.workloads - 1)).append(u.workloads > 2 ? " more DRA GPU workloads" : " more DRA GPU workload");
      msg.append(") but no ResourceQuota counts their claims: ").append(keys);
      msg.append(" is capped by none");
      if (!partial.empty()) msg.append(" (").append(partial).append(")");
      msg.append(", so nothing stops this namespace from taking every GPU of the cluster; add a ResourceQuota that sets ");
      msg.append(first_class).append(".deviceclass.resource.k8s.io/devices (seed 9.5)");
      ctx.report(w.ref, w.pointer, w.pos, std::move(msg));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_namespace_gpu_quota_missing() { return std::make_unique<NamespaceGpuQuotaMissing>(); }

}  // namespace gpuguard::rules
