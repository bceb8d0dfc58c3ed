#pragma once
// Helpers the MIG rules share: findings kept during `check` and reported in `finish` (a finding in
// a config embedded in a ConfigMap string needs a position the pointer cannot name), the GPU
// models a mig-parted entry targets, and MIG resource names.

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dra.h"
#include "engine/mig.h"
#include "engine/podspec.h"
#include "engine/quantity.h"
#include "engine/rule.h"
#include "rules/data/mig_catalog.h"
#include "rules/mig/mig_parted.h"

namespace gpuguard::rules::mig {

// Findings located by the mig-parted reader, reported in `finish`.
class Pending final : public engine::RuleState {
 public:
  struct Item {
    engine::ObjectRef ref;
    std::string pointer;
    engine::Pos pos;
    std::string message;
  };
  void add(engine::CheckContext& ctx, const MigPartedDoc& doc, std::string_view inner, std::string message) {
    items_.push_back({ctx.ref(), doc.pointer(inner), doc.locate(inner), doc.where(inner) + ": " + std::move(message)});
  }
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(engine::RuleState& later) override { engine::append(items_, static_cast<Pending&>(later).items_); }
  void flush(engine::FinishContext& ctx) {
    for (auto& i : items_) ctx.report(i.ref, std::move(i.pointer), i.pos, std::move(i.message));
    items_.clear();
  }

 private:
  engine::Records<Item> items_;
};

// The models an entry targets: those its device-filter names (IDs the catalog does not know are
// left out; `unknown_ids` counts them), or every model when there is no filter.
struct Targets {
  std::vector<const engine::MigGpu*> gpus;
  bool filtered = false;
  size_t unknown_ids = 0;
};
inline Targets targets(const MigPartedEntry& e, const Catalog& catalog) {
  Targets t;
  t.filtered = e.has_filter;
  if (!e.has_filter) {
    t.gpus = catalog.gpus();
    return t;
  }
  for (const auto& id : e.filter) {
    const engine::MigGpu* g = id.empty() ? nullptr : catalog.by_device_id(id);
    if (!g) {
      ++t.unknown_ids;
      continue;
    }
    if (std::find(t.gpus.begin(), t.gpus.end(), g) == t.gpus.end()) t.gpus.push_back(g);
  }
  return t;
}

// "A100-80GB (0x20B210DE, 0x20B510DE)"
inline std::string describe_gpu(const engine::MigGpu& g) {
  std::string ids;
  for (const auto& id : g.device_ids) ids += (ids.empty() ? "" : ", ") + id;
  return g.name + (ids.empty() ? "" : " (" + ids + ")");
}

inline std::string profile_list(const engine::MigGpu& g) {
  std::string s;
  for (const auto& p : g.profiles) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// The profile of a MIG resource name: "nvidia.com/mig-1g.10gb" → "1g.10gb" (a time-sliced
// `….shared` rename too); nullopt for other resources.
inline std::optional<std::string> mig_resource_profile(std::string_view resource) {
  constexpr std::string_view prefix = "nvidia.com/mig-";
  if (!resource.starts_with(prefix)) return std::nullopt;
  std::string_view p = resource.substr(prefix.size());
  if (p.ends_with(".shared")) p.remove_suffix(7);
  return std::string(p);
}

// The NVIDIA resources (`nvidia.com/…`) a container requests or limits with an amount that is not
// zero, each once: views of the keys of its resources (valid while its object is).
inline std::vector<std::string_view> nvidia_resources(const engine::Container& c) {
  std::vector<std::string_view> out;
  const engine::Node res = engine::member(c.body, "resources");
  if (!res) return out;
  // n log n in the container's resources: a mapping's keys are distinct, and a request's name is
  // looked for among the limits' sorted names.
  size_t limits = 0;
  for (const char* key : {"limits", "requests"}) {
    const engine::Node l = engine::member(res, key);
    if (!l.is_object()) continue;
    const auto from = static_cast<std::ptrdiff_t>(out.size());
    for (const auto [name, v] : l.items()) {
      if (!name.starts_with("nvidia.com/")) continue;
      auto q = engine::Quantity::from_node(v);
      if (q && q->is_zero()) continue;
      if (std::binary_search(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(limits), name)) continue;
      out.emplace_back(name);
    }
    std::sort(out.begin() + from, out.end());  // each mapping's names in key order, whatever the document's
    if (std::string_view(key) == "limits") limits = out.size();
  }
  return out;
}

// A DRA request for a MIG device: NVIDIA's class `mig.nvidia.com`, or a selector on the `profile`
// attribute, which only the driver's MIG devices have (k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/mig.go
// CommonAttributesMig @22407113).
inline bool dra_mig(const engine::DraGpuRequest& r) { return r.device_class == "mig.nvidia.com" || !r.profile.empty() || r.profile_unknown; }

// A pod template whose GPUs may come through DRA claims, held for `finish`.
struct DraTemplate {
  engine::ObjectRef ref;
  std::string pointer;  // its spec's resourceClaims
  engine::Pos pos;
  std::vector<engine::PodClaim> claims;
  int64_t pods = 1;     // the pods of the workload (mig-distributed-training)
};

// Pending findings of the mig-parted reader and held DRA templates.
class DraPending final : public engine::RuleState {
 public:
  Pending pending;
  engine::Records<DraTemplate> templates;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(engine::RuleState& later) override {
    auto& l = static_cast<DraPending&>(later);
    pending.merge(l.pending);
    engine::append(templates, l.templates);
  }
};

}  // namespace gpuguard::rules::mig
