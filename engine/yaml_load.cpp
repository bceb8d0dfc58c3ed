#include "engine/yaml_load.h"
#include "engine/json_stream.h"
#include "engine/yaml_block.h"

#include <yaml.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <set>
#include <unordered_map>

#include "engine/base64.h"

namespace gpuguard::engine {

// ---------------------------------------------------------------------------------------------
// Scalar resolution (go-yaml v2 resolve.go, as used by sigs.k8s.io/yaml).

namespace {

enum class IntParse : uint8_t { ok, out_of_range, syntax };

// strconv.ParseUint(s, 0, 64) after the caller removed underscores.
IntParse go_parse_uint(std::string_view s, uint64_t& out) {
  if (s.empty()) return IntParse::syntax;
  unsigned base = 10;
  if (s[0] == '0') {
    auto lower = [](char c) { return static_cast<char>(c | 0x20); };
    if (s.size() >= 3 && lower(s[1]) == 'b') { base = 2; s.remove_prefix(2); }
    else if (s.size() >= 3 && lower(s[1]) == 'o') { base = 8; s.remove_prefix(2); }
    else if (s.size() >= 3 && lower(s[1]) == 'x') { base = 16; s.remove_prefix(2); }
    else { base = 8; s.remove_prefix(1); }
  }
  uint64_t n = 0;
  bool range = false;
  for (char c : s) {
    unsigned d = 0;
    if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') d = static_cast<unsigned>((c | 0x20) - 'a' + 10);
    else return IntParse::syntax;
    if (d >= base) return IntParse::syntax;
    if (range) continue;
    if (n > (std::numeric_limits<uint64_t>::max() - d) / base) { range = true; continue; }
    n = n * base + d;
  }
  if (range) return IntParse::out_of_range;
  out = n;
  return IntParse::ok;
}

// strconv.ParseInt(s, 0, 64).
IntParse go_parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return IntParse::syntax;
  bool neg = false;
  if (s[0] == '+') s.remove_prefix(1);
  else if (s[0] == '-') { neg = true; s.remove_prefix(1); }
  uint64_t un = 0;
  IntParse r = go_parse_uint(s, un);
  if (r == IntParse::syntax) return r;
  if (r == IntParse::out_of_range) return r;
  constexpr uint64_t cutoff = uint64_t{1} << 63;
  if (!neg && un >= cutoff) return IntParse::out_of_range;
  if (neg && un > cutoff) return IntParse::out_of_range;
  out = neg ? static_cast<int64_t>(0 - un) : static_cast<int64_t>(un);
  return IntParse::ok;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$   (go-yaml's yamlStyleFloat)
bool yaml_style_float(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t d = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == d) return false;
  } else {
    size_t d = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == d) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && is_digit(s[i])) ++i;
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t d = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == d) return false;
  }
  return i == s.size();
}

// strconv.ParseFloat on a string already known to be a plain decimal float. Returns false on
// overflow (Go returns ±Inf with ErrRange, and go-yaml then keeps the scalar a string).
bool go_parse_decimal_float(std::string_view s, double& out) {
  std::string tmp(s);
  errno = 0;
  char* end = nullptr;
  double d = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size()) return false;
  if (errno == ERANGE && std::isinf(d)) return false;
  out = d;
  return true;
}

}  // namespace

ResolvedScalar resolve_plain_scalar(std::string_view s) {
  ResolvedScalar r;
  auto is = [&s](std::initializer_list<std::string_view> words) {
    for (std::string_view w : words)
      if (s == w) return true;
    return false;
  };
  auto set_bool = [&r](bool b) {
    r.type = ScalarType::boolean;
    r.b = b;
    return r;
  };
  auto set_float = [&r](double d) {
    r.type = ScalarType::floating;
    r.d = d;
    return r;
  };
  if (s.empty()) {
    r.type = ScalarType::null;
    return r;
  }
  // go-yaml's hint table: the first character says which special values the scalar can be; any
  // other first character makes it a string.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // None of the words is longer than five characters: a longer scalar that starts with one of
  // their letters is a string (most keys and values of a manifest: name, namespace, operator).
  const bool too_long = s.size() > 5;
  switch (s[0]) {
    case '~':
    case 'n':
    case 'N':
      if (too_long) return r;
      if (is({"~", "null", "Null", "NULL"})) r.type = ScalarType::null;
      else if (is({"n", "N", "no", "No", "NO"})) set_bool(false);
      return r;
    case 'y':
    case 'Y': return !too_long && is({"y", "Y", "yes", "Yes", "YES"}) ? set_bool(true) : r;
    case 't':
    case 'T': return !too_long && is({"true", "True", "TRUE"}) ? set_bool(true) : r;
    case 'f':
    case 'F': return !too_long && is({"false", "False", "FALSE"}) ? set_bool(false) : r;
    case 'o':
    case 'O':
      if (too_long) return r;
      if (is({"on", "On", "ON"})) return set_bool(true);
      return is({"off", "Off", "OFF"}) ? set_bool(false) : r;
    case '<':
      if (s == "<<") r.type = ScalarType::merge;
      return r;
    case '.':
      if (is({".nan", ".NaN", ".NAN"})) return set_float(std::numeric_limits<double>::quiet_NaN());
      if (is({".inf", ".Inf", ".INF"})) return set_float(kInf);
      // ".5": a float; anything else that starts with '.' is a string
      if (yaml_style_float(s) && go_parse_decimal_float(s, r.d)) r.type = ScalarType::floating;
      return r;
    case '+':
      if (is({"+.inf", "+.Inf", "+.INF"})) return set_float(kInf);
      break;
    case '-':
      if (is({"-.inf", "-.Inf", "-.INF"})) return set_float(-kInf);
      break;
    default:
      if (!is_digit(s[0])) return r;
  }
  // A number: an int (base prefixes, underscores), a uint beyond int64 (go-yaml keeps it as a
  // uint64; the API server's JSON decoding turns it into a float64, and so does this), or a
  // YAML-style float.
  std::string without_underscores;
  std::string_view plain = s;
  if (s.find('_') != std::string_view::npos) {
    without_underscores.reserve(s.size());
    for (char ch : s)
      if (ch != '_') without_underscores += ch;
    plain = without_underscores;
  }
  int64_t i = 0;
  if (go_parse_int(plain, i) == IntParse::ok) {
    r.type = ScalarType::integer;
    r.i = i;
    return r;
  }
  uint64_t u = 0;
  if (go_parse_uint(plain, u) == IntParse::ok) return set_float(static_cast<double>(u));
  if (yaml_style_float(plain) && go_parse_decimal_float(plain, r.d)) r.type = ScalarType::floating;
  return r;
}

// ---------------------------------------------------------------------------------------------
// The event-driven builder.

namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

Pos to_pos(const yaml_mark_t& m, uint32_t line_offset) {
  return Pos{static_cast<uint32_t>(m.line) + 1 + line_offset, static_cast<uint32_t>(m.column) + 1};
}

struct Event {
  yaml_event_t ev{};
  bool live = false;
  ~Event() { reset(); }
  void reset() {
    if (live) yaml_event_delete(&ev);
    live = false;
  }
};

struct Parser {
  yaml_parser_t p{};
  bool live = false;
  Parser() { live = yaml_parser_initialize(&p) != 0; }
  ~Parser() {
    if (live) yaml_parser_delete(&p);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
};

// Feeds libyaml from memory and stops when one document grows over the limit, so a single huge
// document cannot make libyaml buffer without bound.
struct Feed {
  std::string_view text;
  size_t fed = 0;
  size_t doc_start = 0;
  size_t max_document_bytes = 0;
  bool over_limit = false;
};

int feed_handler(void* data, unsigned char* buffer, size_t size, size_t* size_read) {
  auto* f = static_cast<Feed*>(data);
  if (f->fed - f->doc_start > f->max_document_bytes) {
    f->over_limit = true;
    return 0;
  }
  size_t n = std::min(size, f->text.size() - f->fed);
  if (n) std::memcpy(buffer, f->text.data() + f->fed, n);
  f->fed += n;
  *size_read = n;
  return 1;
}

struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>{}(key); }
};

