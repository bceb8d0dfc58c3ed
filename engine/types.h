#pragma once
// Basic value types shared by every part of the engine.

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpuguard::engine {

// A 1-based line and column in a source file; line 0 means "unknown".
struct Pos {
  uint32_t line = 0;
  uint32_t col = 0;
  [[nodiscard]] bool known() const { return line != 0; }
  auto operator<=>(const Pos&) const = default;
};

enum class Severity : uint8_t { info = 0, warning = 1, error = 2 };

// What the webhook does with a rule's findings: deny on errors and warn on warnings (enforce),
// only warn (warn: errors become warnings), or only log and count (audit).
enum class Mode : uint8_t { enforce, warn, audit };

[[nodiscard]] std::string_view to_string(Severity s);
[[nodiscard]] std::optional<Severity> parse_severity(std::string_view s);

// One input: a file on disk, stdin, or an in-memory buffer (an AdmissionReview).
struct SourceFile {
  std::string path;  // as given by the user ("-" is shown as "<stdin>")
  uint32_t index = 0;  // order of the file in the run, for sorting
};
using SourceRef = std::shared_ptr<const SourceFile>;

// Saturating arithmetic for counts a manifest controls (replicas × hosts, pods summed over
// templates): past int64's range the result is its bound, not undefined behaviour.
[[nodiscard]] inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
[[nodiscard]] inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

// A problem with the input itself (unreadable file, malformed YAML, bad config), as opposed to a
// finding of a rule. Diagnostics of severity error make the CLI exit with code 2.
struct Diagnostic {
  Severity severity = Severity::error;
  std::string file;
  Pos pos;
  std::string message;
};

}  // namespace gpuguard::engine
