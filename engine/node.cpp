#include "engine/node.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuguard::engine {

size_t Node::size() const {
  switch (type()) {
    case Type::null: return 0;
    case Type::mapping:
    case Type::sequence: return doc_->count(id_);
    default: return 1;
  }
}

double Node::number() const {
  if (is_number_integer()) return static_cast<double>(doc_->integer(id_));
  return is_number_float() ? doc_->floating(id_) : 0.0;
}

Node Node::operator[](std::string_view key) const {
  if (!doc_) return {};
  const PositionIndex::NodeId e = doc_->entry(id_, key);
  return e == PositionIndex::kNoNode ? Node() : Node(doc_, e);
}

Node Node::at(size_t i) const {
  if (!doc_) return {};
  const PositionIndex::NodeId e = doc_->item(id_, i);
  return e == PositionIndex::kNoNode ? Node() : Node(doc_, e);
}

Node::iterator Node::begin() const {
  if (!doc_) return {};
  return iterator(doc_->children(id_).begin(), doc_);
}

Node::iterator Node::end() const {
  if (!doc_) return {};
  return iterator(doc_->children(id_).end(), doc_);
}

Node member(Node n, std::string_view key) { return n ? n[key] : Node(); }

Node path(Node n, std::initializer_list<std::string_view> keys) {
  for (auto k : keys) {
    n = member(n, k);
    if (!n) return {};
  }
  return n;
}

std::optional<std::string_view> string_at(Node n, std::string_view key) {
  Node m = member(n, key);
  if (!m || !m.is_string()) return std::nullopt;
  return m.str();
}

std::optional<int64_t> as_int(Node n) {
  if (!n) return std::nullopt;
  if (n.is_number_integer()) return n.integer();
  if (n.is_number_float()) {
    const double d = n.number();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<int64_t> int_at(Node n, std::string_view key) { return as_int(member(n, key)); }

std::optional<bool> bool_at(Node n, std::string_view key) {
  Node m = member(n, key);
  if (!m || !m.is_boolean()) return std::nullopt;
  return m.boolean();
}

std::string brief(Node n, size_t max_len) {
  if (!n) return "null";
  if (n.is_structured()) {
    std::string s = n.is_object() ? (n.empty() ? "{}" : "{...}") : (n.empty() ? "[]" : "[...]");
    return s.size() > max_len ? s.substr(0, max_len) + "..." : s;
  }
  return brief(n.to_json(), max_len);  // a scalar: one small value
}

std::vector<NodeEntry> sorted_items(Node n) {
  std::vector<NodeEntry> out;
  if (!n.is_object()) return out;
  out.reserve(n.size());
  for (NodeEntry e : n.items()) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const NodeEntry& a, const NodeEntry& b) { return a.key < b.key; });
  return out;
}

bool same_value(Node a, Node b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_integer() && b.is_number_integer()) return a.integer() == b.integer();
    return a.number() == b.number();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Node::Type::null: return true;
    case Node::Type::boolean: return a.boolean() == b.boolean();
    case Node::Type::string: return a.str() == b.str();
    case Node::Type::sequence: {
      if (a.size() != b.size()) return false;
      for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
        if (!same_value(*i, *j)) return false;
      return true;
    }
    case Node::Type::mapping: {
      if (a.size() != b.size()) return false;
      // Keys in the same order (two documents made of the engine's JSON): one walk.
      bool in_order = true;
      for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
        if ((*i).key() != (*j).key()) {
          in_order = false;
          break;
        }
        if (!same_value(*i, *j)) return false;
      }
      if (in_order) return true;
      const std::vector<NodeEntry> x = sorted_items(a), y = sorted_items(b);
      for (size_t k = 0; k < x.size(); ++k)
        if (x[k].key != y[k].key || !same_value(x[k].value, y[k].value)) return false;
      return true;
    }
    default: return false;  // numbers are compared above
  }
}

}  // namespace gpuguard::engine
