#include "engine/types.h"

namespace gpuguard::engine {

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::error: return "error";
  }
  return "error";
}

std::optional<Severity> parse_severity(std::string_view s) {
  if (s == "info") return Severity::info;
  if (s == "warning") return Severity::warning;
  if (s == "error") return Severity::error;
  return std::nullopt;
}

}  // namespace gpuguard::engine
