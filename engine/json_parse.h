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
// test and fuzz target hold the two to the same answer. One exception: a text with a NUL byte is
// not JSON (RFC 8259 allows none outside strings, and one inside must be escaped), where nlohmann's
// lexer takes the NUL for the end of its input and accepts `{...}\0<anything>` as the object
// (nlohmann/json#1095, #5530; Go's encoding/json, the API server's reader, refuses it).

#include <cstddef>
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

// An upper bound on the nodes of the document a JSON text holds (engine/positions.h: one node per
// value, a container's included; a key is kept on its value's node), in one pass over the text with
// strings skipped: 1 + the commas + the non-empty arrays and objects outside strings. Exact for any
// JSON text that the fast reader reads (every value is a node), so for an array of scalars too;
// above the count when keys are written twice (nlohmann keeps the last). Any text has one, JSON or
// not; it is at least 1. About 8 instructions a byte (callgrind: 8.5 k for the 1.1 KB of
// bench/pgo-review.json, against 28 k for parse_json_document of it); no JSON text holds more than
// size / 2 + 1 nodes, which costs nothing to know.
[[nodiscard]] size_t json_node_bound(std::string_view text);

// A JSON text read straight into a document (engine/positions.h; its nodes have no positions),
// for the webhook: the AdmissionReview's fields and its objects read through engine::Node, with no
// JSON tree made. The document holds what parse_json would give (integers beyond int64 as floats,
// as PositionIndex::from_json makes them); the fast reader reads the shapes Kubernetes sends, and
// anything else goes through nlohmann's parser into the same document. `too_deep`: the containers
// nest deeper than `max_depth`; `too_large`: json_node_bound(text) is over `max_nodes` (or the
// text is 2 GiB or more, past the document's 32-bit offsets); each is
// decided before a document is made, of a text that is not JSON too (a text over 64 KiB, or one
// whose size allows more nodes than max_nodes, is measured by one pass first; a smaller one's
// depth is told by the fast reader as it reads, or by that pass before nlohmann reads it).
// `invalid`: not JSON. Bytes other than JSON white space after the value make the text invalid,
// a NUL byte too (nlohmann's lexer takes a NUL for the end of its input and would read
// `{...}\0<anything>` as the object: nlohmann/json#1095, #5530; Go's encoding/json, which the API
// server reads with, refuses it).
//
// Memory: the node array is reserved once and never grows. A text over 64 KiB is measured first
// and its array reserved at json_node_bound(text); a smaller one is not measured (unless max_nodes
// is below size / 2 + 1) and its array is reserved at size / 2 + 1 nodes, which no JSON text of
// that size exceeds (at most 32,769 nodes, 1.5 MiB, of which only the pages of the nodes made are
// touched). The text buffer is reserved at the text's size (keys and strings, decoded, are never
// longer). So a document takes at most max(json_node_bound(text), min(size / 2 + 1, 32,769)) ×
// sizeof(PositionIndex::Node) (48) + text.size() bytes, on both paths: nlohmann's feeds the
// document from its SAX events, without a JSON tree. The worst 8 MiB AdmissionReviews (8,388,606
// bytes, the array in request.object.spec.x of a Pod), parsed and evaluated as the webhook does
// (peak RSS of a driver above its baseline of 47 MiB, getrusage and /usr/bin/time -v;
// RelWithDebInfo, jemalloc; before: the reader of commit 2f30788, whose node array started at
// size / 24 and doubled):
//
// | body                                 | nodes     | before                          | after                             |
// |--------------------------------------|-----------|---------------------------------|-----------------------------------|
// | `[0,0,…]`                            | 4,194,131 | 444 MiB: 111 B/node, 55.5 B/byte | 194 MiB: 48.6 B/node, 24.3 B/byte |
// | `["","",…]`                          | 2,796,097 | 248 MiB: 93 B/node, 31.0 B/byte  | 130 MiB: 48.9 B/node, 16.3 B/byte |
// | `[{"a":{}},…]`                       | 1,864,073 | 206 MiB: 116 B/node, 25.8 B/byte | 88 MiB: 49.7 B/node, 11.0 B/byte  |
// | `[0,0,…]` after a BOM (nlohmann's)   | 4,194,131 | 697 MiB: 174 B/node, 87.1 B/byte | 194 MiB: 48.6 B/node, 24.3 B/byte |
//
// (the 8 MiB of text is read into its own buffer first and counted in the baseline.) The webhook
// bounds a request's memory with json_node_bound and max_nodes before the document is made.
enum class JsonDocumentRead : uint8_t { read, too_deep, invalid, too_large };
[[nodiscard]] JsonDocumentRead parse_json_document(std::string_view text, unsigned max_depth,
                                                   std::shared_ptr<const PositionIndex>& out,
                                                   size_t max_nodes = SIZE_MAX);
// The fast reader alone (as parse_json_fast): true with `out` set when it read `text`.
[[nodiscard]] bool parse_json_document_fast(std::string_view text, std::shared_ptr<const PositionIndex>& out,
                                            unsigned* depth = nullptr);

// Equal values of equal types: nlohmann's == also takes 1u == 1 and 0.0 == -0.0 (two discarded
// values are identical, so two refusals agree).
[[nodiscard]] bool identical(const json& a, const json& b);

}  // namespace gpuguard::engine
