#include "engine/state.h"

#include "engine/evaluate.h"

namespace gpuguard::engine {

StateLoad load_state(const std::vector<std::string>& paths, const Registry& registry, const Config& config,
                     const LoadOptions& options) {
  StateLoad out;
  out.inventory = std::make_shared<Inventory>(kinds_read(registry, config));
  out.inventory->set_complete(true);
  const auto inputs = expand_inputs(paths, out.diagnostics);
  uint32_t index = 0;
  uint32_t next_id = 0;
  for (const auto& in : inputs) {
    load_input(
        in, index++, options,
        [&](Object&& o) {
          ++out.objects;
          if (!o.is_kubernetes_object() || !out.inventory->keeps(o.gvk.group, o.gvk.kind)) return;
          o.id = next_id++;
          std::string ns = effective_namespace(o, config);
          out.inventory->add(std::make_shared<const Object>(std::move(o)), std::move(ns));
        },
        out.diagnostics);
  }
  return out;
}

}  // namespace gpuguard::engine
