// limitrange-gpu-default-injection: what a GPU LimitRange really does to the pods of its namespace.

#include <algorithm>
#include <map>
#include <optional>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/quota/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// A container, reduced to its name, kind and the GPU resources it sets.
struct Ctr {
  std::string name;
  Container::Kind kind = Container::Kind::regular;
  // Each GPU resource named in its limits or requests, with what the scheduler counts as its
  // request (the request, else the limit the API copies into it; none when neither parses).
  std::vector<std::pair<std::string, std::optional<Quantity>>> gpus;
  bool claims = false;  // it uses a DRA claim (resources.claims)

  // Sorted by resource: log n.
  [[nodiscard]] const std::pair<std::string, std::optional<Quantity>>* find(std::string_view r) const {
    auto it = std::lower_bound(gpus.begin(), gpus.end(), r, [](const auto& g, std::string_view k) { return g.first < k; });
    return it != gpus.end() && it->first == r ? &*it : nullptr;
  }
};

// A pod template, reduced to its containers.
struct Template {
  ObjectRef ref;
  std::string pointer;  // the template's spec
  Pos pos;
  std::string role;     // the template's role in its object ("" for most)
  std::vector<Ctr> init;     // init containers and native sidecars, in order
  std::vector<Ctr> regular;  // containers
  std::vector<PodClaim> claims;  // the template's DRA claims, when a container uses one

  // What one pod asks for of `r` (engine::PodSum); the containers that do not set `r` count
  // `given`, if any (what the LimitRanger gives them).
  [[nodiscard]] Quantity pod_total(std::string_view r, const std::optional<Quantity>& given) const {
    PodSum sum;
    for (const auto* list : {&init, &regular})
      for (const Ctr& c : *list) {
        const auto* set = c.find(r);
        const std::optional<Quantity>& q = set ? set->second : given;
        if (q) sum.add(c.kind, *q);
      }
    return sum.total();
  }

  // "Deployment team-a/train" (+ role), made when a message needs it rather than kept per template.
  [[nodiscard]] std::string what() const {
    std::string out = ref.kind() + " " + ref.namespace_() + "/" + ref.name();
    if (!role.empty()) out += " (" + role + ")";
    return out;
  }
};

struct State final : RuleState {
  std::map<std::string, engine::Records<Template>, std::less<>> namespaces;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override {
    for (auto& [ns, templates] : static_cast<State&>(later).namespaces) engine::append(namespaces[ns], templates);
  }
};

enum class Effect : uint8_t { none, explicit_default, default_from_max, request_from_min };

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

class LimitRangeGpuDefaultInjection final : public Rule {
 public:
  LimitRangeGpuDefaultInjection() {
    info_.id = "limitrange-gpu-default-injection";
    info_.severity = Severity::warning;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A GPU LimitRange gives GPUs to containers that do not ask for them, or makes pods that omit the GPU invalid";
    info_.rationale =
        "The seed's LimitRange (9.5) sets `default: {nvidia.com/gpu: 1}` \"to keep users from forgetting\". "
        "The LimitRanger admission plugin applies a `type: Container` default to **every** container and "
        "init container of every new pod in the namespace that does not set the resource itself — native "
        "sidecars, service-mesh proxies, log shippers and init containers included (only ephemeral "
        "containers are spared). A pod with one training container asking for 1 GPU and an `istio-proxy` "
        "sidecar then holds 2 GPUs; a CPU-only web pod with a sidecar holds 2 GPUs it never uses.\n\n"
        "The API's own defaulting of the LimitRange (`SetDefaults_LimitRangeItem`) makes it worse than it "
        "reads:\n\n"
        "- `max` alone becomes the `default`: `max: {nvidia.com/gpu: 8}` gives **8** GPUs to every container "
        "that does not set one.\n"
        "- `min` alone becomes the `defaultRequest` with no default limit: every container that omits the "
        "GPU gets a GPU request without a limit, and pod validation rejects the pod (\"Limit must be set for "
        "non overcommitable resources\").\n\n"
        "With the pods of the namespace in the input, the rule names the workloads that would receive GPUs "
        "they do not ask for (templates with several containers, init containers or sidecars; for `max` and "
        "`min`, any container that omits the GPU). It also warns on the LimitRange itself, unless the "
        "inventory is complete and every pod template of the namespace has a single container (then a "
        "default of 1 does exactly what the seed means).\n\n"
        "A container that gets its GPU through Dynamic Resource Allocation (`resources.claims` naming a claim whose "
        "request is of a GPU DeviceClass, in the input or the cluster state) asks for no `nvidia.com/gpu`, so the "
        "LimitRanger gives it the default too: it does not look at `resources.claims` (`mergePodResourceRequirements` "
        "fills every resource missing from `limits` and `requests`). Such a pod then asks for a device-plugin GPU on top "
        "of its DRA GPU (held twice, or Pending where the nodes offer GPUs only through DRA); even a single-container "
        "pod is reported.";
    info_.remediation =
        "Prefer `default: {nvidia.com/gpu: 0}` (with `defaultRequest` 0): the cap (`max`) stays, and no "
        "container gets a GPU it did not ask for. If you keep a default of 1, set `nvidia.com/gpu: 0` "
        "explicitly in the sidecars and init containers of GPU pods (and in every container of CPU-only pods "
        "in that namespace). Never leave a GPU `max` or `min` without an explicit `default`.";
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{"", "LimitRange"});
    info_.reads = {KindRef{"", "LimitRange"}};
    info_.reads.insert(info_.reads.end(), dra_kinds().begin(), dra_kinds().end());
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.2 — LimitRanger `mergePodResourceRequirements` "
        "(`plugin/pkg/admission/limitranger/admission.go` @8f672ecf, an older stored version [V]) applies "
        "`default` to limits and `defaultRequest` to requests of every `spec.containers[]` and "
        "`spec.initContainers[]` entry that lacks the resource, native sidecars included; ephemeral "
        "containers are not touched. Checked again with search (code corpus): a newer copy of the plugin (the one "
        "with `exceedsAllowed`) keeps the same loop over `Containers` and `InitContainers`.",
        "facts/kubernetes-and-queues.md §1.2 — `SetDefaults_LimitRangeItem` (`pkg/apis/core/v1/defaults.go` "
        "@e34b0935): max → default, default → defaultRequest, min → defaultRequest; §1.3 — a GPU request "
        "without a limit is rejected (\"Limit must be set for non overcommitable resources\").",
        "Pod GPU totals follow the scheduler's sum (regular containers and sidecars added, init containers "
        "as a maximum), as `engine/podspec.h` `pod_requests` computes them.",
    };
    info_.example_bad = R"(apiVersion: v1
