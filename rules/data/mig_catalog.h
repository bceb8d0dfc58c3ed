#pragma once
// The MIG catalog: the GPU models of rules/data/mig-gpus.yaml (compiled in), plus the models the
// config adds under `mig.gpus` (looked up first, so a config entry can also correct a built-in).

#include <string>
#include <string_view>
#include <vector>

#include "engine/mig.h"
#include "engine/rule.h"

namespace gpuguard::rules::mig {

// The built-in models, parsed once. `problems` of the embedded file are a build defect: the unit
// tests check there are none (builtin_problems()).
[[nodiscard]] const std::vector<engine::MigGpu>& builtin_gpus();
[[nodiscard]] const std::vector<std::pair<std::string, std::string>>& builtin_problems();

class Catalog {
 public:
  explicit Catalog(const engine::RunSettings& settings);
  // Every model: the config's first, then the built-in ones.
  [[nodiscard]] const std::vector<const engine::MigGpu*>& gpus() const { return gpus_; }
  // The model with this PCI device ID (normalised, "0x233010DE"), or nullptr.
  [[nodiscard]] const engine::MigGpu* by_device_id(std::string_view id) const;
  // The model GFD names with this `nvidia.com/gpu.product` value; `-MIG-<profile>`, `-MIG-INVALID`
  // and `-SHARED` suffixes are ignored.
  [[nodiscard]] const engine::MigGpu* by_product(std::string_view product) const;
  // Whether any model has a profile of this name.
  [[nodiscard]] bool known_profile(std::string_view name) const;

 private:
  std::vector<const engine::MigGpu*> gpus_;
};

// The catalog as a markdown table (for `gpuguard explain`): model, PCI IDs, products, profiles with
// compute/memory slices, start offsets and max count; inferred entries marked.
[[nodiscard]] std::string catalog_markdown();

}  // namespace gpuguard::rules::mig
