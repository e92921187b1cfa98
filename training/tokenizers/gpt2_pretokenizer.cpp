#include "training/tokenizers/gpt2_pretokenizer.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "training/tokenizers/unicode_classes.h"

namespace trainscope::training {
namespace {

// ASCII is most of most text: answer it from a table built from the same
// generated ranges, so the two can never disagree.
std::array<CodePointClass, 128> make_ascii_classes() {
  std::array<CodePointClass, 128> classes{};
  for (uint32_t cp = 0; cp < 128; ++cp) {
    const CodePointRange* end = kCodePointRanges + kNumCodePointRanges;
    const CodePointRange* it =
        std::upper_bound(kCodePointRanges, end, cp,
                         [](uint32_t value, const CodePointRange& r) { return value < r.first; });
    classes[cp] =
        (it != kCodePointRanges && (it - 1)->last >= cp) ? (it - 1)->cls : CodePointClass::kOther;
  }
  return classes;
}
const std::array<CodePointClass, 128> kAsciiClasses = make_ascii_classes();

inline CodePointClass class_at(std::string_view text, std::size_t pos, uint32_t* len) {
  const unsigned char b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) {
    *len = 1;
    return kAsciiClasses[b0];
  }
  const Utf8Char d = decode_utf8(text, pos);
  *len = d.len;
  return code_point_class(d.cp);
}

// End of the run of `cls` characters starting at pos.
inline std::size_t run_end(std::string_view text, std::size_t pos, CodePointClass cls) {
  while (pos < text.size()) {
    uint32_t len;
    if (class_at(text, pos, &len) != cls) break;
    pos += len;
  }
  return pos;
}

// 's 't 'm 'd (2 bytes), 're 've 'll (3 bytes), else 0.
inline std::size_t contraction_length(std::string_view text, std::size_t pos) {
  if (pos + 1 >= text.size()) return 0;
  const char c1 = text[pos + 1];
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char c2 = text[pos + 2];
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

}  // namespace

CodePointClass code_point_class(uint32_t cp) {
  if (cp < 128) return kAsciiClasses[cp];
  const CodePointRange* end = kCodePointRanges + kNumCodePointRanges;
  const CodePointRange* it =
      std::upper_bound(kCodePointRanges, end, cp,
                       [](uint32_t value, const CodePointRange& r) { return value < r.first; });
  if (it == kCodePointRanges) return CodePointClass::kOther;
  --it;
  return cp <= it->last ? it->cls : CodePointClass::kOther;
}

std::size_t gpt2_piece_length(std::string_view text, std::size_t pos) {
  // The alternatives are tried in the regex's order; the first that matches wins.
  if (text[pos] == '\'') {
    if (const std::size_t n = contraction_length(text, pos)) return n;
  }
  uint32_t len0;
  const CodePointClass cls0 = class_at(text, pos, &len0);
  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": the optional space is only
  // ' ', and it is taken only when a character of the class follows.
  if (text[pos] == ' ' && pos + 1 < text.size()) {
    uint32_t len1;
    const CodePointClass cls1 = class_at(text, pos + 1, &len1);
    if (cls1 != CodePointClass::kSpace) return run_end(text, pos + 1 + len1, cls1) - pos;
  }
  if (cls0 != CodePointClass::kSpace) return run_end(text, pos + len0, cls0) - pos;
  // "\s+(?!\S)" backtracks from the whole whitespace run until what follows is
  // not \S: at the end of the text that is the whole run, before anything else
  // it is the run minus its last character, which is left to start the next
  // piece (so " word" keeps its space). A run of one before \S fails that
  // alternative and "\s+" takes it.
  std::size_t last_start = pos;
  std::size_t end = pos + len0;
  while (end < text.size()) {
    uint32_t len;
    if (class_at(text, end, &len) != CodePointClass::kSpace) break;
    last_start = end;
    end += len;
  }
  if (end == text.size() || last_start == pos) return end - pos;
  return last_start - pos;
}

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t len = gpt2_piece_length(text, pos);
    pieces.push_back(text.substr(pos, len));
    pos += len;
  }
  return pieces;
}

}  // namespace trainscope::training
