// limitrange-gpu-default-invalid: GPU amounts of a LimitRange that the API server rejects, or that
// make every pod they reach invalid.

#include <set>

#include "rules/all.h"
#include "rules/quota/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class LimitRangeGpuDefaultInvalid final : public Rule {
 public:
  LimitRangeGpuDefaultInvalid() {
    info_.id = "limitrange-gpu-default-invalid";
    info_.severity = Severity::error;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A LimitRange's GPU min, max, default and defaultRequest contradict each other, or are not whole numbers";
    info_.rationale =
        "`ValidateLimitRange` checks each resource of an item: `min` ≤ `defaultRequest` ≤ `default` ≤ `max` "
        "(and `min` ≤ `max`), and, for resources that cannot be overcommitted such as GPUs, that `default` "
        "equals `defaultRequest` when both are set (\"default value 1 must equal to defaultRequest value 0 in "
        "nvidia.com/gpu\"). A `type: Pod` item may not have a `default` or `defaultRequest` at all. The API "
        "server rejects a LimitRange that breaks any of these.\n\n"
        "It checks the item **after** its own defaulting (`SetDefaults_LimitRangeItem`): a `max` without "
        "`default` becomes the default, so `max: 4` with `defaultRequest: 1` is rejected because the default "
        "4 differs from the defaultRequest 1, though neither line looks wrong.\n\n"
        "The API does not check that LimitRange amounts are whole numbers, but pods must use whole GPUs "
        "(\"must be an integer\"): a fractional GPU `default` or `defaultRequest` (or a fractional `max` that "
        "becomes the default) is injected into pods, and every pod it reaches is rejected.";
    info_.remediation =
        "Use whole numbers; give `default` and `defaultRequest` the same value, at most `max` and at least "
        "`min`; write an explicit `default` when you set `max` (usually `0`, see "
        "`limitrange-gpu-default-injection`); keep defaults out of `type: Pod` items.";
    info_.checks = {KindRef{"", "LimitRange"}};
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.2 — `ValidateLimitRange` in kubernetes "
        "`pkg/apis/core/validation/validation.go` @000f2605: the ordering checks with their messages, "
        "`default value %s must equal to defaultRequest value %s in %s` for resources where "
        "`IsOvercommitAllowed` is false, and `may not be specified when `type` is 'Pod'`. I read the same "
        "function again (search, code corpus): it never integer-checks LimitRange amounts.",
        "facts/kubernetes-and-queues.md §1.2 — `SetDefaults_LimitRangeItem` (`pkg/apis/core/v1/defaults.go` "
        "@e34b0935) runs before validation; §1.3 — pods need integer GPU amounts.",
    };
    info_.example_bad = R"(apiVersion: v1
kind: LimitRange
metadata:
  name: gpu-defaults
  namespace: team-a
spec:
  limits:
    - type: Container
      default:
        nvidia.com/gpu: 1
      defaultRequest:
        nvidia.com/gpu: 0
)";
    info_.example_good = R"(apiVersion: v1
