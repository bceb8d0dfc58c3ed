#pragma once
// JSON text → the engine's JSON model, for the hot paths (an AdmissionReview per request, the API
// server's lists and watch events).
//
// `parse_json(text)` returns what `json::parse(text, nullptr, false)` returns — the same value,
// with the same types (a non-negative integer is number_unsigned, a negative one number_integer,
// the last of duplicate keys wins), or a discarded value for text that is not JSON — about three
// times faster. It reads the common shapes itself and hands anything else (a BOM, an integer
// of more than 18 digits, a float outside double's range, nesting past 512 levels, any
// error) to nlohmann, so what nlohmann accepts and rejects stays the contract: a differential
// test and fuzz target hold the two to the same answer.

#include <cstdint>
#include <memory>
#include <string_view>

#include "engine/json.h"
#include "engine/positions.h"

namespace gpuguard::engine {

[[nodiscard]] json parse_json(std::string_view text);

// parse_json with a bound on nesting (the webhook's limit): false when the document's containers
// nest deeper than `max_depth`, told by the fast reader as it reads; a text it leaves to nlohmann
// is measured by a pass over it first, JSON or not, so a hostile one is refused before it is built.
// Otherwise true, with `out` as parse_json gives it (discarded for text that is not JSON).
[[nodiscard]] bool parse_json_within(std::string_view text, unsigned max_depth, json& out);

// The fast reader alone: true with `out` set when it read `text`, false when it leaves the text to
// nlohmann (tests check that the shapes Kubernetes sends take this path). With `depth`, also how
// deeply the document's containers nest (0 for a scalar, 1 for a flat object or array), which
// parse_json_within bounds without a second pass over the text.
[[nodiscard]] bool parse_json_fast(std::string_view text, json& out, unsigned* depth = nullptr);

// A JSON text read straight into a document (engine/positions.h; its nodes have no positions),
// for the webhook: the AdmissionReview's fields and its objects read through engine::Node, with no
// JSON tree made. The document holds what parse_json would give (integers beyond int64 as floats,
// as PositionIndex::from_json makes them); the fast reader reads the shapes Kubernetes sends, and
// anything else goes through nlohmann and from_json. `too_deep`: the containers nest deeper than
// `max_depth` (no document is made); `invalid`: not JSON.
enum class JsonDocumentRead : uint8_t { read, too_deep, invalid };
[[nodiscard]] JsonDocumentRead parse_json_document(std::string_view text, unsigned max_depth,
                                                   std::shared_ptr<const PositionIndex>& out);
// The fast reader alone (as parse_json_fast): true with `out` set when it read `text`.
[[nodiscard]] bool parse_json_document_fast(std::string_view text, std::shared_ptr<const PositionIndex>& out,
                                            unsigned* depth = nullptr);

// Equal values of equal types: nlohmann's == also takes 1u == 1 and 0.0 == -0.0 (two discarded
// values are identical, so two refusals agree).
[[nodiscard]] bool identical(const json& a, const json& b);

}  // namespace gpuguard::engine
