#include "engine/json_parse.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <cstring>
#include <limits>
#include <cstdint>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "engine/json_bytes.h"

namespace gpuguard::engine {

namespace {

// The lexing both fast readers share: whitespace, literals, the elements of an object or array,
// strings and numbers, each as nlohmann's lexer reads it; false at anything else (the caller then
// asks nlohmann, which gives the same value a slower way, or the error).
class Lexer {
 public:
  // How deeply the containers read so far nest (1 for a flat object or array).
  [[nodiscard]] unsigned deepest() const { return deepest_; }

 protected:
  explicit Lexer(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // Deeper than this, nlohmann (which keeps its own stack) reads it: the readers recurse.
  static constexpr unsigned kMaxDepth = 512;

  const char* p_;
  const char* end_;
  unsigned deepest_ = 0;

  // A container at `depth` begins: false past the readers' depth.
  bool enter(unsigned depth) {
    if (depth >= kMaxDepth) return false;
    if (depth >= deepest_) deepest_ = depth + 1;
    return true;
  }

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  // The members of an object or the items of an array (p_ at the opening bracket): `element()`
  // reads one, a comma goes on to the next, `close` ends them.
  template <typename Element>
  bool elements(char close, Element element) {
    ++p_;
    skip_space();
    if (p_ < end_ && *p_ == close) {
      ++p_;
      return true;
    }
    for (;;) {
      if (!element()) return false;
      skip_space();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        skip_space();
        continue;
      }
      if (*p_ != close) return false;
      ++p_;
      return true;
    }
  }

  // A member's key and colon (p_ at the key's quote), the key appended to `key`.
  bool key(std::string& key) {
    if (p_ == end_ || *p_ != '"') return false;
    if (!string(key)) return false;
    skip_space();
    if (p_ == end_ || *p_ != ':') return false;
    ++p_;
    skip_space();
    return true;
  }

  // A string (p_ at its opening quote), appended to `s`.
  bool string(std::string& s) {
    ++p_;
    const char* run = p_;  // bytes copied as they are, from here
    for (;;) {
      p_ = plain_json_bytes(p_, end_);
      if (p_ == end_) return false;
      switch (const auto u = static_cast<unsigned char>(*p_); u) {
        case '"':
          s.append(run, p_);
          ++p_;
          return true;
        case '\\': {
          s.append(run, p_);
          if (end_ - p_ < 2 || decode_json_escape(p_, end_, s) != JsonEscape::ok) return false;
          run = p_;
          continue;
        }
        default: {
          if (u < 0x80) return false;  // a control character, which must be escaped
          // A multi-byte character: well-formed UTF-8 only, as nlohmann's lexer checks it.
          const size_t n = utf8_sequence(std::string_view(p_, static_cast<size_t>(end_ - p_)), 0);
          if (n == 0) return false;
          p_ += n;
          continue;
        }
      }
    }
  }

  struct Number {
    enum class Kind : uint8_t { negative, non_negative, floating } kind = Kind::non_negative;
    uint64_t magnitude = 0;  // an integer's (at most 18 digits: it fits an int64)
    double value = 0;        // a float's
  };

  // RFC 8259's number (p_ before the end). An integer of more than 18 digits, which may not fit, is
  // left to nlohmann; so is a float outside double's range.
  bool number(Number& out) {
    const char* start = p_;
    const JsonNumber scan = scan_json_number(p_, end_);
    if (scan.error != JsonNumber::Error::none) return false;
    p_ = scan.end;
    if (scan.integral) {
      const bool negative = *start == '-';
      const char* digits = negative ? start + 1 : start;
      if (scan.int_end - digits > 18) return false;
      uint64_t v = 0;
      for (const char* d = digits; d < scan.int_end; ++d) v = v * 10 + static_cast<uint64_t>(*d - '0');
      out.kind = negative ? Number::Kind::negative : Number::Kind::non_negative;
      out.magnitude = v;
      return true;
    }
    // Correctly rounded, like nlohmann's strtod; an overflow or underflow is left to nlohmann.
    double d = 0;
    auto [end, ec] = std::from_chars(start, p_, d);
    if (ec != std::errc{} || end != p_) return false;
    out.kind = Number::Kind::floating;
    out.value = d;
    return true;
  }
};

// Reads a document of the shapes Kubernetes sends into the engine's JSON.
class Reader : public Lexer {
 public:
  explicit Reader(std::string_view text) : Lexer(text) {}

