#pragma once
// Source positions for every node of a loaded document, addressed by JSON pointer.
//
// The index mirrors the shape of the JSON body: `root()` is the document's root node, each mapping node
// lists its keys (with the key's own position) and each sequence node its items. Aliased subtrees
// share nodes, so an alias costs one child entry, not a copy.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/types.h"

namespace gpuguard::engine {

class PositionIndex {
 public:
  using NodeId = uint32_t;

  // A mapping entry or a sequence item. A key is kept in the index's key text (key()), not in
  // a string of its own: a document's keys take one buffer.
  struct Child {
    uint32_t key_offset = 0;  // mapping key in the key text; empty for sequence items
    uint32_t key_size = 0;
    Pos key_pos;  // position of the key (or of the sequence item)
    NodeId node = 0;
  };

  // Appends a mapping key to the key text; a Child with the returned offset and size names it.
  [[nodiscard]] uint32_t add_key(std::string_view key);
  [[nodiscard]] std::string_view key(const Child& c) const { return std::string_view(keys_).substr(c.key_offset, c.key_size); }

  // Appends a node with its children, returns its id. Mapping keys must be unique (the loader
  // resolves duplicates before it adds the node).
  NodeId add(Pos pos, bool is_map, std::span<const Child> children);
  // A scalar leaf.
  NodeId add_leaf(Pos pos) { return add(pos, false, {}); }

  // Position of the node a JSON pointer (RFC 6901) names, relative to `root`. A mapping entry
  // resolves to its key's position, a sequence item to the item. A pointer into a part that does
  // not exist resolves to the deepest existing ancestor, so a finding about a missing field points
  // at its parent.
  [[nodiscard]] Pos resolve(std::string_view pointer, NodeId root) const;
  [[nodiscard]] Pos resolve(std::string_view pointer) const { return resolve(pointer, root_); }
  // Node id for a pointer, if every token exists.
  [[nodiscard]] bool find(std::string_view pointer, NodeId root, NodeId& out) const;
  [[nodiscard]] NodeId root() const { return root_; }
  void set_root(NodeId n) { root_ = n; }
  [[nodiscard]] Pos pos(NodeId n) const { return n < nodes_.size() ? nodes_[n].pos : Pos{}; }
  [[nodiscard]] std::span<const Child> children(NodeId n) const {
    if (n >= nodes_.size()) return {};
    return {children_.data() + nodes_[n].first, nodes_[n].count};
  }
  [[nodiscard]] size_t size() const { return nodes_.size(); }

 private:
  struct Node {
    Pos pos;
    bool is_map = false;
    uint32_t first = 0;  // into children_
    uint32_t count = 0;
  };
  const Child* child(NodeId n, std::string_view token) const;
  std::vector<Node> nodes_;
  std::vector<Child> children_;
  std::string keys_;
  NodeId root_ = 0;
};

// RFC 6901 helpers.
[[nodiscard]] std::string pointer_escape(std::string_view token);
// The same, appended to `out` (a pointer built token by token without a string per token).
void append_pointer_escaped(std::string& out, std::string_view token);
[[nodiscard]] std::string pointer_unescape(std::string_view token);
// Appends "/" + escaped token.
[[nodiscard]] std::string pointer_join(std::string_view base, std::string_view token);
[[nodiscard]] std::string pointer_join(std::string_view base, size_t index);
// Splits a pointer into unescaped tokens ("" → none).
[[nodiscard]] std::vector<std::string> pointer_tokens(std::string_view pointer);

}  // namespace gpuguard::engine
