// The one strict UTF-8 decoder: the GPT-2 scanner, the vocabulary loader and
// the data readers (which reject invalid text with its byte offset) all use it.
//
// Strict: overlong forms, surrogates and values past U+10FFFF are invalid,
// so every byte string splits into characters and invalid bytes in exactly
// one way.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_BASE_UTF8_H_
#define TRAINSCOPE_BASE_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace trainscope {

// Stands for a byte that does not start valid UTF-8.
inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFFu;

struct Utf8Char {
  uint32_t cp;   // kInvalidCodePoint for a byte that does not start valid UTF-8
  uint32_t len;  // bytes; 1 for an invalid byte
};

// The character at text[pos] (pos < size()).
inline Utf8Char decode_utf8(std::string_view text, std::size_t pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data()) + pos;
  const std::size_t left = text.size() - pos;
  const unsigned char b0 = s[0];
  if (b0 < 0x80) return {b0, 1};
  auto cont = [&](std::size_t i) { return i < left && (s[i] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
    return {(uint32_t(b0 & 0x1F) << 6) | (s[1] & 0x3F), 2};
  }
  if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    const uint32_t cp = (uint32_t(b0 & 0x0F) << 12) | (uint32_t(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) return {cp, 3};
  }
  if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    const uint32_t cp = (uint32_t(b0 & 0x07) << 18) | (uint32_t(s[1] & 0x3F) << 12) |
                        (uint32_t(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    if (cp >= 0x10000 && cp <= 0x10FFFF) return {cp, 4};
  }
  return {kInvalidCodePoint, 1};
}

// Byte offset of the first invalid UTF-8 sequence in `text`, or -1 if valid.
inline int64_t find_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    // ASCII runs, 8 bytes at a time: most text is mostly ASCII.
    if (i + 8 <= text.size()) {
      uint64_t word;
      std::memcpy(&word, text.data() + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    const Utf8Char c = decode_utf8(text, i);
    if (c.cp == kInvalidCodePoint) return static_cast<int64_t>(i);
    i += c.len;
  }
  return -1;
}

}  // namespace trainscope

#endif  // TRAINSCOPE_BASE_UTF8_H_
