#pragma once

#include <string_view>

namespace gpuguard::cli {

inline constexpr std::string_view kVersion = GPUGUARD_VERSION;

}  // namespace gpuguard::cli