  bool document(json& out) {
    skip_space();
    if (!value(out, 0)) return false;
    skip_space();
    return p_ == end_;
  }

 private:
  std::vector<json::object_t::value_type> members_;  // of the objects being read, outermost first

  bool value(json& out, unsigned depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"':
        // Read into the value's own string: no string to move into it afterwards.
        out = json::value_t::string;
        return string(out.get_ref<std::string&>());
      case 't':
        if (!literal("true")) return false;
        out = true;
        return true;
      case 'f':
        if (!literal("false")) return false;
        out = false;
        return true;
      case 'n':
        if (!literal("null")) return false;
        out = nullptr;
        return true;
      default: {
        // An integer is number_integer when negative and number_unsigned otherwise, as nlohmann's
        // lexer makes them.
        Number n;
        if (!number(n)) return false;
        if (n.kind == Number::Kind::negative) out = -static_cast<int64_t>(n.magnitude);
        else if (n.kind == Number::Kind::non_negative) out = n.magnitude;
        else out = n.value;
        return true;
      }
    }
  }

  bool object(json& out, unsigned depth) {
    if (!enter(depth)) return false;
    // The members go on a stack shared by all levels, and into the object when it ends, sorted
    // once (FlatMap::take; of repeated keys the last is kept, as nlohmann keeps it).
    const size_t start = members_.size();
    const bool ok = elements('}', [&] {
      // The key is read into its member, which the member's value (read next) may push others
      // after: it is found again by its index.
      const size_t at = members_.size();
      if (!key(members_.emplace_back().first)) return false;
      json v;
      if (!value(v, depth + 1)) return false;
      members_[at].second = std::move(v);
      return true;
    });
    if (!ok) {
      members_.resize(start);
      return false;
    }
    out = json(json::object_t::take(members_, start));
    return true;
  }

  bool array(json& out, unsigned depth) {
    if (!enter(depth)) return false;
    out = json::array();
    auto& items = out.get_ref<json::array_t&>();
    return elements(']', [&] { return value(items.emplace_back(), depth + 1); });
  }
};

}  // namespace

// Reads a document of the shapes Kubernetes sends straight into a PositionIndex (no positions:
// the text is not one a user wrote), so that no JSON tree is made to be turned into a document.
// A key written twice in one object is left to nlohmann as well (the API server never sends one).
class JsonDocumentReader : public Lexer {
 public:
  // `node_bound`: json_node_bound(text), which the reader never passes (a value is a node only
  // once it starts, and each value after a container's first follows a comma); its nodes and all
  // of its strings (never longer than the text) are reserved, so neither buffer grows.
  JsonDocumentReader(std::string_view text, PositionIndex& doc, size_t node_bound) : Lexer(text), doc_(doc) {
    doc_.nodes_.reserve(node_bound);
    doc_.text_.reserve(text.size());
  }

  bool document() {
    skip_space();
    if (!value(0, 0, 0)) return false;
    skip_space();
    doc_.root_ = 0;
    return p_ == end_;
  }

 private:
  using NodeId = PositionIndex::NodeId;
  using Type = PositionIndex::Type;

  PositionIndex& doc_;

  // Appends a node (a mapping's entry when key_size > 0 or the parent is a mapping; its key is
  // already in the text).
  NodeId add(Type type, uint32_t key_offset, uint32_t key_size) {
    const auto id = static_cast<NodeId>(doc_.nodes_.size());
    PositionIndex::Node& n = doc_.nodes_.emplace_back();
    n.type = type;
    n.end = id + 1;
    n.key_offset = key_offset;
    n.key_size = key_size;
    return id;
  }

  [[nodiscard]] uint32_t text_size() const { return static_cast<uint32_t>(doc_.text_.size()); }

