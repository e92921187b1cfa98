#include "training/tokenizers/tokenize_lines.h"

#include <fmt/format.h>

#include <charconv>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "base/check.h"

namespace trainscope::training {

int64_t encode_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out) {
  std::string line;
  std::vector<int32_t> ids;
  std::string text;
  int64_t count = 0;
  while (std::getline(in, line)) {
    ids.clear();
    tokenizer.encode(line, &ids);
    text.clear();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) text.push_back(' ');
      fmt::format_to(std::back_inserter(text), "{}", ids[i]);
    }
    text.push_back('\n');
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    ++count;
  }
  return count;
}

int64_t decode_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                     std::string_view source) {
  std::string line;
  std::vector<int32_t> ids;
  const int32_t vocab = tokenizer.vocab_size();
  int64_t count = 0;
  while (std::getline(in, line)) {
    ++count;
    ids.clear();
    std::size_t pos = 0;
    while (true) {
      pos = line.find_first_not_of(" \t\r", pos);
      if (pos == std::string::npos) break;
      std::size_t end = line.find_first_of(" \t\r", pos);
      if (end == std::string::npos) end = line.size();
      const std::string_view word(line.data() + pos, end - pos);
      int64_t id = 0;
      const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
      if (ec == std::errc::result_out_of_range ||
          (ec == std::errc() && ptr == word.data() + word.size() && (id < 0 || id >= vocab))) {
        throw Error(fmt::format("{} line {}: token id {} is outside [0, {}) of tokenizer {}",
                                source, count, word, vocab, tokenizer.spec()));
      }
      if (ec != std::errc() || ptr != word.data() + word.size()) {
        throw Error(fmt::format("{} line {}: \"{}\" is not a token id", source, count, word));
      }
      ids.push_back(static_cast<int32_t>(id));
      pos = end;
    }
    std::string text = tokenizer.decode(ids);
    text.push_back('\n');
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  return count;
}

}  // namespace trainscope::training
