#pragma once
// A fix written back into its YAML (or JSON) source as a text edit (`gpuguard fix`): the rules'
// fixes are RFC 6902 operations on an object; this turns each add, replace or remove into an edit
// of the lines it concerns and leaves every other byte as it was (comments, key order, quoting,
// flow style, indentation).
//
// The text is read with libyaml's event API, which gives every node its start and end (its marks)
// and its style (block or flow, plain or quoted). An edit:
// - add a key to a block mapping: a line `key: value` (a collection as indented block lines) at
//   the mapping's indentation, after the line its last entry ends on; to a flow mapping:
//   `, key: value` after its last entry (`,` and a new line at the same indentation when the
//   mapping spans lines, as pretty JSON does);
// - add an item to a block sequence: `- item` at the dash's column after its last item; to a flow
//   sequence: `, item`;
// - replace a scalar: its text (in its quoting style when the new value can be written so);
//   replace a collection, or a scalar by a collection: the value after the key's `:`;
// - remove an entry or item that has its lines to itself (block), or with its comma (flow).
// New block collections follow the document's own indentation step and its sequence style
// (`key:\n- a` or `key:\n  - a`), 2 and indented when it has none. Strings are written plain
// where Kubernetes' YAML reader reads them back as the same string, else double-quoted (always
// quoted in JSON). Nothing here judges whether the result is right: the caller reads the edited
// text again and compares (cli/fix.cpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/types.h"

namespace gpuguard::engine {

// Replace bytes [begin, end) of a text with `text`. Edits at one offset are applied in the order
// of `rank` (lower first), then of their making.
struct TextEdit {
  size_t begin = 0;
  size_t end = 0;
  std::string text;
  int rank = 0;
};

class YamlSource {
 public:
  // Reads `text` (YAML, or JSON when `json` is set: new text is then written as JSON). On a text
  // libyaml does not read, or one in UTF-16, `error()` says why and nothing can be edited.
  YamlSource(std::string_view text, bool json);

  [[nodiscard]] const std::string& error() const { return error_; }
  // The node (a document's root, a List's item) whose value starts at `pos` (1-based line and
  // column, in characters, as the loader's positions); -1 when there is none.
  [[nodiscard]] int node_at(Pos pos) const;
  // Whether the node's subtree has an anchor, an alias or a merge key (`<<`); `where` gets the
  // line of the first.
  [[nodiscard]] bool uses_anchors(int node, uint32_t& where) const;
  // The 1-based line a node starts on.
  [[nodiscard]] uint32_t line_of(int node) const;
  // Appends the edits that make node `root` what `patch` (RFC 6902 add, replace and remove
  // operations, as json_diff makes them) makes of it. False, with `error` (and the 1-based line
  // in `line`), when an operation is not one this can write.
  bool edits_for(int root, const json& patch, std::vector<TextEdit>& out, std::string& error, uint32_t& line) const;

 private:
  enum class Kind : uint8_t { scalar, mapping, sequence, alias };
  enum class Style : uint8_t { plain, single_quoted, double_quoted, block, flow_collection, block_collection };
  struct Node {
    Kind kind = Kind::scalar;
    Style style = Style::plain;
    bool anchor = false;  // has an anchor, a tag, or is a merge key
    size_t start = 0, end = 0;  // bytes
    uint32_t line = 0, col = 0;  // 0-based, characters
    int parent = -1;
    std::string value;         // a scalar's
    std::vector<int> kids;     // mapping: key, value, key, value...; sequence: items
  };
  struct Layout {
    uint32_t step = 2;        // indentation of a nested block mapping
    uint32_t seq_indent = 2;  // of a block sequence under a key (0: `key:\n- item`)
  };

  [[nodiscard]] size_t content_end(int n) const;
  [[nodiscard]] size_t line_start(size_t offset) const;
  [[nodiscard]] size_t after_line(size_t offset) const;
  [[nodiscard]] int child(int n, const std::string& token) const;
  [[nodiscard]] int key_of(int value) const;  // the key node of a mapping's value, -1 if none
  [[nodiscard]] int document_of(int n) const;
  [[nodiscard]] bool in_flow(int n) const;
  [[nodiscard]] std::string scalar(const json& v, bool flow, Style keep = Style::plain) const;
  [[nodiscard]] std::string key_text(const std::string& key, bool flow) const;
  [[nodiscard]] std::string flow_value(const json& v) const;
  void block_lines(const json& v, uint32_t indent, const Layout& layout, std::string& out) const;
  [[nodiscard]] std::string item_text(const json& v, uint32_t dash, uint32_t content, const Layout& layout) const;
  [[nodiscard]] std::string entry_block(const std::string& key, const json& v, uint32_t indent, const Layout& layout) const;
  [[nodiscard]] TextEdit insert_lines(size_t after, std::string lines, int rank) const;
  bool add(int parent, const std::string& token, const json& v, std::vector<TextEdit>& out, std::string& error) const;
  bool replace(int n, const json& v, std::vector<TextEdit>& out, std::string& error) const;
  bool remove(int n, std::vector<TextEdit>& out, std::string& error) const;

  std::string_view text_;
  bool json_ = false;
  std::string eol_ = "\n";
  std::string error_;
  std::vector<Node> nodes_;
  std::vector<int> roots_;          // each document's root
  std::vector<int> mappings_;       // the mappings, in document order (node_at)
  std::vector<Layout> layouts_;     // each document's
};

// `text` with the edits applied (sorted by offset, then rank, then order). nullopt when two edits
// overlap.
[[nodiscard]] std::optional<std::string> apply_edits(std::string_view text, std::vector<TextEdit> edits);

// A unified diff of a file's two texts (`diff -u`, 3 lines of context) that `patch -p1` and `git
// apply` take: `--- a_name` / `+++ b_name` headers, hunks with their line counts, a line that
// ends without a newline followed by `\ No newline at end of file`; carriage returns kept. Empty
// when the texts are equal.
[[nodiscard]] std::string file_diff(std::string_view a, std::string_view b, std::string_view a_name, std::string_view b_name);

}  // namespace gpuguard::engine
