#include "training/tokenizers/make_tokenizer.h"
#include "training/tokenizers/tokenize_lines.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tests/tokenizers/test_util.h"
#include "training/tokenizers/byte_tokenizer.h"

namespace trainscope::training {
namespace {

using testing::expect_error_naming;

std::string encode_text(const Tokenizer& tok, const std::string& text, int64_t* lines = nullptr) {
  std::istringstream in(text);
  std::ostringstream out;
  const int64_t n = encode_lines(tok, in, out);
  if (lines) *lines = n;
  return out.str();
}

std::string decode_text(const Tokenizer& tok, const std::string& ids) {
  std::istringstream in(ids);
  std::ostringstream out;
  decode_lines(tok, in, out);
  return out.str();
}

TEST(TokenizeLinesTest, EncodesEachLine) {
  ByteTokenizer tok;
  int64_t lines = 0;
  EXPECT_EQ(encode_text(tok, "ab\n\nc<|endoftext|>\n", &lines), "97 98\n\n99 256\n");
  EXPECT_EQ(lines, 3);
  EXPECT_EQ(encode_text(tok, "no newline at end"),
            "110 111 32 110 101 119 108 105 110 101 32 97 116 32 101 110 100\n");
  EXPECT_EQ(encode_text(tok, "", &lines), "");
  EXPECT_EQ(lines, 0);
}

TEST(TokenizeLinesTest, DecodeReversesEncode) {
  ByteTokenizer tok;
  const std::string text = "first line\n\n\tthird <|endoftext|> line\nlast\n";
  EXPECT_EQ(decode_text(tok, encode_text(tok, text)), text);
  EXPECT_EQ(decode_text(tok, "  72\t105  \n"), "Hi\n");  // any spacing between ids
}

TEST(TokenizeLinesTest, BadIdsNameTheLine) {
  ByteTokenizer tok;
  expect_error_naming([&] { decode_text(tok, "72 105\n\n72 257\n"); },
                      {"stdin line 3", "257", "[0, 257)"});
  expect_error_naming([&] { decode_text(tok, "72 x1\n"); }, {"stdin line 1", "\"x1\""});
  expect_error_naming([&] { decode_text(tok, "72\n-4\n"); }, {"line 2", "-4"});
  expect_error_naming([&] { decode_text(tok, "12abc\n"); }, {"line 1", "12abc"});
  expect_error_naming([&] { decode_text(tok, "99999999999999999999\n"); },
                      {"line 1", "99999999999999999999"});
  std::istringstream in("1\n2 3.5\n");
  std::ostringstream out;
  expect_error_naming([&] { decode_lines(tok, in, out, "ids.txt"); }, {"ids.txt line 2", "3.5"});
}

TEST(TokenizeLinesTest, Gpt2Lines) {
  TS_REQUIRE_GPT2_FILES();
  const auto tok = make_tokenizer("gpt2:" + testing::kGpt2Dir);
  EXPECT_EQ(encode_text(*tok, "Hello world\n<|endoftext|>\n"), "15496 995\n50256\n");
  EXPECT_EQ(decode_text(*tok, "15496 995\n"), "Hello world\n");
  expect_error_naming([&] { decode_text(*tok, "15496\n50257\n"); }, {"line 2", "50257"});
}

}  // namespace
}  // namespace trainscope::training
