#pragma once
// What the quota and LimitRange rules share: the GPU keys a ResourceQuota tracks, and the GPU
// amounts of a LimitRange item as the API server stores them (after `SetDefaults_LimitRangeItem`).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/object.h"
#include "engine/podspec.h"
#include "engine/quantity.h"

namespace gpuguard::rules::quota {

using TrackedGpus = engine::GpuAmounts;

// The GPU resources a ResourceQuota counts (its `spec.hard` keys `requests.<gpu>`), with their
// amounts; keys whose amount does not parse are left out. Made once per object and set of GPU
// resource patterns, and kept with the object (the webhook's cluster state asks on every request).
[[nodiscard]] const TrackedGpus& tracked_gpus(const engine::Object& quota, const engine::ResourceMatcher& gpus);

// The four amounts of one GPU resource in one `type: Container` LimitRange item.
struct GpuLimits {
  std::string resource;
  size_t item = 0;                 // index in spec.limits
  std::string item_pointer;        // "/spec/limits/0"
  std::optional<engine::Quantity> max, min, def, def_request;  // as written (those that parse)
  // After the API's defaulting: `default` from `max`, `defaultRequest` from `default`, then `min`.
  std::optional<engine::Quantity> eff_default, eff_request;
  std::string default_from;        // "default", "max" or "" (none)
  std::string request_from;        // "defaultRequest", "default", "max", "min" or ""

  [[nodiscard]] std::string pointer(std::string_view field) const;  // "/spec/limits/0/max/nvidia.com~1gpu"
};

// Every GPU resource of every `type: Container` item of a LimitRange (made once per object and
// set of GPU resource patterns, like tracked_gpus).
[[nodiscard]] const std::vector<GpuLimits>& container_gpu_limits(const engine::Object& limitrange,
                                                                 const engine::ResourceMatcher& gpus);

// "1", "8": a quantity for messages.
[[nodiscard]] std::string amount(const engine::Quantity& q);

}  // namespace gpuguard::rules::quota
