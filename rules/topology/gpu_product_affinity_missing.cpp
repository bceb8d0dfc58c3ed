// gpu-product-affinity-missing: a GPU pod template that does not pin the GPU model by a required
// node constraint.

#include <algorithm>
#include <map>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/topology/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using namespace topology;

constexpr std::string_view kProductAnnotation = "gpuguard.io/gpu-product";
constexpr std::string_view kProductLabel = "nvidia.com/gpu.product";

// A template that requests GPUs and pins no model in its own spec; decided in `finish`.
struct Unpinned {
  ObjectRef ref;
  std::string pointer;     // where the finding points
  Pos pos;
  std::string spec_ptr;
  json spec_part;          // {"affinity": ...} of the spec, to build the fix (when fixes are wanted)
  std::string queue;       // kueue.x-k8s.io/queue-name of the workload, if any
  std::vector<std::string> gpu_resources;
  std::string gpus;        // "nvidia.com/gpu: 8"
  std::string preferred;   // a preferred-only pin, for the message
  // No GPU in its containers' resources, but claims: a GPU template if they resolve to GPUs (finish).
  std::vector<PodClaim> claims;
};

// NVIDIA's DRA driver's own classes select by `type` alone (k8s-dra-driver-gpu
// deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-*.yaml @22407113): they pin no model.
// Any other GPU class may pin it in its selectors, which are known only when it is in the inventory.
bool driver_class(std::string_view c) { return c == "gpu.nvidia.com" || c == "mig.nvidia.com" || c == "vfio.gpu.nvidia.com"; }

struct State final : RuleState {
  engine::Records<Unpinned> unpinned;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(unpinned, static_cast<State&>(later).unpinned); }
};

