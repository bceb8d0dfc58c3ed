#include "rules/dra/fields.h"

#include <algorithm>

#include "engine/dra.h"

namespace gpuguard::rules::dra {

std::string field_path(std::string_view pointer) {
  std::string out;
  out.reserve(pointer.size() + 8);
  size_t at = 0;
  while (at < pointer.size()) {
    if (pointer[at] == '/') ++at;
    const size_t end = std::min(pointer.find('/', at), pointer.size());
    std::string_view seg = pointer.substr(at, end - at);
    const bool index = !seg.empty() && seg.find_first_not_of("0123456789") == std::string_view::npos;
    if (index) {
      out.append("[").append(seg).append("]");
    } else {
      if (!out.empty()) out += '.';
      for (size_t i = 0; i < seg.size(); ++i) {  // JSON pointer escapes: ~1 is '/', ~0 is '~'
        if (seg[i] == '~' && i + 1 < seg.size() && (seg[i + 1] == '0' || seg[i + 1] == '1')) {
          out += seg[i + 1] == '1' ? '/' : '~';
          ++i;
        } else {
          out += seg[i];
        }
      }
    }
    at = end;
  }
  return out;
}

bool is_dns1123_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t dot = std::min(s.find('.', start), s.size());
    std::string_view label = s.substr(start, dot - start);
    if (label.empty()) return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!alnum(label.front()) || !alnum(label.back())) return false;
    for (char c : label)
      if (!alnum(c) && c != '-') return false;
    if (dot == s.size()) break;
    start = dot + 1;
  }
  return true;
}

std::optional<ClaimShape> claim_shape(const engine::Object& obj) {
  if (obj.gvk.group != engine::kResourceGroup) return std::nullopt;
  const std::string& v = obj.gvk.version;
  if (v == "v1" || v == "v1beta2") return ClaimShape::exactly;
  if (v == "v1beta1" || v == "v1alpha3") return ClaimShape::flat;
  return std::nullopt;
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out;
  out.reserve(std::min(s.size(), kMax) + 8);
  out += '"';
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const char c = s[i];
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';
      continue;
    }
    out += c;
  }
  if (s.size() > kMax) out += "...";
  out += '"';
  return out;
}

}  // namespace gpuguard::rules::dra
