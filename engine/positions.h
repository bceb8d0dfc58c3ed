#pragma once
// A loaded document: every node's value and source position, addressed by JSON pointer.
//
// The document is one array of nodes in document order (a node's subtree follows it, and the node
// says where the subtree ends) and one text buffer holding its keys and strings: two allocations
// however large the document, freed at once. `root()` is the document's root node; a mapping's
// children carry their keys (with the key's own position), a sequence's its items. An aliased
// subtree is copied where the alias stands (the alias budget counts the copies' nodes); an entry
// that a later one of the same key replaced (a duplicate key, or a merge key's) stays in the array,
// marked, and is skipped. json_of() makes the engine's JSON of any node.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/types.h"

namespace gpuguard::engine {

class PositionIndex {
 public:
  PositionIndex() = default;
  // A copy holds the nodes and the text without spare room (the evaluation compacts a kept
  // object's document so); the lookup of its large containers is made again when asked.
  PositionIndex(const PositionIndex& other) : nodes_(other.nodes_), text_(other.text_), root_(other.root_) {}
  PositionIndex& operator=(const PositionIndex&) = delete;
  ~PositionIndex();

  using NodeId = uint32_t;
  static constexpr NodeId kNoNode = UINT32_MAX;
  enum class Type : uint8_t { null, boolean, integer, floating, string, mapping, sequence };

  // A live mapping entry or sequence item, as children() yields it. A key is kept in the
  // document's text (key()), not in a string of its own.
  struct Child {
    uint32_t key_offset = 0;  // mapping key in the text; empty for sequence items
    uint32_t key_size = 0;
    Pos key_pos;  // position of the key (or of the sequence item)
    NodeId node = 0;
  };

  // The live children of a mapping or sequence, in document order (a key written twice stands
  // where its last value was written; a sequence finds its i-th item by walking to it).
  class Children {
   public:
    class iterator {
     public:
      using value_type = Child;
      using difference_type = std::ptrdiff_t;
      iterator() = default;
      iterator(const PositionIndex* idx, NodeId n, NodeId last) : idx_(idx), n_(n), last_(last) { skip(); }
      Child operator*() const { return idx_->child_of(n_); }
      iterator& operator++() {
        n_ = idx_->nodes_[n_].end;
        skip();
        return *this;
      }
      iterator operator++(int) {
        iterator old = *this;
        ++*this;
        return old;
      }
      bool operator==(const iterator& o) const { return n_ == o.n_; }

     private:
      void skip();
      const PositionIndex* idx_ = nullptr;
      NodeId n_ = 0;
      NodeId last_ = 0;
    };
    Children() = default;
    Children(const PositionIndex* idx, NodeId first, NodeId last, uint32_t count)
        : idx_(idx), first_(first), last_(last), count_(count) {}
    [[nodiscard]] iterator begin() const { return idx_ ? iterator(idx_, first_, last_) : iterator(); }
    [[nodiscard]] iterator end() const { return idx_ ? iterator(idx_, last_, last_) : iterator(); }
    [[nodiscard]] size_t size() const { return count_; }
    [[nodiscard]] bool empty() const { return count_ == 0; }

   private:
    const PositionIndex* idx_ = nullptr;
    NodeId first_ = 0, last_ = 0;
    uint32_t count_ = 0;
  };

  [[nodiscard]] std::string_view key(const Child& c) const { return std::string_view(text_).substr(c.key_offset, c.key_size); }

  // Position of the node a JSON pointer (RFC 6901) names, relative to `root`. A mapping entry
  // resolves to its key's position, a sequence item to the item. A pointer into a part that does
  // not exist resolves to the deepest existing ancestor, so a finding about a missing field points
  // at its parent.
  [[nodiscard]] Pos resolve(std::string_view pointer, NodeId root) const;
  [[nodiscard]] Pos resolve(std::string_view pointer) const { return resolve(pointer, root_); }
  // Node id for a pointer, if every token exists.
  [[nodiscard]] bool find(std::string_view pointer, NodeId root, NodeId& out) const;
  [[nodiscard]] NodeId root() const { return root_; }
  [[nodiscard]] Pos pos(NodeId n) const { return n < nodes_.size() ? nodes_[n].pos : Pos{}; }
  [[nodiscard]] Children children(NodeId n) const;
  // Nodes held: live ones, and the entries later ones of the same key replaced.
  [[nodiscard]] size_t size() const { return nodes_.size(); }
  // The bytes its two buffers hold (what was reserved for them: the readers of JSON reserve their
  // bounds, engine/json_parse.h), and the bytes of one node.
  [[nodiscard]] size_t held_bytes() const { return nodes_.capacity() * sizeof(Node) + text_.capacity(); }
  [[nodiscard]] static constexpr size_t node_bytes() { return sizeof(Node); }