  bool value(unsigned depth, uint32_t key_offset, uint32_t key_size) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': return object(depth, add(Type::mapping, key_offset, key_size));
      case '[': return array(depth, add(Type::sequence, key_offset, key_size));
      case '"': {
        const NodeId id = add(Type::string, key_offset, key_size);
        const uint32_t at = text_size();
        if (!string(doc_.text_)) return false;
        doc_.nodes_[id].v.s = {at, text_size() - at};
        return true;
      }
      case 't':
        if (!literal("true")) return false;
        doc_.nodes_[add(Type::boolean, key_offset, key_size)].v.b = true;
        return true;
      case 'f':
        if (!literal("false")) return false;
        doc_.nodes_[add(Type::boolean, key_offset, key_size)].v.b = false;
        return true;
      case 'n':
        if (!literal("null")) return false;
        add(Type::null, key_offset, key_size);
        return true;
      default: {
        // As PositionIndex::from_json makes nlohmann's numbers (integers of up to 18 digits fit).
        Number n;
        if (!number(n)) return false;
        if (n.kind == Number::Kind::floating) {
          doc_.nodes_[add(Type::floating, key_offset, key_size)].v.d = n.value;
        } else {
          const auto v = static_cast<int64_t>(n.magnitude);
          doc_.nodes_[add(Type::integer, key_offset, key_size)].v.i = n.kind == Number::Kind::negative ? -v : v;
        }
        return true;
      }
    }
  }

  bool object(unsigned depth, NodeId id) {
    if (!enter(depth)) return false;
    uint32_t count = 0;
    const bool ok = elements('}', [&] {
      const uint32_t at = text_size();
      if (!key(doc_.text_)) return false;
      ++count;
      return value(depth + 1, at, text_size() - at);
    });
    if (!ok) return false;
    PositionIndex::Node& n = doc_.nodes_[id];
    n.end = static_cast<NodeId>(doc_.nodes_.size());
    n.count = count;
    return count < 2 || unique_keys(id);
  }

  bool array(unsigned depth, NodeId id) {
    if (!enter(depth)) return false;
    uint32_t count = 0;
    const bool ok = elements(']', [&] {
      ++count;
      return value(depth + 1, 0, 0);
    });
    if (!ok) return false;
    PositionIndex::Node& n = doc_.nodes_[id];
    n.end = static_cast<NodeId>(doc_.nodes_.size());
    n.count = count;
    return true;
  }

  // No key of mapping `id` is written twice. A few keys: each key's size and first and last bytes
  // pick one of 64 bits, and only keys whose bit was taken already are compared with the others; more
  // keys: a sort.
  bool unique_keys(NodeId id) {
    const auto& ns = doc_.nodes_;
    const NodeId end = ns[id].end;
    auto key_of = [&](NodeId c) { return std::string_view(doc_.text_).substr(ns[c].key_offset, ns[c].key_size); };
    if (ns[id].count <= 16) {
      uint64_t seen = 0;
      for (NodeId a = id + 1; a < end; a = ns[a].end) {
        const std::string_view k = key_of(a);
        const size_t h = k.empty() ? 0 : (k.size() * 7 + size_t{static_cast<unsigned char>(k.front())} * 3 + static_cast<unsigned char>(k.back())) & 63;
        if ((seen >> h) & 1) {
          for (NodeId b = id + 1; b < a; b = ns[b].end)
            if (key_of(b) == k) return false;
        }
        seen |= uint64_t{1} << h;
      }
      return true;
    }
    keys_.clear();
    for (NodeId c = id + 1; c < end; c = ns[c].end) keys_.push_back(key_of(c));
    std::sort(keys_.begin(), keys_.end());
    return std::adjacent_find(keys_.begin(), keys_.end()) == keys_.end();
  }

  std::vector<std::string_view> keys_;  // unique_keys' scratch
};

bool parse_json_fast(std::string_view text, json& out, unsigned* depth) {
  Reader reader(text);
  const bool read = reader.document(out);
  if (read && depth) *depth = reader.deepest();
  return read;
}

bool identical(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case json::value_t::object: {
      const auto& x = a.get_ref<const json::object_t&>();
      const auto& y = b.get_ref<const json::object_t&>();
      if (x.size() != y.size()) return false;
      for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j)
        if (i->first != j->first || !identical(i->second, j->second)) return false;
      return true;
    }
    case json::value_t::array: {
      const auto& x = a.get_ref<const json::array_t&>();
      const auto& y = b.get_ref<const json::array_t&>();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!identical(x[i], y[i])) return false;
      return true;
    }
    case json::value_t::number_float:
      return std::bit_cast<uint64_t>(a.get<double>()) == std::bit_cast<uint64_t>(b.get<double>());
    case json::value_t::discarded: return true;
    default: return a == b;
  }
}

namespace {

// nlohmann's parser with a builder of the engine's own. nlohmann's DOM builder inserts each member
// into its object as it reads it, which for the engine's FlatMap objects would be quadratic in the
// number of a large object's keys when they come out of order; this one collects an object's
// members and hands them over when the object ends (FlatMap::take: one sort, and the last of
// duplicate keys wins, as with nlohmann's builder). Iterative, like nlohmann's: no depth can
// overflow the stack.
class SaxBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  // Its members' default constructors do not throw (the static_assert after the class holds it).
  SaxBuilder() = default;  // NOLINT(bugprone-exception-escape)

