// mig-node-pool-mixed: nodes of one pool with different MIG configs, and nodes GFD marks MIG-INVALID.

#include <map>

#include "engine/inventory.h"
#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

constexpr std::string_view kMigConfigLabel = "nvidia.com/mig.config";
constexpr std::string_view kProductLabel = "nvidia.com/gpu.product";

class MigNodePoolMixed final : public Rule {
 public:
  MigNodePoolMixed() {
    info_.id = "mig-node-pool-mixed";
    info_.severity = Severity::warning;
    info_.category = "mig";
    info_.seed = "9.1";
    info_.summary = "Nodes of one pool carry different nvidia.com/mig.config labels, or GFD marks a node MIG-INVALID";
    info_.rationale =
        "MIG Manager partitions each node's GPUs by the config its `nvidia.com/mig.config` label names. "
        "Nodes of one pool (same instance type, or the pool label you configure) are interchangeable to "
        "the autoscaler and to node selectors, so they should carry the same layout; a pool where some "
        "nodes are `all-1g.10gb` and others `all-3g.40gb` offers a different resource on each node, and a "
        "pod selecting the pool lands where its slice does not exist (seed 9.1: one profile per node, "
        "chosen per workload class).\n\n"
        "A node whose `nvidia.com/gpu.product` ends in `-MIG-INVALID` is GPU Feature Discovery's own "
        "signal that the node mixes MIG profiles (or MIG-enabled and disabled GPUs, or a MIG GPU without "
        "instances) under the single strategy: it advertises `nvidia.com/gpu.count=0` and runs no GPU "
        "pod. That is a broken node, not a style question; the engine gives one severity per rule, so "
        "it is reported at this rule's severity (raise it with `severity: error` in `.gpuguard.yaml` if "
        "you want it to fail CI).";
    info_.remediation =
        "Label every node of a pool with the same `nvidia.com/mig.config` (or split the pool), e.g. via "
        "the node group's labels. For a `-MIG-INVALID` node, apply a single-profile config "
        "(`all-1g.10gb`, `all-3g.40gb`, …) or switch the GPU Operator to `mig.strategy: mixed`.";
    info_.facts = {
        "Seed 9.1 (design.md §1): all GPUs of a node use one profile; node labels must be accurate.",
        "facts/nvidia.md §2 — `nvidia.com/mig.config` selects the mig-parted config of a node (gpu-operator, mig-parted "
        "`pkg/mig/reconfigure`); under the single strategy GFD writes `gpu.product=<product>-MIG-INVALID` with count 0 "
        "(k8s-device-plugin `internal/lm/mig-strategy.go` @1b826ac).",
        "design.md §1 (seed 9.3) — `node.kubernetes.io/instance-type` names the instance type; the pool label is a parameter.",
    };
    info_.params = {ParamSpec{"poolLabel", ParamType::string, "node.kubernetes.io/instance-type",
                              "the node label whose value names a node pool", std::nullopt, std::nullopt}};
    info_.checks = {KindRef{"", "Node"}};
    info_.reads = {KindRef{"", "Node"}};
    info_.example_bad = R"(apiVersion: v1
kind: Node
metadata:
  name: gpu-a
  labels:
    node.kubernetes.io/instance-type: p5.48xlarge
    nvidia.com/mig.config: all-1g.10gb
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-b
  labels:
    node.kubernetes.io/instance-type: p5.48xlarge
    nvidia.com/mig.config: all-3g.40gb
)";
    info_.example_good = R"(apiVersion: v1
kind: Node
metadata:
  name: gpu-a
  labels:
    node.kubernetes.io/instance-type: p5.48xlarge
    nvidia.com/mig.config: all-1g.10gb
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-b
  labels:
    node.kubernetes.io/instance-type: p5.48xlarge
    nvidia.com/mig.config: all-1g.10gb
)";
  }

  const RuleInfo& info() const override { return info_; }

  void finish(FinishContext& ctx) const override {
    const std::string pool_label = ctx.params().string("poolLabel");
    const auto label_key = "/metadata/labels/";
    // pool → config → nodes
    std::map<std::string, std::map<std::string, std::vector<const Object*>>> pools;
    for (const Object* n : ctx.inventory().list("", "Node")) {
      const Node product = n->label(kProductLabel);
      if (product.is_string() && product.str().ends_with("-MIG-INVALID") && ctx.in_focus(*n))
        ctx.report(*n, label_key + pointer_escape(kProductLabel),
                   "GFD labels this node " + std::string(product.str()) +
                       ": under the single MIG strategy its GPUs mix MIG profiles (or MIG-enabled and disabled GPUs, or a MIG GPU has no "
                       "instances), so it advertises no nvidia.com/gpu and runs no GPU pod; apply a single-profile nvidia.com/mig.config");
      const Node pool = n->label(pool_label);
      const Node cfg = n->label(kMigConfigLabel);
      if (!pool.is_string() || !cfg.is_string()) continue;
      pools[std::string(pool.str())][std::string(cfg.str())].push_back(n);
    }
    for (const auto& [pool, configs] : pools) {
      if (configs.size() < 2) continue;
      std::vector<const Object*> all;
      std::string detail;
      for (const auto& [cfg, nodes] : configs) {
        std::string names;
        for (size_t i = 0; i < nodes.size() && i < 3; ++i) names += (names.empty() ? "" : ", ") + nodes[i]->name;
        if (nodes.size() > 3) names += ", …";
        detail += (detail.empty() ? "" : "; ") + std::to_string(nodes.size()) + " " + cfg + " (" + names + ")";
        all.insert(all.end(), nodes.begin(), nodes.end());
      }
      const Object* subject = ctx.subject(all);
      if (!subject || !ctx.in_focus(*subject)) continue;
      ctx.report(*subject, label_key + pointer_escape(kMigConfigLabel),
                 "nodes of pool " + pool_label + "=" + pool + " carry different nvidia.com/mig.config layouts: " + detail +
                     "; pods that select the pool find different MIG resources on each node (seed 9.1: one profile per node pool)");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_node_pool_mixed() { return std::make_unique<MigNodePoolMixed>(); }

}  // namespace gpuguard::rules
