#pragma once
// JSON → YAML text (yaml-cpp's emitter), for `gpuguard mutate`: keys in the order the source had
// them (new keys after), strings quoted wherever Kubernetes' YAML reader would take them for
// something else (`"yes"`, `"010"`, `"1e3"`), multi-line strings as literal blocks.

#include <string>

#include "engine/json.h"
#include "engine/positions.h"

namespace gpuguard::engine {

[[nodiscard]] std::string to_yaml(const json& value, const PositionIndex* positions = nullptr,
                                  PositionIndex::NodeId root = 0);

// A unified diff of two texts (3 lines of context), empty when they are equal.
[[nodiscard]] std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_name,
                                       const std::string& b_name);

}  // namespace gpuguard::engine
