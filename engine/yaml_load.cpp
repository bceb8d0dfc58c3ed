#include "engine/yaml_load.h"

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

struct Completed {
  json value;
  PositionIndex::NodeId node = 0;
  Pos pos;
  size_t count = 1;
};

struct Anchor {
  json value;
  PositionIndex::NodeId node = 0;
  size_t count = 1;
};

struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>{}(key); }
};
using KeyIndex = std::unordered_map<std::string, size_t, KeyHash, std::equal_to<>>;  // key → offset

struct Frame {
  bool is_map = false;
  Pos pos;
  std::string anchor;
  json value;              // a sequence's items; a mapping's value is made when it ends
  size_t child_start = 0;  // this frame's children are child_stack_[child_start..]
  // A mapping's members are member_stack_[member_start..], in document order, each with its child
  // at the same offset from child_start; for a large mapping, `index` finds a key's offset.
  size_t member_start = 0;
  std::unique_ptr<KeyIndex> index;
  std::unique_ptr<std::set<std::string, std::less<>>> merged;  // keys that came from a merge, not written here
  size_t count = 1;
  // Mapping state: the key waiting for its value.
  bool have_key = false;
  bool key_is_merge = false;
  std::string key;
  Pos key_pos;
};

struct DocError {
  Pos pos;
  std::string message;
};

class Builder {
 public:
  Builder(const YamlLimits& limits, std::string_view file, uint32_t line_offset,
          std::vector<Diagnostic>& diags)
      : limits_(limits), file_(file), line_offset_(line_offset), diags_(diags) {}

  void start_document() {
    frames_.clear();
    child_stack_.clear();
    member_stack_.clear();
    anchors_.clear();
    positions_ = std::make_shared<PositionIndex>();
    root_.reset();
    error_.reset();
    nodes_ = 0;
    alias_nodes_ = 0;
    key_bytes_ = 0;
  }

  // Returns true and fills `doc` when the document produced a body.
  bool end_document(YamlDocument& doc) {
    if (error_) {
      diags_.push_back({Severity::error, std::string(file_), error_->pos, error_->message});
      return false;
    }
    if (!root_ || root_->value.is_null()) return false;
    doc.body = std::move(root_->value);
    doc.start = root_->pos;
    positions_->set_root(root_->node);
    doc.positions = std::move(positions_);
    return true;
  }

  void on_event(const yaml_event_t& ev) {
    if (error_) return;  // skip the rest of a failed document
    switch (ev.type) {
      case YAML_SCALAR_EVENT: on_scalar(ev); break;
      case YAML_SEQUENCE_START_EVENT: on_start(ev, false); break;
      case YAML_MAPPING_START_EVENT: on_start(ev, true); break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: on_end(); break;
      case YAML_ALIAS_EVENT: on_alias(ev); break;
      default: break;
    }
  }

 private:
  void fail(Pos pos, std::string message) {
    if (!error_) error_ = DocError{pos, std::move(message)};
  }

  bool expecting_key() const { return !frames_.empty() && frames_.back().is_map && !frames_.back().have_key; }

  bool count_node(Pos pos, size_t n, bool from_alias) {
    nodes_ += n;
    if (from_alias) alias_nodes_ += n;
    size_t own = nodes_ - alias_nodes_;
    if (alias_nodes_ > limits_.alias_node_budget + limits_.alias_node_ratio * own) {
      fail(pos, "aliases expand this document to more than " +
                    std::to_string(limits_.alias_node_budget + limits_.alias_node_ratio * own) +
                    " nodes (alias expansion budget exceeded: a \"billion laughs\" document?)");
      return false;
    }
    return true;
  }

