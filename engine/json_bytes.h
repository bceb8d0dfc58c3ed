#pragma once
// The run of bytes a JSON string holds as they are, shared by the JSON reader and writer.

#include <cstdint>
#include <cstring>

namespace gpuguard::engine {

// The first byte in [p, end) that is not printable ASCII other than '"' and '\\' (a control
// character, a quote, a backslash, or a byte of a multi-byte UTF-8 sequence); `end` if none.
// Eight bytes at a time: a word of plain bytes has no zero byte after xor with '"' or '\\', no
// byte below 0x20, and no high bit (the "has a zero byte" and "has a byte less than n" tests of
// Bit Twiddling Hacks, exact as any-tests for n <= 0x80); the word with one is scanned by bytes.
[[nodiscard]] inline const char* plain_json_bytes(const char* p, const char* end) noexcept {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    const uint64_t quote = x ^ (kOnes * '"');
    const uint64_t backslash = x ^ (kOnes * '\\');
    const uint64_t found = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | (x - kOnes * 0x20) | x;
    if (found & kHighs) break;
    p += 8;
  }
  for (; p < end; ++p) {
    const auto u = static_cast<unsigned char>(*p);
    if (u < 0x20 || u == '"' || u == '\\' || u >= 0x80) break;
  }
  return p;
}

}  // namespace gpuguard::engine
