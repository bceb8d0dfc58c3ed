#include "engine/json_write.h"

#include "engine/json.h"

namespace gpuguard::engine {

void append_json_string(std::string& out, std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) {
      out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u != '"' && u != '\\') continue;
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
