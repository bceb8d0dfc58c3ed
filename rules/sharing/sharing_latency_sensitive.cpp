// sharing-latency-sensitive: online inference placed on a time-sliced or MPS-shared GPU.

#include <algorithm>
#include <cctype>
#include <map>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "engine/positions.h"
#include "rules/all.h"
#include "rules/labels/node_selection.h"
#include "rules/schedulers.h"
#include "rules/sharing/device_plugin_config.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct Pending {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string config_key;  // the nvidia.com/device-plugin.config value it selects
  std::string who;         // "workload-type=serving"
  std::string entry;       // DRA: the pod's claim entry (config_key is its resourceClaimName)
};

struct State final : RuleState {
  engine::Records<Pending> pending;  // selects a device-plugin config by node label
  engine::Records<Pending> unpinned;  // requests a whole GPU and selects no device-plugin config
  engine::Records<Pending> dra;       // names a ResourceClaim (resourceClaimName), resolved in finish
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override {
    auto& l = static_cast<State&>(later);
    engine::append(pending, l.pending);
    engine::append(unpinned, l.unpinned);
    engine::append(dra, l.dra);
  }
};

class SharingLatencySensitive final : public Rule {
 public:
  SharingLatencySensitive() {
    info_.id = "sharing-latency-sensitive";
    info_.severity = Severity::warning;
    info_.category = "sharing";
    info_.seed = "9.2";
    info_.summary = "Online inference runs on a time-sliced, MPS-shared or KAI-fractioned GPU instead of a MIG instance or a whole GPU";
    info_.rationale =
        "Time-slicing and MPS suit development, tests and small batch jobs (seed 9.2). Replicas of a "
        "time-sliced GPU share its memory without isolation and take turns on it, so a serving pod's "
        "latency depends on what its neighbours run, and one neighbour's out-of-memory or fault can take "
        "it down; DCGM cannot even attribute metrics to containers while time-slicing is on. MPS "
        "partitions memory and SMs but keeps one shared fault domain. For online inference the seed "
        "recommends MIG: hardware-isolated memory, cache and SMs with predictable latency.\n\n"
        "A workload counts as online inference when its pod template (or the workload) carries the "
        "label `label` (default `workload-type`) with one of `values` (default `inference`, `serving`, "
        "`online`). It is on a shared GPU when it requests a renamed shared resource (`nvidia.com/gpu.shared`, "
        "any GPU resource ending in `.shared`), or requires nodes labelled `nvidia.com/gpu.sharing-strategy` "
        "`time-slicing`/`mps`, `nvidia.com/gpu.replicas` above 1, a `nvidia.com/gpu.product` (or "
        "`nvidia.com/mig-*.product`) ending in `-SHARED`, or `nvidia.com/device-plugin.config=<key>` where a "
        "device-plugin config ConfigMap in the input defines `<key>` with time-slicing or MPS. A pod that "
        "requests `nvidia.com/gpu` and selects no `nvidia.com/device-plugin.config` is also reported when a "
        "ClusterPolicy's default device-plugin config (`spec.devicePlugin.config.{name, default}`, applied to every "
        "node without that label) time-slices or uses MPS, and the ConfigMap is in the input.\n\n"
        "KAI Scheduler's GPU sharing counts too: a pod template whose pods go to KAI (`schedulerName`, parameter "
        "`kaiScheduler`) with the annotation `gpu-fraction` or `gpu-memory` gets part of a GPU that other pods, "
        "of any namespace, share. KAI's own docs: \"KAI Scheduler does not enforce memory allocation limit or "
        "performs memory isolation between processes\" (NVIDIA/KAI-Scheduler `docs/gpu-sharing/README.md` "
        "@72de64fc, v0.13.0); the pods take turns on the GPU's compute like time-sliced replicas (with the "
        "`mps` annotation, through an MPS server: one fault domain). Annotations on a pod of another scheduler "
        "do nothing and are not read.\n\n"
        "**Dynamic Resource Allocation.** A pod template that names a ResourceClaim (`resourceClaimName`, in the input "
        "or the cluster state) shares that claim's devices with every pod and replica that names it (k8s.io/api "
        "`core/v1` PodResourceClaim; at most 256 consumers). When the claim's config (or its DeviceClass's) gives NVIDIA's "
        "DRA driver a `GpuConfig`/`MigDeviceConfig` with `sharing.strategy: TimeSlicing` or `MPS`, those pods time-slice "
        "or MPS-share one GPU: reported. A claim made from a template (`resourceClaimTemplateName`) belongs to one pod, "
        "so its GPU is shared with no other pod, whatever its sharing setting: no finding (NVIDIA/k8s-dra-driver-gpu "
        "`api/nvidia.com/resource/v1beta1/sharing.go`, `demo/specs/quickstart/v1/gpu-test3.yaml`, `gpu-test5.yaml` "
        "@22407113, v0.4.0-rc.1+14).";
    info_.remediation =
        "Run serving on MIG instances (`nvidia.com/mig-<profile>` under the mixed strategy, or a MIG node "
        "pool under the single strategy) or on whole GPUs, and keep shared nodes for notebooks, CI and "
        "batch work. If the workload is not latency-sensitive, change its label.";
    info_.facts = {
        "Seed 9.2 (design.md §1): MPS / time-slicing only for dev, test and small-batch; online inference prefers MIG.",
        "facts/nvidia.md §3 — labels `nvidia.com/gpu.sharing-strategy` (none|time-slicing|mps), "
        "`nvidia.com/gpu.replicas`, the `-SHARED` product suffix, `renameByDefault` → `<resource>.shared`, "
        "`nvidia.com/device-plugin.config=<key>` selecting a node's config; time-slicing has no memory or fault "
        "isolation and DCGM cannot attribute metrics per container with it [KDP `internal/lm/resource.go`, CND].",
        "facts/modern-stack.md §2 — KAI Scheduler's `gpu-fraction`/`gpu-memory` pod annotations; \"KAI Scheduler does "
        "not enforce memory allocation limit or performs memory isolation\" (NVIDIA/KAI-Scheduler "
        "`docs/gpu-sharing/README.md`, `pkg/common/resources/gpu_sharing.go` RequestsGPUFraction @72de64fc).",
    };
    info_.params = {
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
        ParamSpec{"label", ParamType::string, "workload-type", "pod label that classifies the workload", std::nullopt, std::nullopt},
        ParamSpec{"values", ParamType::string_list, json::array({"inference", "serving", "online"}),
                  "values of that label that mean online (latency-sensitive) inference", std::nullopt, std::nullopt},
    };
    info_.checks = pod_template_kinds();
    info_.reads = {KindRef{"", "ConfigMap"}, KindRef{"nvidia.com", "ClusterPolicy"}};
    info_.reads.insert(info_.reads.end(), dra_kinds().begin(), dra_kinds().end());
    info_.example_bad = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat-api
spec:
  replicas: 2
  selector:
    matchLabels: {app: chat-api}
  template:
    metadata:
      labels: {app: chat-api, workload-type: serving}
    spec:
      containers:
        - name: server
          image: vllm/vllm-openai:v0.6.0
          resources:
            limits:
              nvidia.com/gpu.shared: 1
)";
    info_.example_good = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat-api
spec:
  replicas: 2
  selector:
    matchLabels: {app: chat-api}
  template:
    metadata:
      labels: {app: chat-api, workload-type: serving}
    spec:
      containers:
        - name: server
          image: vllm/vllm-openai:v0.6.0
          resources:
            limits:
              nvidia.com/mig-3g.40gb: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    const std::string label = ctx.params().string("label");
    const auto& values = ctx.params().strings("values");
    for (const auto& t : pod_templates(obj)) {
      std::string value;
      for (const Node md : {t.metadata(), obj.metadata()}) {
        if (auto v = string_at(member(md, "labels"), label)) {
          value = *v;
          break;
        }
      }
      if (value.empty() || std::find(values.begin(), values.end(), value) == values.end()) continue;
      const std::string who = "online inference (" + label + "=" + value + ")";
      const std::string tail = ": replicas of a shared GPU have no memory or fault isolation and take turns, so latency "
                               "depends on the neighbours; seed 9.2 puts serving on MIG instances or whole GPUs";
      bool reported = false;
      if (const std::string kai = ctx.params().string(sched::kKaiSchedulerParam); sched::kai_template(obj, t, kai)) {
        if (const Node share = sched::kai_gpu_share(t); share) {
          const std::string key(share.key());
          ctx.report(pointer_join(t.pointer + "/metadata/annotations", key),
                     who + " asks KAI Scheduler for a share of a GPU (" + key + ": " + brief(share) +
                         "): KAI neither limits nor isolates GPU memory between the pods sharing the GPU, and they take "
                         "turns on it, so latency depends on the neighbours (any namespace's); seed 9.2 puts serving on MIG "
                         "instances or whole GPUs");
          continue;
        }
      }
      for (const auto& c : containers(t)) {
        for (const char* section : {"limits", "requests"}) {
          const Node res = path(c.body, {"resources", section});
          if (!res.is_object()) continue;
          // The first shared resource in key order (the document lists them as written).
          std::string_view name;
          for (const NodeEntry e : res.items())
            if (e.key.ends_with(".shared") && ctx.settings().gpu_resources.matches(e.key) && (name.empty() || e.key < name))
              name = e.key;
          if (name.empty()) continue;
          ctx.report(pointer_join(c.pointer + "/resources/" + section, name),
                     who + " requests " + std::string(name) + ", a time-sliced or MPS replica of a GPU" + tail);
          reported = true;
          break;
        }
        if (reported) break;
      }
      if (reported) continue;
      // GPUs through DRA: a ResourceClaim the pod names (resourceClaimName) is one set of devices for
      // every pod that names it; whether it is a time-sliced or MPS GPU is known in finish.
      if (const Node rcs = member(t.spec, "resourceClaims"); rcs.is_array()) {
        size_t i = 0;
        for (Node rc : rcs) {
          const size_t index = i++;
          const auto claim = string_at(rc, "resourceClaimName");
          if (!claim || claim->empty() || member(rc, "resourceClaimTemplateName")) continue;
          const std::string pointer = t.spec_pointer() + "/resourceClaims/" + std::to_string(index);
          static_cast<State*>(ctx.state())->dra.push_back(
              {ctx.ref(), pointer, ctx.position_of(pointer), std::string(*claim), who, std::string(string_at(rc, "name").value_or(""))});
        }
      }
      bool selects_config = false;
      for (const auto& r : labels::label_requirements(t)) {
        // Selecting the config, the sharing labels or a product (which GFD suffixes -SHARED on shared
        // nodes) pins the pod to a pool the other checks judge.
        if (r.positive() && (r.key == "nvidia.com/device-plugin.config" || r.key == "nvidia.com/gpu.sharing-strategy" ||
                             r.key == "nvidia.com/gpu.replicas" || r.key == "nvidia.com/gpu.product"))
          selects_config = true;
        if (!r.positive()) continue;
        std::string why;
        if (r.key == "nvidia.com/gpu.sharing-strategy" && (r.value == "time-slicing" || r.value == "mps"))
          why = "requires nodes with nvidia.com/gpu.sharing-strategy=" + std::string(r.value);
        else if (r.key == "nvidia.com/gpu.replicas" && !r.value.empty() &&
                 std::all_of(r.value.begin(), r.value.end(), [](unsigned char ch) { return std::isdigit(ch); }) &&
                 r.value.size() < 10 && std::stoll(std::string(r.value)) > 1)
          why = "requires nodes with nvidia.com/gpu.replicas=" + std::string(r.value) + " (each GPU shared " + std::string(r.value) + " ways)";
        else if ((r.key == "nvidia.com/gpu.product" || (r.key.starts_with("nvidia.com/mig-") && r.key.ends_with(".product"))) &&
                 r.value.ends_with("-SHARED"))
          why = "requires " + std::string(r.key) + "=" + std::string(r.value) +
                ", a product GFD labels -SHARED only where the GPU is time-sliced or shared with MPS";
        else if (r.key == "nvidia.com/device-plugin.config" && !r.value.empty()) {
          auto* st = static_cast<State*>(ctx.state());
          const std::string pointer = r.pointer();
          st->pending.push_back({ctx.ref(), pointer, ctx.position_of(pointer), std::string(r.value), who, ""});
          continue;
        }
        if (why.empty()) continue;
        ctx.report(r.pointer(), who + " " + why + tail);
        reported = true;
        break;
      }
      if (reported || selects_config) continue;
      // A whole-GPU request with no config selected: the ClusterPolicy's default config applies.
      for (const auto& c : containers(t)) {
        if (!path(c.body, {"resources", "limits", "nvidia.com/gpu"})) continue;
        const std::string ptr = pointer_join(c.pointer + "/resources/limits", "nvidia.com/gpu");
        static_cast<State*>(ctx.state())->unpinned.push_back({ctx.ref(), ptr, ctx.position_of(ptr), "", who, ""});
        break;
      }
    }
  }

  void finish(FinishContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    for (const auto& p : st->dra) {
      const DraGpus gpus = resolve_dra_gpus(ctx.inventory(), p.ref.namespace_(), {PodClaim{p.entry, p.config_key, ""}},
                                            ctx.settings().gpu_device_classes);
      for (const auto& r : gpus.requests) {
        if (!r.shared || (r.sharing != DraSharing::time_slicing && r.sharing != DraSharing::mps)) continue;
        std::string msg;
        msg.reserve(400 + p.who.size() + r.source.size() + r.request.size() + r.device_class.size());
        msg.append(p.who).append(" uses ").append(r.source).append(" (request ").append(r.request).append(", DeviceClass ");
        msg.append(r.device_class).append("), whose GPU NVIDIA's DRA driver shares with ");
        msg.append(r.sharing == DraSharing::mps ? "MPS" : "time-slicing");
        msg.append(", and every pod that names the claim gets the same device: they have no memory or fault isolation and "
                   "take turns, so latency depends on the neighbours; seed 9.2 puts serving on MIG instances or whole GPUs (a "
                   "resourceClaimTemplateName gives each pod its own)");
        ctx.report(p.ref, p.pointer, p.pos, std::move(msg));
        break;
      }
    }
    if (st->pending.empty() && st->unpinned.empty()) return;
    // key → (strategy, ConfigMap) from every device-plugin config ConfigMap known.
    std::map<std::string, std::pair<std::string, std::string>, std::less<>> shared;
    for (const Object* cm : ctx.inventory().list("", "ConfigMap"))
      for (const auto& cfg : sharing::device_plugin_configs(*cm)) {
        const std::string s = sharing::sharing_strategy(cfg.config);
        if (s != "none") shared.emplace(cfg.key, std::make_pair(s, cm->display_name()));
      }
    for (const auto& p : st->pending) {
      auto it = shared.find(p.config_key);
      if (it == shared.end()) continue;
      ctx.report(p.ref, p.pointer, p.pos,
                 p.who + " requires nodes with nvidia.com/device-plugin.config=" + p.config_key + ", whose config in " +
                     it->second.second + " shares each GPU with " + it->second.first +
                     ": replicas of a shared GPU have no memory or fault isolation and take turns, so latency depends on the "
                     "neighbours; seed 9.2 puts serving on MIG instances or whole GPUs");
    }
    if (st->unpinned.empty()) return;
    // The GPU Operator's default config (ClusterPolicy spec.devicePlugin.config.{name, default})
    // applies to every node without a nvidia.com/device-plugin.config label.
    for (const Object* cp : ctx.inventory().list("nvidia.com", "ClusterPolicy")) {
      const Node cfg = path(cp->root(), {"spec", "devicePlugin", "config"});
      if (!cfg) continue;
      auto name = string_at(cfg, "name");
      auto def = string_at(cfg, "default");
      if (!name || !def || name->empty() || def->empty()) continue;
      std::string strategy;
      std::string where;
      for (const Object* cm : ctx.inventory().list("", "ConfigMap")) {
        if (cm->name != *name) continue;
        for (const auto& c : sharing::device_plugin_configs(*cm))
          if (c.key == *def && sharing::sharing_strategy(c.config) != "none") {
            strategy = sharing::sharing_strategy(c.config);
            where = cm->display_name();
          }
      }
      if (strategy.empty()) continue;
      for (const auto& p : st->unpinned)
        ctx.report(p.ref, p.pointer, p.pos,
                   p.who + " requests nvidia.com/gpu and selects no nvidia.com/device-plugin.config, so it may land on any node "
                   "that uses " + cp->display_name() + "'s default device-plugin config `" + std::string(*def) + "` (" + where +
                   "), which shares each GPU with " + strategy +
                   ": replicas of a shared GPU have no memory or fault isolation and take turns, so latency depends on the "
                   "neighbours; select a dedicated or MIG node pool (seed 9.2)");
      return;
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_sharing_latency_sensitive() { return std::make_unique<SharingLatencySensitive>(); }

}  // namespace gpuguard::rules
