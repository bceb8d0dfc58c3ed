// volcano-queue-order-invalid: Volcano Queue quantities, weight and hierarchy that Volcano or the API refuses.

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include "engine/inventory.h"

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

// How Volcano's scheduler API counts a resource name (`api.NewResource`, pkg/scheduler/api/
// resource_info.go): cpu and memory are fields (an absent one is 0), `pods`, `ephemeral-storage`
// and the k8s scalar names (extended resources, `hugepages-*`, `*kubernetes.io/*`,
// `attachable-volumes-*`) are scalars (present or absent), `count/*` and other names are ignored.
enum class VcKind : uint8_t { cpu, memory, scalar, ignored };
VcKind volcano_kind(std::string_view name) {
  if (name == "cpu") return VcKind::cpu;
  if (name == "memory") return VcKind::memory;
  if (name == "pods" || name == "ephemeral-storage") return VcKind::scalar;
  if (name.starts_with("count/")) return VcKind::ignored;
  if (name.starts_with("hugepages-") || name.starts_with("attachable-volumes-") ||
      name.find("kubernetes.io/") != std::string_view::npos)
    return VcKind::scalar;
  if (name.find('/') != std::string_view::npos && !name.starts_with("requests.")) return VcKind::scalar;
  return VcKind::ignored;
}

using Amounts = std::map<std::string, Quantity, std::less<>>;

// The amounts of a ResourceList as Volcano counts them (ignored names, values that are not
// quantities and negative values, which the per-object check reports, are left out).
Amounts volcano_amounts(Node list) {
  Amounts out;
  if (!list.is_object()) return out;
  for (const auto [key, value] : list.items()) {
    if (volcano_kind(key) == VcKind::ignored) continue;
    auto q = Quantity::from_node(value);
    if (!q || q->is_negative()) continue;
    out[std::string(key)] = *q;
  }
  return out;
}

std::string amounts_text(const Amounts& a) {
  std::string out;
  for (const auto& [name, q] : a) out += (out.empty() ? "" : ", ") + name + ": " + q.to_string();
  return out.empty() ? "nothing" : out;
}