  bool null() { return put(json(nullptr)); }
  bool boolean(bool b) { return put(json(b)); }
  bool number_integer(number_integer_t v) { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) { return put(json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) { return put(json(v)); }
  bool string(string_t& s) { return put(json(std::move(s))); }
  bool binary(binary_t& b) { return put(json::binary(std::move(b))); }
  bool start_object(std::size_t /*size*/) {
    frames_.push_back({true, members_.size(), {}});
    return true;
  }
  bool key(string_t& k) {
    frames_.back().key = std::move(k);
    return true;
  }
  bool end_object() {
    const size_t start = frames_.back().start;
    frames_.pop_back();
    return put(json(json::object_t::take(members_, start)));
  }
  bool start_array(std::size_t /*size*/) {
    frames_.push_back({false, elements_.size(), {}});
    return true;
  }
  bool end_array() {
    const size_t start = frames_.back().start;
    frames_.pop_back();
    json v(json::value_t::array);
    v.get_ref<json::array_t&>().assign(std::make_move_iterator(elements_.begin() + static_cast<std::ptrdiff_t>(start)),
                                       std::make_move_iterator(elements_.end()));
    elements_.resize(start);
    return put(std::move(v));
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const nlohmann::detail::exception& /*error*/) {
    return false;
  }

  json take() { return std::move(root_); }

 private:
  struct Frame {
    bool object;
    size_t start;  // where its members (or elements) begin on the stack
    string_t key;  // an object's key waiting for its value
  };

  bool put(json&& v) {
    if (frames_.empty()) root_ = std::move(v);
    else if (frames_.back().object) members_.emplace_back(std::move(frames_.back().key), std::move(v));
    else elements_.push_back(std::move(v));
    return true;
  }

  std::vector<Frame> frames_;
  std::vector<json::object_t::value_type> members_;
  std::vector<json> elements_;
  json root_;
};
static_assert(std::is_nothrow_default_constructible_v<SaxBuilder>);

// No JSON text of `size` bytes holds more nodes: a value takes a byte (a scalar) or two (a
// container), and each value but the root and the first of a container follows a comma.
constexpr size_t cheap_node_bound(size_t size) { return size / 2 + 1; }

// Texts up to this size are not measured before they are read (unless max_nodes asks): their
// node array is reserved at cheap_node_bound (at most 32,769 nodes, 1.5 MiB), which a read never
// passes either, and the fast reader tells how deeply they nest.
constexpr size_t kMeasureAbove = 64u << 10;

// A NUL byte anywhere: the text is not JSON (nlohmann's lexer would end its input there).
bool has_nul(std::string_view text) { return std::memchr(text.data(), 0, text.size()) != nullptr; }

// What json::parse(text, nullptr, false) gives, built by SaxBuilder.
json nlohmann_parse(std::string_view text) {
  SaxBuilder builder;
  if (!json::sax_parse(text, &builder, json::input_format_t::json, true, false)) return json(json::value_t::discarded);
  return builder.take();
}

}  // namespace

json parse_json(std::string_view text) {
  json out;
  if (parse_json_fast(text, out)) return out;
  if (has_nul(text)) return json(json::value_t::discarded);
  return nlohmann_parse(text);
}

namespace {

// How deeply a text's brackets nest and how many nodes its document can hold, outside strings, in
// one pass: JSON or not (a hostile text is measured before anything is built).
struct TextShape {
  size_t nodes = 1;    // json_node_bound
  unsigned depth = 0;  // deepest nesting of '[' and '{' (saturates)
};

bool json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

TextShape text_shape(std::string_view text) {
  TextShape shape;
  size_t commas = 0, containers = 0;
  unsigned depth = 0;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    switch (*p++) {
      case '"':
        // A string, to its closing quote (a backslash takes the byte after it).
        for (;;) {
          p = plain_json_bytes(p, end);
          if (p == end) break;
          const char c = *p++;
          if (c == '"') break;
          if (c == '\\' && p < end) ++p;
        }
        break;
      case ',': ++commas; break;
      case '[':
      case '{': {
        if (depth < UINT_MAX) ++depth;
        if (depth > shape.depth) shape.depth = depth;
        // Empty ("[ ]") holds no node; each white space byte is passed at most twice.
        const char* q = p;
        while (q < end && json_space(*q)) ++q;
        if (q == end || (*q != ']' && *q != '}')) ++containers;
        break;
      }
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  // A value is the root, or follows a comma, or is the first of a non-empty container.
  shape.nodes = 1 + commas + containers;
  return shape;
}

}  // namespace

// nlohmann's parser feeding a document (engine/positions.h) from its SAX events, as the fast reader
// builds it, for the texts that reader leaves to nlohmann: no JSON tree is made. Of keys written
// twice in one object the last is kept, as nlohmann keeps it: the others are marked replaced as the
// object ends, and their subtrees are taken out of the node array when the document is done (so
// it holds the nodes PositionIndex::from_json makes of nlohmann's value). Iterative, like nlohmann's
// parser: no depth can overflow the stack.
class JsonSaxDocumentBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  JsonSaxDocumentBuilder(PositionIndex& doc, size_t node_bound, size_t text_size) : doc_(doc) {
    doc_.nodes_.clear();
    doc_.text_.clear();
    doc_.nodes_.reserve(node_bound);
    doc_.text_.reserve(text_size);
  }

