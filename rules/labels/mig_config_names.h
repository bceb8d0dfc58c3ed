#pragma once
// The config names a ConfigMap's mig-parted configs define (facts/nvidia.md §2), read with the MIG
// rules' reader (rules/mig/mig_parted.h), for checking `nvidia.com/mig.config` label values.

#include <set>
#include <string>

#include "engine/object.h"

namespace gpuguard::rules::labels {

// Names under `mig-configs:` of every mig-parted config (`version: v1`) in a ConfigMap; adds them
// to `out`. Returns whether the ConfigMap held such a config.
bool mig_config_names(const engine::Object& configmap, std::set<std::string, std::less<>>& out);

}  // namespace gpuguard::rules::labels
