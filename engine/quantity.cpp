#include "engine/quantity.h"

#include <algorithm>
#include <limits>

namespace gpuguard::engine {

namespace {

using Int128 = Quantity::Int128;

constexpr Int128 kMaxNanos = static_cast<Int128>(std::numeric_limits<int64_t>::max()) * Quantity::kNanosPerUnit;

bool digit(char c) { return c >= '0' && c <= '9'; }

// Multiplies a decimal digit string by 2 in place.
void double_digits(std::string& d) {
  int carry = 0;
  for (size_t i = d.size(); i-- > 0;) {
    int v = (d[i] - '0') * 2 + carry;
    d[i] = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  if (carry) d.insert(d.begin(), static_cast<char>('0' + carry));
}

struct Parts {
  bool positive = true;
  std::string num;
  std::string denom;
  std::string suffix;
};

// apimachinery parseQuantityString.
bool split(std::string_view str, Parts& out) {
  size_t pos = 0;
  const size_t end = str.size();
  if (pos < end) {
    if (str[0] == '-') { out.positive = false; ++pos; }
    else if (str[0] == '+') { ++pos; }
  }
  while (pos < end && str[pos] == '0') ++pos;  // leading zeros
  if (pos >= end) { out.num = "0"; return true; }
  size_t ns = pos;
  while (pos < end && digit(str[pos])) ++pos;
  out.num = std::string(str.substr(ns, pos - ns));
  if (out.num.empty()) out.num = "0";
  if (pos >= end) return true;
  if (str[pos] == '.') {
    ++pos;
    size_t ds = pos;
    while (pos < end && digit(str[pos])) ++pos;
    out.denom = std::string(str.substr(ds, pos - ds));
    if (pos >= end) return true;
  }
  size_t suffix_start = pos;
  while (pos < end && std::string_view("eEinumkKMGTP").find(str[pos]) != std::string_view::npos) ++pos;
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < end && digit(str[pos])) ++pos;
  if (pos != end) return false;
  out.suffix = std::string(str.substr(suffix_start));
  return true;
}

// base 10 or 2, exponent.
bool interpret_suffix(std::string_view s, int& base, int32_t& exponent) {
  struct S { std::string_view s; int base; int32_t exp; };
  static constexpr S kTable[] = {
      {"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},   {"M", 10, 6},
      {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10},  {"Mi", 2, 20},
      {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
  };
  for (const auto& t : kTable)
    if (t.s == s) { base = t.base; exponent = t.exp; return true; }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view rest = s.substr(1);
    bool neg = false;
    if (rest[0] == '+' || rest[0] == '-') { neg = rest[0] == '-'; rest.remove_prefix(1); }
    if (rest.empty()) return false;
    uint64_t v = 0;
    for (char c : rest) {
      if (!digit(c)) return false;
      if (v > (std::numeric_limits<uint64_t>::max() - 9) / 10) return false;  // ParseInt range error
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (neg ? 1 : 0)) return false;
    // (negated as unsigned: -2^63 is representable, its positive is not)
    int64_t parsed = static_cast<int64_t>(neg ? 0 - v : v);
    base = 10;
    exponent = static_cast<int32_t>(parsed);  // Go's int32() conversion wraps the same way
    return true;
  }
  return false;
}

// The common case without allocating: 1 to 9 digits and a suffix of the table ("8", "500m",
// "64Gi"). The value is then exact in nanos and far from the cap; nothing else takes this path.
bool parse_simple(std::string_view text, Int128& nanos) {
  size_t n = 0;
  uint64_t v = 0;
  while (n < text.size() && n < 10 && digit(text[n])) v = v * 10 + static_cast<uint64_t>(text[n++] - '0');
  if (n == 0 || n > 9) return false;
  std::string_view suffix = text.substr(n);
  if (suffix.size() > 2) return false;
  int base = 10;
  int32_t exponent = 0;
  if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E')) return false;  // exponents: the general path
  if (!interpret_suffix(suffix, base, exponent)) return false;
  nanos = static_cast<Int128>(v) * Quantity::kNanosPerUnit;
  if (base == 10) {
    if (exponent >= 0)
      for (int32_t i = 0; i < exponent; ++i) nanos *= 10;
    else
      for (int32_t i = 0; i < -exponent; ++i) nanos /= 10;  // exact: exponent ≥ -9
  } else {
    nanos <<= exponent;
  }
  if (nanos > kMaxNanos) nanos = kMaxNanos;
  return true;
}

}  // namespace

Expected<Quantity, std::string> Quantity::parse(std::string_view text) {
  if (text.empty()) return Unexpected(std::string(kQuantityFormatError));
  if (Int128 nanos = 0; parse_simple(text, nanos)) return Quantity(nanos);
  Parts p;
  if (!split(text, p)) return Unexpected(std::string(kQuantityFormatError));
  int base = 10;
  int32_t exponent = 0;
  if (!interpret_suffix(p.suffix, base, exponent))
    return Unexpected("unable to parse quantity's suffix \"" + p.suffix + "\"");

  // value = digits × 10^scale × 2^(binary exponent); compute it in nanos, rounding up.
  std::string digits = p.num + p.denom;
  int64_t scale = -static_cast<int64_t>(p.denom.size());
  if (base == 10) scale += exponent;
  else
    for (int32_t i = 0; i < exponent; ++i) double_digits(digits);
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) return Quantity(0);
  int64_t shift = scale + 9;  // to nanos
  Int128 nanos = 0;
  bool capped = false;
  if (shift >= 0) {
    if (static_cast<int64_t>(digits.size()) + shift > 38) capped = true;
    else {
      for (char c : digits) nanos = nanos * 10 + (c - '0');
      for (int64_t i = 0; i < shift; ++i) nanos *= 10;
    }
  } else {
    size_t drop = static_cast<size_t>(std::min<int64_t>(-shift, static_cast<int64_t>(digits.size())));
    std::string_view keep(digits.data(), digits.size() - drop);
    std::string_view rest(digits.data() + keep.size(), drop);
    if (keep.size() > 38) capped = true;
    else {
      for (char c : keep) nanos = nanos * 10 + (c - '0');
      if (rest.find_first_not_of('0') != std::string_view::npos) nanos += 1;  // round up to a nano
    }
  }
  if (capped || nanos > kMaxNanos) nanos = kMaxNanos;
  return Quantity(p.positive ? nanos : -nanos);
}

Expected<Quantity, std::string> Quantity::from_json(const json& value) {
  if (value.is_null()) return Quantity(0);
  if (value.is_string()) {
    std::string_view s = value.get_ref<const std::string&>();
    auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return parse(s);
  }
  if (value.is_number_integer() && !value.is_number_unsigned() && value.get<int64_t>() != std::numeric_limits<int64_t>::min())
    return from_int(value.get<int64_t>());
  if (value.is_number()) return parse(go_json_number(value));
  return Unexpected(std::string(kQuantityFormatError));
}

Expected<Quantity, std::string> Quantity::from_node(Node value) {
  if (value.is_null()) return Quantity(0);
  if (value.is_string()) {
    std::string_view s = value.str();
    auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return parse(s);
  }
  if (value.is_number_integer() && value.integer() != std::numeric_limits<int64_t>::min()) return from_int(value.integer());
  if (value.is_number()) return parse(go_json_number(value.to_json()));
  return Unexpected(std::string(kQuantityFormatError));
}

std::optional<int64_t> Quantity::to_int64() const {
  if (!is_integer()) return std::nullopt;
  Int128 v = nanos_ / kNanosPerUnit;
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min()) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::string Quantity::to_string() const {
  Int128 a = nanos_ < 0 ? -nanos_ : nanos_;
  Int128 whole = a / kNanosPerUnit;
  Int128 frac = a % kNanosPerUnit;
  auto digits = [](Int128 v) {
    if (v == 0) return std::string("0");
    std::string s;
    while (v > 0) {
      s += static_cast<char>('0' + static_cast<int>(v % 10));
      v /= 10;
    }
    std::reverse(s.begin(), s.end());
    return s;
  };
  std::string out = nanos_ < 0 ? "-" : "";
  out += digits(whole);
  if (frac) {
    std::string f = digits(frac);
    f.insert(0, 9 - f.size(), '0');
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

Quantity Quantity::operator+(const Quantity& o) const {
  Int128 v = nanos_ + o.nanos_;
  return Quantity(std::clamp(v, -kMaxNanos, kMaxNanos));
}

Quantity Quantity::operator*(int64_t k) const {
  if (k == 0 || nanos_ == 0) return Quantity(0);
  Int128 limit = kMaxNanos / (k < 0 ? -static_cast<Int128>(k) : static_cast<Int128>(k));
  Int128 a = nanos_ < 0 ? -nanos_ : nanos_;
  if (a > limit) return Quantity((nanos_ < 0) != (k < 0) ? -kMaxNanos : kMaxNanos);
  return Quantity(nanos_ * k);
}

}  // namespace gpuguard::engine