  // The values (the loader keeps each scalar here; json_of makes the engine's JSON of a node).
  [[nodiscard]] Type type(NodeId n) const { return nodes_[n].type; }
  [[nodiscard]] std::string_view string(NodeId n) const {
    return std::string_view(text_).substr(nodes_[n].v.s.offset, nodes_[n].v.s.size);
  }
  [[nodiscard]] bool boolean(NodeId n) const { return nodes_[n].v.b; }
  [[nodiscard]] int64_t integer(NodeId n) const { return nodes_[n].v.i; }
  [[nodiscard]] double floating(NodeId n) const { return nodes_[n].v.d; }
  // Entries or items of a mapping or sequence.
  [[nodiscard]] uint32_t count(NodeId n) const { return nodes_[n].count; }
  // A mapping entry's key ("" for anything else: a sequence item, the root).
  [[nodiscard]] std::string_view key_of(NodeId n) const {
    return std::string_view(text_).substr(nodes_[n].key_offset, nodes_[n].key_size);
  }
  // The entry of mapping `n` with this key, or the i-th item of sequence `n`; kNoNode if none.
  // A mapping of fewer than kLookupFrom entries is searched entry by entry, a sequence walked item
  // by item to the i-th (each step passes a subtree: one hop); in a larger one, the entry is found
  // by a binary search of its keys and the item at once, in a lookup of the document's large
  // containers made on the first such call (one pass over the nodes, and a sort of each large
  // mapping's keys: n log n; 4 bytes per entry or item of a large container), so that looking up
  // every child of a container (a finding's pointer into each of 20,000 containers) is not
  // quadratic in its size.
  [[nodiscard]] NodeId entry(NodeId n, std::string_view key) const;
  [[nodiscard]] NodeId item(NodeId n, size_t i) const;
  static constexpr uint32_t kLookupFrom = 32;
  [[nodiscard]] json json_of(NodeId n) const;

  // Every live node of the subtree at `n` with its position (and a mapping entry's key with the
  // key's), written out: two documents read alike give the same text (the tests and fuzz targets
  // compare loads with it).
  void describe(NodeId n, std::string& out) const;

  // A document of a JSON value (an AdmissionReview's object, an object read from the API server):
  // its nodes have no positions.
  [[nodiscard]] static std::shared_ptr<PositionIndex> from_json(const json& value);

 private:
  friend class DocumentBuilder;     // engine/yaml_load.cpp
  friend class JsonDocumentReader;  // engine/json_parse.cpp
  friend class JsonSaxDocumentBuilder;  // engine/json_parse.cpp

  static constexpr uint8_t kReplaced = 1;  // a mapping entry a later one of the same key replaced
  static constexpr uint8_t kMerged = 2;    // a mapping entry that came from a merge key (`<<`)
  // One node; a document is its nodes in document order (a node's subtree follows it).
  struct Node {
    Type type = Type::null;
    uint8_t flags = 0;
    NodeId end = 0;         // one past the last node of the subtree
    uint32_t count = 0;     // live children of a mapping or sequence
    uint32_t key_offset = 0;  // a mapping entry's key in text_
    uint32_t key_size = 0;
    Pos pos;
    Pos key_pos;            // a mapping entry's key; a sequence item's own position
    union Value {
      bool b;
      int64_t i;
      double d;
      struct {
        uint32_t offset;
        uint32_t size;
      } s;
    } v{};
  };
  [[nodiscard]] Child child_of(NodeId n) const {
    const Node& node = nodes_[n];
    return Child{node.key_offset, node.key_size, node.key_pos, n};
  }
  [[nodiscard]] bool child(NodeId n, std::string_view token, NodeId& out) const;
  void json_into(NodeId n, json& out, std::vector<json::object_t::value_type>& members) const;
  void add_json(const json& value, std::string_view key);

  // The children of the document's large containers (kLookupFrom or more): a sequence's items in
  // order, a mapping's live entries by key. Made once, when a reader first asks (readers on other
  // threads may make it at the same time: one is kept), after the document is complete.
  struct Lookup {
    struct Container {
      NodeId id;
      uint32_t start;  // its children in `children`
      uint32_t size;
    };
    std::vector<Container> containers;  // by id
    std::vector<NodeId> children;
  };
  [[nodiscard]] const Lookup& lookup() const;
  // The live children of large container `n` in the lookup: [first, last).
  void looked_up(NodeId n, const NodeId*& first, const NodeId*& last) const;

  std::vector<Node> nodes_;
  std::string text_;  // keys and strings
  NodeId root_ = 0;
  mutable std::atomic<const Lookup*> lookup_{nullptr};
};

inline void PositionIndex::Children::iterator::skip() {
  while (n_ < last_ && (idx_->nodes_[n_].flags & kReplaced) != 0) n_ = idx_->nodes_[n_].end;
}

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
