#include "engine/json_parse.h"

#include <algorithm>
#include <bit>
#include <charconv>
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
  JsonDocumentReader(std::string_view text, PositionIndex& doc) : Lexer(text), doc_(doc) {
    // Room for a typical body's nodes and all of its strings (they are never longer than the
    // text), so neither buffer grows while it is read.
    doc_.nodes_.reserve(text.size() / 24 + 8);
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
  return nlohmann_parse(text);
}

namespace {

// Nesting depth of a JSON text (outside strings), so a hostile text is refused before nlohmann
// builds it.
bool depth_within(std::string_view text, unsigned max_depth) {
  unsigned depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return true;
}

}  // namespace

bool parse_json_within(std::string_view text, unsigned max_depth, json& out) {
  if (unsigned depth = 0; parse_json_fast(text, out, &depth)) return depth <= max_depth;
  if (!depth_within(text, max_depth)) return false;
  out = nlohmann_parse(text);
  return true;
}

bool parse_json_document_fast(std::string_view text, std::shared_ptr<const PositionIndex>& out, unsigned* depth) {
  out.reset();
  if (text.size() >= (size_t{1} << 31)) return false;  // beyond the document's 32-bit offsets
  auto doc = std::make_shared<PositionIndex>();
  JsonDocumentReader reader(text, *doc);
  if (!reader.document()) return false;
  if (depth) *depth = reader.deepest();
  out = std::move(doc);
  return true;
}

JsonDocumentRead parse_json_document(std::string_view text, unsigned max_depth, std::shared_ptr<const PositionIndex>& out) {
  if (unsigned depth = 0; parse_json_document_fast(text, out, &depth)) {
    if (depth <= max_depth) return JsonDocumentRead::read;
    out.reset();
    return JsonDocumentRead::too_deep;
  }
  if (!depth_within(text, max_depth)) return JsonDocumentRead::too_deep;
  json value = nlohmann_parse(text);
  if (value.is_discarded()) return JsonDocumentRead::invalid;
  out = PositionIndex::from_json(value);
  dispose(value);
  return JsonDocumentRead::read;
}

}  // namespace gpuguard::engine
