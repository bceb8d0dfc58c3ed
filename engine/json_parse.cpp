#include "engine/json_parse.h"

#include <bit>
#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "engine/json_bytes.h"

namespace gpuguard::engine {

namespace {

// Reads a document of the shapes Kubernetes sends; returns false at anything else, and the caller
// asks nlohmann (which then gives the same value a slower way, or the error).
class Reader {
 public:
  explicit Reader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool document(json& out) {
    skip_space();
    if (!value(out, 0)) return false;
    skip_space();
    return p_ == end_;
  }

  // How deeply the containers read so far nest (1 for a flat object or array).
  [[nodiscard]] unsigned deepest() const { return deepest_; }

 private:
  // Deeper than this, nlohmann (which keeps its own stack) reads it: this reader recurses.
  static constexpr unsigned kMaxDepth = 512;

  const char* p_;
  const char* end_;
  unsigned deepest_ = 0;
  std::vector<json::object_t::value_type> members_;  // of the objects being read, outermost first

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

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
      default: return number(out);
    }
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

  bool object(json& out, unsigned depth) {
    if (depth >= kMaxDepth) return false;
    if (depth >= deepest_) deepest_ = depth + 1;
    // The members go on a stack shared by all levels, and into the object when it ends, sorted
    // once (FlatMap::take; of repeated keys the last is kept, as nlohmann keeps it).
    const size_t start = members_.size();
    const bool ok = elements('}', [&] {
      if (p_ == end_ || *p_ != '"') return false;
      // The key is read into its member, which the member's value (read next) may push others
      // after: it is found again by its index.
      const size_t at = members_.size();
      if (!string(members_.emplace_back().first)) return false;
      skip_space();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_space();
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
    if (depth >= kMaxDepth) return false;
    if (depth >= deepest_) deepest_ = depth + 1;
    out = json::array();
    auto& items = out.get_ref<json::array_t&>();
    return elements(']', [&] { return value(items.emplace_back(), depth + 1); });
  }

  bool hex4(unsigned& out) {
    if (end_ - p_ < 4) return false;
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      unsigned d;
      if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
      else return false;
      v = v * 16 + d;
    }
    out = v;
    return true;
  }

  static void append_utf8(std::string& s, unsigned cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // \uXXXX (p_ after the 'u'), a surrogate pair as one code point.
  bool unicode_escape(std::string& s) {
    unsigned cp = 0;
    if (!hex4(cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate alone
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      unsigned low = 0;
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(s, cp);
    return true;
  }

  // A string (p_ at its opening quote) into `s`.
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
          if (end_ - p_ < 2) return false;
          char e = p_[1];
          p_ += 2;
          switch (e) {
            case '"': s += '"'; break;
            case '\\': s += '\\'; break;
            case '/': s += '/'; break;
            case 'b': s += '\b'; break;
            case 'f': s += '\f'; break;
            case 'n': s += '\n'; break;
            case 'r': s += '\r'; break;
            case 't': s += '\t'; break;
            case 'u':
              if (!unicode_escape(s)) return false;
              break;
            default: return false;
          }
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

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  // RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. An integer is number_integer
  // when negative and number_unsigned otherwise (as nlohmann's lexer makes them); one of more than
  // 18 digits, which may not fit, is left to nlohmann.
  bool number(json& out) {
    const char* start = p_;
    bool negative = false;
    if (p_ < end_ && *p_ == '-') {
      negative = true;
      ++p_;
    }
    if (p_ == end_ || !digit(*p_)) return false;
    if (*p_ == '0') ++p_;
    else
      while (p_ < end_ && digit(*p_)) ++p_;
    const char* int_end = p_;
    bool integral = true;
    if (p_ < end_ && *p_ == '.') {
      integral = false;
      ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integral = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (integral) {
      const char* digits = start + (negative ? 1 : 0);
      if (int_end - digits > 18) return false;
      uint64_t v = 0;
      for (const char* d = digits; d < int_end; ++d) v = v * 10 + static_cast<uint64_t>(*d - '0');
      if (negative) out = -static_cast<int64_t>(v);
      else out = v;
      return true;
    }
    // Correctly rounded, like nlohmann's strtod; an overflow or underflow is left to nlohmann.
    double d = 0;
    auto [end, ec] = std::from_chars(start, p_, d);
    if (ec != std::errc{} || end != p_) return false;
    out = d;
    return true;
  }
};

}  // namespace

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

}  // namespace gpuguard::engine