kind: LimitRange
metadata:
  name: gpu-defaults
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

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is("", "LimitRange")) return;
    const Node limits = path(obj.root(), {"spec", "limits"});
    if (!limits.is_array()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    size_t next = 0;
    for (const Node item : limits) {
      const size_t i = next++;
      const auto type = string_at(item, "type");
      if (type != std::optional<std::string_view>("Container") && type != std::optional<std::string_view>("Pod")) continue;
      const bool container = *type == "Container";
      const std::string item_ptr = pointer_join("/spec/limits", i);
      std::set<std::string> names;
      for (const char* f : {"max", "min", "default", "defaultRequest"})
        if (const Node l = member(item, f); l.is_object())
          for (const auto [name, v] : l.items())
            if (gpus.matches(name)) names.emplace(name);
      for (const auto& name : names) check_resource(item, item_ptr, container, name, ctx);
    }
  }

 private:
  struct Value {
    std::optional<Quantity> q;
    std::string field;  // where it is written ("max" for a default the API derives from max)
    bool derived = false;
  };

  static void check_resource(Node item, const std::string& item_ptr, bool container, const std::string& name,
                             CheckContext& ctx) {
    auto ptr = [&](std::string_view field) { return pointer_join(pointer_join(item_ptr, field), name); };
    auto raw = [&](std::string_view field) -> Value {
      const Node l = member(item, field);
      const Node v = l.is_object() ? member(l, name) : Node();
      if (!v) return {};
      auto q = Quantity::from_node(v);
      return {q ? std::optional<Quantity>(*q) : std::nullopt, std::string(field), false};
    };
    Value max = raw("max"), min = raw("min"), def = raw("default"), req = raw("defaultRequest");

    if (!container) {
      for (Value* v : {&def, &req})
        if (!v->field.empty())
          ctx.report(ptr(v->field), v->field + " " + name + " may not be specified when `type` is 'Pod': the API server "
                                    "rejects the LimitRange (defaults apply to containers; use a type: Container item)");
    }

    // Whole numbers: the API does not check, pods do.
    for (Value* v : {&max, &min, &def, &req}) {
      if (!v->q || v->q->is_integer() || v->q->is_negative()) continue;
      if (!container && (v == &def || v == &req)) continue;  // forbidden there anyway
      std::string what = v->field + " " + name + ": " + v->q->to_string() + " is not a whole number";
      if (!container || v == &min)
        ctx.report(ptr(v->field), what + "; GPUs are only used whole, so this bound never means what it says");
      else if (v == &max && def.field.empty())
        ctx.report(ptr(v->field), what + ": without a default the API makes it the default, injects " + v->q->to_string() +
                                      " GPUs into every container that does not set " + name +
                                      ", and the API server rejects each such pod (\"must be an integer\")");
      else if (v == &max)
        ctx.report(ptr(v->field), what + "; GPUs are only used whole, so this bound never means what it says");
      else
        ctx.report(ptr(v->field), what + ": it is injected into every container that does not set " + name +
                                      ", and the API server rejects each such pod (\"must be an integer\")");
    }

    // The item as the API stores and validates it.
    if (container) {
      if (def.field.empty() && max.q) def = {max.q, "max", true};
      if (req.field.empty() && def.q) req = {def.q, def.field, true};
      else if (req.field.empty() && min.q) req = {min.q, "min", true};
    }
    auto said = [&](const Value& v, std::string_view as) {
      return std::string(as) + " " + v.q->to_string() +
             (v.derived ? " (which the API sets from " + v.field + ")" : "");
    };
    const std::string rejects = ": the API server rejects the LimitRange";
    if (min.q && max.q && *min.q > *max.q)
      ctx.report(ptr("min"), "min " + name + " " + min.q->to_string() + " is greater than max " + max.q->to_string() + rejects +
                                 " (\"min value " + min.q->to_string() + " is greater than max value " + max.q->to_string() + "\")");
    if (req.q && min.q && *min.q > *req.q && !req.derived)
      ctx.report(ptr(req.field), said(req, "defaultRequest") + " is below min " + min.q->to_string() + rejects);
    if (req.q && max.q && *req.q > *max.q && !req.derived)
      ctx.report(ptr(req.field), said(req, "defaultRequest") + " is greater than max " + max.q->to_string() + rejects);
    if (req.q && def.q && *req.q > *def.q && !(req.derived && def.derived))
      ctx.report(ptr(req.derived ? req.field : "defaultRequest"),
                 said(req, "defaultRequest") + " is greater than " + said(def, "default") + rejects +
                     " (\"default request value " + req.q->to_string() + " is greater than default limit value " +
                     def.q->to_string() + "\")");
    if (def.q && min.q && *min.q > *def.q && !(def.derived && def.field == "max"))
      ctx.report(ptr(def.field), said(def, "default") + " is below min " + min.q->to_string() + rejects);
    if (def.q && max.q && *def.q > *max.q && !def.derived)
      ctx.report(ptr("default"), "default " + name + " " + def.q->to_string() + " is greater than max " + max.q->to_string() + rejects +
                                     " (\"default value " + def.q->to_string() + " is greater than max value " + max.q->to_string() + "\")");
    if (def.q && req.q && *def.q != *req.q && *req.q <= *def.q && !(def.derived && req.derived)) {
      // GPUs cannot be overcommitted: the two must be equal.
      const std::string at = req.derived ? def.field : "defaultRequest";
      ctx.report(ptr(at), said(def, "default") + " differs from " + said(req, "defaultRequest") + " for " + name +
                              ", which cannot be overcommitted" + rejects + " (\"default value " + def.q->to_string() +
                              " must equal to defaultRequest value " + req.q->to_string() + " in " + name + "\")");
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_limitrange_gpu_default_invalid() { return std::make_unique<LimitRangeGpuDefaultInvalid>(); }

}  // namespace gpuguard::rules
