// priority-class-global-default: more than one PriorityClass is marked globalDefault.

#include "engine/inventory.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class PriorityClassGlobalDefault final : public Rule {
 public:
  PriorityClassGlobalDefault() {
    info_.id = "priority-class-global-default";
    info_.severity = Severity::error;
    info_.category = "priority";
    info_.seed = "9.5";
    info_.summary = "More than one PriorityClass is marked `globalDefault: true`";
    info_.rationale =
        "The global default class gives its value to every pod that names no class. Only one may exist: "
        "API validation does not check it, but the `Priority` admission plugin of kube-apiserver rejects a "
        "second one (\"PriorityClass high is already marked as default. Only one default can exist\"). "
        "Applying a set of manifests with two defaults therefore fails halfway. If two defaults exist anyway "
        "(created in a race), the one with the lowest value wins, which is rarely what was meant.\n\n"
        "The rule counts the classes of the input (or the webhook's cluster state), and reports every "
        "default after the first.";
    info_.remediation = "Keep `globalDefault: true` on exactly one class, usually the ordinary training or batch class.";
    info_.checks = {KindRef{"scheduling.k8s.io", "PriorityClass"}};
    info_.reads = {KindRef{"scheduling.k8s.io", "PriorityClass"}};
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.4 — the `Priority` admission plugin "
        "(kubernetes `plugin/pkg/admission/priority/admission.go` @acd88a09, an older stored version) enforces "
        "one globalDefault: \"PriorityClass %v is already marked as default. Only one default can exist\"; "
        "after a race the lowest value among the defaults wins (`pkg/apis/scheduling/types.go` comment).",
    };
    info_.example_bad = R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training
value: 10000
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: batch
value: 100
globalDefault: true
)";
    info_.example_good = R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training
value: 10000
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: batch
value: 100
)";
  }

  const RuleInfo& info() const override { return info_; }

  void finish(FinishContext& ctx) const override {
    std::vector<const Object*> defaults;
    for (const Object* pc : ctx.inventory().list("scheduling.k8s.io", "PriorityClass"))
      if (bool_at(pc->root(), "globalDefault") == std::optional<bool>(true)) defaults.push_back(pc);
    if (defaults.size() < 2) return;
    const Object* first = defaults.front();
    for (size_t i = 1; i < defaults.size(); ++i)
      ctx.report(*defaults[i], "/globalDefault",
                 "PriorityClass " + defaults[i]->name + " is marked globalDefault, but " + first->name +
                     " already is: the Priority admission plugin rejects it (\"PriorityClass " + defaults[i]->name +
                     " is already marked as default. Only one default can exist\"); keep globalDefault on one class");
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_priority_class_global_default() { return std::make_unique<PriorityClassGlobalDefault>(); }

}  // namespace gpuguard::rules