  bool null() {
    add(Type::null);
    return true;
  }
  bool boolean(bool b) {
    node(add(Type::boolean)).v.b = b;
    return true;
  }
  bool number_integer(number_integer_t v) {
    node(add(Type::integer)).v.i = v;
    return true;
  }
  bool number_unsigned(number_unsigned_t v) {
    // Beyond int64 a float, as PositionIndex::from_json makes it (and the API server reads it).
    if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) node(add(Type::integer)).v.i = static_cast<int64_t>(v);
    else node(add(Type::floating)).v.d = static_cast<double>(v);
    return true;
  }
  bool number_float(number_float_t v, const string_t& /*text*/) {
    node(add(Type::floating)).v.d = v;
    return true;
  }
  bool string(string_t& s) {
    const NodeId id = add(Type::string);
    const uint32_t at = text_size();
    doc_.text_.append(s);
    node(id).v.s = {at, text_size() - at};
    return true;
  }
  bool binary(binary_t& /*b*/) { return false; }  // not made by the JSON parser
  bool start_object(std::size_t /*size*/) {
    frames_.push_back({add(Type::mapping), 0, 0, 0});
    return true;
  }
  bool key(string_t& k) {
    Frame& f = frames_.back();
    f.key_offset = text_size();
    doc_.text_.append(k);
    f.key_size = text_size() - f.key_offset;
    return true;
  }
  bool end_object() {
    const Frame f = frames_.back();
    frames_.pop_back();
    close(f);
    if (f.count > 1) mark_replaced(f.id);
    return true;
  }
  bool start_array(std::size_t /*size*/) {
    frames_.push_back({add(Type::sequence), 0, 0, 0});
    return true;
  }
  bool end_array() {
    const Frame f = frames_.back();
    frames_.pop_back();
    close(f);
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const nlohmann::detail::exception& /*error*/) {
    return false;
  }

  // The document is read: the entries that later ones of the same key replaced are taken out.
  void finish() {
    if (replaced_) compact();
    doc_.root_ = 0;
  }

 private:
  using NodeId = PositionIndex::NodeId;
  using Type = PositionIndex::Type;

  struct Frame {
    NodeId id;
    uint32_t count;       // children so far
    uint32_t key_offset;  // an object's key waiting for its value, in the text
    uint32_t key_size;
  };

  PositionIndex::Node& node(NodeId id) { return doc_.nodes_[id]; }
  [[nodiscard]] uint32_t text_size() const { return static_cast<uint32_t>(doc_.text_.size()); }

  // Appends a value's node: the root, the next item of the array being read, or the value of the
  // object's waiting key.
  NodeId add(Type type) {
    const auto id = static_cast<NodeId>(doc_.nodes_.size());
    PositionIndex::Node& n = doc_.nodes_.emplace_back();
    n.type = type;
    n.end = id + 1;
    if (!frames_.empty()) {
      Frame& f = frames_.back();
      ++f.count;
      if (doc_.nodes_[f.id].type == Type::mapping) {
        n.key_offset = f.key_offset;
        n.key_size = f.key_size;
      }
    }
    return id;
  }

  void close(const Frame& f) {
    PositionIndex::Node& n = node(f.id);
    n.end = static_cast<NodeId>(doc_.nodes_.size());
    n.count = f.count;
  }

  // Of the entries of mapping `id` with one key, all but the last are marked replaced (a sort of
  // its keys: n log n in its entries).
  void mark_replaced(NodeId id) {
    keys_.clear();
    const NodeId end = node(id).end;
    for (NodeId c = id + 1; c < end; c = node(c).end) keys_.emplace_back(key_of(c), c);
    std::sort(keys_.begin(), keys_.end());  // equal keys in document order (by node id)
    for (size_t i = 0; i + 1 < keys_.size(); ++i) {
      if (keys_[i].first != keys_[i + 1].first) continue;
      node(keys_[i].second).flags |= PositionIndex::kReplaced;
      --node(id).count;
      replaced_ = true;
    }
  }

  [[nodiscard]] std::string_view key_of(NodeId c) const {
    return std::string_view(doc_.text_).substr(doc_.nodes_[c].key_offset, doc_.nodes_[c].key_size);
  }

  // Takes the replaced entries' subtrees out of the node array, in one pass: each node kept moves
  // down to its new place, and a container learns its new end when the pass reaches its old one.
  void compact() {
    auto& ns = doc_.nodes_;
    std::vector<std::pair<NodeId, NodeId>> open;  // containers copied: (old end, new id)
    NodeId w = 0;
    const auto n = static_cast<NodeId>(ns.size());
    auto close_to = [&](NodeId r) {
      while (!open.empty() && open.back().first <= r) {
        ns[open.back().second].end = w;
        open.pop_back();
      }
    };
    for (NodeId r = 0; r < n;) {
      close_to(r);
      if ((ns[r].flags & PositionIndex::kReplaced) != 0) {
        r = ns[r].end;
        continue;
      }
      const NodeId old_end = ns[r].end;
      ns[w] = ns[r];
      ns[w].end = w + 1;
      if (old_end > r + 1) open.emplace_back(old_end, w);
      ++w;
      ++r;
    }
    close_to(n);
    ns.resize(w);
  }

  PositionIndex& doc_;
  std::vector<Frame> frames_;
  std::vector<std::pair<std::string_view, NodeId>> keys_;  // mark_replaced's scratch
  bool replaced_ = false;
};

