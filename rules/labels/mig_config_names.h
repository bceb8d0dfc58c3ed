#pragma once
// Minimal reader of mig-parted configs (facts/nvidia.md §2): the config names a ConfigMap defines.
// Kept apart so that the full mig-parted reader of rules/mig/ can replace it.

#include <set>
#include <string>

#include "engine/object.h"

namespace gpuguard::rules::labels {

// Names under `mig-configs:` of every data value of a ConfigMap that is a mig-parted config
// (YAML with `version: v1` and `mig-configs:`); adds them to `out`. Returns whether the ConfigMap
// held such a config.
bool mig_config_names(const engine::Object& configmap, std::set<std::string, std::less<>>& out);

}  // namespace gpuguard::rules::labels
