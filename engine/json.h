#pragma once
// The engine's JSON model, and small typed accessors that never throw.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "engine/flat_map.h"

namespace gpuguard::engine {

// nlohmann's JSON with FlatMap objects (engine/flat_map.h): keys sorted as with nlohmann::json's
// std::map, so the same iteration, comparisons, dumps and patches.
using json = nlohmann::basic_json<FlatMap>;

// Member of an object, or nullptr when `j` is not an object or has no such key.
[[nodiscard]] const json* member(const json& j, std::string_view key);
[[nodiscard]] json* member(json& j, std::string_view key);
// Walks a path of keys; nullptr when any step is missing.
[[nodiscard]] const json* path(const json& j, std::initializer_list<std::string_view> keys);

[[nodiscard]] std::optional<std::string_view> string_at(const json& j, std::string_view key);
// An integer, also when written as an integral float (`replicas: 2.0`).
[[nodiscard]] std::optional<int64_t> as_int(const json& j);
[[nodiscard]] std::optional<int64_t> int_at(const json& j, std::string_view key);
[[nodiscard]] std::optional<bool> bool_at(const json& j, std::string_view key);

// Formats a number the way Go's encoding/json does (what the API server would see after
// kubectl's YAML→JSON conversion): `1.0` → "1", `1e21` → "1e+21", `0.000001` → "0.000001".
[[nodiscard]] std::string go_json_number(const json& number);
// strconv.FormatFloat(f, 'g', -1, bits) for bits 32 or 64.
[[nodiscard]] std::string go_format_float_g(double f, int bits);

// Frees what `j` holds, leaves first: nlohmann's destructor first moves every node of a tree onto
// a heap-allocated stack (so that no depth can overflow the call stack), several hundred
// instructions a node. This frees the nodes of the first kDisposeDepth levels in place, and hands
// anything deeper to that destructor. `j` is left an empty object or array, or as it was.
inline constexpr int kDisposeDepth = 64;
void dispose(json& j) noexcept;

// One RFC 6902 operation, {"op": op, "path": path, "value": value}, or without a value (a remove);
// and a patch of one operation. Made member by member, where nlohmann's initializer lists build a
// temporary array for each member and copy it into the object (a few thousand instructions).
[[nodiscard]] json patch_op(std::string_view op, std::string path, json value);
[[nodiscard]] json patch_op(std::string_view op, std::string path);
[[nodiscard]] json patch_of(json op);

// A short, single-line rendering of a JSON value for messages ("1", "\"1.5\"", "{...}").
[[nodiscard]] std::string brief(const json& j, size_t max_len = 60);

}  // namespace gpuguard::engine