  void on_scalar(const yaml_event_t& ev) {
    const auto& sc = ev.data.scalar;
    Pos pos = to_pos(ev.start_mark, line_offset_);
    if (sc.length > limits_.max_scalar_bytes) {
      fail(pos, "scalar of " + std::to_string(sc.length) + " bytes is over the limit of " +
                    std::to_string(limits_.max_scalar_bytes) + " bytes");
      return;
    }
    std::string_view text(reinterpret_cast<const char*>(sc.value), sc.length);
    std::string_view tag = sc.tag ? std::string_view(reinterpret_cast<const char*>(sc.tag)) : "";
    if (tag == "!") tag = "";  // the non-specific tag: go-yaml resolves it like a plain scalar
    const bool plain = (sc.plain_implicit != 0 || sc.tag != nullptr) && tag.empty();

    if (!count_node(pos, 1, false)) return;
    // Keys, the common case: a string key needs no JSON value.
    if (expecting_key() && tag.empty()) {
      if (!plain) {
        set_key_string(std::string(text), false, pos);
        return;
      }
      ResolvedScalar r = resolve_plain_scalar(text);
      if (r.type == ScalarType::string) {
        set_key_string(std::string(text), false, pos);
        return;
      }
      if (r.type == ScalarType::merge) {
        set_key_string(std::string(text), true, pos);
        return;
      }
    }
    json value;
    bool is_merge = false;
    if (plain) {
      ResolvedScalar r = resolve_plain_scalar(text);
      switch (r.type) {
        case ScalarType::null: value = nullptr; break;
        case ScalarType::boolean: value = r.b; break;
        case ScalarType::integer: value = r.i; break;
        case ScalarType::floating: value = r.d; break;
        case ScalarType::string: value = std::string(text); break;
        case ScalarType::merge:
          is_merge = true;
          value = std::string(text);
          break;
      }
    } else if (tag.empty()) {
      value = std::string(text);  // quoted or block scalar: always a string
    } else if (!resolve_tagged(text, tag, pos, value, is_merge)) {
      return;
    }

    if (expecting_key()) {
      set_key(value, is_merge, pos);
      return;
    }
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      // sigs.k8s.io/yaml: "json: unsupported value: +Inf" — kubectl refuses the document.
      fail(pos, "`" + std::string(text) + "` is not a finite number; Kubernetes' YAML→JSON conversion rejects it (quote it if a string is meant)");
      return;
    }
    Completed c{std::move(value), positions_->add_leaf(pos), pos, 1};
    register_anchor(sc.anchor, c);
    deliver(std::move(c));
  }

  // Explicit tags (go-yaml v2 resolve(): only "", !!str, !!bool, !!int, !!float, !!null and
  // !!timestamp are resolved; other tags keep the text; !!binary is base64-decoded).
  bool resolve_tagged(std::string_view text, std::string_view tag, Pos pos, json& out, bool& is_merge) {
    std::string_view short_tag = tag;
    if (tag.starts_with(kTagPrefix)) short_tag = tag.substr(kTagPrefix.size());
    else {
      out = std::string(text);  // a custom tag: go-yaml keeps the text
      return true;
    }
    if (short_tag == "str" || short_tag == "timestamp") {
      out = std::string(text);
      return true;
    }
    if (short_tag == "merge" && text == "<<") {
      is_merge = true;
      out = std::string(text);
      return true;
    }
    if (short_tag == "binary") {
      auto decoded = base64_decode(text);
      if (!decoded) {
        fail(pos, "!!binary value contains invalid base64 data");
        return false;
      }
      out = std::move(*decoded);
      return true;
    }
    ResolvedScalar r = resolve_plain_scalar(text);
    auto mismatch = [&](std::string_view got) {
      fail(pos, "cannot decode !!" + std::string(got) + " `" + std::string(text) + "` as a !!" + std::string(short_tag));
      return false;
    };
    if (short_tag == "int") {
      if (r.type != ScalarType::integer) return mismatch(r.type == ScalarType::floating ? "float" : "str");
      out = r.i;
      return true;
    }
    if (short_tag == "float") {
      if (r.type == ScalarType::integer) out = static_cast<double>(r.i);
      else if (r.type == ScalarType::floating) out = r.d;
      else return mismatch("str");
      return true;
    }
    if (short_tag == "bool") {
      if (r.type != ScalarType::boolean) return mismatch("str");
      out = r.b;
      return true;
    }
    if (short_tag == "null") {
      if (r.type != ScalarType::null) return mismatch("str");
      out = nullptr;
      return true;
    }
    out = std::string(text);
    return true;
  }

  void set_key_string(std::string key, bool is_merge, Pos pos) {
    Frame& f = frames_.back();
    f.have_key = true;
    f.key_is_merge = is_merge;
    f.key_pos = pos;
    f.key = std::move(key);
  }

  void set_key(const json& key, bool is_merge, Pos pos) {
    Frame& f = frames_.back();
    f.have_key = true;
    f.key_is_merge = is_merge;
    f.key_pos = pos;
    // sigs.k8s.io/yaml converts non-string keys to strings.
    if (key.is_string()) f.key = key.get<std::string>();
    else if (key.is_boolean()) f.key = key.get<bool>() ? "true" : "false";
    else if (key.is_number_integer()) f.key = std::to_string(key.get<int64_t>());
    else if (key.is_number_float()) {
      double d = key.get<double>();
      if (std::isnan(d)) f.key = ".nan";
      else if (std::isinf(d)) f.key = d > 0 ? ".inf" : "-.inf";
      else f.key = go_format_float_g(d, 32);
    } else {
      fail(pos, "a null mapping key cannot be converted to JSON");
    }
  }

  void on_start(const yaml_event_t& ev, bool is_map) {
    Pos pos = to_pos(ev.start_mark, line_offset_);
    if (expecting_key()) {
      fail(pos, std::string("a ") + (is_map ? "mapping" : "sequence") + " cannot be a mapping key");
      return;
    }
    if (frames_.size() >= limits_.max_depth) {
      fail(pos, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return;
    }
    if (!count_node(pos, 1, false)) return;
    Frame f;
    f.is_map = is_map;
    f.pos = pos;
    if (!is_map) f.value = json::array();
    f.child_start = child_stack_.size();
    f.member_start = member_stack_.size();
    const yaml_char_t* anchor = is_map ? ev.data.mapping_start.anchor : ev.data.sequence_start.anchor;
    if (anchor) f.anchor = reinterpret_cast<const char*>(anchor);
    frames_.push_back(std::move(f));
  }

  void on_end() {
    if (frames_.empty()) return;
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (f.is_map && f.have_key) {  // cannot happen with a well-formed event stream
      fail(f.key_pos, "mapping key without a value");
      return;
    }
    PositionIndex::NodeId node = positions_->add(
        f.pos, f.is_map, std::span<const PositionIndex::Child>(child_stack_.data() + f.child_start, child_stack_.size() - f.child_start));
    child_stack_.resize(f.child_start);
    if (f.is_map) {
      // The members, sorted once (their keys are distinct: put() replaced repeated ones).
      f.value = json(json::object_t::take(member_stack_, f.member_start));
    }
    Completed c{std::move(f.value), node, f.pos, f.count};
    if (!f.anchor.empty()) {
      anchors_[f.anchor] = Anchor{c.value, c.node, c.count};
    }
    deliver(std::move(c));
  }

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
    if (!count_node(pos, it->second.count, true)) return;
    if (expecting_key()) {
      if (it->second.value.is_object() || it->second.value.is_array()) {
        fail(pos, "alias *" + name + " to a collection cannot be a mapping key");
        return;
      }
      set_key(it->second.value, false, pos);
      return;
    }
    Completed c{it->second.value, it->second.node, pos, it->second.count};
    deliver(std::move(c));
  }

  void register_anchor(const yaml_char_t* anchor, const Completed& c) {
    if (anchor) anchors_[reinterpret_cast<const char*>(anchor)] = Anchor{c.value, c.node, c.count};
  }

  // Whether a mapping key fits the document's key text, which is bounded by the document limit:
  // without aliases the keys cannot outgrow the document, but a long scalar used as a key by many
  // aliases can (as a "billion laughs" does with nodes).
  bool key_text_within(std::string_view key, Pos pos) {
    const size_t limit = std::min<size_t>(limits_.max_document_bytes, std::numeric_limits<uint32_t>::max());
    key_bytes_ += key.size();
    if (key_bytes_ <= limit) return true;
    fail(pos, "the document's mapping keys add up to more than " + std::to_string(limit) +
                  " bytes (aliases repeating a long key?)");
    return false;
  }

  // Members from which a mapping frame finds its keys by hash instead of a scan.
  static constexpr size_t kIndexFrom = 16;

  // The offset of `key` among a mapping frame's members (and of its child among the frame's
  // children), or npos.
  size_t find_member(const Frame& f, std::string_view key) const {
    if (f.index) {
      auto it = f.index->find(key);
      return it == f.index->end() ? std::string::npos : it->second;
    }
    for (size_t i = f.member_start; i < member_stack_.size(); ++i)
      if (member_stack_[i].first == key) return i - f.member_start;
    return std::string::npos;
  }

  // Sets key → value in a mapping frame, in document order (go-yaml v2: a merge overwrites keys
  // written before it, keys written after it overwrite the merge). `key_offset` is where the key's
  // text already is in the position index (a merged key: `key` points there, so nothing may be
  // added to the key text first), or nullopt to add it. `owned`, when given, is the string `key`
  // views, which a new member takes instead of a copy. Returns whether an explicit key was written
  // twice.
  bool put(Frame& f, std::string_view key, std::optional<uint32_t> key_offset, Pos key_pos, json value,
           PositionIndex::NodeId node, bool is_explicit, std::string* owned = nullptr) {
    const size_t at = find_member(f, key);
    if (at == std::string::npos) {
      if (!key_offset && !key_text_within(key, key_pos)) return false;
      if (!is_explicit) {
        if (!f.merged) f.merged = std::make_unique<std::set<std::string, std::less<>>>();
        f.merged->emplace(key);
      }
      if (owned) member_stack_.emplace_back(std::move(*owned), std::move(value));
      else member_stack_.emplace_back(std::string(key), std::move(value));
      key = member_stack_.back().first;  // `*owned` is moved from
      const size_t count = member_stack_.size() - f.member_start;
      if (f.index) {
        f.index->emplace(member_stack_.back().first, count - 1);
      } else if (count == kIndexFrom) {
        f.index = std::make_unique<KeyIndex>();
        for (size_t i = 0; i < count; ++i) f.index->emplace(member_stack_[f.member_start + i].first, i);
      }
      uint32_t offset = key_offset ? *key_offset : positions_->add_key(key);
      child_stack_.push_back({offset, static_cast<uint32_t>(key.size()), key_pos, node});
      return false;
    }
    member_stack_[f.member_start + at].second = std::move(value);
    const size_t slot = f.child_start + at;
    child_stack_[slot].key_pos = key_pos;
    child_stack_[slot].node = node;
    bool was_merged = false;
    if (f.merged) {
      auto m = f.merged->find(key);
      was_merged = m != f.merged->end();
      if (is_explicit && was_merged) f.merged->erase(m);
    }
    if (!is_explicit && !was_merged) {
      // A merge after an explicit key: the merge wins (go-yaml v2), and the key counts as merged.
      if (!f.merged) f.merged = std::make_unique<std::set<std::string, std::less<>>>();
      f.merged->emplace(key);
      return false;
    }
    return is_explicit && !was_merged;
  }

  void merge_into(Frame& f, const Completed& c) {
    auto merge_map = [&](const json& m, PositionIndex::NodeId node) {
      for (const auto& ch : positions_->children(node)) {
        std::string_view key = positions_->key(ch);
        auto it = m.find(key);
        if (it == m.end()) continue;
        put(f, key, ch.key_offset, ch.key_pos, *it, ch.node, false);
      }
    };
    if (c.value.is_object()) {
      merge_map(c.value, c.node);
      return;
    }
    if (c.value.is_array()) {
      auto items = positions_->children(c.node);
      for (const auto& item : c.value)
        if (!item.is_object()) {
          fail(f.key_pos, "map merge requires map or sequence of maps as the value");
          return;
        }
      // go-yaml applies the sequence backwards: earlier maps take precedence.
      for (size_t i = c.value.size(); i-- > 0;) merge_map(c.value[i], i < items.size() ? items[i].node : 0);
      return;
    }
    fail(f.key_pos, "map merge requires map or sequence of maps as the value");
  }

  void deliver(Completed c) {
    if (frames_.empty()) {
      root_ = std::move(c);
      return;
    }
    Frame& f = frames_.back();
    f.count += c.count;
    if (!f.is_map) {
      f.value.get_ref<json::array_t&>().push_back(std::move(c.value));
      child_stack_.push_back({0, 0, c.pos, c.node});
      return;
    }
    f.have_key = false;
    if (f.key_is_merge) {
      merge_into(f, c);
      return;
    }
    if (put(f, f.key, std::nullopt, f.key_pos, std::move(c.value), c.node, true, &f.key)) {
      diags_.push_back({Severity::error, std::string(file_), f.key_pos,
                        "duplicate mapping key \"" + f.key + "\": Kubernetes keeps only the last value"});
    }
  }

  const YamlLimits& limits_;
  std::string_view file_;
  uint32_t line_offset_;
  std::vector<Diagnostic>& diags_;
  std::vector<Frame> frames_;
  std::vector<PositionIndex::Child> child_stack_;
  std::vector<json::object_t::value_type> member_stack_;  // of the mappings being built
  std::unordered_map<std::string, Anchor> anchors_;
  std::shared_ptr<PositionIndex> positions_;
  std::optional<Completed> root_;
  std::optional<DocError> error_;
  size_t nodes_ = 0;
  size_t alias_nodes_ = 0;
  size_t key_bytes_ = 0;  // the document's key text so far (PositionIndex addresses it in 32 bits)
};

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

