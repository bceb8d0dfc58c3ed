#include "engine/yaml_block.h"

#include <cstring>

// The positions are libyaml's (scanner.c, parser.c of libyaml 0.2.5): a block mapping starts at
// its first key and a block sequence at its first `-`; a scalar starts at its first character
// (the quote of a quoted one, the `|` of a literal); an empty value stands just after the `:` of
// its key (the VALUE token's end mark), an empty sequence item just after its `-`.

namespace gpuguard::engine {

namespace {

constexpr size_t kMaxSimpleKey = 1024;  // libyaml's limit on a simple key's length

bool is_space_or_end(std::string_view s, size_t i) { return i >= s.size() || s[i] == ' '; }

// "- " or a lone "-" at `i`: a block sequence entry.
bool is_dash(std::string_view line, size_t i) { return i < line.size() && line[i] == '-' && is_space_or_end(line, i + 1); }

// Whether a plain scalar may start at `i` (block context): not at an indicator, except `-`, `?`
// and `:` followed by a non-space.
bool plain_start(std::string_view line, size_t i) {
  switch (line[i]) {
    case '-':
    case '?':
    case ':': return !is_space_or_end(line, i + 1);
    case ',': case '[': case ']': case '{': case '}': case '#': case '&': case '*': case '!':
    case '|': case '>': case '\'': case '"': case '%': case '@': case '`': return false;
    default: return true;
  }
}

// After a value that ended at `i`: only spaces, then the end of the line or a comment.
bool rest_is_blank(std::string_view line, size_t i) {
  if (i >= line.size()) return true;
  if (line[i] != ' ') return false;
  while (i < line.size() && line[i] == ' ') ++i;
  return i == line.size() || line[i] == '#';
}

// The closing quote of a single-line quoted scalar whose opening quote is at `p`, or npos when
// the reader leaves it to libyaml (it runs on to another line, or holds an escape or a doubled quote).
size_t quoted_end(std::string_view line, size_t p) {
  const char q = line[p];
  const size_t close = line.find(q, p + 1);
  if (close == std::string_view::npos) return close;
  if (q == '"' && line.substr(p + 1, close - p - 1).find('\\') != std::string_view::npos) return std::string_view::npos;
  if (q == '\'' && close + 1 < line.size() && line[close + 1] == '\'') return std::string_view::npos;
  return close;
}

class Reader {
 public:
  Reader(std::string_view text, BlockEvents& out) : t_(text), out_(out) {}

  BlockRead run() {
    // Printable ASCII and line feeds only (no tab, carriage return or control character, nothing
    // past 0x7E: libyaml counts columns in characters and refuses what YAML cannot hold).
    for (char c : t_) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\n') || u >= 0x7F) return BlockRead::refused;
    }
    if (!next_line()) return BlockRead::no_document;
    bool explicit_start = false;
    if (line_.substr(0, 3) == "---" && is_space_or_end(line_, 3)) {
      explicit_start = true;
      if (!rest_is_blank(line_, 3)) return BlockRead::refused;  // `--- |`, `--- !tag`, ...
      if (!next_line()) return finish(explicit_start);
    }
    do {
      const size_t ind = indent(line_);
      if (ind == line_.size() || line_[ind] == '#') continue;  // blank or comment
      if (!line_entry(ind)) return BlockRead::refused;
    } while (next_line());
    return finish(explicit_start);
  }

 private:
  struct Open {
    bool map = false;
    bool indentless = false;  // a sequence at its parent mapping's indentation
    uint32_t indent = 0;
  };
  enum class Pending : uint8_t { none, map_value, seq_item };

  std::string_view t_;
  BlockEvents& out_;
  std::vector<Open> stack_;
  bool root_seen_ = false;
  Pending pending_ = Pending::none;
  uint32_t pending_line_ = 0, pending_col_ = 0;
  // The current line (without its line break), its number and whether a line break ends it.
  std::string_view line_;
  uint32_t line_no_ = 0;
  bool newline_ = false;
  size_t cursor_ = 0;  // where the next line starts
  bool started_ = false;

  static size_t indent(std::string_view line) {
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    return i;
  }

