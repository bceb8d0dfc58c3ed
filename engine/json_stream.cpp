#include "engine/json_stream.h"
#include "engine/json_bytes.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace gpuguard::engine {

namespace {

// What stands at `at`, for a message.
std::string found(std::string_view text, size_t at) {
  if (at >= text.size()) return "the end of the text";
  const auto c = static_cast<unsigned char>(text[at]);
  if (c > 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  return buf;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

JsonStream::JsonStream(std::string_view text) : text_(text) {
  if (text_.starts_with("\xEF\xBB\xBF")) p_ = col_at_ = 3;  // a byte order mark (nlohmann skips it)
}

void JsonStream::skip_space() {
  while (p_ < text_.size()) {
    const char c = text_[p_];
    if (c == ' ' || c == '\t') {
      ++p_;
    } else if (c == '\n' || c == '\r') {  // \r\n is one line break; a lone \r one too, as editors count
      ++p_;
      if (c == '\r' && p_ < text_.size() && text_[p_] == '\n') ++p_;
      ++line_;
      col_at_ = p_;
      col_ = 0;
    } else {
      break;
    }
  }
}

void JsonStream::locate(size_t at, uint32_t& line, uint32_t& col) {
  for (; col_at_ < at; ++col_at_)
    if ((static_cast<unsigned char>(text_[col_at_]) & 0xC0) != 0x80) ++col_;
  line = line_;
  col = col_;
}

bool JsonStream::fail(size_t at, std::string message) {
  locate(std::min(at, text_.size()), error_.line, error_.col);
  error_.message = std::move(message);
  return false;
}

// The string that starts at p_ (its opening quote): a view into the text when it has no escapes,
// else decoded into scratch_.
bool JsonStream::string(std::string_view& out) {
  const size_t start = p_ + 1;
  size_t i = start;
  auto check = [&](size_t at) -> size_t {  // length of the character at `at`, 0 after a failure
    const auto c = static_cast<unsigned char>(text_[at]);
    if (c < 0x20) {
      char code[8];
      std::snprintf(code, sizeof code, "%04X", c);
      if (c == '\n') fail(at, "a line break inside a string (JSON writes it \\n; is the closing quote missing?)");
      else fail(at, std::string("control character U+") + code + " inside a string (JSON writes it \\u" + code + ")");
      return 0;
    }
    if (c < 0x80) return 1;
    const size_t len = utf8_sequence(text_, at);
    if (len == 0) fail(at, "ill-formed UTF-8 (" + found(text_, at) + ") inside a string");
    return len;
  };
  for (;;) {
    i = static_cast<size_t>(plain_json_bytes(text_.data() + i, text_.data() + text_.size()) - text_.data());
    if (i >= text_.size()) return fail(p_, "the string that starts here is not closed");
    const char c = text_[i];
    if (c == '"') {
      out = text_.substr(start, i - start);
      p_ = i + 1;
      return true;
    }
    if (c == '\\') break;
    const size_t len = check(i);
    if (len == 0) return false;
    i += len;
  }
  // Escapes: the string is decoded into scratch_.
  scratch_.assign(text_.substr(start, i - start));
  for (;;) {
    if (i >= text_.size()) return fail(p_, "the string that starts here is not closed");
    const char c = text_[i];
    if (c == '"') break;
    if (c != '\\') {
      const size_t len = check(i);
      if (len == 0) return false;
      scratch_.append(text_.substr(i, len));
      i += len;
      continue;
    }
    if (i + 1 >= text_.size()) return fail(p_, "the string that starts here is not closed");
    const char* at = text_.data() + i;
    switch (decode_json_escape(at, text_.data() + text_.size(), scratch_)) {
      case JsonEscape::ok: i = static_cast<size_t>(at - text_.data()); continue;
      case JsonEscape::bad_hex: return fail(i, "\\u must be followed by four hex digits");
      case JsonEscape::lone_low: return fail(i, "a low surrogate (\\uDC00-\\uDFFF) must follow a high one (\\uD800-\\uDBFF)");
      case JsonEscape::lone_high:
        return fail(i, "a high surrogate (\\uD800-\\uDBFF) must be followed by a low one (\\uDC00-\\uDFFF)");
      case JsonEscape::unknown: break;
    }
    const auto u = static_cast<unsigned char>(text_[i + 1]);
    return fail(i, "invalid escape \\" + (u <= 0x20 || u >= 0x7F ? " followed by " + found(text_, i + 1) : std::string(1, text_[i + 1])) +
                       " (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
  }
  out = scratch_;
  p_ = i + 1;
  return true;
}

// The number at p_ (RFC 8259's grammar); `end` is where it ends.
bool JsonStream::number(size_t& end) {
  const char* const base = text_.data();
  const JsonNumber scan = scan_json_number(base + p_, base + text_.size());
  const auto i = static_cast<size_t>(scan.end - base);
  switch (scan.error) {
    case JsonNumber::Error::none: break;
    case JsonNumber::Error::no_digit: return fail(i, "invalid number: a digit must follow '-'");
    case JsonNumber::Error::no_fraction_digit: return fail(i, "invalid number: a digit must follow '.'");
    case JsonNumber::Error::no_exponent_digit: return fail(i, "invalid number: a digit must follow the exponent's 'e'");
  }
  // Too large for a double: nlohmann refuses it ("number overflow"), Go's decoder too.
  if (!scan.integral || i - p_ > 18) {
    const std::string digits(text_.substr(p_, i - p_));
    if (std::isinf(std::strtod(digits.c_str(), nullptr))) {
      std::string message = "number ";
      message.append(digits, 0, 40);
      if (digits.size() > 40) message += "...";
      message += " is too large for a double";
      return fail(p_, std::move(message));
    }
  }
  end = i;
  return true;
}

// A string, number or literal at p_, as a scalar event.
bool JsonStream::scalar(Sink& sink) {
  BlockEvent ev;
  ev.kind = BlockEvent::Kind::scalar;
  locate(p_, ev.line, ev.col);
  const char c = text_[p_];
  if (c == '"') {
    std::string_view value;
    if (!string(value)) return false;
    sink.event(ev, value);
    return true;
  }
  size_t end = p_;
  if (c == '-' || is_digit(c)) {
    if (!number(end)) return false;
  } else {
    for (std::string_view word : {"true", "false", "null"})
      if (text_.substr(p_, word.size()) == word) end = p_ + word.size();
    if (end == p_) return fail(p_, "expected a value, found " + found(text_, p_));
  }
  ev.plain = true;
  sink.event(ev, text_.substr(p_, end - p_));
  p_ = end;
  return true;
}

JsonStream::Next JsonStream::next(Sink& sink, uint32_t max_depth, size_t max_bytes) {
  if (!error_.message.empty()) return Next::error;
  skip_space();
  if (p_ >= text_.size()) return Next::end;
  if (text_.size() > std::numeric_limits<uint32_t>::max()) {
    fail(p_, "text over 4 GiB");
    error_.over_limit = true;
    return Next::error;
  }
  value_begin_ = p_;
  locate(p_, value_line_, value_col_);
  enum class Want : uint8_t { value, value_or_close, key, key_or_close, colon, comma_or_close };
  std::string open;  // the containers open: '{' or '['
  Want want = Want::value;
  auto push = [&](BlockEvent::Kind kind) {
    BlockEvent ev;
    ev.kind = kind;
    locate(p_, ev.line, ev.col);
    sink.event(ev, {});
  };
  for (;;) {
    skip_space();
    if (p_ - value_begin_ > max_bytes) {
      error_ = {value_line_, value_col_,
                "the value that starts here is longer than the limit of " + std::to_string(max_bytes) + " bytes", true};
      return Next::error;
    }
    if (p_ >= text_.size()) {
      fail(p_, open.empty() ? "expected a value, found the end of the text"
                            : std::string("the text ends inside ") + (open.back() == '{' ? "an object" : "an array") +
                                  " (" + std::to_string(open.size()) + " level" + (open.size() > 1 ? "s" : "") +
                                  " not closed)");
      return Next::error;
    }
    const char c = text_[p_];
    const bool in_object = !open.empty() && open.back() == '{';
    bool closed = false;
    switch (want) {
      case Want::value_or_close:
      case Want::value:
        if (want == Want::value_or_close && c == ']') {
          closed = true;
          break;
        }
        if (c == '{' || c == '[') {
          if (open.size() >= max_depth) {
            fail(p_, "nesting deeper than " + std::to_string(max_depth) + " levels");
            return Next::error;
          }
          push(c == '{' ? BlockEvent::Kind::mapping : BlockEvent::Kind::sequence);
          open += c;
          ++p_;
          want = c == '{' ? Want::key_or_close : Want::value_or_close;
          continue;
        }
        if (!scalar(sink)) return Next::error;
        if (open.empty()) {
          // Go's decoder needs white space (or the end) after a top-level scalar.
          if (p_ < text_.size() && text_[p_] != ' ' && text_[p_] != '\t' && text_[p_] != '\n' && text_[p_] != '\r') {
            fail(p_, "expected white space or the end after a top-level value, found " + found(text_, p_));
            return Next::error;
          }
          return Next::value;
        }
        want = Want::comma_or_close;
        continue;
      case Want::key_or_close:
      case Want::key:
        if (want == Want::key_or_close && c == '}') {
          closed = true;
          break;
        }
        if (c != '"') {
          fail(p_, std::string(want == Want::key ? "expected a string key after ','" : "expected a string key or '}'") +
                       ", found " + found(text_, p_));
          return Next::error;
        }
        if (!scalar(sink)) return Next::error;
        want = Want::colon;
        continue;
      case Want::colon:
        if (c != ':') {
          fail(p_, "expected ':' after the key, found " + found(text_, p_));
          return Next::error;
        }
        ++p_;
        want = Want::value;
        continue;
      case Want::comma_or_close:
        if (c == ',') {
          ++p_;
          want = in_object ? Want::key : Want::value;
          continue;
        }
        if (c == (in_object ? '}' : ']')) {
          closed = true;
          break;
        }
        fail(p_, std::string("expected ',' or '") + (in_object ? '}' : ']') + "' after " +
                     (in_object ? "an object member" : "an array item") + ", found " + found(text_, p_));
        return Next::error;
    }
    if (closed) {
      push(BlockEvent::Kind::end);
      ++p_;
      open.pop_back();
      if (open.empty()) return Next::value;
      want = Want::comma_or_close;
    }
  }
}

}  // namespace gpuguard::engine
