#pragma once
// The bytes of JSON strings, shared by the JSON readers and writer: the run a string holds as it
// is, and well-formed UTF-8.

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

}  // namespace gpuguard::engine