struct DocError {
  Pos pos;
  std::string message;
};

// A scalar as go-yaml resolves it, before it becomes a node or a key.
struct Scalar {
  PositionIndex::Type type = PositionIndex::Type::null;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string_view text;  // a string's text (a view of the event's, or of `decoded`)
  std::string decoded;    // !!binary
  bool is_merge = false;
};

}  // namespace

// Builds a document (PositionIndex) from libyaml's events as they come: each node is appended where
// it starts, a mapping or sequence learns where its subtree ends when it ends, and scalars and keys
// go into the document's text. Kubernetes' YAML semantics (go-yaml v2 via sigs.k8s.io/yaml): plain
// scalars resolved by YAML 1.1 rules, non-string keys turned into strings, merge keys applied in
// document order, aliases expanded within a node budget.
class DocumentBuilder {
 public:
  DocumentBuilder(const YamlLimits& limits, std::string_view file, uint32_t line_offset, std::vector<Diagnostic>& diags)
      : limits_(limits), file_(file), line_offset_(line_offset), diags_(diags) {}

  void start_document() {
    frames_.clear();
    anchors_.clear();
    last_anchor_ = 0;
    doc_ = std::make_shared<PositionIndex>();
    // Room for as much as the last document took (a stream's documents are mostly alike).
    doc_->nodes_.reserve(last_nodes_);
    doc_->text_.reserve(last_text_);
    root_ = PositionIndex::kNoNode;
    error_.reset();
    nodes_ = 0;
    alias_nodes_ = 0;
    key_bytes_ = 0;
  }

  // Returns true and fills `doc` when the document has content (not empty, not null).
  bool end_document(YamlDocument& doc) {
    if (!doc_) return false;  // no document started since the last ended
    if (error_) {
      diags_.push_back({Severity::error, std::string(file_), error_->pos, error_->message});
      return false;
    }
    if (root_ == PositionIndex::kNoNode || node(root_).type == Type::null) return false;
    last_nodes_ = std::min<size_t>(doc_->nodes_.size(), kReserveAtMost);
    last_text_ = std::min<size_t>(doc_->text_.size(), kReserveAtMost);
    doc_->root_ = root_;
    doc.start = node(root_).pos;
    doc.positions = std::move(doc_);
    return true;
  }

  void on_event(const yaml_event_t& ev) {
    if (error_) return;  // skip the rest of a failed document
    switch (ev.type) {
      case YAML_SCALAR_EVENT: on_scalar(ev); break;
      case YAML_SEQUENCE_START_EVENT: on_start(ev, false); break;
      case YAML_MAPPING_START_EVENT: on_start(ev, true); break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: end(); break;
      case YAML_ALIAS_EVENT: on_alias(ev); break;
      default: break;
    }
  }

 private:
  using Type = PositionIndex::Type;
  using Node = PositionIndex::Node;
  using NodeId = PositionIndex::NodeId;
  using KeyIndex = std::unordered_map<std::string, NodeId, KeyHash, std::equal_to<>>;  // key → entry

  struct Frame {
    NodeId node = 0;
    bool is_map = false;
    std::string anchor;
    // Mapping state: the key waiting for its value.
    bool have_key = false;
    bool key_is_merge = false;
    uint32_t key_offset = 0;
    uint32_t key_size = 0;
    Pos key_pos;
    // For a large mapping, where each key's live entry is.
    std::unique_ptr<KeyIndex> index;
  };

  std::vector<Node>& nodes() { return doc_->nodes_; }
  Node& node(NodeId n) { return doc_->nodes_[n]; }
  std::string& text() { return doc_->text_; }
  std::string_view key_of(NodeId n) {
    const Node& x = node(n);
    return std::string_view(text()).substr(x.key_offset, x.key_size);
  }

  void fail(Pos pos, std::string message) {
    if (!error_) error_ = DocError{pos, std::move(message)};
  }

  bool expecting_key() const { return !frames_.empty() && frames_.back().is_map && !frames_.back().have_key; }

  bool count_node(Pos pos, size_t n, bool from_alias) {
    nodes_ += n;
    if (nodes_ > limits_.max_document_nodes) {
      fail(pos, "the document has more than " + std::to_string(limits_.max_document_nodes) +
                    " keys and values (aliases' copies counted): a limit that bounds its memory");
      return false;
    }
    if (!from_alias) return true;  // a node written out only raises the budget
    alias_nodes_ += n;
    size_t own = nodes_ - alias_nodes_;
    if (alias_nodes_ > limits_.alias_node_budget + limits_.alias_node_ratio * own) {
      fail(pos, "aliases expand this document to more than " +
                    std::to_string(limits_.alias_node_budget + limits_.alias_node_ratio * own) +
                    " nodes (alias expansion budget exceeded: a \"billion laughs\" document?)");
      return false;
    }
    return true;
  }

  // Gives a node the place it takes: the current mapping's waiting key, the current sequence's next
  // item (at `item_pos`), or the root.
  void place(Node& n, Pos item_pos) const {
    n.key_offset = 0;
    n.key_size = 0;
    n.key_pos = Pos{};
    if (frames_.empty()) return;
    const Frame& f = frames_.back();
    if (!f.is_map) {
      n.key_pos = item_pos;
      return;
    }
    n.key_offset = f.key_offset;
    n.key_size = f.key_size;
    n.key_pos = f.key_pos;
  }

  // Appends a node where the current mapping's key or the current sequence's next item goes.
  NodeId add_node(Type type, Pos pos) {
    const auto id = static_cast<NodeId>(nodes().size());
    Node& n = nodes().emplace_back();
    n.type = type;
    n.pos = pos;
    n.end = id + 1;
    place(n, pos);
    return id;
  }

  uint32_t add_text(std::string_view s) {
    const auto offset = static_cast<uint32_t>(text().size());
    text().append(s);
    return offset;
  }

  void on_scalar(const yaml_event_t& ev) {
    const auto& sc = ev.data.scalar;
    std::string_view tag = sc.tag ? std::string_view(reinterpret_cast<const char*>(sc.tag)) : "";
    if (tag == "!") tag = "";  // the non-specific tag: go-yaml resolves it like a plain scalar
    scalar(std::string_view(reinterpret_cast<const char*>(sc.value), sc.length),
           (sc.plain_implicit != 0 || sc.tag != nullptr) && tag.empty(), tag,
           sc.anchor ? reinterpret_cast<const char*>(sc.anchor) : nullptr, to_pos(ev.start_mark, line_offset_));
  }

