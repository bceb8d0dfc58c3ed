// priority-class-value-invalid: a PriorityClass the API server rejects for its value or its name.

#include "rules/all.h"
#include "rules/priority/names.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class PriorityClassValueInvalid final : public Rule {
 public:
  PriorityClassValueInvalid() {
    info_.id = "priority-class-value-invalid";
    info_.severity = Severity::error;
    info_.category = "priority";
    info_.seed = "9.5";
    info_.summary = "A PriorityClass has a user value above 1000000000, or a reserved `system-` name";
    info_.rationale =
        "Values above 1,000,000,000 are reserved for the system classes; the API server rejects a user "
        "class above it (\"maximum allowed value of a user defined priority is 1000000000\"). Names starting "
        "with `system-` are reserved too: a `system-` class is accepted only if it is exactly one of the "
        "built-ins (`system-node-critical` = 2000001000, `system-cluster-critical` = 2000000000, neither a "
        "global default), otherwise \"priority class names with 'system-' prefix are reserved for system use "
        "only\". Negative values are allowed.\n\n"
        "A GPU ladder that tries to outrank everything with `2000000000` therefore never gets created; "
        "the top of the user range is 1,000,000,000.";
    info_.remediation =
        "Keep user classes at or below 1000000000 and name them without the `system-` prefix. To protect "
        "cluster-critical pods, use the built-in classes as they are.";
    info_.checks = {KindRef{"scheduling.k8s.io", "PriorityClass"}};
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.4 — `HighestUserDefinablePriority = 1000000000`, "
        "`SystemPriorityClassPrefix = \"system-\"` (kubernetes `pkg/apis/scheduling/types.go` @056a0155); the "
        "built-ins and their values (`pkg/apis/scheduling/v1/helpers.go` @16913111); "
        "`ValidatePriorityClass` (`pkg/apis/scheduling/validation/validation.go` @00447344) with both messages.",
    };
    info_.example_bad = R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training-critical
value: 2000000000
)";
    info_.example_good = R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: training-critical
value: 1000000000
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is("scheduling.k8s.io", "PriorityClass")) return;
    int64_t value = 0;
    bool has_value = false;
    if (const Node v = member(obj.root(), "value"))
      if (auto x = as_int(v)) {
        value = *x;
        has_value = true;
      }
    if (obj.name.starts_with(priority::kSystemPriorityClassPrefix)) {
      const auto builtin = priority::builtin_priority_value(obj.name);
      const bool global = bool_at(obj.root(), "globalDefault") == std::optional<bool>(true);
      if (!builtin) {
        ctx.report("/metadata/name",
                   "\"" + obj.name + "\": priority class names with 'system-' prefix are reserved for system use only, and this is "
                   "not one of the built-ins (system-node-critical, system-cluster-critical): the API server rejects it; rename it");
      } else if (const bool same_value = has_value && value == *builtin; !same_value || global) {
        ctx.report(!same_value ? "/value" : "/globalDefault",
                   obj.name + " is a built-in class (value " + std::to_string(*builtin) +
                       ", not a global default); the API server rejects any other definition of it (\"priority class names "
                       "with 'system-' prefix are reserved for system use only\")");
      }
      return;
    }
    if (has_value && value > priority::kHighestUserDefinablePriority)
      ctx.report("/value", "value " + std::to_string(value) +
                               " is above the highest user priority: the API server rejects the PriorityClass (\"maximum "
                               "allowed value of a user defined priority is 1000000000\"); use at most 1000000000");
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_priority_class_value_invalid() { return std::make_unique<PriorityClassValueInvalid>(); }

}  // namespace gpuguard::rules