  // The line at the cursor (there must be one), not taken yet.
  struct Line {
    std::string_view text;
    bool newline = false;
    size_t next = 0;  // where the line after it starts
  };
  [[nodiscard]] Line peek() const {
    const void* nl = std::memchr(t_.data() + cursor_, '\n', t_.size() - cursor_);
    const size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - t_.data()) : t_.size();
    return Line{t_.substr(cursor_, end - cursor_), nl != nullptr, nl ? end + 1 : t_.size()};
  }
  void take(const Line& l) {
    if (started_) ++line_no_;
    started_ = true;
    line_ = l.text;
    newline_ = l.newline;
    cursor_ = l.next;
  }
  bool next_line() {
    if (cursor_ >= t_.size()) return false;
    take(peek());
    return true;
  }

  uint32_t offset_of(size_t i) const { return static_cast<uint32_t>(line_.data() + i - t_.data()); }

  void emit(BlockEvent::Kind kind, uint32_t col) {
    BlockEvent e;
    e.kind = kind;
    e.line = line_no_;
    e.col = col;
    out_.events.push_back(e);
  }
  void emit_scalar(bool plain, uint32_t line, uint32_t col, uint32_t offset, uint32_t size, bool owned = false) {
    BlockEvent e;
    e.kind = BlockEvent::Kind::scalar;
    e.plain = plain;
    e.owned = owned;
    e.line = line;
    e.col = col;
    e.offset = offset;
    e.size = size;
    out_.events.push_back(e);
  }
  void push(bool map, bool indentless, size_t indent) {
    stack_.push_back(Open{map, indentless, static_cast<uint32_t>(indent)});
    emit(map ? BlockEvent::Kind::mapping : BlockEvent::Kind::sequence, static_cast<uint32_t>(indent));
  }
  void empty_value() {
    emit_scalar(true, pending_line_, pending_col_, 0, 0);
    pending_ = Pending::none;
  }

  BlockRead finish(bool explicit_start) {
    if (pending_ != Pending::none) empty_value();
    for (size_t k = stack_.size(); k > 0; --k) emit(BlockEvent::Kind::end, 0);
    stack_.clear();
    if (out_.events.empty()) {
      if (!explicit_start) return BlockRead::no_document;
      // `---` and nothing: libyaml's empty (null) document, its scalar where the stream ends (at the
      // start of the line after the last: fetch_stream_end moves to a new line).
      emit_scalar(true, line_no_ + 1, 0, 0, 0);
    }
    return BlockRead::document;
  }

  // A line with content at column `ind`.
  bool line_entry(size_t ind) {
    if (pending_ != Pending::none) {
      const Open& top = stack_.back();
      if (ind > top.indent) {  // the value (or item) is the block collection that starts here
        pending_ = Pending::none;
        return collection_at(ind);
      }
      if (pending_ == Pending::map_value && ind == top.indent && is_dash(line_, ind)) {
        pending_ = Pending::none;
        push(false, true, ind);
        return seq_entry(ind);
      }
      empty_value();
    }
    if (stack_.empty()) {
      if (root_seen_) return false;
      root_seen_ = true;
      return collection_at(ind);
    }
    while (!stack_.empty() && (ind < stack_.back().indent ||
                               (stack_.back().indentless && ind == stack_.back().indent && !is_dash(line_, ind)))) {
      emit(BlockEvent::Kind::end, 0);
      stack_.pop_back();
    }
    if (stack_.empty() || ind != stack_.back().indent) return false;  // past the root, or misaligned
    return stack_.back().map ? map_entry(ind) : is_dash(line_, ind) && seq_entry(ind);
  }

  bool collection_at(size_t ind) {
    if (is_dash(line_, ind)) {
      push(false, false, ind);
      return seq_entry(ind);
    }
    push(true, false, ind);
    return map_entry(ind);
  }

  struct Key {
    bool quoted = false;
    size_t begin = 0, size = 0;  // its text
    size_t colon = 0;
  };
  enum class KeyScan : uint8_t { key, not_key, refused };