 public:
  // A scalar: its text, whether it is plain (resolved by YAML 1.1 rules) or a string (quoted,
  // block), its explicit tag ("" for none) and anchor (null for none).
  void scalar(std::string_view text, bool plain, std::string_view tag, const char* anchor, Pos pos) {
    if (text.size() > limits_.max_scalar_bytes) {
      fail(pos, "scalar of " + std::to_string(text.size()) + " bytes is over the limit of " +
                    std::to_string(limits_.max_scalar_bytes) + " bytes");
      return;
    }

    if (!count_node(pos, 1, false)) return;
    // Keys, the common case: a string key needs no value.
    if (expecting_key() && tag.empty()) {
      if (!plain) {
        set_key_text(text, false, pos);
        return;
      }
      ResolvedScalar r = resolve_plain_scalar(text);
      if (r.type == ScalarType::string || r.type == ScalarType::merge) {
        set_key_text(text, r.type == ScalarType::merge, pos);
        return;
      }
    }
    Scalar value;
    if (plain) {
      ResolvedScalar r = resolve_plain_scalar(text);
      switch (r.type) {
        case ScalarType::null: value.type = Type::null; break;
        case ScalarType::boolean: value.type = Type::boolean; value.b = r.b; break;
        case ScalarType::integer: value.type = Type::integer; value.i = r.i; break;
        case ScalarType::floating: value.type = Type::floating; value.d = r.d; break;
        case ScalarType::string: value.type = Type::string; value.text = text; break;
        case ScalarType::merge:
          value.type = Type::string;
          value.text = text;
          value.is_merge = true;
          break;
      }
    } else if (tag.empty()) {
      value.type = Type::string;  // quoted or block scalar: always a string
      value.text = text;
    } else if (!resolve_tagged(text, tag, pos, value)) {
      return;
    }

    if (expecting_key()) {
      set_key(value, pos);
      return;
    }
    if (value.type == Type::floating && !std::isfinite(value.d)) {
      // sigs.k8s.io/yaml: "json: unsupported value: +Inf" — kubectl refuses the document.
      fail(pos, "`" + std::string(text) + "` is not a finite number; Kubernetes' YAML→JSON conversion rejects it (quote it if a string is meant)");
      return;
    }
    const NodeId id = add_node(value.type, pos);
    Node& n = node(id);
    switch (value.type) {
      case Type::boolean: n.v.b = value.b; break;
      case Type::integer: n.v.i = value.i; break;
      case Type::floating: n.v.d = value.d; break;
      case Type::string: {
        n.v.s.size = static_cast<uint32_t>(value.text.size());
        n.v.s.offset = add_text(value.text);  // `n` may not be used after this (no node is added)
        break;
      }
      default: break;
    }
    if (anchor) add_anchor(anchor, id);
    deliver(id);
  }

 private:

  // Explicit tags (go-yaml v2 resolve(): only "", !!str, !!bool, !!int, !!float, !!null and
  // !!timestamp are resolved; other tags keep the text; !!binary is base64-decoded).
  bool resolve_tagged(std::string_view text, std::string_view tag, Pos pos, Scalar& out) {
    auto as_string = [&] {
      out.type = Type::string;
      out.text = text;
      return true;
    };
    std::string_view short_tag = tag;
    if (tag.starts_with(kTagPrefix)) short_tag = tag.substr(kTagPrefix.size());
    else return as_string();  // a custom tag: go-yaml keeps the text
    if (short_tag == "str" || short_tag == "timestamp") return as_string();
    if (short_tag == "merge" && text == "<<") {
      out.is_merge = true;
      return as_string();
    }
    if (short_tag == "binary") {
      auto decoded = base64_decode(text);
      if (!decoded) {
        fail(pos, "!!binary value contains invalid base64 data");
        return false;
      }
      out.type = Type::string;
      out.decoded = std::move(*decoded);
      out.text = out.decoded;
      return true;
    }
    ResolvedScalar r = resolve_plain_scalar(text);
    auto mismatch = [&](std::string_view got) {
      fail(pos, "cannot decode !!" + std::string(got) + " `" + std::string(text) + "` as a !!" + std::string(short_tag));
      return false;
    };
    if (short_tag == "int") {
      if (r.type != ScalarType::integer) return mismatch(r.type == ScalarType::floating ? "float" : "str");
      out.type = Type::integer;
      out.i = r.i;
      return true;
    }
    if (short_tag == "float") {
      if (r.type == ScalarType::integer) out.d = static_cast<double>(r.i);
      else if (r.type == ScalarType::floating) out.d = r.d;
      else return mismatch("str");
      out.type = Type::floating;
      return true;
    }
    if (short_tag == "bool") {
      if (r.type != ScalarType::boolean) return mismatch("str");
      out.type = Type::boolean;
      out.b = r.b;
      return true;
    }
    if (short_tag == "null") {
      if (r.type != ScalarType::null) return mismatch("str");
      out.type = Type::null;
      return true;
    }
    return as_string();
  }

  // Whether a mapping key fits the document's key text, which is bounded by the document limit:
  // without aliases the keys cannot outgrow the document, but a long scalar used as a key by many
  // aliases can (as a "billion laughs" does with nodes).
  bool key_text_within(std::string_view key, Pos pos) {
    const size_t limit = std::min<size_t>(limits_.max_document_bytes, std::numeric_limits<uint32_t>::max() / 2);  // keys and strings share the text
    key_bytes_ += key.size();
    if (key_bytes_ <= limit) return true;
    fail(pos, "the document's mapping keys add up to more than " + std::to_string(limit) +
                  " bytes (aliases repeating a long key?)");
    return false;
  }

  // The key waiting for its value, at `offset` in the document's text.
  void set_key_span(uint32_t offset, uint32_t size, bool is_merge, Pos pos) {
    Frame& f = frames_.back();
    f.have_key = true;
    f.key_is_merge = is_merge;
    f.key_pos = pos;
    f.key_offset = offset;
    f.key_size = size;
  }

  // A key written out (bounded by the document's size; put() counts each new key's text).
  void set_key_text(std::string_view key, bool is_merge, Pos pos) {
    const auto size = static_cast<uint32_t>(key.size());
    set_key_span(add_text(key), size, is_merge, pos);
  }

  // sigs.k8s.io/yaml converts non-string keys to strings.
  void set_key(const Scalar& key, Pos pos) {
    switch (key.type) {
      case Type::string: set_key_text(key.text, key.is_merge, pos); return;
      case Type::boolean: set_key_text(key.b ? "true" : "false", false, pos); return;
      case Type::integer: set_key_text(std::to_string(key.i), false, pos); return;
      case Type::floating: {
        const double d = key.d;
        if (std::isnan(d)) set_key_text(".nan", false, pos);
        else if (std::isinf(d)) set_key_text(d > 0 ? ".inf" : "-.inf", false, pos);
        else set_key_text(go_format_float_g(d, 32), false, pos);
        return;
      }
      default: fail(pos, "a null mapping key cannot be converted to JSON"); return;
    }
  }

  void on_start(const yaml_event_t& ev, bool is_map) {
    const yaml_char_t* anchor = is_map ? ev.data.mapping_start.anchor : ev.data.sequence_start.anchor;
    start(is_map, anchor ? reinterpret_cast<const char*>(anchor) : nullptr, to_pos(ev.start_mark, line_offset_));
  }

