#include "training/tokenizers/gpt2_pretokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/tokenizers/test_util.h"
#include "training/tokenizers/unicode_classes.h"

namespace trainscope::training {
namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view piece : gpt2_pretokenize(text)) out.emplace_back(piece);
  return out;
}

using Pieces = std::vector<std::string>;

TEST(CodePointClassTest, MatchesPythonRegexClasses) {
  EXPECT_EQ(code_point_class('a'), CodePointClass::kLetter);
  EXPECT_EQ(code_point_class('Z'), CodePointClass::kLetter);
  EXPECT_EQ(code_point_class('7'), CodePointClass::kNumber);
  EXPECT_EQ(code_point_class(' '), CodePointClass::kSpace);
  EXPECT_EQ(code_point_class('\n'), CodePointClass::kSpace);
  EXPECT_EQ(code_point_class('\''), CodePointClass::kOther);
  EXPECT_EQ(code_point_class(0x1C), CodePointClass::kOther);  // \s in Python re, not in regex
  EXPECT_EQ(code_point_class(0xA0), CodePointClass::kSpace);  // no-break space
  EXPECT_EQ(code_point_class(0x3000), CodePointClass::kSpace);
  EXPECT_EQ(code_point_class(0xE9), CodePointClass::kLetter);    // é
  EXPECT_EQ(code_point_class(0x65E5), CodePointClass::kLetter);  // 日
  EXPECT_EQ(code_point_class(0xB2), CodePointClass::kNumber);    // ²
  EXPECT_EQ(code_point_class(0x216B), CodePointClass::kNumber);  // Ⅻ
  EXPECT_EQ(code_point_class(0x301), CodePointClass::kOther);    // combining acute
  EXPECT_EQ(code_point_class(0x1F600), CodePointClass::kOther);  // emoji
  EXPECT_EQ(code_point_class(0x200B), CodePointClass::kOther);   // zero-width space is not \s
  EXPECT_EQ(code_point_class(0xFFFFFFFF), CodePointClass::kOther);
}

TEST(Gpt2PretokenizerTest, RegexAlternatives) {
  EXPECT_EQ(split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("I'm he's"), (Pieces{"I", "'m", " he", "'s"}));
  EXPECT_EQ(split("HE'S"), (Pieces{"HE", "'", "S"}));  // contractions are lowercase only
  EXPECT_EQ(split("a  b"), (Pieces{"a", " ", " b"}));
  EXPECT_EQ(split("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split("x   "), (Pieces{"x", "   "}));
  EXPECT_EQ(split("12345 67"), (Pieces{"12345", " 67"}));
  EXPECT_EQ(split("?!... ,"), (Pieces{"?!...", " ,"}));
  EXPECT_EQ(split(" \t x"), (Pieces{" \t", " x"}));
}

TEST(Gpt2PretokenizerTest, InvalidUtf8IsKeptByteForByte) {
  const std::string text = "ab\xff\xfe cd\xc3 \xe2\x82 z\xf0\x9f";
  std::string joined;
  for (std::string_view piece : gpt2_pretokenize(text)) {
    EXPECT_FALSE(piece.empty());
    joined += piece;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(split("a\xff\xfe"), (Pieces{"a", "\xff\xfe"}));
}

// The golden file's "pieces" are re.findall of GPT-2's pattern in Python's
// `regex` module, over texts chosen to exercise every alternative.
TEST(Gpt2PretokenizerTest, MatchesReferenceRegexOnGoldenCases) {
  std::ifstream in(testing::kGoldenPath);
  ASSERT_TRUE(in) << "cannot open " << testing::kGoldenPath;
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    const nlohmann::json c = nlohmann::json::parse(line);
    const std::string text = c.at("text");
    EXPECT_EQ(split(text), c.at("pieces").get<Pieces>()) << "text: " << c.at("text").dump();
    ++cases;
  }
  EXPECT_GT(cases, 300);
}

}  // namespace
}  // namespace trainscope::training
