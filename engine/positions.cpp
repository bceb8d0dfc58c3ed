#include "engine/positions.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <limits>

namespace gpuguard::engine {

PositionIndex::Children PositionIndex::children(NodeId n) const {
  if (n >= nodes_.size()) return {};
  const Node& node = nodes_[n];
  if (node.type != Type::mapping && node.type != Type::sequence) return {};
  return Children(this, n + 1, node.end, node.count);
}

PositionIndex::~PositionIndex() { delete lookup_.load(std::memory_order_acquire); }

const PositionIndex::Lookup& PositionIndex::lookup() const {
  if (const Lookup* made = lookup_.load(std::memory_order_acquire)) return *made;
  auto made = std::make_unique<Lookup>();
  for (NodeId n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    if ((node.type != Type::mapping && node.type != Type::sequence) || node.count < kLookupFrom) continue;
    const auto start = static_cast<uint32_t>(made->children.size());
    for (NodeId c = n + 1; c < node.end; c = nodes_[c].end)
      if ((nodes_[c].flags & kReplaced) == 0) made->children.push_back(c);
    made->containers.push_back({n, start, static_cast<uint32_t>(made->children.size() - start)});
    if (node.type == Type::mapping) {
      auto key = [&](NodeId c) { return std::string_view(text_.data() + nodes_[c].key_offset, nodes_[c].key_size); };
      std::sort(made->children.begin() + start, made->children.end(), [&](NodeId a, NodeId b) { return key(a) < key(b); });
    }
  }
  const Lookup* expected = nullptr;
  if (lookup_.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel, std::memory_order_acquire))
    return *made.release();
  return *expected;  // another thread made it first
}

void PositionIndex::looked_up(NodeId n, const NodeId*& first, const NodeId*& last) const {
  const Lookup& l = lookup();
  const auto it = std::lower_bound(l.containers.begin(), l.containers.end(), n,
                                   [](const Lookup::Container& c, NodeId id) { return c.id < id; });
  first = last = nullptr;
  if (it == l.containers.end() || it->id != n) return;  // not a large container
  first = l.children.data() + it->start;
  last = first + it->size;
}

PositionIndex::NodeId PositionIndex::entry(NodeId n, std::string_view key) const {
  const Node& node = nodes_[n];
  if (node.type != Type::mapping) return kNoNode;
  if (node.count >= kLookupFrom) {
    const NodeId* first = nullptr;
    const NodeId* last = nullptr;
    looked_up(n, first, last);
    const NodeId* it = std::lower_bound(first, last, key, [&](NodeId c, std::string_view k) {
      return std::string_view(text_.data() + nodes_[c].key_offset, nodes_[c].key_size) < k;
    });
    if (it != last && std::string_view(text_.data() + nodes_[*it].key_offset, nodes_[*it].key_size) == key) return *it;
    return kNoNode;
  }
  for (NodeId c = n + 1; c < node.end; c = nodes_[c].end)
    if ((nodes_[c].flags & kReplaced) == 0 && nodes_[c].key_size == key.size() &&
        std::string_view(text_.data() + nodes_[c].key_offset, key.size()) == key)
      return c;
  return kNoNode;
}

void PositionIndex::describe(NodeId n, std::string& out) const {
  const Pos p = pos(n);
  out += std::to_string(p.line) + ":" + std::to_string(p.col) + " ";
  switch (type(n)) {
    case Type::null: out += "null"; return;
    case Type::boolean: out += boolean(n) ? "true" : "false"; return;
    case Type::integer: out += std::to_string(integer(n)); return;
    case Type::floating: out += std::to_string(floating(n)); return;
    case Type::string:
      out += '"';
      out += string(n);
      out += '"';
      return;
    case Type::mapping:
    case Type::sequence:
      out += type(n) == Type::mapping ? "{" : "[";
      for (const Child& c : children(n)) {
        out += key(c);
        out += "@" + std::to_string(c.key_pos.line) + ":" + std::to_string(c.key_pos.col) + "=";
        describe(c.node, out);
        out += ",";
      }
      out += type(n) == Type::mapping ? "}" : "]";
      return;
  }
}

PositionIndex::NodeId PositionIndex::item(NodeId n, size_t i) const {
  const Node& node = nodes_[n];
  if (node.type != Type::sequence || i >= node.count) return kNoNode;
  if (i >= kLookupFrom) {  // the sequence has more than kLookupFrom items
    const NodeId* first = nullptr;
    const NodeId* last = nullptr;
    looked_up(n, first, last);
    return i < static_cast<size_t>(last - first) ? first[i] : kNoNode;
  }
  NodeId c = n + 1;
  for (; i > 0; --i) c = nodes_[c].end;  // sequence items are never replaced
  return c;
}