 public:
  // A mapping or sequence starts (its anchor: null for none); end() ends it.
  void start(bool is_map, const char* anchor, Pos pos) {
    if (expecting_key()) {
      fail(pos, std::string("a ") + (is_map ? "mapping" : "sequence") + " cannot be a mapping key");
      return;
    }
    if (frames_.size() >= limits_.max_depth) {
      fail(pos, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return;
    }
    if (!count_node(pos, 1, false)) return;
    const NodeId id = add_node(is_map ? Type::mapping : Type::sequence, pos);  // where the parent wants it
    Frame& g = frames_.emplace_back();
    g.node = id;
    g.is_map = is_map;
    if (anchor) g.anchor = anchor;
  }

  void end() {
    if (frames_.empty()) return;
    Frame& f = frames_.back();
    if (f.is_map && f.have_key) {  // cannot happen with a well-formed event stream
      fail(f.key_pos, "mapping key without a value");
      return;
    }
    const NodeId id = f.node;
    node(id).end = static_cast<NodeId>(nodes().size());
    if (!f.anchor.empty()) add_anchor(f.anchor, id);
    frames_.pop_back();
    deliver(id);
  }

  // Whether the document failed (its remaining events are to be skipped).
  [[nodiscard]] bool failed() const { return error_.has_value(); }

 private:
  void on_alias(const yaml_event_t& ev) {
    Pos pos = to_pos(ev.start_mark, line_offset_);
    std::string name(reinterpret_cast<const char*>(ev.data.alias.anchor));
    for (const Frame& f : frames_) {
      if (f.anchor == name) {
        fail(pos, "alias *" + name + " refers to a node that contains it");
        return;
      }
    }
    auto it = anchors_.find(name);
    if (it == anchors_.end()) {
      fail(pos, "unknown anchor '" + name + "' referenced");
      return;
    }
    const NodeId target = it->second;
    if (expecting_key()) {
      if (!count_node(pos, 1, true)) return;
      const Node& k = node(target);
      if (k.type == Type::mapping || k.type == Type::sequence) {
        fail(pos, "alias *" + name + " to a collection cannot be a mapping key");
        return;
      }
      if (k.type == Type::string) {  // the key is the anchored string's text, not a copy of it
        set_key_span(k.v.s.offset, k.v.s.size, false, pos);
        return;
      }
      Scalar key;
      key.type = k.type;
      key.b = k.v.b;
      key.i = k.v.i;
      key.d = k.v.d;
      set_key(key, pos);
      return;
    }
    if (!frames_.empty() && frames_.back().is_map && frames_.back().key_is_merge) {
      // `<<: *base`: the anchored mapping's entries are merged from where they are.
      Frame& f = frames_.back();
      f.have_key = false;
      merge_into(f, target);
      return;
    }
    // The budget counts the nodes a copy adds (replaced entries inside it too), so what aliases
    // add to the document is bounded whatever they refer to.
    if (!count_node(pos, node(target).end - target, true)) return;
    const NodeId copy = copy_subtree(target);
    Node& c = node(copy);
    c.flags = 0;
    place(c, pos);  // an aliased item stands at the alias
    deliver(copy);
  }

  void add_anchor(const std::string& name, NodeId id) {
    anchors_[name] = id;
    last_anchor_ = std::max(last_anchor_, id);
  }

  // Appends a copy of a node's subtree; returns the copy's root.
  NodeId copy_subtree(NodeId src) {
    auto& ns = nodes();
    const NodeId first = src;
    const NodeId last = ns[src].end;
    const size_t needed = ns.size() + (last - first);
    if (needed > ns.capacity()) ns.reserve(std::max(needed, 2 * ns.capacity()));  // geometric: copies come in runs
    const auto base = static_cast<NodeId>(ns.size());
    for (NodeId i = first; i < last; ++i) {
      Node c = ns[i];
      c.end = c.end - first + base;
      ns.push_back(c);
    }
    return base;
  }

  // Members from which a mapping frame finds its keys by hash instead of a scan.
  static constexpr uint32_t kIndexFrom = 16;

  // The live entry of a mapping frame with this key, other than `self` (the last one added), or
  // kNoNode.
  NodeId find_entry(const Frame& f, std::string_view key, NodeId self) {
    if (f.index) {
      auto it = f.index->find(key);
      return it == f.index->end() ? PositionIndex::kNoNode : it->second;
    }
    const auto& ns = nodes();
    for (NodeId c = f.node + 1; c < self; c = ns[c].end)
      if ((ns[c].flags & PositionIndex::kReplaced) == 0 && key_of(c) == key) return c;
    return PositionIndex::kNoNode;
  }

  // Makes the node `id` (just added to a mapping frame, its key set) the frame's entry for its key,
  // in document order (go-yaml v2: a merge overwrites keys written before it, keys written after it
  // overwrite the merge). Returns whether an explicit key was written twice.
  bool put(Frame& f, NodeId id, bool is_explicit) {
    const std::string_view key = key_of(id);
    const NodeId old = find_entry(f, key, id);
    node(id).flags = is_explicit ? 0 : PositionIndex::kMerged;
    if (f.index) {
      f.index->insert_or_assign(std::string(key), id);
    }
    if (old == PositionIndex::kNoNode) {
      // A new key written here adds to the key text (a merged one is the anchor's text).
      if (is_explicit && !key_text_within(key, node(id).key_pos)) return false;
      const uint32_t count = ++node(f.node).count;
      if (!f.index && count == kIndexFrom) {
        f.index = std::make_unique<KeyIndex>();
        const auto& ns = nodes();
        for (NodeId c = f.node + 1; c <= id; c = ns[c].end)
          if ((ns[c].flags & PositionIndex::kReplaced) == 0) f.index->emplace(std::string(key_of(c)), c);
      }
      return false;
    }
    const bool was_merged = (node(old).flags & PositionIndex::kMerged) != 0;
    node(old).flags |= PositionIndex::kReplaced;
    return is_explicit && !was_merged;
  }

  void merge_into(Frame& f, NodeId src) {
    auto merge_map = [&](NodeId m) {
      const NodeId end = node(m).end;
      for (NodeId c = m + 1; c < end && !error_; c = node(c).end) {
        if ((node(c).flags & PositionIndex::kReplaced) != 0) continue;
        if (!count_node(f.key_pos, node(c).end - c, true)) return;  // copies count against the alias budget
        const NodeId copy = copy_subtree(c);  // keeps the entry's key and key position
        put(f, copy, false);
      }
    };
    const Type type = node(src).type;
    if (type == Type::mapping) {
      merge_map(src);
      return;
    }
    if (type == Type::sequence) {
      std::vector<NodeId> items;
      const NodeId end = node(src).end;
      for (NodeId c = src + 1; c < end; c = node(c).end) {
        if (node(c).type != Type::mapping) {
          fail(f.key_pos, "map merge requires map or sequence of maps as the value");
          return;
        }
        items.push_back(c);
      }
      // go-yaml applies the sequence backwards: earlier maps take precedence.
      for (size_t i = items.size(); i-- > 0 && !error_;) merge_map(items[i]);
      return;
    }
    fail(f.key_pos, "map merge requires map or sequence of maps as the value");
  }

  // Drops the nodes [from, to) of a mapping frame's last entries, which nothing refers to (the
  // value of a merge key once its entries are copied), moving the nodes after them down.
  void drop(NodeId from, NodeId to) {
    auto& ns = nodes();
    const NodeId delta = to - from;
    for (NodeId i = to; i < ns.size(); ++i) {
      Node n = ns[i];
      n.end -= delta;
      ns[i - delta] = n;
    }
    ns.resize(ns.size() - delta);
    if (Frame& f = frames_.back(); f.index)
      for (auto& [key, entry] : *f.index)
        if (entry >= to) entry -= delta;
  }

  // A node is complete: it becomes the root, the current sequence's next item or the current
  // mapping's entry for the waiting key.
  void deliver(NodeId id) {
    if (frames_.empty()) {
      root_ = id;
      return;
    }
    Frame& f = frames_.back();
    if (!f.is_map) {
      ++node(f.node).count;
      return;
    }
    f.have_key = false;
    if (f.key_is_merge) {
      node(id).flags |= PositionIndex::kReplaced;  // the `<<` entry itself is not an entry
      const NodeId copies = node(id).end;          // the value is the last subtree: copies follow it
      merge_into(f, id);
      if (!error_ && last_anchor_ < id) drop(id, copies);
      return;
    }
    if (put(f, id, true)) {
      const std::string key(key_of(id));
      diags_.push_back({Severity::error, std::string(file_), f.key_pos,
                        "duplicate mapping key \"" + key + "\": Kubernetes keeps only the last value"});
    }
  }

  const YamlLimits& limits_;
  std::string_view file_;
  uint32_t line_offset_;
  std::vector<Diagnostic>& diags_;
  std::vector<Frame> frames_;
  std::unordered_map<std::string, NodeId> anchors_;
  NodeId last_anchor_ = 0;  // the highest node an anchor names (nodes above it may be dropped)
  std::shared_ptr<PositionIndex> doc_;
  NodeId root_ = PositionIndex::kNoNode;
  std::optional<DocError> error_;
  size_t nodes_ = 0;
  size_t alias_nodes_ = 0;
  size_t key_bytes_ = 0;  // the document's key text so far
  static constexpr size_t kReserveAtMost = 1u << 16;
  size_t last_nodes_ = 0;  // what the last document that loaded took
  size_t last_text_ = 0;
};

namespace {

// Byte offset of the start of 0-based line `line` in text, or npos.
size_t line_start(std::string_view text, uint32_t line) {
  size_t off = 0;
  for (uint32_t l = 0; l < line; ++l) {
    size_t nl = text.find('\n', off);
    if (nl == std::string_view::npos) return std::string_view::npos;
    off = nl + 1;
  }
  return off;
}

Pos pos_of_offset(std::string_view text, size_t offset, uint32_t line_offset) {
  offset = std::min(offset, text.size());
  uint32_t line = 0;
  size_t last_nl = std::string_view::npos;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++line;
      last_nl = i;
    }
  size_t col_start = last_nl == std::string_view::npos ? 0 : last_nl + 1;
  // Columns count characters, as libyaml's do: skip UTF-8 continuation bytes.
  uint32_t col = 0;
  for (size_t i = col_start; i < offset; ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++col;
  return Pos{line + 1 + line_offset, col + 1};
}

bool is_marker_line(std::string_view text, size_t off, std::string_view marker) {
  if (text.substr(off, 3) != marker) return false;
  if (off + 3 == text.size()) return true;
  char c = text[off + 3];
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Offset of the next line at or after byte `from` that starts a new document ("---" or the line
// after "..."), or npos.
size_t next_document(std::string_view text, size_t from) {
  size_t off = from;
  if (off > 0 && off < text.size() && text[off - 1] != '\n') {
    size_t nl = text.find('\n', off);
    if (nl == std::string_view::npos) return std::string_view::npos;
    off = nl + 1;
  }
  while (off < text.size()) {
    if (is_marker_line(text, off, "---")) return off;
    if (is_marker_line(text, off, "...")) {
      size_t nl = text.find('\n', off);
      return nl == std::string_view::npos ? std::string_view::npos : nl + 1;
    }
    size_t nl = text.find('\n', off);
    if (nl == std::string_view::npos) return std::string_view::npos;
    off = nl + 1;
  }
  return std::string_view::npos;
}

// The first byte libyaml's reader would refuse: invalid UTF-8, or a character YAML does not allow
// (libyaml's reader.c rules). Checked up front so that the documents before a bad byte still load
// (libyaml decodes its input ahead of parsing and fails before delivering them).
struct BadByte {
  size_t offset = std::string_view::npos;
  std::string message;
};

BadByte first_bad_byte(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) i = 3;  // UTF-8 byte order mark
  // Printable ASCII, tab, LF and CR need no further look: skip them with a table.
  static constexpr auto kPlain = [] {
    std::array<bool, 256> t{};
    for (int c = 0x20; c <= 0x7E; ++c) t[static_cast<size_t>(c)] = true;
    t['\t'] = t['\n'] = t['\r'] = true;
    return t;
  }();
  while (i < n) {
#if defined(__SSE2__)
    // Sixteen bytes at a time: a block of printable ASCII, tab, LF and CR is skipped whole (bytes
    // compare as signed, so one above 0x7F is below 0x20 too).
    while (n - i >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const __m128i printable = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F)), _mm_cmplt_epi8(v, _mm_set1_epi8(0x7F)));
      const __m128i space = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                         _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
      if (_mm_movemask_epi8(_mm_or_si128(printable, space)) != 0xFFFF) break;
      i += 16;
    }
#endif
    while (i < n && kPlain[p[i]]) ++i;
    if (i >= n) break;
    unsigned char c = p[i];
    if (c < 0x80) {
      if (c == 0x09 || c == 0x0A || c == 0x0D || (c >= 0x20 && c <= 0x7E)) {
        ++i;
        continue;
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, "control characters are not allowed (#%X)", static_cast<unsigned>(c));
      return {i, buf};
    }
    size_t width = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (width == 0) return {i, "invalid leading UTF-8 octet (#" + [&] { char b[8]; std::snprintf(b, sizeof b, "%X", c); return std::string(b); }() + ")"};
    if (i + width > n) return {i, "incomplete UTF-8 octet sequence"};
    uint32_t value = c & (width == 2 ? 0x1F : width == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < width; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return {i + k, "invalid trailing UTF-8 octet"};
      value = (value << 6) | (p[i + k] & 0x3F);
    }
    if ((width == 2 && value < 0x80) || (width == 3 && value < 0x800) || (width == 4 && value < 0x10000))
      return {i, "invalid length of a UTF-8 sequence"};
    if ((value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF) return {i, "invalid Unicode character"};
    if (!(value == 0x85 || (value >= 0xA0 && value <= 0xD7FF) || (value >= 0xE000 && value <= 0xFFFD) ||
          (value >= 0x10000 && value <= 0x10FFFF))) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "control characters are not allowed (#%X)", value);
      return {i, buf};
    }
    i += width;
  }
  return {};
}