  KeyScan scan_key(size_t p, Key& k) const {
    const std::string_view l = line_;
    const char c = l[p];
    if (c == '"' || c == '\'') {
      const size_t close = quoted_end(l, p);
      if (close == std::string_view::npos) return KeyScan::refused;
      size_t after = close + 1;
      while (after < l.size() && l[after] == ' ') ++after;
      if (after < l.size() && l[after] == ':' && is_space_or_end(l, after + 1)) {
        if (after - p > kMaxSimpleKey) return KeyScan::refused;
        k = Key{true, p + 1, close - p - 1, after};
        return KeyScan::key;
      }
      return KeyScan::not_key;
    }
    if (!plain_start(l, p)) return KeyScan::not_key;
    for (size_t i = p; i < l.size(); ++i) {
      if (l[i] == ':' && is_space_or_end(l, i + 1)) {
        size_t end = i;
        while (end > p && l[end - 1] == ' ') --end;
        if (i - p > kMaxSimpleKey) return KeyScan::refused;
        k = Key{false, p, end - p, i};
        return KeyScan::key;
      }
      if (l[i] == '#' && i > p && l[i - 1] == ' ') return KeyScan::not_key;
    }
    return KeyScan::not_key;
  }

  bool map_entry(size_t ind) {
    Key k;
    if (scan_key(ind, k) != KeyScan::key) return false;
    return key_and_value(ind, k);
  }

  bool key_and_value(size_t p, const Key& k) {
    emit_scalar(!k.quoted, line_no_, static_cast<uint32_t>(p), offset_of(k.begin), static_cast<uint32_t>(k.size));
    size_t q = k.colon + 1;
    while (q < line_.size() && line_[q] == ' ') ++q;
    if (q == line_.size() || line_[q] == '#') {
      pending_ = Pending::map_value;
      pending_line_ = line_no_;
      pending_col_ = static_cast<uint32_t>(k.colon + 1);
      return true;
    }
    return value(q);
  }

  bool seq_entry(size_t ind) {
    size_t p = ind + 1;
    while (p < line_.size() && line_[p] == ' ') ++p;
    if (p == line_.size() || line_[p] == '#') {
      pending_ = Pending::seq_item;
      pending_line_ = line_no_;
      pending_col_ = static_cast<uint32_t>(ind + 1);
      return true;
    }
    if (line_[p] == '-' && is_space_or_end(line_, p + 1)) return false;  // `- - a`
    Key k;
    switch (scan_key(p, k)) {
      case KeyScan::refused: return false;
      case KeyScan::key:  // a compact mapping: `- name: x`, its keys at this column
        push(true, false, p);
        return key_and_value(p, k);
      case KeyScan::not_key: break;
    }
    return value(p);
  }

  // A value that starts at `q` on this line.
  bool value(size_t q) {
    const std::string_view l = line_;
    const char c = l[q];
    if (c == '|') return literal(q);
    if (c == '"' || c == '\'') {
      size_t i = q;
      return quoted(i) && rest_is_blank(l, i);
    }
    if (c == '{' || c == '[') {
      size_t i = q;
      return flow(i, 0) && rest_is_blank(l, i);
    }
    if (!plain_start(l, q)) return false;
    size_t end = q;
    for (size_t i = q; i < l.size(); ++i) {
      const char x = l[i];
      if (x == ':' && is_space_or_end(l, i + 1)) return false;  // a mapping in a value's place
      if (x == '#' && l[i - 1] == ' ') break;
      if (x != ' ') end = i + 1;
    }
    emit_scalar(true, line_no_, static_cast<uint32_t>(q), offset_of(q), static_cast<uint32_t>(end - q));
    return true;
  }

  void skip_spaces(size_t& i) const {
    while (i < line_.size() && line_[i] == ' ') ++i;
  }

  // A flow collection that starts at `i` (its `{` or `[`) and ends on this line; `i` ends just
  // after it. Its entries: plain or quoted scalars and flow collections, `key: value` pairs in a
  // mapping; no empty entries or values, no trailing comma, no single-pair mappings in sequences.
  bool flow(size_t& i, int depth) {
    if (depth > 64) return false;
    const std::string_view l = line_;
    const bool map = l[i] == '{';
    const char close = map ? '}' : ']';
    emit(map ? BlockEvent::Kind::mapping : BlockEvent::Kind::sequence, static_cast<uint32_t>(i));
    ++i;
    skip_spaces(i);
    if (i < l.size() && l[i] == close) {
      ++i;
      emit(BlockEvent::Kind::end, 0);
      return true;
    }
    for (;;) {
      if (i >= l.size()) return false;
      if (map) {
        const size_t key = i;
        if (!flow_scalar(i)) return false;  // the key
        skip_spaces(i);
        if (i >= l.size() || l[i] != ':' || !is_space_or_end(l, i + 1)) return false;
        if (i - key > kMaxSimpleKey) return false;  // libyaml no longer takes it for a key
        ++i;
        skip_spaces(i);
        if (i >= l.size()) return false;
      }
      if (l[i] == '{' || l[i] == '[') {
        if (!flow(i, depth + 1)) return false;
      } else if (!flow_scalar(i)) {
        return false;
      }
      skip_spaces(i);
      if (i >= l.size()) return false;
      if (l[i] == close) {
        ++i;
        emit(BlockEvent::Kind::end, 0);
        return true;
      }
      if (l[i] != ',') return false;  // `:` after a sequence item (a single-pair mapping), ...
      ++i;
      skip_spaces(i);
      if (i < l.size() && (l[i] == '}' || l[i] == ']' || l[i] == ',')) return false;  // a trailing or empty entry
    }
  }

