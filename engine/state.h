#pragma once
// Cluster state from files (`kubectl get … -o yaml` output, Lists included): the inventory the
// webhook evaluates admitted objects against, and what `lint --complete` reads.

#include <memory>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/inventory.h"
#include "engine/load.h"
#include "engine/registry.h"

namespace gpuguard::engine {

struct StateLoad {
  std::shared_ptr<Inventory> inventory;  // complete; only the kinds the enabled rules read
  size_t objects = 0;                    // objects read (kept or not)
  std::vector<Diagnostic> diagnostics;
};

// Reads every path (files and folders, as `lint` does) into a complete inventory.
[[nodiscard]] StateLoad load_state(const std::vector<std::string>& paths, const Registry& registry, const Config& config,
                                   const LoadOptions& options = {});

}  // namespace gpuguard::engine