// Where flow collections ('[' and '{') first nest deeper than `max_depth`: the offset of the
// bracket past the limit, or npos. libyaml's scanner keeps a possible simple key per flow level and
// looks at all of them for each token, so a nest costs it time quadratic in its depth (80 KB of
// '[' took 5-8.6 s, 200 KB 25 s), and it reads the whole nest before the loader's depth limit can
// stop it. This pass, linear in the text, finds the nest first. It reads the text as libyaml's
// scanner does (scanner.c of 0.2.5, YAML 1.1 and 1.2's lexical rules), far enough to tell a
// bracket that opens a flow collection from one that does not: brackets in quoted scalars, in
// comments, in plain scalars (after their first character, and on the lines a multi-line plain
// scalar takes in the block context, by libyaml's indentation rule), in block scalars' content, in
// tags and in directives are text. It follows the block indentation (a simple key's column, a
// sequence entry's), which decides where a block scalar or a multi-line plain scalar ends. A
// document marker (`---` or `...` at column 0) starts afresh, as libyaml does inside any
// collection or scalar. Text it cannot read as YAML (libyaml refuses it anyway) is passed over a
// character at a time.
class FlowNesting {
 public:
  FlowNesting(std::string_view text, uint32_t max_depth) : t_(text), max_(max_depth) {}