void PositionIndex::add_json(const json& value, std::string_view key) {
  const auto id = static_cast<NodeId>(nodes_.size());
  Node& n = nodes_.emplace_back();
  n.end = id + 1;
  n.key_size = static_cast<uint32_t>(key.size());
  n.key_offset = static_cast<uint32_t>(text_.size());
  text_.append(key);
  switch (value.type()) {
    case json::value_t::boolean:
      n.type = Type::boolean;
      n.v.b = value.get<bool>();
      return;
    case json::value_t::number_integer:
      n.type = Type::integer;
      n.v.i = value.get<int64_t>();
      return;
    case json::value_t::number_unsigned:
      // The loaders make no unsigned values; one beyond int64 is a float, as the API server reads it.
      if (value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        n.type = Type::integer;
        n.v.i = static_cast<int64_t>(value.get<uint64_t>());
      } else {
        n.type = Type::floating;
        n.v.d = static_cast<double>(value.get<uint64_t>());
      }
      return;
    case json::value_t::number_float:
      n.type = Type::floating;
      n.v.d = value.get<double>();
      return;
    case json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      n.type = Type::string;
      n.v.s.offset = static_cast<uint32_t>(text_.size());
      n.v.s.size = static_cast<uint32_t>(s.size());
      text_.append(s);
      return;
    }
    case json::value_t::object: {
      n.type = Type::mapping;
      n.count = static_cast<uint32_t>(value.size());
      for (const auto& [k, v] : value.items()) add_json(v, k);
      break;
    }
    case json::value_t::array: {
      n.type = Type::sequence;
      n.count = static_cast<uint32_t>(value.size());
      for (const auto& v : value) add_json(v, {});
      break;
    }
    default: return;  // null (binary values are not made by any reader)
  }
  nodes_[id].end = static_cast<NodeId>(nodes_.size());
}

std::shared_ptr<PositionIndex> PositionIndex::from_json(const json& value) {
  auto doc = std::make_shared<PositionIndex>();
  doc->add_json(value, {});
  // Kept as long as the object is (the watch cache's): without the vectors' spare capacity.
  doc->nodes_.shrink_to_fit();
  doc->text_.shrink_to_fit();
  return doc;
}

bool PositionIndex::child(NodeId n, std::string_view token, NodeId& out) const {
  if (n >= nodes_.size()) return false;
  NodeId c = kNoNode;
  if (nodes_[n].type == Type::mapping) {
    c = entry(n, token);
  } else if (nodes_[n].type == Type::sequence) {
    size_t idx = 0;
    auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), idx);
    if (ec != std::errc{} || p != token.data() + token.size() || token.empty()) return false;
    c = item(n, idx);
  }
  if (c == kNoNode) return false;
  out = c;
  return true;
}

void PositionIndex::json_into(NodeId n, json& out, std::vector<json::object_t::value_type>& members) const {
  const Node& node = nodes_[n];
  switch (node.type) {
    case Type::null: out = nullptr; return;
    case Type::boolean: out = node.v.b; return;
    case Type::integer: out = node.v.i; return;
    case Type::floating: out = node.v.d; return;
    case Type::string: out = std::string(string(n)); return;
    case Type::sequence: {
      out = json::array();
      auto& items = out.get_ref<json::array_t&>();
      items.resize(node.count);
      size_t i = 0;
      for (NodeId c = n + 1; c < node.end; c = nodes_[c].end) json_into(c, items[i++], members);
      return;
    }
    case Type::mapping: {
      const size_t first = members.size();
      for (NodeId c = n + 1; c < node.end; c = nodes_[c].end) {
        if ((nodes_[c].flags & kReplaced) != 0) continue;
        // The value first: a mapping in it pushes its members above this one's and takes them off.
        json value;
        json_into(c, value, members);
        members.emplace_back(std::string(text_.data() + nodes_[c].key_offset, nodes_[c].key_size), std::move(value));
      }
      out = json(json::object_t::take(members, first));
      return;
    }
  }
}

json PositionIndex::json_of(NodeId n) const {
  json out;
  if (n >= nodes_.size()) return out;
  std::vector<json::object_t::value_type> members;
  json_into(n, out, members);
  return out;
}

namespace {

// Calls `step` with each unescaped token of a pointer ("" → none; a leading '/' is optional) until
// it returns false; only a token with an escape in it is copied.
template <class Step>
void each_token(std::string_view pointer, Step step) {
  if (pointer.empty()) return;
  size_t start = pointer.front() == '/' ? 1 : 0;
  std::string unescaped;
  while (start <= pointer.size()) {
    size_t end = pointer.find('/', start);
    if (end == std::string_view::npos) end = pointer.size();
    std::string_view token = pointer.substr(start, end - start);
    if (token.find('~') != std::string_view::npos) {
      unescaped = pointer_unescape(token);
      token = unescaped;
    }
    if (!step(token)) return;
    start = end + 1;
  }
}

}  // namespace

bool PositionIndex::find(std::string_view pointer, NodeId root, NodeId& out) const {
  NodeId n = root;
  bool found = root < nodes_.size();
  if (found)
    each_token(pointer, [&](std::string_view token) {
      NodeId c = 0;
      if (!child(n, token, c)) return found = false;
      n = c;
      return true;
    });
  if (found) out = n;
  return found;
}

Pos PositionIndex::resolve(std::string_view pointer, NodeId root) const {
  if (root >= nodes_.size()) return {};
  NodeId n = root;
  Pos best = nodes_[n].pos;
  each_token(pointer, [&](std::string_view token) {
    NodeId c = 0;
    if (!child(n, token, c)) return false;
    best = nodes_[c].key_pos.known() ? nodes_[c].key_pos : nodes_[c].pos;
    n = c;
    return true;
  });
  return best;
}

void append_pointer_escaped(std::string& out, std::string_view token) {
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
}

std::string pointer_escape(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  append_pointer_escaped(out, token);
  return out;
}

std::string pointer_unescape(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

std::string pointer_join(std::string_view base, std::string_view token) {
  std::string out(base);
  out += '/';
  out += pointer_escape(token);
  return out;
}

std::string pointer_join(std::string_view base, size_t index) {
  std::string out(base);
  out += '/';
  out += std::to_string(index);
  return out;
}

std::vector<std::string> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> out;
  each_token(pointer, [&](std::string_view token) {
    out.emplace_back(token);
    return true;
  });
  return out;
}

}  // namespace gpuguard::engine
