#pragma once
// Kubernetes resource.Quantity: parsing and exact comparison.
//
// Follows apimachinery's ParseQuantity: `<signed number><suffix>` with decimal SI (n u m "" k M G
// T P E), binary SI (Ki … Ei) or decimal exponent (e3, E-2) suffixes; values are rounded up (away
// from zero) to a nano and capped at ±(2^63-1), so every quantity is an exact count of nanos.

#include <compare>
#include <cstdint>
#include "engine/expected.h"
#include <optional>
#include <string>
#include <string_view>

#include "engine/json.h"
#include "engine/node.h"

namespace gpuguard::engine {

class Quantity {
 public:
  __extension__ using Int128 = __int128;

  Quantity() = default;
  static Quantity from_int(int64_t v) { return Quantity(static_cast<Int128>(v) * kNanosPerUnit); }

  // Parses the text form ("1", "500m", "1.5Gi", "1e3").
  static Expected<Quantity, std::string> parse(std::string_view text);
  // Parses a JSON value as the API server would: a string (trimmed), a number (its Go JSON
  // text), or null (zero).
  static Expected<Quantity, std::string> from_json(const json& value);
  // The same of a document's node (an absent one reads as null).
  static Expected<Quantity, std::string> from_node(Node value);

  [[nodiscard]] bool is_integer() const { return nanos_ % kNanosPerUnit == 0; }
  [[nodiscard]] bool is_negative() const { return nanos_ < 0; }
  [[nodiscard]] bool is_zero() const { return nanos_ == 0; }
  // The value when it is a whole number that fits in int64.
  [[nodiscard]] std::optional<int64_t> to_int64() const;
  // Canonical decimal text ("1.5", "3", "0.001").
  [[nodiscard]] std::string to_string() const;

  Quantity operator+(const Quantity& o) const;
  Quantity operator*(int64_t k) const;
  auto operator<=>(const Quantity&) const = default;
  bool operator==(const Quantity&) const = default;

  static constexpr Int128 kNanosPerUnit = 1'000'000'000;

 private:
  explicit Quantity(Int128 nanos) : nanos_(nanos) {}
  Int128 nanos_ = 0;
};

// The message the API server gives for text that is not a quantity.
inline constexpr std::string_view kQuantityFormatError =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

}  // namespace gpuguard::engine
