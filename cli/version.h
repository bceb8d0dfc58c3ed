#pragma once

#include <string_view>

namespace gpuguard::cli {

inline constexpr std::string_view kVersion = GPUGUARD_VERSION;
// The commit the program was built from (12 hex digits, "-dirty" when the tree had changes), or
// "unknown": written at build time by scripts/version-commit.cmake.
extern const char* const kCommit;

}  // namespace gpuguard::cli
