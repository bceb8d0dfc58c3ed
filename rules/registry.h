#pragma once
// gpuguard's rules, one explicit list.

#include "engine/registry.h"

namespace gpuguard::rules {

[[nodiscard]] engine::Registry make_registry();

}  // namespace gpuguard::rules