class GpuProductAffinityMissing final : public Rule {
 public:
  GpuProductAffinityMissing() {
    info_.id = "gpu-product-affinity-missing";
    info_.severity = Severity::warning;
    info_.category = "topology";
    info_.seed = "9.3";
    info_.summary = "A GPU pod template does not pin the GPU model with a required node constraint";
    info_.rationale =
        "A request for `nvidia.com/gpu: 8` says how many GPUs, not which ones. In a cluster with more "
        "than one GPU model the scheduler places the pod on any node with enough free GPUs: an A100 job "
        "lands on an H100 node (taking the scarce GPUs) or an H100-tuned job on a smaller, slower card "
        "(out of memory, wrong kernels). Seed 9.3: select nodes by `nvidia.com/gpu.product`, "
        "`nvidia.com/gpu.memory` or the instance type.\n\n"
        "The model counts as pinned when the pod template has a `nodeSelector` on one of those labels "
        "(parameter `nodeLabels`), or a required node affinity where **every** node-selector term "
        "(terms are ORed) has an `In`, `Gt` or `Lt` requirement on one. `Exists` does not pin a model, "
        "and a *preferred* affinity is only a score: neither counts. Pods bound to a node by `nodeName`, and "
        "DaemonSets (which run on every node they select), are skipped. A Kueue workload is pinned too when "
        "every ResourceFlavor its ClusterQueue offers for the GPU resource sets such a label in "
        "`nodeLabels` (Kueue adds the flavor's node labels to the pods' node selector when it admits "
        "the workload); the rule follows `kueue.x-k8s.io/queue-name` → LocalQueue → ClusterQueue → "
        "ResourceFlavors when they are in the inventory (a workload without the label follows the namespace's "
        "LocalQueue named `default`, which Kueue's LocalQueueDefaulting assigns).\n\n"
        "A pod template whose GPUs come through Dynamic Resource Allocation is pinned by the same node constraints, "
        "or when every GPU request of its claims (each `firstAvailable` alternative too) has a CEL selector "
        "`device.attributes['gpu.nvidia.com'].productName == '<name>'`, in the request or in its DeviceClass's "
        "selectors: NVIDIA's DRA driver publishes the attribute `productName` as NVML's device name "
        "(`cmd/gpu-kubelet-plugin/nvlib.go` `device.GetName()`, `deviceinfo.go` and `mig.go` `productName`, "
        "NVIDIA/k8s-dra-driver-gpu @22407113, v0.4.0-rc.1+14). A selector that names `productName` in another form "
        "(`startsWith`, `in`) chooses the model too and counts; a MIG `profile` does not (`1g.10gb` exists on the A100 "
        "80GB and the H100 80GB). The driver's own classes `gpu.nvidia.com`, `mig.nvidia.com` and `vfio.gpu.nvidia.com` "
        "select by `type` alone; another GPU class that the input does not hold may pin the model in its selectors, so "
        "nothing is said. For a Kueue workload every flavor of its ClusterQueue must pin (which resource Kueue maps a "
        "device class to is in Kueue's configuration, not read).\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.remediation =
        "Require the model, e.g. `nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}` (the "
        "exact GFD value: it is case-sensitive), or route the workload through a Kueue ResourceFlavor "
        "with that node label.\n\n"
        "The fix adds a required node-affinity requirement `nvidia.com/gpu.product In [<product>]` to "
        "every node-selector term (or creates the term). The product comes from the namespace's "
        "annotation `gpuguard.io/gpu-product` (when the Namespace is in the inventory) or from the "
        "parameter `defaultProducts` (namespace → product); without either there is no fix.\n\n"
        "A DRA GPU template gets no fix: add the selector to its claim's request, e.g. "
        "`device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'` (NVML's name, with spaces, not "
        "the GFD label form), or a node constraint. A GFD label value cannot be turned back into NVML's name (`NVIDIA "
        "A100-SXM4-80GB` and `NVIDIA H100 80GB HBM3` both become dashes), and a node-label fix would need GFD on the "
        "DRA nodes.";
    info_.checks = pod_template_kinds_except({KindRef{"apps", "DaemonSet"}});  // skipped below
    info_.reads = {KindRef{"", "Namespace"}, KindRef{"kueue.x-k8s.io", "LocalQueue"},
                   KindRef{"kueue.x-k8s.io", "ClusterQueue"}, KindRef{"kueue.x-k8s.io", "ResourceFlavor"}};
    info_.reads.insert(info_.reads.end(), dra_kinds().begin(), dra_kinds().end());
    info_.facts = {
        "Seed 9.3 (design.md §1): select nodes by `nvidia.com/gpu.product`, `nvidia.com/gpu.memory`, instance type.",
        "facts/nvidia.md §4 — GFD labels `nvidia.com/gpu.product` (the sanitised NVML name, case-sensitive) and "
        "`nvidia.com/gpu.memory` (MiB) [KDP `internal/lm/*.go`].",
        "facts/kubernetes-and-queues.md §3 — Kueue job label `kueue.x-k8s.io/queue-name`, LocalQueue "
        "`spec.clusterQueue`, ClusterQueue `resourceGroups[].coveredResources/flavors`, ResourceFlavor "
        "`spec.nodeLabels` (kueue `apis/kueue/v1beta2/*_types.go`); Kueue injects the assigned flavor's "
        "nodeLabels into the pod template's nodeSelector on admission (`pkg/podset` Merge of `NodeSelector`).",
        "Node affinity semantics (terms ORed, requirements within a term ANDed; `In`, `NotIn`, `Exists`, "
        "`DoesNotExist`, `Gt`, `Lt`): k8s.io/api `core/v1/types.go` `NodeSelector`.",
    };
    info_.params = {
        ParamSpec{"nodeLabels", ParamType::string_list,
                  json::array({"nvidia.com/gpu.product", "nvidia.com/gpu.memory", "node.kubernetes.io/instance-type"}),
                  "node labels that pin a GPU model when required by nodeSelector, node affinity or a Kueue ResourceFlavor "
                  "(`nvidia.com/gpu.product` always does)",
                  std::nullopt, std::nullopt},
        ParamSpec{"defaultProducts", ParamType::string_map, json::object(),
                  "namespace → GFD product (`nvidia.com/gpu.product` value) the fix requires where the Namespace has "
                  "no `gpuguard.io/gpu-product` annotation",
                  std::nullopt, std::nullopt},
    };
    info_.has_fix = true;
    info_.reads_parts = kPartPlacement | kPartLabels;  // the Kueue queue label; the fix requires nvidia.com/gpu.product, which always pins
    info_.fix_settles = true;
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
      restartPolicy: Never
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
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
    const auto& pins = ctx.params().strings("nodeLabels");
    // nvidia.com/gpu.product always pins (the fix requires it, so the fix settles whatever nodeLabels says).
    auto is_pin = [&](std::string_view key) { return key == kProductLabel || std::find(pins.begin(), pins.end(), key) != pins.end(); };
    // A DaemonSet runs on every node it selects: its GPU pods follow the nodes, whatever the model.
    if (obj.is("apps", "DaemonSet")) return;
    for (const auto& t : pod_templates(obj)) {
      const auto& gpus = pod_gpus(t, ctx.settings().gpu_resources);
      std::vector<PodClaim> claims;
      if (gpus.empty()) {
        claims = pod_claims(t.spec);  // GPUs through DRA, perhaps: decided in finish
        if (claims.empty()) continue;
      }
      const Node spec = t.spec;
      if (auto node = string_at(spec, "nodeName"); node && !node->empty()) continue;  // bound to one node
      // nodeSelector on a pinning label.
      if (const Node ns = member(spec, "nodeSelector"); ns.is_object()) {
        bool pinned = false;
        for (const auto [k, v] : ns.items())
          if (is_pin(k) && v.is_string() && !v.str().empty()) pinned = true;
        if (pinned) continue;
      }
      // Required node affinity: every term pins.
      if (const Node terms = required_node_terms(spec)) {
        bool all = true;
        for (const Node term : terms) {
          bool pinned = false;
          for (const Node e : match_expressions(term)) {
            auto key = string_at(e, "key");
            auto op = string_at(e, "operator");
            if (key && is_pin(*key) && op && (*op == "In" || *op == "Gt" || *op == "Lt") && !expr_values(e).empty())
              pinned = true;
          }
          if (!pinned) all = false;
        }
        if (all) continue;
      }
      Unpinned u;
      u.ref = ctx.ref();
      u.spec_ptr = t.spec_pointer();
      u.pointer = member(spec, "affinity") ? u.spec_ptr + "/affinity"
                  : member(spec, "nodeSelector") ? u.spec_ptr + "/nodeSelector"
                                                  : u.spec_ptr;
      u.pos = ctx.position_of(u.pointer);
      u.claims = std::move(claims);
      if (ctx.fixes_wanted() && u.claims.empty()) {
        u.spec_part = json::object();
        if (const Node a = member(spec, "affinity")) u.spec_part["affinity"] = a.to_json();  // kept for the fix, past the tree
      }
      for (const auto& [name, q] : gpus) {
        u.gpu_resources.push_back(name);
        u.gpus += (u.gpus.empty() ? "" : ", ") + name + ": " + q.to_string();
      }
      // Preferred-only pins, for the message.
      if (const Node pref = member(affinity_of(spec, "nodeAffinity"), kPreferred); pref.is_array())
        for (const Node p : pref)
          if (const Node pt = member(p, "preference"))
            for (const Node e : match_expressions(pt))
              if (auto key = string_at(e, "key"); key && is_pin(*key)) u.preferred = std::string(*key);
      // The queue: the workload's label (Kueue reads it from the job object; for a Pod, the pod).
      for (const Node md : {obj.metadata(), t.metadata()}) {
        if (!u.queue.empty()) break;
        if (auto q = string_at(member(md, "labels"), kQueueNameLabel)) u.queue = std::string(*q);
      }
      static_cast<State*>(ctx.state())->unpinned.push_back(std::move(u));
    }
  }

