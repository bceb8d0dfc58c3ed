// volcano-queue-order-invalid: Volcano Queue quantities and weight that Volcano or the API refuses.

#include <array>

#include "engine/quantity.h"
#include "rules/all.h"
#include "rules/queue/refs.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// k8s `IsIntegerResourceName`: the integer-counted standard resources and every extended resource
// (a name with a `/` that is neither native, `*kubernetes.io/*`, nor a `requests.` quota key).
bool integer_resource(std::string_view name) {
  static constexpr std::array<std::string_view, 9> kStandard = {
      "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
      "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"};
  for (auto s : kStandard)
    if (name == s) return true;
  return name.find('/') != std::string_view::npos && name.find("kubernetes.io/") == std::string_view::npos &&
         !name.starts_with("requests.");
}

struct Section {
  std::string label;    // "capability", "deserved", "guarantee"
  std::string pointer;  // "/spec/capability"
  Node map;
};

class VolcanoQueueOrderInvalid final : public Rule {
 public:
  VolcanoQueueOrderInvalid() {
    info_.id = "volcano-queue-order-invalid";
    info_.severity = Severity::error;
    info_.category = "queue";
    info_.seed = "9.5";
    info_.summary =
        "A Volcano Queue breaks guarantee ≤ deserved ≤ capability, has a negative or fractional "
        "GPU amount, or a weight outside 1–65535";
    info_.rationale =
        "A Volcano Queue's resources come in three levels: `guarantee` is reserved for the queue, "
        "`deserved` is its fair share (reclaimable above it), `capability` its hard ceiling. Volcano's "
        "queue admission webhook (`validatequeue.volcano.sh`, `validateResourceQuantityOfQueue`) "
        "rejects a queue whose levels are out of order:\n\n"
        "- every guaranteed resource needs a deserved amount at least as large: `deserved[R]=D must "
        "be >= guarantee[R]=G`, and `deserved[R] must be >= guarantee[R]=G` when `deserved` lacks R;\n"
        "- where a resource has both, `deserved[R]=D must be <= capability[R]=C` (a resource without "
        "a capability is unbounded and not compared);\n"
        "- every amount passes Kubernetes' `ValidateResourceQuantityValue`: not negative, and a whole "
        "number for extended resources such as `nvidia.com/gpu` (`must be an integer`).\n\n"
        "The weight is checked by the Queue CRD's schema (`minimum: 1`, `maximum: 65535`, an "
        "integer); a weight of 0 is not an error, because Volcano's mutating webhook replaces 0 "
        "with 1 before the schema is checked.\n\n"
        "Volcano's optional ValidatingAdmissionPolicy (`queues-validating.yaml`) is stricter (it also "
        "wants guarantee ≤ capability and every deserved resource in the capability); this rule "
        "reports only what the webhook and the CRD reject.";
    info_.remediation =
        "Keep `guarantee ≤ deserved ≤ capability` for every resource, give every guaranteed resource "
        "a deserved amount, use whole GPUs, and a weight between 1 and 65535.";
    info_.facts = {
        "facts/kubernetes-and-queues.md §2 — Queue webhook `pkg/webhooks/admission/queues/validate/"
        "validate_queue.go` (volcano-sh/volcano @ed72c7c8; re-read with `search`: "
        "`validateResourceQuantityOfQueue` checks every amount with k8s `ValidateResourceQuantityValue`, "
        "guarantee ≤ deserved including a missing deserved, deserved ≤ capability where both exist; the "
        "old `validateWeightOfQueue` is gone from the current webhook).",
        "facts/kubernetes-and-queues.md §2 — weight: CRD `scheduling.volcano.sh_queues.yaml` int32, "
        "default 1, minimum 1, maximum 65535; `mutate_queue.go` sets weight 1 when it is 0.",
        "facts/kubernetes-and-queues.md §1.3 — `ValidateResourceQuantityValue`: non-negative, and an "
        "integer for integer resource names (extended resources).",
    };
    info_.checks = {KindRef{"scheduling.volcano.sh", "Queue"}};
    info_.example_bad = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: training
spec:
  weight: 4
  guarantee:
    resource:
      nvidia.com/gpu: 16
  deserved:
    nvidia.com/gpu: 8
  capability:
    nvidia.com/gpu: 32
)";
    info_.example_good = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: training
spec:
  weight: 4
  guarantee:
    resource:
      nvidia.com/gpu: 8
  deserved:
    nvidia.com/gpu: 16
  capability:
    nvidia.com/gpu: 32
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!queue::is_volcano_queue(obj)) return;
    const Node spec = member(obj.root(), "spec");
    if (!spec.is_object()) return;
    check_weight(spec, ctx);

    Section cap{"capability", "/spec/capability", member(spec, "capability")};
    Section des{"deserved", "/spec/deserved", member(spec, "deserved")};
    Section gua{"guarantee", "/spec/guarantee/resource", path(spec, {"guarantee", "resource"})};
    std::map<std::string, Quantity, std::less<>> capq, desq, guaq;
    for (auto [s, out] : {std::pair{&cap, &capq}, std::pair{&des, &desq}, std::pair{&gua, &guaq}}) {
      if (!s->map.is_object()) continue;
      for (const auto [key, value] : s->map.items()) {
        const std::string name(key);
        auto q = Quantity::from_node(value);
        if (!q) continue;  // not a quantity: the CRD schema's business (schema-invalid)
        const std::string ptr = pointer_join(s->pointer, name);
        const std::string what = s->label + "[" + name + "]=" + q->to_string();
        if (q->is_negative())
          ctx.report(ptr, what + " is negative: Volcano's queue webhook rejects it (ValidateResourceQuantityValue: "
                                 "\"must be greater than or equal to 0\")");
        else if (!q->is_integer() && integer_resource(name))
          ctx.report(ptr, what + " is not a whole number: " + name + " is counted in whole devices, and Volcano's "
                                 "queue webhook rejects it (ValidateResourceQuantityValue: \"must be an integer\")");
        (*out)[name] = *q;
      }
    }
    // guarantee ≤ deserved, with deserved required for every guaranteed resource.
    for (const auto& [name, g] : guaq) {
      auto d = desq.find(name);
      if (d == desq.end()) {
        if (des.map.is_object() && member(des.map, name)) continue;  // unparsable: schema's business
        ctx.report(pointer_join(gua.pointer, name),
                   "guarantee[" + name + "]=" + g.to_string() + " has no deserved amount: Volcano's queue webhook rejects "
                   "the queue (validateResourceQuantityOfQueue: \"deserved[" + name + "] must be >= guarantee[" + name +
                   "]=" + g.to_string() + "\"); add deserved." + name + " of at least " + g.to_string());
      } else if (d->second < g) {
        ctx.report(pointer_join(des.pointer, name),
                   "deserved[" + name + "]=" + d->second.to_string() + " is less than guarantee[" + name + "]=" + g.to_string() +
                       ": Volcano's queue webhook rejects the queue (validateResourceQuantityOfQueue: \"deserved[" + name +
                       "]=" + d->second.to_string() + " must be >= guarantee[" + name + "]=" + g.to_string() + "\")");
      }
    }
    // deserved ≤ capability where both are set.
    for (const auto& [name, d] : desq) {
      auto c = capq.find(name);
      if (c == capq.end() || d <= c->second) continue;
      ctx.report(pointer_join(des.pointer, name),
                 "deserved[" + name + "]=" + d.to_string() + " is more than capability[" + name + "]=" + c->second.to_string() +
                     ": Volcano's queue webhook rejects the queue (validateResourceQuantityOfQueue: \"deserved[" + name + "]=" +
                     d.to_string() + " must be <= capability[" + name + "]=" + c->second.to_string() + "\")");
    }
  }

 private:
  static void check_weight(Node spec, CheckContext& ctx) {
    const Node w = member(spec, "weight");
    if (w.is_null()) return;  // absent (the CRD default: 1), or null
    auto n = w.is_number() ? as_int(w) : std::nullopt;
    if (!n) {
      ctx.report("/spec/weight", "weight " + brief(w) + " is not an integer: the Queue CRD's schema rejects it "
                                 "(type integer, int32, 1–65535)");
      return;
    }
    if (*n < 0)
      ctx.report("/spec/weight", "weight " + std::to_string(*n) + " is below 1: the Queue CRD's schema rejects it "
                                 "(minimum: 1); only 0 is replaced with 1 by Volcano's mutating webhook");
    else if (*n > 65535)
      ctx.report("/spec/weight", "weight " + std::to_string(*n) + " is above 65535: the Queue CRD's schema rejects it "
                                 "(maximum: 65535)");
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_volcano_queue_order_invalid() { return std::make_unique<VolcanoQueueOrderInvalid>(); }

}  // namespace gpuguard::rules