  size_t find() {
    if (t_.starts_with("\xEF\xBB\xBF")) i_ = 3;
    for (;;) {
      to_next_token();
      if (i_ >= t_.size()) return std::string_view::npos;
      if (flow_ == 0) {
        if (key_ && key_line_ != line_) key_ = false;  // a simple key is one line
        while (!indents_.empty() && indents_.back() > col_) indents_.pop_back();
      }
      const char c = t_[i_];
      if (col_ == 0 && c == '%') {  // a directive: its line
        while (i_ < t_.size() && !is_break(i_)) step();
        continue;
      }
      if (col_ == 0 && marker(i_)) {
        flow_ = 0;
        indents_.clear();
        key_ = false;
        allowed_ = false;
        step(3);
        continue;
      }
      switch (c) {
        case '[':
        case '{':
          save_key();
          if (++flow_ > max_) return i_;
          allowed_ = true;
          step();
          continue;
        case ']':
        case '}':
          if (flow_ > 0) --flow_;
          allowed_ = false;
          step();
          continue;
        case ',':
          allowed_ = true;
          step();
          continue;
        default: break;
      }
      if (c == '-' && blankz(i_ + 1)) {  // a block sequence entry
        roll(col_);
        allowed_ = true;
        key_ = false;
        step();
        continue;
      }
      if ((c == '?' || c == ':') && (flow_ > 0 || blankz(i_ + 1))) {  // a key or a value
        if (flow_ == 0) roll(c == ':' && key_ ? key_col_ : col_);
        key_ = false;
        allowed_ = flow_ == 0;
        step();
        continue;
      }
      if (c == '*' || c == '&') {  // an alias or an anchor: its name
        save_key();
        allowed_ = false;
        step();
        while (i_ < t_.size() && (is_alnum(t_[i_]) || t_[i_] == '-' || t_[i_] == '_')) step();
        continue;
      }
      if (c == '!') {  // a tag: verbatim to its '>', else to a blank or a flow indicator
        save_key();
        allowed_ = false;
        step();
        if (i_ < t_.size() && t_[i_] == '<') {
          while (i_ < t_.size() && t_[i_] != '>' && !is_break(i_)) step();
        } else {
          while (!blankz(i_) && !flow_indicator(t_[i_])) step();
        }
        continue;
      }
      if ((c == '|' || c == '>') && flow_ == 0) {
        block_scalar();
        allowed_ = true;
        key_ = false;
        continue;
      }
      if (c == '\'' || c == '"') {
        save_key();
        allowed_ = false;
        quoted(c);
        continue;
      }
      const bool indicator = std::string_view("-?:,[]{}#&*!|>'\"%@`").find(c) != std::string_view::npos;
      if (!indicator || (c == '-' && !blank(i_ + 1)) || (flow_ == 0 && (c == '?' || c == ':'))) {
        save_key();
        allowed_ = false;
        plain();
        continue;
      }
      step();  // a character no token starts with: libyaml refuses the document
    }
  }

 private:
  std::string_view t_;
  uint32_t max_;
  size_t i_ = 0;
  uint32_t line_ = 0;
  int col_ = 0;  // characters, as libyaml counts them
  uint32_t flow_ = 0;
  std::vector<int> indents_;  // the block collections' columns
  bool allowed_ = true;       // a simple key may start here
  bool key_ = false;          // the block context's possible simple key...
  int key_col_ = 0;           // ...its column and line
  uint32_t key_line_ = 0;

  static bool is_alnum(char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
  static bool flow_indicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }
  // The length of the line break at `at` (\n, \r, \r\n, and NEL, LS, PS), or 0.
  [[nodiscard]] size_t break_at(size_t at) const {
    if (at >= t_.size()) return 0;
    const char c = t_[at];
    if (c == '\n') return 1;
    if (c == '\r') return at + 1 < t_.size() && t_[at + 1] == '\n' ? 2 : 1;
    if (c == '\xC2' && at + 1 < t_.size() && t_[at + 1] == '\x85') return 2;
    if (c == '\xE2' && at + 2 < t_.size() && t_[at + 1] == '\x80' && (t_[at + 2] == '\xA8' || t_[at + 2] == '\xA9')) return 3;
    return 0;
  }
  [[nodiscard]] bool is_break(size_t at) const { return break_at(at) != 0; }
  [[nodiscard]] bool blank(size_t at) const { return at < t_.size() && (t_[at] == ' ' || t_[at] == '\t'); }
  [[nodiscard]] bool blankz(size_t at) const { return at >= t_.size() || blank(at) || is_break(at); }
  [[nodiscard]] bool marker(size_t at) const {
    return t_.size() - at >= 3 && (t_.substr(at, 3) == "---" || t_.substr(at, 3) == "...") && blankz(at + 3);
  }

  // Past one character (a line break ends the line), or `n` bytes of ASCII.
  void step() {
    if (const size_t b = break_at(i_)) {
      i_ += b;
      ++line_;
      col_ = 0;
      return;
    }
    ++i_;
    while (i_ < t_.size() && (static_cast<unsigned char>(t_[i_]) & 0xC0) == 0x80) ++i_;
    ++col_;
  }
  void step(size_t n) {
    i_ += n;
    col_ += static_cast<int>(n);
  }

  void save_key() {
    if (flow_ == 0 && allowed_) {
      key_ = true;
      key_col_ = col_;
      key_line_ = line_;
    }
  }
  void roll(int column) {
    if (indents_.empty() || indents_.back() < column) indents_.push_back(column);
  }
  [[nodiscard]] int indent() const { return indents_.empty() ? -1 : indents_.back(); }

  // White space, comments and line breaks before the next token (libyaml's scan_to_next_token).
  void to_next_token() {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == ' ' || c == '\t') {
        step();
      } else if (c == '#') {
        while (i_ < t_.size() && !is_break(i_)) step();
      } else if (is_break(i_)) {
        step();
        if (flow_ == 0) allowed_ = true;
      } else {
        return;
      }
    }
  }

  // A quoted scalar, to its closing quote; a document marker at column 0 ends it (libyaml refuses
  // the document there and the next one starts).
  void quoted(char q) {
    step();
    while (i_ < t_.size()) {
      if (col_ == 0 && marker(i_)) return;
      const char c = t_[i_];
      if (c == q) {
        step();
        if (q == '\'' && i_ < t_.size() && t_[i_] == '\'') {  // '' in a single-quoted scalar
          step();
          continue;
        }
        return;
      }
      if (q == '"' && c == '\\') {
        step();
        if (i_ < t_.size()) step();  // the escaped character (or line break)
        continue;
      }
      step();
    }
  }

  // A plain scalar (libyaml's scan_plain_scalar): it ends at ": " (and in the flow context at
  // ',', '[', ']', '{', '}', or ':' before one), at " #", at a document marker, and in the block
  // context at a line indented no more than the block collection it is in.
  void plain() {
    const int least = indent() + 1;
    for (;;) {
      if (col_ == 0 && marker(i_)) return;
      if (i_ < t_.size() && t_[i_] == '#') return;
      while (!blankz(i_)) {
        const char c = t_[i_];
        if (c == ':' && (blankz(i_ + 1) || (flow_ > 0 && flow_indicator_or_question(i_ + 1)))) return;
        if (flow_ > 0 && flow_indicator(c)) return;
        step();
      }
      if (!(blank(i_) || is_break(i_))) return;  // the end of the text
      bool line_break = false;
      while (blank(i_) || is_break(i_)) {
        line_break |= is_break(i_);
        step();
      }
      if (line_break) allowed_ = true;
      if (flow_ == 0 && col_ < least) return;
    }
  }
  [[nodiscard]] bool flow_indicator_or_question(size_t at) const {
    return at < t_.size() && (flow_indicator(t_[at]) || t_[at] == '?');
  }

  // A block scalar (libyaml's scan_block_scalar): its header, then the lines indented at least as
  // its first line of content (or as its indentation indicator says), empty lines among them.
  void block_scalar() {
    step();
    int increment = 0;
    auto digit = [&] {
      if (i_ < t_.size() && t_[i_] >= '1' && t_[i_] <= '9') {
        increment = t_[i_] - '0';
        step();
      }
    };
    if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) {
      step();
      digit();
    } else {
      digit();
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) step();
    }
    while (blank(i_)) step();
    if (i_ < t_.size() && t_[i_] == '#')
      while (i_ < t_.size() && !is_break(i_)) step();
    if (!is_break(i_)) return;  // libyaml refuses the header; read on as tokens
    step();
    const int parent = indent();
    int at = increment ? (parent >= 0 ? parent + increment : increment) : 0;
    // Leading empty lines, and the indentation of the first line of content when not given.
    int most = 0;
    auto breaks = [&] {
      for (;;) {
        while ((at == 0 || col_ < at) && i_ < t_.size() && t_[i_] == ' ') step();
        most = std::max(most, col_);
        if (!is_break(i_)) return;
        step();
      }
    };
    breaks();
    if (at == 0) at = std::max({most, parent + 1, 1});
    while (col_ == at && i_ < t_.size()) {
      while (i_ < t_.size() && !is_break(i_)) step();
      if (i_ >= t_.size()) return;
      step();
      breaks();
    }
  }
};

