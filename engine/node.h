#pragma once
// A node of a loaded document (engine/positions.h), read the way engine/json.h reads the engine's
// JSON: the same helper names (member, path, string_at, as_int, int_at, bool_at, brief) and, on the
// node, the names nlohmann's values answer to (is_object(), size(), items(), ...), so that code
// written against `const json*` / `const json&` reads a document by changing its types. A Node is
// two words, passed by value; an absent one (a member that is not there) is false, and `->` and
// `*` reach the node itself, so it stands where a `const json*` did.
//
// Reading the document instead of a JSON tree made from it is what makes the tree unnecessary:
// no allocation per value to make and free (the document is two buffers).

#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/positions.h"
#include "engine/types.h"

namespace gpuguard::engine {

class Node {
 public:
  using Type = PositionIndex::Type;

  Node() = default;
  Node(const PositionIndex* doc, PositionIndex::NodeId id) : doc_(doc), id_(id) {}

  // Present (false for a member that is not there).
  explicit operator bool() const { return doc_ != nullptr; }
  const Node* operator->() const { return this; }
  const Node& operator*() const { return *this; }

  // An absent node answers as null does (size 0, no entries), so reading one never faults.
  [[nodiscard]] Type type() const { return doc_ ? doc_->type(id_) : Type::null; }
  [[nodiscard]] bool is_null() const { return type() == Type::null; }
  [[nodiscard]] bool is_boolean() const { return type() == Type::boolean; }
  [[nodiscard]] bool is_number_integer() const { return type() == Type::integer; }
  [[nodiscard]] bool is_number_float() const { return type() == Type::floating; }
  [[nodiscard]] bool is_number() const { return is_number_integer() || is_number_float(); }
  [[nodiscard]] bool is_string() const { return type() == Type::string; }
  [[nodiscard]] bool is_object() const { return type() == Type::mapping; }
  [[nodiscard]] bool is_array() const { return type() == Type::sequence; }
  [[nodiscard]] bool is_structured() const { return is_object() || is_array(); }

  // As nlohmann counts: entries or items; 0 for null, 1 for any other scalar.
  [[nodiscard]] size_t size() const;
  [[nodiscard]] bool empty() const { return size() == 0; }

  // The value; a default (false, 0, "") when the node is of another type.
  [[nodiscard]] std::string_view str() const { return is_string() ? doc_->string(id_) : std::string_view(); }
  [[nodiscard]] bool boolean() const { return is_boolean() && doc_->boolean(id_); }
  [[nodiscard]] int64_t integer() const { return is_number_integer() ? doc_->integer(id_) : 0; }
  // An integer or a float, as a double.
  [[nodiscard]] double number() const;

  // A mapping's entry (absent when there is none, or this is not a mapping).
  [[nodiscard]] Node operator[](std::string_view key) const;
  // A sequence's i-th item (absent past the end); found by walking to it.
  [[nodiscard]] Node at(size_t i) const;

  // The key of a mapping's entry ("" for anything else).
  [[nodiscard]] std::string_view key() const { return doc_ ? doc_->key_of(id_) : std::string_view(); }
  [[nodiscard]] Pos pos() const { return doc_ ? doc_->pos(id_) : Pos{}; }

  // The entries of a mapping or the items of a sequence, in document order: `for (Node item :
  // seq)` or `for (auto [key, value] : map.items())`. nlohmann's objects iterate in key order; a
  // reader whose output depends on the order sorts.
  class iterator {
   public:
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(PositionIndex::Children::iterator it, const PositionIndex* doc) : it_(it), doc_(doc) {}
    Node operator*() const { return Node(doc_, (*it_).node); }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& o) const { return it_ == o.it_; }

   private:
    PositionIndex::Children::iterator it_;
    const PositionIndex* doc_ = nullptr;
  };
  [[nodiscard]] iterator begin() const;
  [[nodiscard]] iterator end() const;

  // A mapping's entries with their keys (none for anything else).
  [[nodiscard]] class NodeEntries items() const;

  // The engine's JSON of this node (for a fix's value, a patch, a message).
  [[nodiscard]] json to_json() const { return doc_ ? doc_->json_of(id_) : json(); }

  [[nodiscard]] const PositionIndex* doc() const { return doc_; }
  [[nodiscard]] PositionIndex::NodeId id() const { return id_; }
  // The same node of the same document.
  bool operator==(const Node& o) const = default;

 private:
  const PositionIndex* doc_ = nullptr;
  PositionIndex::NodeId id_ = 0;
};

// An entry of a mapping, as Node::items() yields it.
struct NodeEntry {
  std::string_view key;
  Node value;
};

class NodeEntries {
 public:
  class iterator {
   public:
    using value_type = NodeEntry;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(Node::iterator it) : it_(it) {}
    NodeEntry operator*() const {
      Node n = *it_;
      return NodeEntry{n.key(), n};
    }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& o) const { return it_ == o.it_; }

   private:
    Node::iterator it_;
  };
  explicit NodeEntries(Node n) : n_(n) {}
  [[nodiscard]] iterator begin() const { return iterator(n_.begin()); }
  [[nodiscard]] iterator end() const { return iterator(n_.end()); }

 private:
  Node n_;
};

inline NodeEntries Node::items() const { return NodeEntries(is_object() ? *this : Node()); }

// The engine/json.h helpers, for documents.
[[nodiscard]] Node member(Node n, std::string_view key);
[[nodiscard]] Node path(Node n, std::initializer_list<std::string_view> keys);
[[nodiscard]] std::optional<std::string_view> string_at(Node n, std::string_view key);
// An integer, also when written as an integral float (`replicas: 2.0`).
[[nodiscard]] std::optional<int64_t> as_int(Node n);
[[nodiscard]] std::optional<int64_t> int_at(Node n, std::string_view key);
[[nodiscard]] std::optional<bool> bool_at(Node n, std::string_view key);
// A short, single-line rendering for messages, as brief(const json&) renders the same value.
[[nodiscard]] std::string brief(Node n, size_t max_len = 60);
// A mapping's entries in key order (bytewise, as the engine's JSON objects keep their members):
// for a reader whose result depends on the order, which a document keeps as written.
[[nodiscard]] std::vector<NodeEntry> sorted_items(Node n);
// Equal values, as nlohmann's == compares JSON values: numbers by value (1 == 1.0), a mapping's
// entries whatever their order.
[[nodiscard]] bool same_value(Node a, Node b);

}  // namespace gpuguard::engine