  // A quoted scalar at `i` (its opening quote); `i` ends just after its closing quote.
  bool quoted(size_t& i) {
    const size_t close = quoted_end(line_, i);
    if (close == std::string_view::npos) return false;
    emit_scalar(false, line_no_, static_cast<uint32_t>(i), offset_of(i + 1), static_cast<uint32_t>(close - i - 1));
    i = close + 1;
    return true;
  }

  // A scalar in a flow collection at `i`: quoted, or plain up to a flow indicator or `: `.
  bool flow_scalar(size_t& i) {
    const std::string_view l = line_;
    const char c = l[i];
    if (c == '"' || c == '\'') return quoted(i);
    // In a flow collection `?` and `:` always start a key or a value.
    if (!plain_start(l, i) || c == '?' || c == ':') return false;
    const size_t begin = i;
    size_t end = i;
    for (; i < l.size(); ++i) {
      const char x = l[i];
      if (x == ',' || x == '[' || x == ']' || x == '{' || x == '}') break;
      if (x == ':') {
        if (is_space_or_end(l, i + 1)) break;
        return false;  // `a:b` in a flow collection: libyaml versions differ
      }
      if (x == '#' && l[i - 1] == ' ') return false;  // a comment inside the collection
      if (x != ' ') end = i + 1;
    }
    if (i >= l.size()) return false;  // the collection goes on to another line
    emit_scalar(true, line_no_, static_cast<uint32_t>(begin), offset_of(begin), static_cast<uint32_t>(end - begin));
    return true;
  }

  // A literal block scalar whose header (`|`, `|-`) is at `q`; its content is on the lines after.
  bool literal(size_t q) {
    const std::string_view l = line_;
    size_t h = q + 1;
    const bool strip = h < l.size() && l[h] == '-';
    if (strip) ++h;
    if (!rest_is_blank(l, h) || !newline_) return false;  // `|+`, `|2`, or a header at the end
    const uint32_t header_line = line_no_;
    const size_t parent = stack_.back().indent;
    const auto start = static_cast<uint32_t>(out_.arena.size());
    // The content: the lines from the first non-blank one indented past the parent, while they
    // are indented at least as much as it (blank lines in between are empty lines).
    size_t m = 0;  // the content's indentation, once known
    size_t blanks = 0;
    bool any = false;
    bool last_newline = true;
    while (cursor_ < t_.size()) {
      const Line line = peek();
      const std::string_view next = line.text;
      const size_t ind = indent(next);
      if (ind == next.size()) {  // blank
        if (!any) return false;  // blank lines before the content: libyaml's indentation rules
        if (next.size() > m) return false;  // spaces past the indentation are content
        ++blanks;
      } else {
        if (!any) {
          if (ind <= parent) break;  // no content: an empty scalar
          m = ind;
        }
        if (ind < m) break;
        if (any) out_.arena.append(blanks + 1, '\n');
        out_.arena.append(next.substr(m));
        any = true;
        blanks = 0;
        last_newline = line.newline;
      }
      take(line);  // the literal's line
    }
    if (any && !strip) {
      if (!last_newline) return false;
      out_.arena.push_back('\n');
    }
    emit_scalar(false, header_line, static_cast<uint32_t>(q), start, static_cast<uint32_t>(out_.arena.size() - start), true);
    return true;
  }
};

}  // namespace

BlockRead read_block_document(std::string_view text, BlockEvents& out) {
  out.clear();
  if (text.size() >= UINT32_MAX) return BlockRead::refused;
  return Reader(text, out).run();
}

}  // namespace gpuguard::engine