// Start of the document that holds byte `offset`: the last line at or before it that starts with
// `---` (or follows a `...` line), or 0.
size_t document_start_before(std::string_view text, size_t offset) {
  size_t best = 0;
  size_t off = 0;
  while (off < text.size() && off <= offset) {
    if (is_marker_line(text, off, "---")) best = off;
    size_t nl = text.find('\n', off);
    if (nl == std::string_view::npos) break;
    if (is_marker_line(text, off, "...") && nl + 1 <= offset) best = nl + 1;
    off = nl + 1;
  }
  return best;
}

// libyaml's message; its marks count lines from the start of the part, `line_offset` places them.
std::string libyaml_message(const yaml_parser_t& p, uint32_t line_offset) {
  std::string msg = p.problem ? p.problem : "malformed YAML";
  if (p.context) {
    msg += " (";
    msg += p.context;
    msg += " that started at line " + std::to_string(p.context_mark.line + 1 + line_offset) + ", column " +
           std::to_string(p.context_mark.column + 1) + ")";
  }
  return msg;
}

}  // namespace

namespace {

// done: the part is read (or the rest of it cannot be); resume: an error, go on at `resume_at`;
// document: the first document is read (parse_part's `one_document`) and another starts after it.
enum class PartEnd : uint8_t { done, resume, document };

// Parses `part` (which starts at a line start, `line_offset` lines into the file) with libyaml.
// On an error it reports it and tells where the next document starts (`resume_at`), or that the
// rest of the part cannot be read.
PartEnd parse_part(std::string_view part, uint32_t line_offset, uint32_t& doc_index, std::string_view file,
                   const YamlLimits& limits, const std::function<void(YamlDocument&&)>& on_document,
                   std::vector<Diagnostic>& diagnostics, size_t& resume_at, bool one_document = false) {
  Parser parser;
  if (!parser.live) {
    diagnostics.push_back({Severity::error, std::string(file), {}, "cannot initialise the YAML parser"});
    return PartEnd::done;
  }
  Feed feed{part, 0, 0, limits.max_document_bytes, false};
  yaml_parser_set_input(&parser.p, feed_handler, &feed);
  DocumentBuilder builder(limits, file, line_offset, diagnostics);
  bool in_document = false;
  bool ended = false;  // a document ended
  Pos doc_pos;
  bool started = false;        // a document started
  uint32_t doc_mark_line = 0;  // the line of `part` the last document started at
  for (;;) {
    Event e;
    if (!yaml_parser_parse(&parser.p, &e.ev)) break;
    e.live = true;
    auto type = e.ev.type;
    if (type == YAML_DOCUMENT_START_EVENT) {
      // One document: it ended, and what follows it is a document, not an error.
      if (one_document && ended) return PartEnd::document;
      in_document = true;
      started = true;
      doc_pos = to_pos(e.ev.start_mark, line_offset);
      doc_mark_line = static_cast<uint32_t>(e.ev.start_mark.line);
      feed.doc_start = feed.fed;
      builder.start_document();
    } else if (type == YAML_DOCUMENT_END_EVENT) {
      in_document = false;
      YamlDocument doc;
      doc.index = doc_index++;
      if (builder.end_document(doc)) on_document(std::move(doc));
      ended = true;
    } else if (type == YAML_STREAM_END_EVENT) {
      return PartEnd::done;
    } else {
      builder.on_event(e.ev);
    }
  }

  // Report the error where libyaml stopped, then go on with the next document.
  const yaml_parser_t& p = parser.p;
  Pos where;
  std::string message;
  size_t resume_from = std::string_view::npos;
  if (feed.over_limit) {
    where = doc_pos;
    message = "document is over the size limit of " + std::to_string(limits.max_document_bytes) + " bytes";
    resume_from = feed.fed;
  } else if (p.error == YAML_READER_ERROR) {
    // Only UTF-16 input gets here (UTF-8 is checked before parsing): the rest is unreadable.
    where = pos_of_offset(part, p.problem_offset, line_offset);
    message = p.problem ? p.problem : "cannot read the input";
  } else {
    where = to_pos(p.problem_mark, line_offset);
    message = libyaml_message(p, line_offset);
    resume_from = line_start(part, static_cast<uint32_t>(p.problem_mark.line));
  }
  diagnostics.push_back({Severity::error, std::string(file), where, message});
  if (in_document) ++doc_index;
  if (resume_from == std::string_view::npos) return PartEnd::done;
  // The next document marker at or after the failing line; a marker on that very line starts a
  // new document (an unterminated quote runs into the next `---`), but only if that moves on.
  size_t next = next_document(part, std::min(resume_from, part.size()));
  // Not the marker the last document read started at (an error on its `---` line, in it or just
  // after it): that would read the same document, and report the same error, again.
  if (next != std::string_view::npos && started && next == line_start(part, doc_mark_line))
    next = next_document(part, next + 1);
  if (next == 0 && !part.empty()) next = next_document(part, 1);
  if (next == std::string_view::npos || next == 0) return PartEnd::done;
  resume_at = next;
  return PartEnd::resume;
}

// The documents of `part` in turn: those engine/yaml_block.h's reader takes are built from its
// events; each it refuses is left to libyaml (parse_part, which reads on past the document exactly
// as it would have in a stream parsed whole, so an error is reported where it would have been). A
// part with document end markers (`...`) or directives (`%`) is left to libyaml from there on, and
// so is a first document without `---` that the reader refuses (libyaml may find no document in
// it and read the next one as its first), and a part with line breaks other than \n. Returns as
// parse_part does.
PartEnd parse_part_fast(std::string_view part, uint32_t line_offset, uint32_t& doc_index, std::string_view file,
                        const YamlLimits& limits, const std::function<void(YamlDocument&&)>& on_document,
                        std::vector<Diagnostic>& diagnostics, size_t& resume_at) {
  DocumentBuilder builder(limits, file, line_offset, diagnostics);
  BlockEvents read;
  size_t start = 0;
  uint32_t lines_before = 0;  // lines of `part` before `start`
  auto by_libyaml = [&](bool one_document) {
    size_t inner = 0;
    const PartEnd end = parse_part(part.substr(start), line_offset + lines_before, doc_index, file, limits, on_document,
                                   diagnostics, inner, one_document);
    if (end == PartEnd::resume) resume_at = start + inner;
    return end;
  };
  // Line breaks other than \n (\r, and NEL, LS, PS in UTF-8) count as lines for libyaml and may
  // put a `---` at a line start: the documents would not be cut, nor lines counted, as it does.
  auto has = [&](std::string_view bytes) { return part.find(bytes) != std::string_view::npos; };
  if (has("\r") || has("\xC2\x85") || has("\xE2\x80\xA8") || has("\xE2\x80\xA9")) return by_libyaml(false);
  while (start < part.size()) {
    // The document: up to the next line that starts with `---`.
    size_t end = part.size();
    uint32_t lines = 0;
    for (size_t off = start;;) {
      if (off != start && is_marker_line(part, off, "---")) {
        end = off;
        break;
      }
      if (part[off] == '%' || is_marker_line(part, off, "...")) return by_libyaml(false);
      const void* nl = std::memchr(part.data() + off, '\n', part.size() - off);
      if (!nl) break;
      ++lines;
      off = static_cast<size_t>(static_cast<const char*>(nl) - part.data()) + 1;
      if (off >= part.size()) break;
    }
    const std::string_view text = part.substr(start, end - start);
    const BlockRead r = text.size() > limits.max_document_bytes ? BlockRead::refused : read_block_document(text, read);
    if (r == BlockRead::refused) {
      if (!is_marker_line(part, start, "---")) return by_libyaml(false);
      const PartEnd e = by_libyaml(true);
      if (e != PartEnd::document) return e;
    } else if (r == BlockRead::document) {
      builder.start_document();
      const uint32_t first = line_offset + lines_before + 1;
      for (const BlockEvent& e : read.events) {
        if (builder.failed()) break;
        const Pos pos{first + e.line, e.col + 1};
        switch (e.kind) {
          case BlockEvent::Kind::scalar: builder.scalar(read.text(e, text), e.plain, "", nullptr, pos); break;
          case BlockEvent::Kind::mapping: builder.start(true, nullptr, pos); break;
          case BlockEvent::Kind::sequence: builder.start(false, nullptr, pos); break;
          case BlockEvent::Kind::end: builder.end(); break;
        }
      }
      YamlDocument doc;
      doc.index = doc_index++;
      if (builder.end_document(doc)) on_document(std::move(doc));
    }
    lines_before += lines;
    start = end;
  }
  return PartEnd::done;
}

uint32_t count_lines(std::string_view s) {
  return static_cast<uint32_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

uint32_t load_yaml_stream(std::string_view text, std::string_view file, const YamlLimits& limits,
                          const std::function<void(YamlDocument&&)>& on_document, std::vector<Diagnostic>& diagnostics,
                          uint32_t first_line) {
  constexpr size_t kMaxErrors = 50;
  const size_t errors_before = diagnostics.size();
  const bool utf16 = text.size() >= 2 && ((text[0] == '\xFF' && text[1] == '\xFE') || (text[0] == '\xFE' && text[1] == '\xFF'));
  size_t offset = 0;
  uint32_t line_offset = first_line;  // lines before `offset`
  uint32_t doc_index = 0;
  while (offset < text.size() || offset == 0) {
    if (diagnostics.size() - errors_before >= kMaxErrors) {
      diagnostics.push_back({Severity::error, std::string(file), pos_of_offset(text, offset, first_line),
                             "too many errors; the rest of the file is skipped"});
      return doc_index;
    }
    std::string_view part = text.substr(offset);
    // Bytes YAML cannot hold, or flow collections nested past the limit (which libyaml would take
    // time quadratic in their depth to read): parse the documents before them, report, go on after
    // them. (UTF-16 text is decoded by libyaml and not looked at here.)
    BadByte bad = utf16 ? BadByte{} : first_bad_byte(part);
    if (!utf16) {
      const size_t deep = FlowNesting(part.substr(0, bad.offset), limits.max_depth).find();
      if (deep != std::string_view::npos)
        bad = {deep, "flow collections ('[' and '{') nesting deeper than " + std::to_string(limits.max_depth) +
                         " levels (the nesting limit): the document is refused before it is parsed"};
    }
    std::string_view clean = part;
    if (bad.offset != std::string_view::npos) clean = part.substr(0, document_start_before(part, bad.offset));
    size_t resume_at = 0;
    PartEnd end = PartEnd::done;
    if (!clean.empty() || bad.offset == std::string_view::npos)
      end = limits.block_reader && !utf16
                ? parse_part_fast(clean, line_offset, doc_index, file, limits, on_document, diagnostics, resume_at)
                : parse_part(clean, line_offset, doc_index, file, limits, on_document, diagnostics, resume_at);
    if (end == PartEnd::resume) {
      line_offset += count_lines(part.substr(0, resume_at));
      offset += resume_at;
      continue;
    }
    if (bad.offset == std::string_view::npos) return doc_index;
    diagnostics.push_back({Severity::error, std::string(file), pos_of_offset(part, bad.offset, line_offset), bad.message});
    ++doc_index;
    size_t next = next_document(part, bad.offset + 1);
    if (next == std::string_view::npos) return doc_index;
    line_offset += count_lines(part.substr(0, next));
    offset += next;
  }
  return doc_index;
}

uint32_t load_json_stream(std::string_view text, std::string_view file, const YamlLimits& limits,
                          const std::function<void(YamlDocument&&)>& on_document, std::vector<Diagnostic>& diagnostics,
                          uint32_t first_line, bool yaml_after_json) {
  DocumentBuilder builder(limits, file, first_line, diagnostics);
  // The events go to the builder as they are read; a document is started at a value's first.
  struct Feed final : JsonStream::Sink {
    DocumentBuilder& builder;
    uint32_t first_line;
    bool started = false;
    Feed(DocumentBuilder& b, uint32_t line) : builder(b), first_line(line) {}
    void event(const BlockEvent& e, std::string_view text) override {
      if (!started) {
        builder.start_document();
        started = true;
      }
      if (builder.failed()) return;
      const Pos pos{first_line + e.line + 1, e.col + 1};
      switch (e.kind) {
        // Numbers and literals are plain scalars: YAML 1.1 resolves every JSON number and literal
        // to the value JSON gives it (the tests compare the two).
        case BlockEvent::Kind::scalar: builder.scalar(text, e.plain, "", nullptr, pos); break;
        case BlockEvent::Kind::mapping: builder.start(true, nullptr, pos); break;
        case BlockEvent::Kind::sequence: builder.start(false, nullptr, pos); break;
        case BlockEvent::Kind::end: builder.end(); break;
      }
    }
  } feed(builder, first_line);
  JsonStream stream(text);
  uint32_t doc_index = 0;
  for (;;) {
    feed.started = false;
    const JsonStream::Next next = stream.next(feed, limits.max_depth, limits.max_document_bytes);
    if (next == JsonStream::Next::end) return doc_index;
    if (next == JsonStream::Next::error) break;
    YamlDocument doc;
    doc.index = doc_index++;
    if (feed.started && builder.end_document(doc)) on_document(std::move(doc));  // a value has an event
  }
  // Not JSON from this value on. As kubectl's YAMLOrJSONDecoder does (since it reads streams that
  // mix the two), the rest is read as YAML, from where the value starts: the characters of its
  // line before it stand as spaces, so that columns stay. If that is not YAML either, the JSON
  // error is the one reported, and the rest is not read.
  const JsonStream::Error& error = stream.error();
  std::vector<YamlDocument> docs;
  std::vector<Diagnostic> yaml_errors;
  uint32_t used = 0;
  if (yaml_after_json && !error.over_limit) {
    std::string rest(stream.value_col(), ' ');
    rest.append(text.substr(stream.value_begin()));
    used = load_yaml_stream(rest, file, limits, [&](YamlDocument&& d) { docs.push_back(std::move(d)); }, yaml_errors,
                            first_line + stream.value_line());
  }
  // kubectl decodes each document into an object: a YAML scalar or sequence fails as the JSON did.
  const bool objects = std::all_of(docs.begin(), docs.end(), [](const YamlDocument& d) {
    return d.positions->type(d.positions->root()) == PositionIndex::Type::mapping;
  });
  if (error.over_limit || !yaml_errors.empty() || docs.empty() || !objects) {
    diagnostics.push_back({Severity::error, std::string(file), Pos{first_line + error.line + 1, error.col + 1},
                           "invalid JSON: " + error.message});
    return doc_index + 1;
  }
  for (auto& d : docs) {
    d.index += doc_index;
    on_document(std::move(d));
  }
  return doc_index + used;
}

}  // namespace gpuguard::engine
