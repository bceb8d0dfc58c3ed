#pragma once
// JSON → YAML text (yaml-cpp's emitter), for `gpuguard mutate`: keys in the order the source had
// them (new keys after), strings quoted wherever Kubernetes' YAML reader would take them for
// something else (`"yes"`, `"010"`, `"1e3"`), multi-line strings as literal blocks.

#include <string>

#include "engine/json.h"
#include "engine/positions.h"

namespace YAML {
class Emitter;
}

namespace gpuguard::engine {

[[nodiscard]] std::string to_yaml(const json& value, const PositionIndex* positions = nullptr,
                                  PositionIndex::NodeId root = 0);

// One string, a key or a value, as to_yaml writes it (but never as a literal block): plain where
// Kubernetes' YAML reader reads it back as this string, else double-quoted (`quoted`: always),
// with escapes for the characters yaml-cpp would write raw that no reader reads back as
// themselves, and `!!binary` when it is not UTF-8.
void emit_yaml_string(YAML::Emitter& out, const std::string& s, bool quoted = false);
// A mapping's key (YAML::Key and the key), as emit_yaml_string writes it; a long quoted one as an
// explicit key (`? "…"`): an implicit key may not be longer than 1,024 characters, and escapes
// make a key of 257 bytes up to four times as long (yaml-cpp judges by the bytes).
void emit_yaml_key(YAML::Emitter& out, const std::string& s);

// A unified diff of two texts (3 lines of context), empty when they are equal.
[[nodiscard]] std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_name,
                                       const std::string& b_name);

}  // namespace gpuguard::engine