size_t json_node_bound(std::string_view text) { return text_shape(text).nodes; }

bool parse_json_within(std::string_view text, unsigned max_depth, json& out) {
  if (unsigned depth = 0; parse_json_fast(text, out, &depth)) return depth <= max_depth;
  if (text_shape(text).depth > max_depth) return false;
  out = has_nul(text) ? json(json::value_t::discarded) : nlohmann_parse(text);
  return true;
}

bool parse_json_document_fast(std::string_view text, std::shared_ptr<const PositionIndex>& out, unsigned* depth) {
  out.reset();
  if (text.size() >= (size_t{1} << 31)) return false;  // beyond the document's 32-bit offsets
  auto doc = std::make_shared<PositionIndex>();
  JsonDocumentReader reader(text, *doc, json_node_bound(text));
  if (!reader.document()) return false;
  if (depth) *depth = reader.deepest();
  out = std::move(doc);
  return true;
}

JsonDocumentRead parse_json_document(std::string_view text, unsigned max_depth, std::shared_ptr<const PositionIndex>& out,
                                     size_t max_nodes) {
  out.reset();
  if (text.size() >= (size_t{1} << 31)) return JsonDocumentRead::too_large;  // beyond the document's 32-bit offsets
  TextShape shape;
  shape.nodes = cheap_node_bound(text.size());
  const bool measured = text.size() > kMeasureAbove || shape.nodes > max_nodes;
  if (measured) {
    shape = text_shape(text);
    if (shape.depth > max_depth) return JsonDocumentRead::too_deep;
    if (shape.nodes > max_nodes) return JsonDocumentRead::too_large;
  }
  auto doc = std::make_shared<PositionIndex>();
  {
    JsonDocumentReader reader(text, *doc, shape.nodes);
    if (reader.document()) {
      if (reader.deepest() > max_depth) return JsonDocumentRead::too_deep;
      out = std::move(doc);
      return JsonDocumentRead::read;
    }
  }
  if (!measured) {
    shape = text_shape(text);
    if (shape.depth > max_depth) return JsonDocumentRead::too_deep;
  }
  if (has_nul(text)) return JsonDocumentRead::invalid;
  // nlohmann's, into the same buffers (emptied; their room is kept).
  JsonSaxDocumentBuilder builder(*doc, shape.nodes, text.size());
  if (!json::sax_parse(text, &builder, json::input_format_t::json, true, false)) return JsonDocumentRead::invalid;
  builder.finish();
  out = std::move(doc);
  return JsonDocumentRead::read;
}

}  // namespace gpuguard::engine
