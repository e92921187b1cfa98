#include "training/data/records.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/check.h"

namespace trainscope::training {
namespace {

std::string render_line(std::string_view line, std::string_view field = "text") {
  std::string out;
  render_record(parse_record_line(line, field, "t.jsonl:1"), &out);
  return out;
}

TEST(RecordsTest, ChatTemplate) {
  EXPECT_EQ(render_line(R"({"messages":[{"role":"user","content":"Hi"},)"
                        R"({"role":"assistant","content":"Hello!"}]})"),
            "<|user|>\nHi\n<|assistant|>\nHello!\n");
}

TEST(RecordsTest, InstructionBecomesChatWithAndWithoutContext) {
  EXPECT_EQ(render_line(R"({"instruction":"Add 2+2","context":"math","response":"4"})"),
            "<|user|>\nYou are a helpful assistant.\n\nAdd 2+2\n\nContext: math\n"
            "<|assistant|>\n4\n");
  EXPECT_EQ(render_line(R"({"instruction":"Say hi","context":"","response":"hi"})"),
            "<|user|>\nYou are a helpful assistant.\n\nSay hi\n<|assistant|>\nhi\n");
  EXPECT_EQ(render_line(R"({"instruction":"Say hi","response":"hi"})"),
            "<|user|>\nYou are a helpful assistant.\n\nSay hi\n<|assistant|>\nhi\n");
}

TEST(RecordsTest, TextFieldIsConfigurable) {
  EXPECT_EQ(render_line(R"({"text":"a story"})"), "a story");
  EXPECT_EQ(render_line(R"({"body":"other"})", "body"), "other");
}

TEST(RecordsTest, ErrorsNameWhereAndWhat) {
  try {
    render_line(R"({"txt":"x"})");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.jsonl:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'text'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(render_line(R"({"text": 5})"), Error);
  EXPECT_THROW(render_line(R"({"instruction":"x"})"), Error);  // no response
  EXPECT_THROW(render_line(R"({"messages":[{"role":"user"}]})"), Error);
  EXPECT_THROW(render_line(R"([1, 2])"), Error);
  try {
    render_line(R"({"text": "unterminated)");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.jsonl:1: not valid JSON"), std::string::npos)
        << e.what();
  }
}

// Found by tests/fuzz/records_fuzz: a number beyond a double is not a JSON
// parse error to nlohmann::json but an out_of_range exception, which escaped
// the JSON reader as a raw std::exception instead of bad input (exit code 2).
TEST(RecordsTest, NumberBeyondDoubleIsBadInput) {
  try {
    render_line(
        R"({"title": "no texu field", "tags": ["a", null,-1e400 02222222222A22222222222e3]})");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.jsonl:1: not valid JSON"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), kExitBadInput);
  }
}

TEST(RecordsTest, Utf8Validation) {
  EXPECT_EQ(find_invalid_utf8("plain ascii text that is long enough"), -1);
  EXPECT_EQ(find_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), -1);
  EXPECT_EQ(find_invalid_utf8("abc\xff"), 3);
  EXPECT_EQ(find_invalid_utf8("abcdefghij\xc3"), 10);   // truncated
  EXPECT_EQ(find_invalid_utf8("\xc0\xaf"), 0);          // overlong
  EXPECT_EQ(find_invalid_utf8("ok\xed\xa0\x80"), 2);    // surrogate
  EXPECT_EQ(find_invalid_utf8("\xf4\x90\x80\x80"), 0);  // > U+10FFFF
  EXPECT_THROW(render_line("{\"text\":\"a\xff\"}"), Error);
}

TEST(RecordsTest, RecordToJsonRoundTrips) {
  const Record r = parse_record_line(R"({"instruction":"I","response":"R"})", "text", "x");
  const std::string line = record_to_json(r).dump();
  std::string a, b;
  render_record(r, &a);
  render_record(parse_record_line(line, "text", "y"), &b);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace trainscope::training
