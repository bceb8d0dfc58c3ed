#include "engine/positions.h"

#include <charconv>

namespace gpuguard::engine {

uint32_t PositionIndex::add_key(std::string_view key) {
  auto offset = static_cast<uint32_t>(keys_.size());
  keys_.append(key);
  return offset;
}

PositionIndex::NodeId PositionIndex::add(Pos pos, bool is_map, std::span<const Child> children) {
  Node node{pos, is_map, static_cast<uint32_t>(children_.size()),
            static_cast<uint32_t>(children.size())};
  children_.insert(children_.end(), children.begin(), children.end());
  nodes_.push_back(node);
  return static_cast<NodeId>(nodes_.size() - 1);
}

const PositionIndex::Child* PositionIndex::child(NodeId n, std::string_view token) const {
  if (n >= nodes_.size()) return nullptr;
  const Node& node = nodes_[n];
  if (node.is_map) {
    for (uint32_t i = node.first; i < node.first + node.count; ++i)
      if (key(children_[i]) == token) return &children_[i];
    return nullptr;
  }
  size_t idx = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), idx);
  if (ec != std::errc{} || p != token.data() + token.size() || token.empty()) return nullptr;
  if (idx >= node.count) return nullptr;
  return &children_[node.first + idx];
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
  bool found = true;
  each_token(pointer, [&](std::string_view token) {
    const Child* c = child(n, token);
    if (!c) return found = false;
    n = c->node;
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
    const Child* c = child(n, token);
    if (!c) return false;
    best = c->key_pos.known() ? c->key_pos : nodes_[c->node].pos;
    n = c->node;
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
