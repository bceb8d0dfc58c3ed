#pragma once
// JSON Schema validation with valijson, for the tests.

#include <string>
#include <vector>

#include "engine/json.h"

namespace gpuguard::test {

// Validates `doc` against `schema`; returns the problems (empty when valid).
std::vector<std::string> validate(const engine::json& schema, const engine::json& doc);

}  // namespace gpuguard::test
