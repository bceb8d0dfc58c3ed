#include "rules/quota/common.h"

#include <set>

#include "engine/podspec.h"

namespace gpuguard::rules::quota {

using namespace engine;

namespace {

TrackedGpus make_tracked_gpus(const Object& quota, const ResourceMatcher& gpus) {
  TrackedGpus out;
  for (const auto [key, value] : path(quota.root(), {"spec", "hard"}).items()) {
    if (!key.starts_with("requests.")) continue;
    const std::string_view resource = key.substr(9);
    if (!gpus.matches(resource)) continue;
    if (auto q = Quantity::from_node(value)) out[std::string(resource)] = *q;
  }
  return out;
}

std::vector<GpuLimits> make_container_gpu_limits(const Object& limitrange, const ResourceMatcher& gpus) {
  std::vector<GpuLimits> out;
  const Node limits = path(limitrange.root(), {"spec", "limits"});
  if (!limits.is_array()) return out;
  size_t index = 0;
  for (const Node item : limits) {
    const size_t i = index++;
    if (string_at(item, "type") != std::optional<std::string_view>("Container")) continue;
    auto list = [&](std::string_view field) -> Node {
      const Node l = member(item, field);
      return l.is_object() ? l : Node();
    };
    std::set<std::string, std::less<>> names;
    for (const char* f : {"max", "min", "default", "defaultRequest"})
      for (const auto [name, v] : list(f).items())
        if (gpus.matches(name)) names.emplace(name);
    for (const auto& name : names) {
      GpuLimits g;
      g.resource = name;
      g.item = i;
      g.item_pointer = pointer_join("/spec/limits", i);
      auto get = [&](std::string_view field) -> std::optional<Quantity> {
        const Node v = member(list(field), name);
        if (!v) return std::nullopt;
        auto q = Quantity::from_node(v);
        return q ? std::optional<Quantity>(*q) : std::nullopt;
      };
      g.max = get("max");
      g.min = get("min");
      g.def = get("default");
      g.def_request = get("defaultRequest");
      // SetDefaults_LimitRangeItem, in its order.
      if (g.def) {
        g.eff_default = g.def;
        g.default_from = "default";
      } else if (g.max) {
        g.eff_default = g.max;
        g.default_from = "max";
      }
      if (g.def_request) {
        g.eff_request = g.def_request;
        g.request_from = "defaultRequest";
      } else if (g.eff_default) {
        g.eff_request = g.eff_default;
        g.request_from = g.default_from;
      } else if (g.min) {
        g.eff_request = g.min;
        g.request_from = "min";
      }
      out.push_back(std::move(g));
    }
  }
  return out;
}

struct QuotaGpus : ByMatcher<TrackedGpus> {};
struct LimitRangeGpus : ByMatcher<std::vector<GpuLimits>> {};

}  // namespace

std::string GpuLimits::pointer(std::string_view field) const {
  return pointer_join(pointer_join(item_pointer, field), resource);
}

const TrackedGpus& tracked_gpus(const Object& quota, const ResourceMatcher& gpus) {
  return quota.views.get<QuotaGpus>([] { return QuotaGpus{}; }).get(gpus, [&] { return make_tracked_gpus(quota, gpus); });
}

const std::vector<GpuLimits>& container_gpu_limits(const Object& limitrange, const ResourceMatcher& gpus) {
  return limitrange.views.get<LimitRangeGpus>([] { return LimitRangeGpus{}; }).get(gpus, [&] {
    return make_container_gpu_limits(limitrange, gpus);
  });
}

std::string amount(const Quantity& q) { return q.to_string(); }

}  // namespace gpuguard::rules::quota