struct QueueInfo {
  const Object* obj = nullptr;
  std::string parent;  // "" or "root": the top of the tree
  Amounts cap, des, gua;
};

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
        "GPU amount, a weight outside 1–65535, or a hierarchy (`spec.parent`) Volcano's queue webhook refuses";
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
        "**Hierarchical queues** (`spec.parent`, Volcano v1.15): the same webhook refuses, when a "
        "queue is created or its parent or resources change (`validateHierarchicalQueue`, "
        "`validateHierarchicalQueueResources`):\n\n"
        "- a queue that is its own parent: `queue Q cannot use itself as parent`;\n"
        "- a parent that does not exist: `failed to get parent queue P of queue Q` (reported only "
        "with a complete inventory: `--complete`, or the webhook's cluster state);\n"
        "- a queue deeper than `maxQueueDepth` below `root` (the webhook's `--max-queue-depth`, "
        "default 5): `queue Q exceeds the maximum allowed depth of 5`; parents that form a loop "
        "always do;\n"
        "- a `capability` above that of the nearest ancestor that caps the same resource (an ancestor "
        "capability of 0 caps nothing): `queue Q capability[R]=… exceeds its ancestor's "
        "capability=…` (from the ancestor's side: `… is smaller than its descendants' max capability=…`);\n"
        "- children whose summed `guarantee.resource` or `deserved` exceed the parent's: `sum of "
        "children's guarantee (…) exceeds parent's guarantee limit (…)`, the same for deserved. "
        "Volcano compares with `LessPartly(…, Zero)`: cpu and memory the parent lacks count as 0, and "
        "a scalar resource (`nvidia.com/gpu`, `pods`, …) that a child lists and the parent's list "
        "lacks exceeds it whatever the amounts, so children with a `deserved` need a parent with a "
        "`deserved` covering every resource they name.\n\n"
        "Queues whose parent is `root` (or empty) are not compared with `root`, as in Volcano. "
        "Volcano's messages give amounts in its own units (other resources in thousandths, and in the "
        "sums cpu in thousandths of a core and memory in bytes); the findings give Kubernetes "
        "quantities. Volcano makes these checks only when the parent or the resources change. In a tree "
        "already out of order (made before Volcano v1.15, or while its webhook was off), gpuguard's "
        "webhook reports on an update only what the old object did not already have (`webhook.onUpdate: "
        "new-findings-only`, the default), so an update that leaves the tree as it was is allowed; with "
        "`onUpdate: all` any update of a queue involved is denied until the tree is put in order. A sum is reported on the last queue of the set in the "
        "input (the one whose creation Volcano would refuse when the file is applied in order), or "
        "on the queue under admission. Not checked: a parent that already runs pods "
        "(`status.allocated`).\n\n"
        "The older hierarchy annotations are checked as the webhook checks them on every create and "
        "update (`validateHierarchicalAttributes`): `volcano.sh/hierarchy` and "
        "`volcano.sh/hierarchy-weights` must have as many `/`-separated levels (`… must have the same "
        "length with …`), and each weight must be a number (`… is invalid number`) above 0 (`… must be "
        "larger than 0`). Its other check, a new queue's path that is a prefix of an existing queue's "
        "(`… is not allowed to be in the sub path of …`), depends on which was created first and is "
        "not reported.\n\n"
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
        "facts/modern-stack.md §3 — Volcano queue webhook refuses child capability above an ancestor's, "
        "children's summed guarantee/deserved above the parent's, a missing parent, depth > MaxQueueDepth. "
        "Read at volcano-sh/volcano v1.15.1 and @ed72c7c8 (v1.16.0-alpha.1+42; the same checks, only the "
        "child look-up changed to an index): `pkg/webhooks/admission/queues/validate/validate_queue.go` "
        "(`validateHierarchicalQueue`, `validateQueueDepth`, `validateHierarchicalQueueResources`, "
        "`validateChildAgainstAncestor`, `findNearestAncestorCapability` (value > 0), "
        "`findSubtreeMaxCapability`, `validateSiblingsSum`, `validateChildrenConstraints`; root skipped by "
        "`needsValidateHierarchicalQueue`); `cmd/webhook-manager/app/options/options.go` "
        "(`--max-queue-depth`, default 5); `pkg/scheduler/api/resource_info.go` (`NewResource`: cpu milli, "
        "memory bytes, scalars milli, `count/` skipped; `LessPartly` with `Zero`: a scalar in the sum and "
        "not in the parent is less). v1.14 had other hierarchy checks and messages; v1.13 and earlier none "
        "of these but the missing parent.",
    };
    info_.params = {
        ParamSpec{"maxQueueDepth", ParamType::integer, 5,
                  "the Volcano webhook's --max-queue-depth: queue levels allowed below root", 1, std::nullopt},
    };
    info_.checks = {KindRef{"scheduling.volcano.sh", "Queue"}};
    info_.reads = info_.checks;
    info_.needs_complete = true;
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
    check_hierarchy_annotations(obj, ctx);
    const Node spec = member(obj.root(), "spec");
    if (!spec.is_object()) return;
    check_weight(spec, ctx);
    if (auto parent = string_at(spec, "parent"); parent && *parent == obj.name && obj.name != queue::kVolcanoRootQueue)
      ctx.report("/spec/parent", "Queue " + obj.name + " names itself as its parent: Volcano's queue webhook refuses it "
                                 "(\"queue " + obj.name + " cannot use itself as parent\")");

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

  void finish(FinishContext& ctx) const override {
    // The webhook: nothing to say unless a Volcano Queue is under admission.
    if (const auto* focus = ctx.focused();
        focus && std::none_of(focus->begin(), focus->end(), [](const Object* o) { return queue::is_volcano_queue(*o); }))
      return;
    const Inventory& inv = ctx.inventory();
    std::map<std::string, QueueInfo, std::less<>> queues;
    for (const Object* o : inv.list(queue::kVolcanoSchedulingGroup, "Queue")) {
      const Node spec = member(o->root(), "spec");
      QueueInfo q;
      q.obj = o;
      if (auto p = string_at(spec, "parent"); p && *p != queue::kVolcanoRootQueue) q.parent = std::string(*p);
      q.cap = volcano_amounts(member(spec, "capability"));
      q.des = volcano_amounts(member(spec, "deserved"));
      q.gua = volcano_amounts(path(spec, {"guarantee", "resource"}));
      queues[o->name] = std::move(q);
    }
    if (queues.empty()) return;
    std::map<std::string, std::vector<const QueueInfo*>, std::less<>> children;
    for (const auto& [name, q] : queues)
      if (!q.parent.empty() && q.parent != name) children[q.parent].push_back(&q);
    const int64_t max_depth = ctx.params().integer("maxQueueDepth");
    const bool focused = ctx.focused() != nullptr;

    for (const auto& [name, q] : queues) {
      if (name == queue::kVolcanoRootQueue || q.parent.empty() || q.parent == name) continue;
      auto parent = queues.find(q.parent);
      if (parent == queues.end()) {
        if (inv.complete())
          ctx.report(*q.obj, "/spec/parent",
                     "Queue " + name + "'s parent " + q.parent + " does not exist: Volcano's queue webhook refuses the queue "
                     "(\"failed to get parent queue " + q.parent + " of queue " + name + "\"); create the parent first");
        continue;
      }
      check_depth(queues, q, max_depth, ctx);
      check_capability(queues, q, max_depth, focused, ctx);
    }
    for (const auto& [pname, kids] : children) {
      auto parent = queues.find(pname);
      if (parent == queues.end() || pname == queue::kVolcanoRootQueue) continue;
      check_sum(parent->second, kids, "guarantee", &QueueInfo::gua, "/spec/guarantee/resource", ctx);
      check_sum(parent->second, kids, "deserved", &QueueInfo::des, "/spec/deserved", ctx);
    }
  }

 private:
  using Queues = std::map<std::string, QueueInfo, std::less<>>;

  // validateQueueDepth: 1 for a child of root, one more per ancestor below root.
  static void check_depth(const Queues& queues, const QueueInfo& q, int64_t max_depth, FinishContext& ctx) {
    int64_t depth = 1;
    std::string parent = q.parent;
    std::set<std::string, std::less<>> seen{q.obj->name};
    bool loop = false;
    while (!parent.empty()) {
      if (++depth > max_depth) break;
      if (!seen.insert(parent).second) loop = true;
      auto it = queues.find(parent);
      if (it == queues.end()) return;  // a missing ancestor: reported on the queue below it
      parent = it->second.parent;
    }
    if (depth <= max_depth) return;
    ctx.report(*q.obj, "/spec/parent",
               "Queue " + q.obj->name + " is more than " + std::to_string(max_depth) + " levels below root" +
                   (loop ? " (its parents form a loop)" : "") + ": Volcano's queue webhook refuses it (\"queue " + q.obj->name +
                   " exceeds the maximum allowed depth of " + std::to_string(max_depth) + "\")");
  }

  // validateChildAgainstAncestor / validateChildrenConstraints: each capped resource against the
  // nearest ancestor that caps it above 0, looked for among at most max_depth ancestors (deeper
  // chains are refused for their depth), so a long chain in the input costs linear time per queue.
  static void check_capability(const Queues& queues, const QueueInfo& q, int64_t max_depth, bool focused, FinishContext& ctx) {
    for (const auto& [r, mine] : q.cap) {
      if (mine.is_zero()) continue;
      const QueueInfo* anc = nullptr;
      std::string parent = q.parent;
      std::set<std::string, std::less<>> seen{q.obj->name};
      for (int64_t steps = 0; !parent.empty() && steps < max_depth && seen.insert(parent).second; ++steps) {
        auto it = queues.find(parent);
        if (it == queues.end()) break;
        if (auto c = it->second.cap.find(r); c != it->second.cap.end() && !c->second.is_zero()) {
          anc = &it->second;
          break;
        }
        parent = it->second.parent;
      }
      if (!anc) continue;
      const Quantity& up = anc->cap.at(r);
      if (!(up < mine)) continue;
      if (focused && ctx.in_focus(*anc->obj) && !ctx.in_focus(*q.obj)) {
        ctx.report(*anc->obj, pointer_join("/spec/capability", r),
                   "Queue " + anc->obj->name + "'s capability[" + r + "]=" + up.to_string() + " is below that of its descendant " +
                       q.obj->name + " (" + mine.to_string() + "): Volcano's queue webhook refuses it (\"queue " + anc->obj->name +
                       " capability[" + r + "]=" + up.to_string() + " is smaller than its descendants' max capability=" +
                       mine.to_string() + "\")");
        continue;
      }
      ctx.report(*q.obj, pointer_join("/spec/capability", r),
                 "Queue " + q.obj->name + "'s capability[" + r + "]=" + mine.to_string() + " is above that of its ancestor " +
                     anc->obj->name + " (" + up.to_string() + "): a queue cannot hold more than its ancestors, and Volcano's "
                     "queue webhook refuses it (\"queue " + q.obj->name + " capability[" + r + "]=" + mine.to_string() +
                     " exceeds its ancestor's capability=" + up.to_string() + "\")");
    }
  }

  // validateSiblingsSum / validateChildrenConstraints: parent.LessPartly(sum of children, Zero).
  static void check_sum(const QueueInfo& parent, const std::vector<const QueueInfo*>& kids, const std::string& label,
                        Amounts QueueInfo::*field, const std::string& pointer, FinishContext& ctx) {
    Amounts total;
    for (const QueueInfo* k : kids)
      for (const auto& [r, v] : k->*field) total[r] = total[r] + v;
    const Amounts& limit = parent.*field;
    Amounts over;  // the resources where the sum exceeds the parent's limit
    for (const auto& [r, sum] : total) {
      auto l = limit.find(r);
      const VcKind kind = volcano_kind(r);
      if (l == limit.end()) {
        if (kind == VcKind::scalar || !sum.is_zero()) over[r] = sum;
      } else if (l->second < sum) {
        over[r] = sum;
      }
    }
    if (over.empty()) return;
    // The queues that give the exceeded resources, and the parent: the finding goes to the one under
    // admission, else to the last in the input.
    std::vector<const Object*> set{parent.obj};
    std::string from;
    for (const QueueInfo* k : kids) {
      bool gives = false;
      for (const auto& [r, _] : over) gives = gives || (k->*field).count(r) > 0;
      if (!gives) continue;
      set.push_back(k->obj);
      if (set.size() <= 6) from += (from.empty() ? "" : ", ") + k->obj->name;
    }
    if (set.size() > 6) from += " and " + std::to_string(set.size() - 6) + " more";
    std::string limit_text;  // the parent's amounts of the exceeded resources
    for (const auto& [r, _] : over) {
      auto l = limit.find(r);
      limit_text += (limit_text.empty() ? "" : ", ") + r + ": " + (l != limit.end() ? l->second.to_string() : std::string("none"));
    }
    const bool lacks = std::any_of(over.begin(), over.end(), [&](const auto& e) { return !limit.contains(e.first); });
    const Object* subject = ctx.subject(set);
    const std::string what =
        "Queue " + parent.obj->name + "'s children (" + from + ") together have " + label + " " + amounts_text(over) +
        ", more than its own " + label + " (" + limit_text + ")" +
        (lacks ? std::string(" — Volcano counts a resource the parent's ") + label + " does not list as exceeded" : std::string()) +
        ": Volcano's queue webhook refuses the child that goes over and a parent change that lowers it (\"sum of children's " +
        label + " (…) exceeds parent's " + label + " limit (…)\")";
    const Node present = pointer == "/spec/deserved" ? path(subject->root(), {"spec", "deserved"})
                                                     : path(subject->root(), {"spec", "guarantee", "resource"});
    const std::string ptr = !present.is_null() ? pointer : subject == parent.obj ? "/spec" : "/spec/parent";
    ctx.report(*subject, ptr, what);
  }

  // validateHierarchicalAttributes: the older hierarchy annotations, checked on every create and
  // update (the first error only, as Volcano returns it).
  static void check_hierarchy_annotations(const Object& obj, CheckContext& ctx) {
    constexpr std::string_view kPath = "volcano.sh/hierarchy";
    constexpr std::string_view kWeights = "volcano.sh/hierarchy-weights";
    const Node h = obj.annotation(kPath);
    const Node w = obj.annotation(kWeights);
    const std::string hs = h.is_string() ? std::string(h.str()) : std::string();
    const std::string ws = w.is_string() ? std::string(w.str()) : std::string();
    if (hs.empty() && ws.empty()) return;
    auto split = [](const std::string& text) {  // Go strings.Split(text, "/")
      std::vector<std::string> out;
      size_t from = 0;
      for (size_t at; (at = text.find('/', from)) != std::string::npos; from = at + 1) out.push_back(text.substr(from, at - from));
      out.push_back(text.substr(from));
      return out;
    };
    const auto paths = split(hs);
    const auto weights = split(ws);
    const std::string wptr = pointer_join("/metadata/annotations", kWeights);
    if (paths.size() != weights.size()) {
      ctx.report(hs.empty() ? wptr : pointer_join("/metadata/annotations", kPath),
                 "annotation " + std::string(kPath) + " \"" + hs + "\" has " + std::to_string(paths.size()) + " level(s), " +
                     std::string(kWeights) + " \"" + ws + "\" has " + std::to_string(weights.size()) +
                     ": Volcano's queue webhook refuses the queue (\"" + std::string(kPath) + " must have the same length with " +
                     std::string(kWeights) + "\")");
      return;
    }
    for (const auto& weight : weights) {
      // Go's ParseFloat; text it may accept that strtod reads differently (underscores) is left alone.
      if (weight.find('_') != std::string::npos) continue;
      const char* begin = weight.c_str();
      char* end = nullptr;
      const double v = weight.empty() || std::isspace(static_cast<unsigned char>(weight.front())) ? 0 : std::strtod(begin, &end);
      if (weight.empty() || std::isspace(static_cast<unsigned char>(weight.front())) || end != begin + weight.size()) {
        ctx.report(wptr, "weight \"" + weight + "\" of annotation " + std::string(kWeights) + " is not a number: Volcano's queue "
                         "webhook refuses the queue (\"" + weight + " in the " + ws + " is invalid number\")");
        return;
      }
      if (v <= 0) {
        ctx.report(wptr, "weight \"" + weight + "\" of annotation " + std::string(kWeights) + " is not above 0: Volcano's queue "
                         "webhook refuses the queue (\"" + weight + " in the " + ws + " must be larger than 0\")");
        return;
      }
    }
  }

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
