// gpu-topology-large-request: a pod asking for many GPUs with no topology-aware placement hint.

#include <algorithm>

#include "engine/dra.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/topology/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using namespace topology;

// A template without GPUs in its resources but with claims and no placement hint: decided in finish.
struct Claiming {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string scheduler;
  std::vector<PodClaim> claims;
};
struct State final : RuleState {
  Records<Claiming> claiming;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { append(claiming, static_cast<State&>(later).claiming); }
};

class GpuTopologyLargeRequest final : public Rule {
 public:
  GpuTopologyLargeRequest() {
    info_.id = "gpu-topology-large-request";
    info_.severity = Severity::info;
    info_.category = "topology";
    info_.seed = "9.3";
    info_.summary = "A single pod asks for many GPUs without a NUMA- or topology-aware placement hint";
    info_.rationale =
        "A pod with 8 GPUs fills a whole node. How fast its GPUs talk to each other, to the NICs and to "
        "the CPUs depends on where they sit: on the same NVLink/NVSwitch domain, PCIe switch and NUMA "
        "node, or across sockets. The default scheduler sees only GPU counts; the kubelet's Topology "
        "Manager can align devices and CPUs only on nodes configured for it, and the scheduler does "
        "not know which nodes can. Seed 9.3: use NUMA- and topology-aware scheduling (scheduler-plugins) "
        "for large jobs.\n\n"
        "The rule accepts as a hint: a `schedulerName` in `topologySchedulers` (a scheduler profile "
        "with scheduler-plugins' NodeResourceTopologyMatch, e.g. the upstream sample "
        "`topo-aware-scheduler`), any Kueue topology annotation on the pod template "
        "(`kueue.x-k8s.io/podset-*-topology`), or a `nodeSelector` / required node affinity on a label "
        "in `topologyNodeLabels` (a node pool whose kubelets run a `single-numa-node` or `restricted` "
        "Topology Manager policy). It is advice (info): many single-model nodes are fine without it.\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.rationale.append(
        " Its GPUs are the devices of its GPU requests: ExactCount's `count` (default 1), summed; a request with "
        "`allocationMode: All` or among several `firstAvailable` alternatives is not counted (how many devices it "
        "gets is unknown). A claim constraint `matchAttribute: resource.kubernetes.io/pcieRoot` on the requests "
        "(NVIDIA's driver publishes that attribute, `cmd/gpu-kubelet-plugin/deviceinfo.go` @22407113) keeps them "
        "under one PCIe root and counts as a hint.");
    info_.remediation =
        "Schedule large GPU pods with a NodeResourceTopologyMatch profile (scheduler-plugins, with the "
        "NodeResourceTopology exporter on the nodes), or with Kueue topology-aware scheduling, or "
        "select a node pool whose kubelets align devices (Topology Manager `single-numa-node` / "
        "`restricted`) and list its label in `topologyNodeLabels`.";
    info_.checks = pod_template_kinds();
    info_.reads = dra_kinds();
    info_.facts = {
        "Seed 9.3 (design.md §1): NUMA / rack-aware scheduling via scheduler-plugins.",
        "facts/kubernetes-and-queues.md §4 — NodeResourceTopologyMatch (Filter, Score) and its scoring "
        "strategies; the first three need the kubelet `single-numa-node` Topology Manager policy "
        "(scheduler-plugins README); the sample profile is named `topo-aware-scheduler` "
        "(`manifests/noderesourcetopology/scheduler-config.yaml`, in the corpus).",
        "facts/kubernetes-and-queues.md §3 — Kueue TAS pod-template annotations "
        "`kueue.x-k8s.io/podset-{required,preferred,unconstrained,slice-required}-topology`.",
    };
    info_.params = {
        ParamSpec{"minGpus", ParamType::integer, 8, "GPUs per pod from which the rule asks for a topology hint", 1, std::nullopt},
        ParamSpec{"topologySchedulers", ParamType::string_list, json::array({"topo-aware-scheduler"}),
                  "scheduler names whose profile runs NodeResourceTopologyMatch", std::nullopt, std::nullopt},
        ParamSpec{"topologyNodeLabels", ParamType::string_list, json::array(),
                  "node labels of pools whose kubelets run a topology-aligning Topology Manager policy", std::nullopt, std::nullopt},
    };
    info_.example_bad = R"(apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: nvcr.io/nvidia/pytorch:24.06-py3
      resources:
        limits:
          nvidia.com/gpu: 8
)";
    info_.example_good = R"(apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  schedulerName: topo-aware-scheduler
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

  void finish(FinishContext& ctx) const override {
    const int64_t min = ctx.params().integer("minGpus");
    for (const auto& c : static_cast<State*>(ctx.state())->claiming) {
      const DraGpus gpus = resolve_dra_gpus(ctx.inventory(), c.ref.namespace_(), c.claims, ctx.settings().gpu_device_classes);
      int64_t total = 0;
      bool aligned = true;
      for (const auto& r : gpus.requests) {
        if (r.all || r.alternative) continue;
        total = sat_add(total, r.count);
        aligned = aligned && r.pcie_aligned;
      }
      if (total < min || aligned) continue;
      ctx.report(c.ref, c.pointer, c.pos,
                 "one pod asks for " + std::to_string(total) + " GPUs " + dra_summary(gpus) + " (≥ " + std::to_string(min) +
                     ") with no topology-aware placement: scheduler " + c.scheduler + " counts devices but not their NVLink, "
                     "PCIe and NUMA locality; add a claim constraint matchAttribute: resource.kubernetes.io/pcieRoot, use a "
                     "NodeResourceTopologyMatch scheduler, Kueue topology-aware scheduling, or a node pool with a "
                     "topology-aligning Topology Manager policy (topologyNodeLabels)");
    }
  }

  void check(const Object& obj, CheckContext& ctx) const override {
    const int64_t min = ctx.params().integer("minGpus");
    const auto& schedulers = ctx.params().strings("topologySchedulers");
    const auto& labels = ctx.params().strings("topologyNodeLabels");
    auto is_label = [&](std::string_view k) { return std::find(labels.begin(), labels.end(), k) != labels.end(); };
    for (const auto& t : pod_templates(obj)) {
      const auto& gpus = pod_gpus(t, ctx.settings().gpu_resources);
      Quantity total;
      for (const auto& [name, q] : gpus) total = total + q;
      // GPUs through DRA, perhaps (no GPU in its resources): counted in finish.
      std::vector<PodClaim> claims;
      if (gpus.empty() && !requests_gpu(t, ctx.settings().gpu_resources)) claims = pod_claims(t.spec);
      if (claims.empty() && total < Quantity::from_int(min)) continue;
      const Node spec = t.spec;
      if (auto s = string_at(spec, "schedulerName"); s && std::find(schedulers.begin(), schedulers.end(), *s) != schedulers.end())
        continue;
      bool hint = false;
      if (const Node ann = member(t.metadata(), "annotations"))
        for (std::string_view k : {kKueueRequiredTopology, kKueuePreferredTopology, kKueueSliceRequiredTopology, kKueueUnconstrainedTopology})
          if (member(ann, k)) hint = true;
      if (const Node ns = member(spec, "nodeSelector"); ns.is_object())
        for (const auto [k, v] : ns.items())
          if (is_label(k)) hint = true;
      if (const Node terms = required_node_terms(spec)) {
        bool every = true;
        for (const Node term : terms) {
          bool has = false;
          for (const Node e : match_expressions(term))
            if (auto k = string_at(e, "key"); k && is_label(*k)) has = true;
          if (!has) every = false;
        }
        if (every) hint = true;
      }
      if (hint) continue;
      if (!claims.empty()) {
        const std::string pointer = t.spec_pointer();
        static_cast<State*>(ctx.state())->claiming.push_back(
            Claiming{ctx.ref(), pointer, ctx.position_of(pointer),
                     std::string(string_at(spec, "schedulerName").value_or("default-scheduler")), std::move(claims)});
        continue;
      }
      std::string what;
      for (const auto& [name, q] : gpus) what += (what.empty() ? "" : ", ") + name + ": " + q.to_string();
      std::string sched(string_at(spec, "schedulerName").value_or("default-scheduler"));
      ctx.report(t.spec_pointer(),
                 "one pod asks for " + what + " (" + total.to_string() + " ≥ " + std::to_string(min) + " GPUs) with no topology-aware "
                 "placement: scheduler " + sched + " counts GPUs but not their NVLink, PCIe and NUMA locality; use a "
                 "NodeResourceTopologyMatch scheduler, Kueue topology-aware scheduling, or a node pool with a "
                 "topology-aligning Topology Manager policy (topologyNodeLabels)");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_topology_large_request() { return std::make_unique<GpuTopologyLargeRequest>(); }

}  // namespace gpuguard::rules