  void finish(FinishContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    const Inventory& inv = ctx.inventory();
    const auto& pins = ctx.params().strings("nodeLabels");
    const json* defaults = member(ctx.params().values(), "defaultProducts");
    for (const auto& u : st->unpinned) {
      std::string dra;  // where a DRA template's unpinned GPUs come from
      if (!u.claims.empty()) {
        const DraGpus gpus = resolve_dra_gpus(inv, u.ref.namespace_(), u.claims, ctx.settings().gpu_device_classes);
        if (!gpus.any()) continue;  // no GPU claim, or claims the input does not hold: nothing to say
        const DraGpuRequest* open = nullptr;
        for (const auto& r : gpus.requests) {
          if (!r.product.empty() || r.product_unknown) continue;  // a productName selector
          if (!driver_class(r.device_class) && !inv.find(kResourceGroup, "DeviceClass", "", r.device_class)) continue;
          open = &r;
          break;
        }
        if (!open) continue;
        dra.reserve(160 + open->pod_claim.size() + open->source.size() + open->request.size() + open->device_class.size());
        dra.append("requests GPUs through DRA (claim ").append(open->pod_claim).append(": ").append(open->source);
        dra.append(", request ").append(open->request).append(", DeviceClass ").append(open->device_class);
        dra.append(") but does not pin the GPU model: no CEL selector on device.attributes['gpu.nvidia.com'].productName in the "
                   "request or its DeviceClass");
      }
      std::string why_not;  // why Kueue's flavors do not pin it, when the queue is known
      // Without the label Kueue defaults the queue to a LocalQueue named `default` (LocalQueueDefaulting).
      const std::string queue = !u.queue.empty() ? u.queue
                                : inv.find("kueue.x-k8s.io", "LocalQueue", u.ref.namespace_(), "default") ? "default"
                                                                                                         : "";
      if (!queue.empty() && kueue_pins(inv, u, queue, pins, why_not)) continue;
      // The product for the fix.
      std::string product, from;
      if (const Object* ns = inv.find("", "Namespace", "", u.ref.namespace_()))
        if (const Node p = ns->annotation(kProductAnnotation); p.is_string() && !p.str().empty()) {
          product = std::string(p.str());
          from = "the namespace's annotation " + std::string(kProductAnnotation);
        }
      if (product.empty())
        if (auto p = defaults ? string_at(*defaults, u.ref.namespace_()) : std::nullopt; p && !p->empty()) {
          product = std::string(*p);
          from = "defaultProducts[" + u.ref.namespace_() + "]";
        }
      std::string labels;
      for (const auto& l : pins) labels += (labels.empty() ? "" : ", ") + l;
      std::string msg = dra.empty() ? "requests " + u.gpus + " but does not pin the GPU model: no nodeSelector or required node affinity on " +
                                          labels + ", so the scheduler may place it on any GPU model with free GPUs (an A100 job on an H100 node, or the reverse)"
                                    : dra + ", and no nodeSelector or required node affinity on " + labels +
                                          ", so the scheduler may allocate any GPU model with free devices (an A100 job on an H100 node, or the reverse)";
      if (!u.preferred.empty()) msg += "; its preferred node affinity on " + u.preferred + " is only a score, not a constraint";
      if (!why_not.empty()) msg += "; " + why_not;
      std::optional<json> fix;
      if (!dra.empty()) {
        msg += " (add e.g. device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3', NVML's name, to the request's selectors)";
      } else if (!product.empty()) {
        json expr = {{"key", std::string(kProductLabel)}, {"operator", "In"}, {"values", json::array({product})}};
        if (ctx.fixes_wanted()) fix = add_node_requirement(u.spec_part, u.spec_ptr, expr, [&](const json& term) {
          for (const json* e : match_expressions(term)) {
            auto key = string_at(*e, "key");
            auto op = string_at(*e, "operator");
            if (key && (*key == kProductLabel || std::find(pins.begin(), pins.end(), *key) != pins.end()) && op &&
                (*op == "In" || *op == "Gt" || *op == "Lt") && !expr_values(*e).empty())
              return true;
          }
          return false;
        });
        msg += " (fix: require " + std::string(kProductLabel) + " In [" + product + "], from " + from + ")";
      } else {
        msg += " (set the namespace annotation " + std::string(kProductAnnotation) + " or defaultProducts for a fix)";
      }
      ctx.report(u.ref, u.pointer, u.pos, std::move(msg), std::move(fix));
    }
  }

