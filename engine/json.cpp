#include "engine/json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <limits>

namespace gpuguard::engine {

namespace {

// A key looked up in an object (a FlatMap: members sorted as std::string orders keys, bytes
// compared as unsigned char). Most objects have a handful of members: they are scanned, comparing
// a member's size and first byte before any memcmp. Larger ones are searched by halves, with a
// comparison that also decides on the first byte without a call to memcmp, which is where the
// keys of a Kubernetes object differ most of the time (apiVersion, kind, metadata, spec, status).
struct Key {
  std::string_view text;
};

int compare(std::string_view a, std::string_view b) noexcept {
  if (!a.empty() && !b.empty() && a[0] != b[0])
    return static_cast<unsigned char>(a[0]) < static_cast<unsigned char>(b[0]) ? -1 : 1;
  return a.compare(b);
}

[[maybe_unused]] bool operator<(const std::string& a, Key b) noexcept { return compare(a, b.text) < 0; }
[[maybe_unused]] bool operator<(Key a, const std::string& b) noexcept { return compare(a.text, b) < 0; }

constexpr size_t kScanMembers = 8;

template <typename Object>
auto* find_member(Object& object, std::string_view key) {
  using Value = std::conditional_t<std::is_const_v<Object>, const json, json>;
  if (object.size() <= kScanMembers) {
    for (auto& [name, value] : object)
      if (name.size() == key.size() && (key.empty() || (name[0] == key[0] && std::memcmp(name.data(), key.data(), key.size()) == 0)))
        return static_cast<Value*>(&value);
    return static_cast<Value*>(nullptr);
  }
  auto it = object.find(Key{key});
  return it == object.end() ? static_cast<Value*>(nullptr) : &it->second;
}

}  // namespace

const json* member(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  return find_member(j.template get_ref<const json::object_t&>(), key);
}

json* member(json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  return find_member(j.template get_ref<json::object_t&>(), key);
}

namespace {

void dispose_at(json& j, int depth) noexcept {
  // A child that is a container is emptied first (below the depth bound), so clearing this one
  // destroys only scalars and empty containers; deeper children go to nlohmann's destructor.
  auto children = [&](auto& list, auto&& value_of) {
    if (depth < kDisposeDepth)
      for (auto& item : list)
        if (json& v = value_of(item); v.is_structured()) dispose_at(v, depth + 1);
    list.clear();
  };
  if (j.is_object()) children(j.get_ref<json::object_t&>(), [](auto& kv) -> json& { return kv.second; });
  else if (j.is_array()) children(j.get_ref<json::array_t&>(), [](json& v) -> json& { return v; });
}

}  // namespace

void dispose(json& j) noexcept { dispose_at(j, 0); }

const json* path(const json& j, std::initializer_list<std::string_view> keys) {
  const json* cur = &j;
  for (auto k : keys) {
    cur = member(*cur, k);
    if (!cur) return nullptr;
  }
  return cur;
}

std::optional<std::string_view> string_at(const json& j, std::string_view key) {
  const json* m = member(j, key);
  if (!m || !m->is_string()) return std::nullopt;
  return std::string_view(m->get_ref<const std::string&>());
}

std::optional<int64_t> as_int(const json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_unsigned()) {
    auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<int64_t> int_at(const json& j, std::string_view key) {
  const json* m = member(j, key);
  return m ? as_int(*m) : std::nullopt;
}

std::optional<bool> bool_at(const json& j, std::string_view key) {
  const json* m = member(j, key);
  if (!m || !m->is_boolean()) return std::nullopt;
  return m->get<bool>();
}

namespace {

// Shortest decimal digits and exponent of f (f > 0, finite), as Go's strconv computes them:
// digits "d1d2...dn" and decimal point position dp, value = 0.d1d2...dn × 10^dp.
void shortest_digits(double f, int bits, std::string& digits, int& dp) {
  char buf[64];
  std::to_chars_result r;
  if (bits == 32) r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(f), std::chars_format::scientific);
  else r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
  auto e = s.find('e');
  std::string_view mant = s.substr(0, e);
  int exp = std::atoi(std::string(s.substr(e + 1)).c_str());
  digits.clear();
  for (char c : mant)
    if (c != '.') digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  dp = exp + 1;
}

std::string fixed_from_digits(const std::string& digits, int dp) {
  std::string out;
  if (dp <= 0) {
    out = "0.";
    out.append(static_cast<size_t>(-dp), '0');
    out += digits;
  } else if (static_cast<size_t>(dp) >= digits.size()) {
    out = digits;
    out.append(static_cast<size_t>(dp) - digits.size(), '0');
  } else {
    out = digits.substr(0, static_cast<size_t>(dp)) + "." + digits.substr(static_cast<size_t>(dp));
  }
  return out;
}

std::string exp_from_digits(const std::string& digits, int dp, bool two_digit_min) {
  std::string out(1, digits[0]);
  if (digits.size() > 1) out += "." + digits.substr(1);
  int exp = dp - 1;
  out += 'e';
  out += exp < 0 ? '-' : '+';
  int a = exp < 0 ? -exp : exp;
  if (two_digit_min && a < 10) out += '0';
  out += std::to_string(a);
  return out;
}

}  // namespace

std::string go_format_float_g(double f, int bits) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  if (f == 0) return std::signbit(f) ? "-0" : "0";
  std::string sign = f < 0 ? "-" : "";
  std::string digits;
  int dp = 0;
  shortest_digits(std::fabs(f), bits, digits, dp);
  // Go's 'g' with the shortest precision: %e when exp < -4 || exp >= 6 (two-digit exponent).
  int exp = dp - 1;
  if (exp < -4 || exp >= 6) return sign + exp_from_digits(digits, dp, true);
  return sign + fixed_from_digits(digits, dp);
}

std::string go_json_number(const json& number) {
  if (number.is_number_integer()) return std::to_string(number.get<int64_t>());
  if (number.is_number_unsigned()) return std::to_string(number.get<uint64_t>());
  if (!number.is_number_float()) return number.dump();
  double f = number.get<double>();
  if (!std::isfinite(f)) return "null";
  if (f == 0) return "0";
  // encoding/json: 'f' format unless abs < 1e-6 or abs >= 1e21, then 'e' with "e-07" → "e-7".
  std::string sign = f < 0 ? "-" : "";
  double a = std::fabs(f);
  std::string digits;
  int dp = 0;
  shortest_digits(a, 64, digits, dp);
  if (a < 1e-6 || a >= 1e21) return sign + exp_from_digits(digits, dp, false);
  return sign + fixed_from_digits(digits, dp);
}

namespace {
json make_patch_op(std::string_view op, std::string path, json* value) {
  json out(json::value_t::object);
  out.get_ref<json::object_t&>().reserve(value ? 3 : 2);
  out["op"] = op;
  out["path"] = std::move(path);
  if (value) out["value"] = std::move(*value);
  return out;
}
}  // namespace

json patch_op(std::string_view op, std::string path, json value) { return make_patch_op(op, std::move(path), &value); }

json patch_op(std::string_view op, std::string path) { return make_patch_op(op, std::move(path), nullptr); }

json patch_of(json op) {
  json out(json::value_t::array);
  out.get_ref<json::array_t&>().push_back(std::move(op));
  return out;
}

std::string brief(const json& j, size_t max_len) {
  std::string s;
  if (j.is_number()) s = go_json_number(j);
  else if (j.is_object()) s = j.empty() ? "{}" : "{...}";
  else if (j.is_array()) s = j.empty() ? "[]" : "[...]";
  else s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max_len) s = s.substr(0, max_len) + "...";
  return s;
}

}  // namespace gpuguard::engine