kind: LimitRange
metadata:
  name: team-a-defaults
  namespace: team-a
spec:
  limits:
    - type: Container
      max:
        nvidia.com/gpu: 8
      default:
        nvidia.com/gpu: 1
      defaultRequest:
        nvidia.com/gpu: 1
)";
    info_.example_good = R"(apiVersion: v1
kind: LimitRange
metadata:
  name: team-a-defaults
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
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is_kubernetes_object() || obj.cluster_scoped()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    for (const auto& t : pod_templates(obj)) {
      Template tpl;
      tpl.ref = ctx.ref();
      tpl.pointer = t.spec_pointer();
      tpl.pos = ctx.position_of(tpl.pointer);
      tpl.role = t.role;
      for (const auto& c : containers(t)) {
        Ctr small{std::string(c.name), c.kind, {}, false};
        if (const Node res = member(c.body, "resources"); res.is_object()) {
          if (const Node cl = member(res, "claims"); cl.is_array() && !cl.empty()) small.claims = true;
          // Limits, then requests, sorted by resource (stably: a resource's limit before its
          // request, which overrides it when it parses): n log n in the container's resources.
          for (const char* key : {"limits", "requests"})
            for (const auto entry : member(res, key).items()) {
              const std::string_view name = entry.key;
              if (!gpus.matches(name)) continue;
              std::optional<Quantity> q;
              if (auto parsed = Quantity::from_node(entry.value)) q = *parsed;
              small.gpus.emplace_back(name, q);
            }
          std::stable_sort(small.gpus.begin(), small.gpus.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
          size_t kept = 0;
          for (size_t k = 0; k < small.gpus.size(); ++k) {
            if (kept > 0 && small.gpus[kept - 1].first == small.gpus[k].first) {
              if (small.gpus[k].second) small.gpus[kept - 1].second = small.gpus[k].second;
              continue;
            }
            if (kept != k) small.gpus[kept] = std::move(small.gpus[k]);
            ++kept;
          }
          small.gpus.resize(kept);
        }
        if (small.claims && tpl.claims.empty()) tpl.claims = pod_claims(t.spec);
        (c.kind == Container::Kind::regular ? tpl.regular : tpl.init).push_back(std::move(small));
      }
      static_cast<State*>(ctx.state())->namespaces[ctx.namespace_of_object()].push_back(std::move(tpl));
    }
  }

  // Per namespace, each resource its LimitRanges default against each template's containers (a
  // binary search of each container's resources): as many steps as the findings it may make, one
  // per template and resource.
  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    auto& state = *static_cast<State*>(ctx.state());
    const auto& gpus = ctx.settings().gpu_resources;

    // Only namespaces where something is in focus need the work: a LimitRange (all of them in the
    // linter, the admitted one in the webhook), or a pod template seen in this evaluation. Views of
    // the state's and the inventory's strings, in order and each once.
    std::vector<std::string_view> wanted;
    wanted.reserve(state.namespaces.size() + 1);
    for (const auto& [ns, templates] : state.namespaces) wanted.emplace_back(ns);
    if (const auto* focused = ctx.focused()) {
      for (const Object* o : *focused)
        if (o->is("", "LimitRange")) wanted.emplace_back(inv.namespace_of(*o));
    } else {
      for (const Object* lr : inv.list("", "LimitRange")) wanted.emplace_back(inv.namespace_of(*lr));
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());

    // Namespace by namespace, what each of its LimitRanges does to each GPU resource, in listing
    // order (the order the LimitRanger applies them in): the webhook's request looks at a few
    // namespaces, not at every LimitRange of the cluster state.
    std::vector<std::pair<std::string_view, std::vector<Source>>> sources;  // by resource: a view of the kept GpuLimits
    std::vector<std::pair<std::string_view, Source>> found;                // the namespace's, as found
    for (const std::string_view ns : wanted) {
      sources.clear();
      for (const Object* lr : inv.list("", "LimitRange", ns)) {
        for (const auto& g : quota::container_gpu_limits(*lr, gpus)) {
          Effect effect = Effect::none;
          if (g.eff_default && !g.eff_default->is_zero() && !g.eff_default->is_negative())
            effect = g.default_from == "max" ? Effect::default_from_max : Effect::explicit_default;
          else if (!g.eff_default && g.eff_request && !g.eff_request->is_zero() && !g.eff_request->is_negative())
            effect = Effect::request_from_min;
          if (effect == Effect::none) continue;
          found.push_back({g.resource, Source{lr, &g, effect}});
        }
      }
      // By resource, each resource's LimitRanges in the order they apply: n log n in them.
      std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& [resource, source] : found) {
        if (sources.empty() || sources.back().first != resource) sources.emplace_back(resource, std::vector<Source>{});
        sources.back().second.push_back(source);
      }
      found.clear();
      for (const auto& [resource, list] : sources) report(ctx, ns, list, state);
    }
  }

 private:
  // What each LimitRange does to each GPU resource.
  struct Source {
    const Object* lr = nullptr;
    const quota::GpuLimits* g = nullptr;  // kept with the LimitRange (quota::container_gpu_limits)
    Effect effect = Effect::none;
  };

  // The findings of the LimitRanges of namespace `ns` that default one resource (`list`, in the
  // order they apply), on the templates they give it to and on themselves.
  static void report(FinishContext& ctx, std::string_view ns_view, const std::vector<Source>& list, State& state) {
    static const Records<Template> kNone;
    const Inventory& inv = ctx.inventory();
    const std::string ns(ns_view);
    const std::string& r = list.front().g->resource;
    auto it = state.namespaces.find(ns);
    const Records<Template>& templates = it == state.namespaces.end() ? kNone : it->second;
    // The LimitRanger applies every LimitRange in turn, and a later one finds the resource already
    // set: the first one that defaults it is the one each pod gets. Each template is reported
    // once, naming it; every LimitRange is reported on itself.
    const Source& first = list.front();
    const std::string lr_name = "LimitRange " + ns + "/" + first.lr->name +
                                (list.size() > 1 ? " (the first of " + std::to_string(list.size()) + " that default " + r + ")" : "");
    // The templates it gives the resource to: how many, and the first three by name.
    size_t affected = 0;
    std::vector<std::string> shown;
    for (const auto& tpl : templates) {
      std::vector<std::string> receivers;
      std::string dra_receiver;  // a receiver that gets its GPU through DRA already
      const size_t total = tpl.init.size() + tpl.regular.size();
      for (const auto* list : {&tpl.init, &tpl.regular})
        for (const Ctr& c : *list)
          if (!c.find(r)) {
            receivers.push_back(describe(Container{Node(), "", c.name, c.kind}));
            if (c.claims && dra_receiver.empty()) dra_receiver = receivers.back();
          }
      if (receivers.empty()) continue;
      std::string dra;
      if (!dra_receiver.empty()) {
        const DraGpus gpus = resolve_dra_gpus(inv, ns, tpl.claims, ctx.settings().gpu_device_classes);
        if (gpus.any()) {
          dra.reserve(300 + dra_receiver.size());
          dra.append("; ").append(dra_receiver).append(" already gets its GPU ").append(dra_summary(gpus));
          dra.append(", and the LimitRanger, which does not look at resources.claims, adds a device-plugin ").append(r);
          dra.append(" on top (held twice, or Pending where the nodes offer GPUs only through DRA)");
        }
      }
      if (first.effect == Effect::explicit_default && total < 2 && dra.empty()) continue;  // the default the seed means
      if (++affected <= 3) shown.push_back(tpl.what());
      report_template(ctx, tpl, receivers, total, first.effect, *first.g, lr_name, dra);
    }

    std::string here;
    if (affected > 0) here = "; in this namespace: " + join(shown) + (affected > 3 ? " and " + std::to_string(affected - 3) + " more" : "");
    for (const Source& src : list) {
      if (!ctx.in_focus(*src.lr)) continue;  // a finding out of focus is not wanted: skip its message
      const Effect effect = src.effect;
      const quota::GpuLimits& g = *src.g;
      if (effect == Effect::explicit_default && inv.complete() && !templates.empty() && affected == 0) continue;
      const std::string d = g.eff_default ? g.eff_default->to_string() : "";
      switch (effect) {
        case Effect::explicit_default:
          ctx.report(*src.lr, g.pointer("default"),
                     "default " + r + ": " + d + " is given by the LimitRanger to every container and init container in namespace " +
                         ns + " that does not set " + r + ", native sidecars included: a pod with one GPU container and a sidecar holds " +
                         (g.eff_default->to_int64() && *g.eff_default->to_int64() < INT64_MAX ? std::to_string(*g.eff_default->to_int64() + 1) : "more") +
                         " GPUs instead of 1; use default " + r + ": 0, or set " + r + ": 0 on every sidecar and init container" + here);
          break;
        case Effect::default_from_max:
          ctx.report(*src.lr, g.pointer("max"),
                     "max " + r + ": " + d + " has no default, so the API sets default and defaultRequest to " + d +
                         ": every container and init container in namespace " + ns + " that does not set " + r +
                         ", sidecars included, gets " + d + " GPUs; write default: {" + r + ": 0} explicitly" + here);
          break;
        case Effect::request_from_min:
          ctx.report(*src.lr, g.pointer("min"),
                     "min " + r + ": " + g.eff_request->to_string() + " without a default or max makes the API set defaultRequest " +
                         g.eff_request->to_string() + " and no default limit: every container in namespace " + ns + " that omits " + r +
                         " gets a GPU request without a limit, and the API server rejects its pod (\"Limit must be set for non "
                         "overcommitable resources\"); add default and defaultRequest (0, or the min)" + here);
          break;
        case Effect::none: break;
      }
    }
  }

  static void report_template(FinishContext& ctx, const Template& tpl,
                              const std::vector<std::string>& receivers, size_t total, Effect effect,
                              const quota::GpuLimits& g, const std::string& lr_name, const std::string& dra) {
    const std::string& r = g.resource;
    if (effect == Effect::request_from_min) {
      ctx.report(tpl.ref, tpl.pointer, tpl.pos,
                 lr_name + " (min " + r + ": " + g.eff_request->to_string() + ", no default) gives " + join(receivers) + " of " +
                     tpl.what() + " a " + r + " request of " + g.eff_request->to_string() +
                     " without a limit: the API server rejects every such pod (\"Limit must be set for non overcommitable resources\")" + dra);
      return;
    }
    // A container the LimitRanger gives the resource asks for the default request (defaultRequest,
    // which the API sets from default when it is not written).
    const Quantity before = tpl.pod_total(r, std::nullopt);
    const Quantity after = tpl.pod_total(r, g.eff_request ? g.eff_request : g.eff_default);
    const std::string d = g.eff_default->to_string();
    const std::string source = lr_name + " (" + (effect == Effect::default_from_max ? "max " + r + ": " + d + ", which the API makes the default" : "default " + r + ": " + d) + ")";
    std::string msg;
    if (receivers.size() == total && total == 1)
      msg = "the only container of " + tpl.what() + " gets " + r + ": " + d + " from " + source + ", though it does not ask for it";
    else if (receivers.size() == total)
      msg = "each of the " + std::to_string(total) + " containers of " + tpl.what() + " gets " + r + ": " + d + " from " + source +
            ", though none asks for it";
    else
      msg = source + " gives " + r + ": " + d + " to " + join(receivers) + " of " + tpl.what() + ", which do" +
            (receivers.size() == 1 ? "es" : "") + " not ask for it";
    msg += ": each pod holds " + after.to_string() + " " + r + (before.is_zero() ? " instead of none" : " instead of " + before.to_string()) +
           "; set " + r + ": 0 on " + (receivers.size() == 1 ? "that container" : "those containers") + ", or make the default 0";
    msg += dra;
    ctx.report(tpl.ref, tpl.pointer, tpl.pos, msg);
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_limitrange_gpu_default_injection() { return std::make_unique<LimitRangeGpuDefaultInjection>(); }

}  // namespace gpuguard::rules
