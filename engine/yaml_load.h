#pragma once
// YAML (and JSON) text → documents (values and source positions), with Kubernetes' YAML semantics.
//
// Kubernetes reads YAML with sigs.k8s.io/yaml, a go-yaml v2 fork that resolves plain scalars by
// YAML 1.1 rules and converts the result to JSON. This loader drives libyaml's event API (go-yaml
// is a port of libyaml, so the grammar is the same) and resolves scalars, keys, merge keys and
// aliases the way that reader does. See facts/webhook.md §4. Documents written in the block style
// of manifests are read by engine/yaml_block.h's reader instead, which gives the events libyaml
// would give in about a fifth of its instructions; every document it does not take (anchors,
// tags, folded scalars, an error, ...) is read by libyaml, so libyaml's grammar and messages stay
// the contract.
//
// Hostile input is bounded: alias expansion has a node budget, nesting depth and scalar size are
// capped, and an error in one document is reported with its position while loading goes on with
// the next document.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/positions.h"
#include "engine/types.h"

namespace gpuguard::engine {

struct YamlLimits {
  uint32_t max_depth = 256;                    // nesting of mappings and sequences
  size_t max_scalar_bytes = 16u << 20;         // one scalar (a Kubernetes object is ≤ 3 MiB)
  size_t max_document_bytes = 256u << 20;      // one document (a `kubectl get -o yaml` List)
  size_t alias_node_budget = 100'000;          // nodes that aliases may add to a document...
  size_t alias_node_ratio = 10;                // ...plus this many per node written out
  // Keys and values of one document, written out or copied by aliases. A value is a node of 48
  // bytes, so this bounds a document's nodes to 768 MiB. `kubectl get -o yaml` and `-o json`
  // write 15-26 bytes of text per key or value, so a List within max_document_bytes stays about
  // within it; text dense with tiny scalars (`[0,0,...]`: 24 times its size in nodes) is refused.
  size_t max_document_nodes = 16u << 20;
  // Documents in the block style of manifests are read by engine/yaml_block.h's reader, which
  // gives libyaml's events faster; the rest by libyaml. Off: every document by libyaml (the tests
  // compare the two).
  bool block_reader = true;
};

struct YamlDocument {
  // The document: its values and their positions (engine/node.h reads it).
  std::shared_ptr<PositionIndex> positions;
  Pos start;                                 // position of the root node
  uint32_t index = 0;                        // 0-based index of the document in the stream

  // The document as JSON, made on each call.
  [[nodiscard]] json body() const { return positions->json_of(positions->root()); }
};

// Loads every document of `text`. Each document that loads is passed to `on_document`; each
// that does not yields a diagnostic (file:line:col and what is wrong) and is skipped. Empty
// documents (only comments, or a bare `---`) are skipped silently. Never throws on bad input.
// `first_line` is the number of lines before `text` in its file (for a part of a larger file).
// Returns the number of document indices used.
uint32_t load_yaml_stream(std::string_view text, std::string_view file, const YamlLimits& limits,
                          const std::function<void(YamlDocument&&)>& on_document, std::vector<Diagnostic>& diagnostics,
                          uint32_t first_line = 0);

// The same for a JSON text (engine/json_stream.h): each top-level value of the stream is a
// document, read as JSON, not as YAML. From a value that is not JSON on, the rest is read as YAML,
// as kubectl's YAMLOrJSONDecoder does (a flow mapping `{kind: Pod}` on stdin, JSON objects followed
// by YAML documents). If the rest is not YAML objects either, the JSON error is reported with its
// position and ends the stream; the documents before it are kept.
// `yaml_after_json` false: JSON only (the tests hold it to nlohmann).
uint32_t load_json_stream(std::string_view text, std::string_view file, const YamlLimits& limits,
                          const std::function<void(YamlDocument&&)>& on_document, std::vector<Diagnostic>& diagnostics,
                          uint32_t first_line = 0, bool yaml_after_json = true);

// Plain-scalar resolution as go-yaml v2 does it (exposed for tests).
enum class ScalarType : uint8_t { null, boolean, integer, floating, string, merge };
struct ResolvedScalar {
  ScalarType type = ScalarType::string;
  bool b = false;
  int64_t i = 0;
  double d = 0;
};
[[nodiscard]] ResolvedScalar resolve_plain_scalar(std::string_view s);

}  // namespace gpuguard::engine
