// limitrange-gpu-default-missing: a namespace caps GPUs by quota but no LimitRange caps them per container.

#include <set>

#include "engine/inventory.h"
#include "rules/all.h"
#include "rules/quota/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class LimitRangeGpuDefaultMissing final : public Rule {
 public:
  LimitRangeGpuDefaultMissing() {
    info_.id = "limitrange-gpu-default-missing";
    info_.severity = Severity::warning;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A namespace with a GPU quota has no `type: Container` LimitRange that sets a GPU max and default";
    info_.rationale =
        "The seed's second layer (9.5) is a LimitRange beside the quota: the quota caps the team, the "
        "LimitRange caps one container (`max`) and fills in what users forget (`default`). Without a GPU "
        "`max`, a single pod may take the team's whole GPU quota.\n\n"
        "The API server stores a `type: Container` item with its defaults filled in "
        "(`SetDefaults_LimitRangeItem`): `max` alone becomes the `default` too. So any item with a GPU `max` "
        "has a default after admission, and satisfies this rule; an item with only `default`, `defaultRequest` "
        "or `min` does not cap anything. What the default then does to pods is the subject of "
        "`limitrange-gpu-default-injection`: a non-zero GPU default is given to every container and init "
        "container that does not set the GPU, sidecars included. The safe default in namespaces whose pods "
        "have sidecars or init containers is therefore `0`.\n\n"
        "The rule reports something missing, so it speaks only where the inventory is complete.";
    info_.remediation =
        "Add a LimitRange to the namespace:\n\n"
        "```yaml\nspec:\n  limits:\n    - type: Container\n      max: {nvidia.com/gpu: 8}\n"
        "      default: {nvidia.com/gpu: 0}          # 1 only where every pod has a single container\n"
        "      defaultRequest: {nvidia.com/gpu: 0}   # must equal default for GPUs\n```";
    info_.checks = {KindRef{"", "ResourceQuota"}};
    info_.reads = {KindRef{"", "ResourceQuota"}, KindRef{"", "LimitRange"}};
    info_.needs_complete = true;
    info_.facts = {
        "Seed 9.5 (design.md §1): \"LimitRange (GPU default, max)\" as the second of the four layers.",
        "facts/kubernetes-and-queues.md §1.2 — `SetDefaults_LimitRangeItem` in kubernetes "
        "`pkg/apis/core/v1/defaults.go` @e34b0935 (Container type only): `max` without `default` becomes "
        "`default`; `default` without `defaultRequest` becomes `defaultRequest`; `min` without "
        "`defaultRequest` becomes `defaultRequest`. LimitRanger applies defaults to every container and "
        "init container (`mergePodResourceRequirements`).",
    };
    info_.example_bad = R"(# gpuguard lint --complete: a quota and no LimitRange
apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 32
)";
    info_.example_good = R"(# gpuguard lint --complete: a quota and a per-container cap
apiVersion: v1
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
      defaultRequest:
        nvidia.com/gpu: 0
)";
  }

  const RuleInfo& info() const override { return info_; }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    // Namespace → GPU resource → the quotas that cap it.
    std::map<std::string, std::map<std::string, std::vector<const Object*>>> capped;
    const auto quotas = inv.list("", "ResourceQuota");
    // Findings are about quotas: only namespaces with a quota in focus (all of them in the linter;
    // the admitted quota's in the webhook) need the work.
    std::set<std::string, std::less<>> wanted;
    if (const auto* focused = ctx.focused()) {
      for (const Object* o : *focused)
        if (o->is("", "ResourceQuota")) wanted.insert(inv.namespace_of(*o));
    } else {
      for (const Object* q : quotas) wanted.insert(inv.namespace_of(*q));
    }
    for (const Object* q : quotas)
      if (wanted.contains(inv.namespace_of(*q)))
        for (const auto& [name, amount] : quota::tracked_gpus(*q, gpus)) capped[inv.namespace_of(*q)][name].push_back(q);
    for (const auto& [ns, resources] : capped) {
      std::set<std::string> with_max;
      std::map<std::string, std::string> partial;  // resource → "LimitRange x sets only default"
      for (const Object* lr : inv.list("", "LimitRange", ns))
        for (const auto& g : quota::container_gpu_limits(*lr, gpus)) {
          if (g.max) with_max.insert(g.resource);
          else if (!partial.count(g.resource)) {
            std::string set;
            if (g.def) set = "default";
            else if (g.def_request) set = "defaultRequest";
            else set = "min";
            partial[g.resource] = "LimitRange " + lr->name + " sets a " + g.resource + " " + set + " but no max";
          }
        }
      for (const auto& [resource, quotas] : resources) {
        if (with_max.count(resource)) continue;
        const Object* q = ctx.subject(quotas);
        const auto cap = quota::tracked_gpus(*q, gpus).at(resource);
        std::string msg = "namespace " + ns + " caps requests." + resource + " at " + quota::amount(cap) +
                          " but no type: Container LimitRange sets a max and default for " + resource +
                          ": a single pod may take the whole quota; add a LimitRange with max: {" + resource +
                          ": <per-container cap>} and default: {" + resource +
                          ": 0} (1 only where every pod has a single container, see limitrange-gpu-default-injection)";
        if (auto it = partial.find(resource); it != partial.end()) msg += " (" + it->second + ")";
        ctx.report(*q, pointer_join("/spec/hard", "requests." + resource), msg);
      }
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_limitrange_gpu_default_missing() { return std::make_unique<LimitRangeGpuDefaultMissing>(); }

}  // namespace gpuguard::rules
