#include "engine/json_write.h"

#include <charconv>
#include <cstdint>

#include "engine/json.h"
#include "engine/json_bytes.h"

namespace gpuguard::engine {

void append_json_string(std::string& out, std::string_view s, json::error_handler_t on_invalid) {
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
      // Invalid UTF-8: nlohmann's writer, which replaces it, leaves it out or throws.
      out.resize(start);
      out += json(std::string(s)).dump(-1, ' ', false, on_invalid);
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

namespace {

template <class Int>
void append_integer(std::string& out, Int v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

void append_json(std::string& out, const json& value, json::error_handler_t on_invalid) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key, on_invalid);
        out += ':';
        append_json(out, member, on_invalid);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& item : value.get_ref<const json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json(out, item, on_invalid);
      }
      out += ']';
      return;
    }
    case json::value_t::string: append_json_string(out, value.get_ref<const std::string&>(), on_invalid); return;
    case json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case json::value_t::null: out += "null"; return;
    case json::value_t::number_integer: append_integer(out, value.get<json::number_integer_t>()); return;
    case json::value_t::number_unsigned: append_integer(out, value.get<json::number_unsigned_t>()); return;
    default: out += value.dump(-1, ' ', false, on_invalid);  // floats, binary, discarded
  }
}

}  // namespace gpuguard::engine
