// limitrange-exceeds-quota: a LimitRange allows or injects more GPUs than the namespace's quota.

#include "engine/inventory.h"
#include "rules/all.h"
#include "rules/quota/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class LimitRangeExceedsQuota final : public Rule {
 public:
  LimitRangeExceedsQuota() {
    info_.id = "limitrange-exceeds-quota";
    info_.severity = Severity::warning;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A LimitRange's GPU max or default is above the namespace's GPU quota";
    info_.rationale =
        "The quota caps what the whole namespace may request; the LimitRange caps one container (or pod). "
        "A per-container `max` above the namespace quota promises something the quota never allows: a "
        "container asking for that many is rejected by quota (\"exceeded quota\"), so the `max` is not the "
        "bound users run into and misleads whoever reads it. A GPU `default` above the quota is worse: the "
        "LimitRanger injects it into every container that does not set the GPU, and each such pod is then "
        "rejected by quota.\n\n"
        "The quota compared is the smallest `requests.<gpu>` amount among the namespace's ResourceQuotas "
        "(the one a pod hits first).";
    info_.remediation = "Keep LimitRange GPU `max` and `default` at or below the namespace's `requests.<gpu>` quota.";
    info_.checks = {KindRef{"", "LimitRange"}};
    info_.reads = {KindRef{"", "LimitRange"}, KindRef{"", "ResourceQuota"}};
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.1 — quota counts GPUs as `requests.<name>` "
        "(kubernetes `pkg/quota/v1/evaluator/core/pods.go` @05e7cb29).",
        "facts/kubernetes-and-queues.md §1.2 — LimitRanger injects `default` into every container and init "
        "container that lacks the resource; `SetDefaults_LimitRangeItem` turns a lone `max` into the default.",
    };
    info_.example_bad = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 4
---
apiVersion: v1
kind: LimitRange
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  limits:
    - type: Container
      max:
        nvidia.com/gpu: 8
      default:
        nvidia.com/gpu: 0
)";
    info_.example_good = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 32
---
apiVersion: v1
kind: LimitRange
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  limits:
    - type: Container
      max:
        nvidia.com/gpu: 8
      default:
        nvidia.com/gpu: 0
)";
  }

  const RuleInfo& info() const override { return info_; }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    const auto& gpus = ctx.settings().gpu_resources;
    // Findings are about LimitRanges: the one admitted in the webhook, every one in the linter.
    std::vector<const Object*> limitranges;
    if (const auto* focused = ctx.focused()) {
      for (const Object* o : *focused)
        if (o->is("", "LimitRange")) limitranges.push_back(o);
    } else {
      limitranges = inv.list("", "LimitRange");
    }
    for (const Object* lr : limitranges) {
      const std::string& ns = inv.namespace_of(*lr);
      // The smallest GPU quota of the namespace, per resource.
      std::map<std::string, std::pair<Quantity, std::string>> cap;
      for (const Object* q : inv.list("", "ResourceQuota", ns))
        for (const auto& [name, amount] : quota::tracked_gpus(*q, gpus)) {
          auto it = cap.find(name);
          if (it == cap.end() || amount < it->second.first) cap[name] = {amount, q->name};
        }
      if (cap.empty()) continue;
      const Node limits = path(lr->root(), {"spec", "limits"});
      if (!limits.is_array()) continue;
      size_t index = 0;
      for (const Node item : limits) {
        const size_t i = index++;
        const auto type = string_at(item, "type");
        if (type != std::optional<std::string_view>("Container") && type != std::optional<std::string_view>("Pod")) continue;
        const std::string per = *type == "Container" ? "container" : "pod";
        for (const char* field : {"max", "default"}) {
          if (per == "pod" && std::string_view(field) == "default") continue;  // forbidden there (limitrange-gpu-default-invalid)
          for (const auto [name_view, v] : member(item, field).items()) {
            auto c = cap.find(std::string(name_view));
            if (c == cap.end()) continue;
            const std::string& name = c->first;
            auto q = Quantity::from_node(v);
            if (!q || *q <= c->second.first) continue;
            const std::string quota = "the namespace's quota requests." + name + ": " + c->second.first.to_string() +
                                      " (ResourceQuota " + c->second.second + ")";
            const std::string ptr = pointer_join(pointer_join(pointer_join("/spec/limits", i), field), name);
            if (std::string_view(field) == "max")
              ctx.report(*lr, ptr,
                         "max " + name + ": " + q->to_string() + " per " + per + " is above " + quota +
                             ": quota rejects any pod asking for more than " + c->second.first.to_string() +
                             ", so this max is never the bound users hit; lower it to at most " + c->second.first.to_string());
            else
              ctx.report(*lr, ptr,
                         "default " + name + ": " + q->to_string() + " is above " + quota +
                             ": every container that does not set " + name + " gets " + q->to_string() +
                             " GPUs, and quota rejects each such pod; lower the default");
          }
        }
      }
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_limitrange_exceeds_quota() { return std::make_unique<LimitRangeExceedsQuota>(); }

}  // namespace gpuguard::rules
