#include "engine/json_write.h"

#include <cstdint>

#include "engine/json.h"
#include "engine/json_bytes.h"

namespace gpuguard::engine {

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (a byte ≥ 0x80), or 0 when it is not
// one: a bad lead or continuation byte, truncated, overlong, a surrogate or beyond U+10FFFF (what
// nlohmann's decoder rejects too).
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return n;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  const size_t start = out.size();
  out += '"';
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size(); ++i) {
    i = static_cast<size_t>(plain_json_bytes(s.data() + i, s.data() + s.size()) - s.data());
    if (i == s.size()) break;
    const auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x80) {
      if (const size_t n = utf8_sequence(s, i)) {  // written as it is, like nlohmann does
        i += n - 1;
        continue;
      }
      // Invalid UTF-8: nlohmann's writer, which replaces it the way the rest of the output does.
      out.resize(start);
      out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
    out.append(s, run, i - run);
    run = i + 1;
    switch (u) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[u >> 4];
        out += kHex[u & 0xF];
    }
  }
  out.append(s, run, std::string_view::npos);
  out += '"';
}

}  // namespace gpuguard::engine
