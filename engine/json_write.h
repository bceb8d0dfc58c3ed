#pragma once
// Writing JSON strings the way nlohmann's dump(…, ensure_ascii = false, error_handler = replace)
// writes them, without its per-character serializer for the common case: the reports and the
// webhook's answers stream their JSON and must stay byte for byte what dump() gives (tested).

#include <string>
#include <string_view>

#include "engine/json.h"

namespace gpuguard::engine {

// Appends `s` as a JSON string. ASCII is escaped here as nlohmann escapes it (\" \\ \b \f \n \r
// \t, other control characters as \u00xx, DEL as is) and well-formed UTF-8 is written as it is; a
// string with invalid UTF-8 goes through nlohmann with `on_invalid`: replace (what is invalid
// becomes U+FFFD), ignore (it is left out) or strict (nlohmann's type_error 316 is thrown, and `out`
// is as it was).
void append_json_string(std::string& out, std::string_view s,
                        json::error_handler_t on_invalid = json::error_handler_t::replace);

// Appends `value` as JSON, byte for byte what value.dump(-1, ' ', false, on_invalid) writes, or
// throws what it throws (members in the object's order, strings as append_json_string writes them,
// integers in decimal; a float goes through nlohmann, for its shortest round-trip digits and its
// "null" for NaN and infinity). After an exception `out` holds what it held, then the start of
// the value's JSON.
void append_json(std::string& out, const json& value, json::error_handler_t on_invalid = json::error_handler_t::replace);

}  // namespace gpuguard::engine