 private:
  // Whether every ResourceFlavor the workload's ClusterQueue offers for its GPU resources sets a
  // pinning node label. `why_not` says what was missing or unpinned.
  static bool kueue_pins(const Inventory& inv, const Unpinned& u, const std::string& queue, const std::vector<std::string>& pins,
                         std::string& why_not) {
    const Object* lq = inv.find("kueue.x-k8s.io", "LocalQueue", u.ref.namespace_(), queue);
    if (!lq) return false;
    auto cq_name = string_at(member(lq->root(), "spec"), "clusterQueue");
    if (!cq_name) return false;
    const Object* cq = inv.find("kueue.x-k8s.io", "ClusterQueue", "", *cq_name);
    if (!cq) return false;
    const Node groups = path(cq->root(), {"spec", "resourceGroups"});
    if (!groups.is_array()) return false;
    std::vector<std::string> flavors;
    for (const Node g : groups) {
      const Node covered = member(g, "coveredResources");
      if (!covered.is_array()) continue;
      bool covers = false;
      for (const Node r : covered)
        if (r.is_string() && (u.gpu_resources.empty() ||  // DRA: which resource Kueue maps its class to is not known: every group
                              std::find(u.gpu_resources.begin(), u.gpu_resources.end(), r.str()) != u.gpu_resources.end()))
          covers = true;
      if (!covers) continue;
      if (const Node fl = member(g, "flavors"); fl.is_array())
        for (const Node f : fl)
          if (auto n = string_at(f, "name")) flavors.emplace_back(*n);
    }
    const std::string via = "LocalQueue " + queue + " → ClusterQueue " + std::string(*cq_name);
    if (flavors.empty()) {
      why_not = via + " covers none of its GPU resources";
      return false;
    }
    std::vector<std::string> unpinned;
    for (const auto& name : flavors) {
      const Object* rf = inv.find("kueue.x-k8s.io", "ResourceFlavor", "", name);
      if (!rf) return false;  // not in the inventory: cannot tell
      const Node nl = path(rf->root(), {"spec", "nodeLabels"});
      bool pinned = false;
      if (nl.is_object())
        for (const auto [k, v] : nl.items())
          if ((k == kProductLabel || std::find(pins.begin(), pins.end(), k) != pins.end()) && v.is_string()) pinned = true;
      if (!pinned) unpinned.push_back(name);
    }
    if (unpinned.empty()) return true;
    std::string names;
    for (const auto& n : unpinned) names += (names.empty() ? "" : ", ") + n;
    why_not = via + " offers ResourceFlavor" + (unpinned.size() == 1 ? " " : "s ") + names +
              " without a GPU-model node label, so Kueue's admission does not pin it either";
    return false;
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_product_affinity_missing() { return std::make_unique<GpuProductAffinityMissing>(); }

}  // namespace gpuguard::rules