enum class PartEnd : uint8_t { done, resume };

// Parses `part` (which starts at a line start, `line_offset` lines into the file) with libyaml.
// On an error it reports it and tells where the next document starts (`resume_at`), or that the
// rest of the part cannot be read.
PartEnd parse_part(std::string_view part, uint32_t line_offset, uint32_t& doc_index, std::string_view file,
                   const YamlLimits& limits, const std::function<void(YamlDocument&&)>& on_document,
                   std::vector<Diagnostic>& diagnostics, size_t& resume_at) {
  Parser parser;
  if (!parser.live) {
    diagnostics.push_back({Severity::error, std::string(file), {}, "cannot initialise the YAML parser"});
    return PartEnd::done;
  }
  Feed feed{part, 0, 0, limits.max_document_bytes, false};
  yaml_parser_set_input(&parser.p, feed_handler, &feed);
  Builder builder(limits, file, line_offset, diagnostics);
  bool in_document = false;
  Pos doc_pos;
  for (;;) {
    Event e;
    if (!yaml_parser_parse(&parser.p, &e.ev)) break;
    e.live = true;
    auto type = e.ev.type;
    if (type == YAML_DOCUMENT_START_EVENT) {
      in_document = true;
      doc_pos = to_pos(e.ev.start_mark, line_offset);
      feed.doc_start = feed.fed;
      builder.start_document();
    } else if (type == YAML_DOCUMENT_END_EVENT) {
      in_document = false;
      YamlDocument doc;
      doc.index = doc_index++;
      if (builder.end_document(doc)) on_document(std::move(doc));
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
  if (next == 0 && !part.empty()) next = next_document(part, 1);
  if (next == std::string_view::npos || next == 0) return PartEnd::done;
  resume_at = next;
  return PartEnd::resume;
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
    // Bytes YAML cannot hold: parse the documents before them, report, go on after them.
    BadByte bad = utf16 ? BadByte{} : first_bad_byte(part);
    std::string_view clean = part;
    if (bad.offset != std::string_view::npos) clean = part.substr(0, document_start_before(part, bad.offset));
    size_t resume_at = 0;
    PartEnd end = PartEnd::done;
    if (!clean.empty() || bad.offset == std::string_view::npos)
      end = parse_part(clean, line_offset, doc_index, file, limits, on_document, diagnostics, resume_at);
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

}  // namespace gpuguard::engine
