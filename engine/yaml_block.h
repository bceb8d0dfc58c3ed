#pragma once
// A reader for the block-style YAML that Kubernetes manifests are written in, which gives the
// events libyaml's parser would give for the same document, several times faster (libyaml spends
// about 2,700 instructions per scalar, most of it scanning plain scalars a character at a time).
//
// It reads a subset and refuses the rest, leaving that document to libyaml (engine/yaml_load.cpp):
// block mappings and sequences indented with spaces (indentless sequences and compact mappings in
// sequence items included); single-line plain scalars; single-line quoted scalars without escapes
// ('' or \); literal block scalars (`|`, `|-`) whose content starts on the line after the header;
// the empty flow collections `{}` and `[]`; comments. It refuses, among others: tabs, carriage
// returns and any byte above 0x7F (libyaml counts columns in characters and knows more line
// breaks), anchors, aliases, tags, folded block scalars, other flow collections, multi-line plain
// or quoted scalars, `?` keys, keys over 1,024 bytes, a scalar or nothing but comments as the root,
// and anything libyaml would report as an error. What it accepts, it must read exactly as libyaml:
// tests/unit/yaml_block_test.cpp compares the two on every YAML file of the tests, the examples
// and the corpus and on mutations of them, and the `yaml` fuzz target does the same.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuguard::engine {

struct BlockEvent {
  enum class Kind : uint8_t { scalar, mapping, sequence, end };
  Kind kind = Kind::scalar;
  bool plain = false;  // a plain scalar (resolved by YAML 1.1 rules); else quoted or literal: a string
  bool owned = false;  // its text is in BlockEvents::arena, else in the document's text
  uint32_t line = 0;   // where it starts, 0-based from the document's first line (libyaml's marks;
                       // engine/json_stream.h's: from the text's first line)
  uint32_t col = 0;    // 0-based
  uint32_t offset = 0; // a scalar's text
  uint32_t size = 0;
};

struct BlockEvents {
  std::vector<BlockEvent> events;
  std::string arena;  // the text of literal block scalars

  [[nodiscard]] std::string_view text(const BlockEvent& e, std::string_view document) const {
    return (e.owned ? std::string_view(arena) : document).substr(e.offset, e.size);
  }
  void clear() {
    events.clear();
    arena.clear();
  }
};

enum class BlockRead : uint8_t {
  refused,      // outside the subset (or not valid YAML): leave it to libyaml
  no_document,  // only blank and comment lines, no `---`: libyaml gives no document
  document,     // `events` are the document's (between libyaml's DOCUMENT-START and -END)
};

// Reads one document: `text` starts at a line start and ends before the next line that starts
// with `---` (or at the end of the stream); it may itself start with a `---` line. The caller has
// made sure no line of the stream starts with `...` or `%` (document end markers and directives
// are left to libyaml, with the stream around them).
[[nodiscard]] BlockRead read_block_document(std::string_view text, BlockEvents& out);

}  // namespace gpuguard::engine
