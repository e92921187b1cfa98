#include "training/tokenizers/make_tokenizer.h"
#include "training/tokenizers/byte_tokenizer.h"

#include <gtest/gtest.h>

#include "base/check.h"

namespace trainscope::training {
namespace {

TEST(ByteTokenizerTest, BytesAndEndOfText) {
  ByteTokenizer tok;
  EXPECT_EQ(tok.encode("Hi<|endoftext|>\xc3\xa9"),
            (std::vector<int32_t>{72, 105, 256, 0xc3, 0xa9}));
  const std::vector<int32_t> ids = tok.encode("a <|endoftext|> b");
  EXPECT_EQ(tok.decode(ids), "a <|endoftext|> b");
}

TEST(ByteTokenizerTest, DecodeRejectsOutOfRangeIds) {
  ByteTokenizer tok;
  const std::vector<int32_t> bad = {65, 300};
  EXPECT_THROW(tok.decode(bad), Error);
}

TEST(TokenizerFactoryTest, UnknownSpecIsAnError) {
  EXPECT_NO_THROW(make_tokenizer("byte"));
  EXPECT_THROW(make_tokenizer("wordpiece"), Error);
}

}  // namespace
}  // namespace trainscope::training
