#pragma once
// The bytes of JSON text, shared by the JSON readers and writer: the run a string holds as it is,
// well-formed UTF-8, escapes and numbers. The readers differ in what they do with a failure (the
// webhook's fast reader hands the text to nlohmann, the file reader says where and why), so these
// return what failed and leave the telling to them.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpuguard::engine {

// The first byte in [p, end) that is not printable ASCII other than '"' and '\\' (a control
// character, a quote, a backslash, or a byte of a multi-byte UTF-8 sequence); `end` if none.
// Eight bytes at a time: a word of plain bytes has no zero byte after xor with '"' or '\\', no
// byte below 0x20, and no high bit (the "has a zero byte" and "has a byte less than n" tests of
// Bit Twiddling Hacks, exact as any-tests for n <= 0x80). In the word with one, the lowest flagged
// byte is exact too (a test flags a byte wrongly only above one it flags rightly, by the borrow),
// so on a little-endian machine its index is the flag's trailing zeros / 8; elsewhere the word is
// scanned by bytes.
[[nodiscard]] inline const char* plain_json_bytes(const char* p, const char* end) noexcept {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    const uint64_t quote = x ^ (kOnes * '"');
    const uint64_t backslash = x ^ (kOnes * '\\');
    const uint64_t found = (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | (x - kOnes * 0x20) | x) & kHighs;
    if (found) {
      if constexpr (std::endian::native == std::endian::little) return p + (std::countr_zero(found) >> 3);
      break;
    }
    p += 8;
  }
  for (; p < end; ++p) {
    const auto u = static_cast<unsigned char>(*p);
    if (u < 0x20 || u == '"' || u == '\\' || u >= 0x80) break;
  }
  return p;
}

// Length of the well-formed UTF-8 sequence starting at s[i] (a byte ≥ 0x80), or 0 when it is not
// one: a bad lead or continuation byte, truncated, overlong, a surrogate or beyond U+10FFFF (what
// nlohmann's decoder rejects too).
[[nodiscard]] inline size_t utf8_sequence(std::string_view s, size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return n;
}

// Appends code point `cp` (at most U+10FFFF, not a surrogate) as UTF-8.
inline void append_utf8(std::string& s, uint32_t cp) {
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

// What decoding an escape found.
enum class JsonEscape : uint8_t {
  ok,
  unknown,    // not one of \" \\ \/ \b \f \n \r \t \u
  bad_hex,    // \u not followed by four hex digits
  lone_low,   // a low surrogate (\uDC00-\uDFFF) first
  lone_high,  // a high surrogate (\uD800-\uDBFF) not followed by \u and a low one
};

// The four hex digits at p (at least four bytes before `end`) as a code unit, or -1.
[[nodiscard]] inline int32_t json_hex4(const char* p, const char* end) noexcept {
  if (end - p < 4) return -1;
  int32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    const char c = p[k];
    int32_t d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

// Decodes the escape at p (p[0] is the backslash, and p[1] is before `end`) onto `s`, as RFC 8259
// and nlohmann read it: a surrogate pair is one character. On success p is moved past it; on a
// failure p and `s` are as they were.
[[nodiscard]] inline JsonEscape decode_json_escape(const char*& p, const char* end, std::string& s) {
  char c;
  switch (p[1]) {
    case '"': c = '"'; break;
    case '\\': c = '\\'; break;
    case '/': c = '/'; break;
    case 'b': c = '\b'; break;
    case 'f': c = '\f'; break;
    case 'n': c = '\n'; break;
    case 'r': c = '\r'; break;
    case 't': c = '\t'; break;
    case 'u': {
      const int32_t unit = json_hex4(p + 2, end);
      if (unit < 0) return JsonEscape::bad_hex;
      auto cp = static_cast<uint32_t>(unit);
      if (cp >= 0xDC00 && cp <= 0xDFFF) return JsonEscape::lone_low;
      size_t length = 6;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        const int32_t low = end - p >= 8 && p[6] == '\\' && p[7] == 'u' ? json_hex4(p + 8, end) : -1;
        if (low < 0xDC00 || low > 0xDFFF) return JsonEscape::lone_high;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
        length = 12;
      }
      append_utf8(s, cp);
      p += length;
      return JsonEscape::ok;
    }
    default: return JsonEscape::unknown;
  }
  s += c;
  p += 2;
  return JsonEscape::ok;
}

// A number scanned by RFC 8259's grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
struct JsonNumber {
  enum class Error : uint8_t { none, no_digit, no_fraction_digit, no_exponent_digit };
  const char* end = nullptr;      // past the number; on an error, where a digit was wanted
  const char* int_end = nullptr;  // past the integer part's digits
  bool integral = true;           // no fraction and no exponent
  Error error = Error::none;
};

// Scans the number at p (before `end`): from a '-' or a digit, else an error (no_digit) at p.
[[nodiscard]] inline JsonNumber scan_json_number(const char* p, const char* end) noexcept {
  auto digit = [&] { return p < end && *p >= '0' && *p <= '9'; };
  JsonNumber n;
  auto fail = [&](JsonNumber::Error e) {
    n.end = p;
    n.error = e;
    return n;
  };
  if (*p == '-') ++p;
  if (!digit()) return fail(JsonNumber::Error::no_digit);
  if (*p == '0') ++p;
  else
    while (digit()) ++p;
  n.int_end = p;
  if (p < end && *p == '.') {
    n.integral = false;
    ++p;
    if (!digit()) return fail(JsonNumber::Error::no_fraction_digit);
    while (digit()) ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    n.integral = false;
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (!digit()) return fail(JsonNumber::Error::no_exponent_digit);
    while (digit()) ++p;
  }
  n.end = p;
  return n;
}

}  // namespace gpuguard::engine
