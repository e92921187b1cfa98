#include "training/tokenizers/make_tokenizer.h"
#include "training/tokenizers/gpt2_tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/tokenizers/test_util.h"

namespace trainscope::training {
namespace {

using Ids = std::vector<int32_t>;
using testing::expect_error_naming;
using testing::TempDir;

// ---------------------------------------------------------------------------
// The real GPT-2 vocabulary.

class Gpt2VocabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::have_gpt2_files()) tokenizer_ = Gpt2Tokenizer::load(testing::kGpt2Dir).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override { TS_REQUIRE_GPT2_FILES(); }
  static Gpt2Tokenizer* tokenizer_;
};
Gpt2Tokenizer* Gpt2VocabTest::tokenizer_ = nullptr;

struct GoldenCase {
  std::string text;
  Ids ids;
};

std::vector<GoldenCase> read_golden() {
  std::vector<GoldenCase> cases;
  std::ifstream in(testing::kGoldenPath);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json c = nlohmann::json::parse(line);
    cases.push_back({c.at("text").get<std::string>(), c.at("ids").get<Ids>()});
  }
  return cases;
}

TEST_F(Gpt2VocabTest, KnownIds) {
  EXPECT_EQ(tokenizer_->encode("Hello world"), (Ids{15496, 995}));
  EXPECT_EQ(tokenizer_->encode(kEndOfText), (Ids{50256}));
  EXPECT_EQ(tokenizer_->encode("Once upon a time, there was a little girl named Lily."),
            (Ids{7454, 2402, 257, 640, 11, 612, 373, 257, 1310, 2576, 3706, 20037, 13}));
  EXPECT_EQ(tokenizer_->eot_id(), 50256);
  EXPECT_EQ(tokenizer_->vocab_size(), 50257);
  EXPECT_EQ(tokenizer_->spec(), "gpt2:" + testing::kGpt2Dir);
  EXPECT_EQ(tokenizer_->encode(""), Ids{});
}

// The golden ids come from scripts/gpt2_reference_tokenize.py, OpenAI's
// encoder.py algorithm run on the same files.
TEST_F(Gpt2VocabTest, MatchesReferenceEncoderOnGoldenCases) {
  const std::vector<GoldenCase> cases = read_golden();
  ASSERT_GT(cases.size(), 300u) << "golden file " << testing::kGoldenPath;
  for (const GoldenCase& c : cases) {
    EXPECT_EQ(tokenizer_->encode(c.text), c.ids) << "text: " << nlohmann::json(c.text).dump();
    EXPECT_EQ(tokenizer_->decode(c.ids), c.text);
  }
  // Second pass is served from the word cache; it must agree with the first.
  for (const GoldenCase& c : cases) EXPECT_EQ(tokenizer_->encode(c.text), c.ids);
}

TEST_F(Gpt2VocabTest, CachePoliciesGiveTheSameIds) {
  for (WordCache cache : {WordCache::kNone, WordCache::kSharded}) {
    const auto tok = Gpt2Tokenizer::load(testing::kGpt2Dir, {.cache = cache});
    for (int pass = 0; pass < 2; ++pass) {  // the second pass hits the cache
      for (const GoldenCase& c : read_golden()) {
        EXPECT_EQ(tok->encode(c.text), c.ids)
            << "cache " << static_cast<int>(cache) << " text: " << nlohmann::json(c.text).dump();
      }
    }
  }
}

TEST_F(Gpt2VocabTest, ArbitraryBytesRoundTrip) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(rng() % 64, '\0');
    for (char& b : bytes) b = static_cast<char>(rng() % 256);
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(bytes)), bytes);
  }
}

TEST_F(Gpt2VocabTest, LongUnspacedRunsAreFastAndRoundTrip) {
  // encoder.py's merge loop is quadratic in the piece length; ours must not be.
  std::string cjk;
  for (int i = 0; i < 20000; ++i) cjk += (i % 3 == 0) ? "日" : (i % 3 == 1) ? "本" : "語";
  const std::string spaces(200000, ' ');
  const std::string digits(200000, '7');
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& text : {cjk, spaces + "x", digits}) {
    const Ids ids = tokenizer_->encode(text);
    EXPECT_LT(ids.size(), text.size());
    EXPECT_EQ(tokenizer_->decode(ids), text);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

void expect_concurrent_encodes_agree(const Gpt2Tokenizer& tok) {
  const std::vector<GoldenCase> cases = read_golden();
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (const GoldenCase& c : cases) mismatches[t] += tok.encode(c.text) != c.ids;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST_F(Gpt2VocabTest, ConcurrentEncodesAgree) {
  expect_concurrent_encodes_agree(*tokenizer_);  // the default, thread-local cache
  const auto sharded = Gpt2Tokenizer::load(testing::kGpt2Dir, {.cache = WordCache::kSharded});
  expect_concurrent_encodes_agree(*sharded);
}

TEST_F(Gpt2VocabTest, DecodeRejectsOutOfRangeIds) {
  expect_error_naming([&] { tokenizer_->decode(Ids{15496, 50257}); }, {"50257"});
  expect_error_naming([&] { tokenizer_->decode(Ids{-1}); }, {"-1"});
}

TEST_F(Gpt2VocabTest, TokenizerJsonGivesTheSameIds) {
  // Build a Hugging Face tokenizer.json from encoder.json + vocab.bpe.
  TempDir dir;
  nlohmann::json vocab = nlohmann::json::parse(std::ifstream(testing::kGpt2Dir + "/encoder.json"));
  nlohmann::json merges = nlohmann::json::array();
  std::ifstream bpe(testing::kGpt2Dir + "/vocab.bpe");
  std::string line;
  std::getline(bpe, line);  // #version
  while (std::getline(bpe, line)) {
    if (!line.empty()) merges.push_back(line);
  }
  const nlohmann::json root = {
      {"version", "1.0"},
      {"pre_tokenizer",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", vocab}, {"merges", merges}}}};
  const std::string path = dir.write("tokenizer.json", root.dump());
  const auto from_json = Gpt2Tokenizer::load(path);
  const auto from_dir = Gpt2Tokenizer::load(dir.path().string());
  for (const GoldenCase& c : read_golden()) {
    EXPECT_EQ(from_json->encode(c.text), c.ids);
    EXPECT_EQ(from_dir->encode(c.text), c.ids);
  }
  EXPECT_EQ(make_tokenizer("gpt2:" + path)->encode("Hello world"), (Ids{15496, 995}));
}

// ---------------------------------------------------------------------------
// A tiny synthetic vocabulary: the 256 byte tokens, then end-of-text, then
// the tokens of a few merges.

nlohmann::json tiny_vocab() {
  nlohmann::json vocab = nlohmann::json::object();
  const auto& alphabet = gpt2_byte_to_unicode();
  for (int b = 0; b < 256; ++b) vocab[alphabet[b]] = b;
  vocab[std::string(kEndOfText)] = 256;
  vocab["he"] = 257;
  vocab["ll"] = 258;
  vocab["hell"] = 259;
  vocab["hello"] = 260;
  vocab["Ġw"] = 261;  // Ġ is the space byte
  return vocab;
}
const char* const kTinyMerges = "#version: 0.2\nl l\nh e\nhe ll\nhell o\nĠ w\n";

TEST(Gpt2TinyVocabTest, MergesByRank) {
  TempDir dir;
  dir.write("vocab.json", tiny_vocab().dump());
  dir.write("merges.txt", kTinyMerges);
  const auto tok = Gpt2Tokenizer::load(dir.path().string());
  EXPECT_EQ(tok->vocab_size(), 262);
  EXPECT_EQ(tok->eot_id(), 256);
  EXPECT_EQ(tok->encode("hello"), (Ids{260}));
  EXPECT_EQ(tok->encode("hell"), (Ids{259}));
  EXPECT_EQ(tok->encode("helo"), (Ids{257, 'l', 'o'}));
  EXPECT_EQ(tok->encode("lll"), (Ids{258, 'l'}));  // left to right, no overlap
  EXPECT_EQ(tok->encode("hello world<|endoftext|>"), (Ids{260, 261, 'o', 'r', 'l', 'd', 256}));
}

// The default cache is per thread; it must never serve one tokenizer's words
// to another used on the same thread.
TEST(Gpt2TinyVocabTest, TokenizersOnOneThreadDoNotShareCachedWords) {
  TempDir dir;
  dir.write("vocab.json", tiny_vocab().dump());
  dir.write("merges.txt", kTinyMerges);
  const auto merging = Gpt2Tokenizer::load(dir.path().string());
  dir.write("merges.txt", "#version: 0.2\nl l\n");
  const auto fewer_merges = Gpt2Tokenizer::load(dir.path().string());
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(merging->encode("hello"), (Ids{260}));
    EXPECT_EQ(fewer_merges->encode("hello"), (Ids{'h', 'e', 258, 'o'}));
  }
}

// encoder.py merges every occurrence of the best pair before it looks at the
// pairs those merges made, even when one of those ranks higher. Here "ab a"
// outranks "a b": merging one pair at a time would give [aba, b] for "abab".
// Expected ids are from scripts/gpt2_reference_tokenize.py's Encoder on the
// same two merges.
TEST(Gpt2TinyVocabTest, MergesAllOccurrencesOfARankBeforeNewPairs) {
  TempDir dir;
  nlohmann::json vocab = nlohmann::json::object();
  const auto& alphabet = gpt2_byte_to_unicode();
  for (int b = 0; b < 256; ++b) vocab[alphabet[b]] = b;
  vocab[std::string(kEndOfText)] = 256;
  vocab["ab"] = 257;
  vocab["aba"] = 258;
  dir.write("vocab.json", vocab.dump());
  dir.write("merges.txt", "#version: 0.2\nab a\na b\n");
  const auto tok = Gpt2Tokenizer::load(dir.path().string(), {.cache = WordCache::kNone});
  EXPECT_EQ(tok->encode("abab"), (Ids{257, 257}));
  EXPECT_EQ(tok->encode("ababa"), (Ids{257, 258}));
  EXPECT_EQ(tok->encode("aab"), (Ids{'a', 257}));
}

TEST(Gpt2TinyVocabTest, TokenizerJsonAcceptsBothMergeForms) {
  TempDir dir;
  nlohmann::json merges =
      nlohmann::json::array({"l l", nlohmann::json::array({"h", "e"}), "he ll", "hell o", "Ġ w"});
  nlohmann::json root = {{"pre_tokenizer", {{"type", "ByteLevel"}}},
                         {"model", {{"type", "BPE"}, {"vocab", tiny_vocab()}, {"merges", merges}}}};
  const auto tok = Gpt2Tokenizer::load(dir.write("tokenizer.json", root.dump()));
  EXPECT_EQ(tok->encode("hello"), (Ids{260}));
}

// ---------------------------------------------------------------------------
// Bad tokenizer files: each error names the file (and merges line).

TEST(Gpt2BadInputTest, MissingPathAndFiles) {
  expect_error_naming([] { Gpt2Tokenizer::load("/nonexistent/gpt2"); }, {"/nonexistent/gpt2"});
  expect_error_naming([] { make_tokenizer("gpt2:"); }, {"gpt2"});
  expect_error_naming([] { make_tokenizer("gpt2"); }, {"gpt2:PATH"});
  TempDir dir;
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {dir.path().string(), "encoder.json"});
  dir.write("vocab.json", tiny_vocab().dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); }, {"merges.txt"});
}

TEST(Gpt2BadInputTest, MalformedVocab) {
  TempDir dir;
  dir.write("merges.txt", kTinyMerges);
  const std::string vocab_path = dir.write("vocab.json", "{\"a\": 0,");
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {vocab_path, "not valid JSON"});
  dir.write("vocab.json", "[\"a\", \"b\"]");
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {vocab_path, "expected a JSON object"});
  nlohmann::json vocab = tiny_vocab();
  vocab["he"] = 258;  // "ll" has 258 too
  dir.write("vocab.json", vocab.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {vocab_path, "\"he\"", "\"ll\"", "258"});
  vocab = tiny_vocab();
  vocab["he"] = 999;
  dir.write("vocab.json", vocab.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); }, {vocab_path, "999"});
  vocab = tiny_vocab();
  vocab["he"] = "257";
  dir.write("vocab.json", vocab.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {vocab_path, "\"he\"", "integer"});
  vocab = tiny_vocab();
  vocab.erase(std::string(kEndOfText));
  vocab["h€llo"] = 256;  // € is not in the byte alphabet (é would be)
  dir.write("vocab.json", vocab.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); }, {vocab_path, "U+20AC"});
  vocab = tiny_vocab();
  vocab.erase(std::string(kEndOfText));
  vocab["endoftext"] = 256;
  dir.write("vocab.json", vocab.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {vocab_path, "<|endoftext|>"});
  vocab = tiny_vocab();
  vocab.erase("A");
  vocab["AA"] = 'A';
  dir.write("vocab.json", vocab.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); }, {vocab_path, "byte 0x41"});
}

TEST(Gpt2BadInputTest, InconsistentMerges) {
  TempDir dir;
  dir.write("vocab.json", tiny_vocab().dump());
  const std::string merges_path = dir.write("merges.txt", "#version: 0.2\nl l\nh q\n");
  // "hq" is not a token.
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {merges_path + ":3", "hq"});
  dir.write("merges.txt", "#version: 0.2\nl l\n\nhe xyz\n");
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {merges_path + ":4", "\"xyz\" is not in the vocabulary"});
  dir.write("merges.txt", "#version: 0.2\nl l\nh e x\n");
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {merges_path + ":3", "two tokens"});
  dir.write("merges.txt", "#version: 0.2\nhe\n");
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {merges_path + ":2", "two tokens"});
  dir.write("merges.txt", "#version: 0.2\nl l\nh e\nl l\n");
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); },
                      {merges_path + ":4", merges_path + ":2"});
}

TEST(Gpt2BadInputTest, WrongTokenizerJson) {
  TempDir dir;
  nlohmann::json root = {{"pre_tokenizer", {{"type", "ByteLevel"}}},
                         {"model", {{"type", "WordPiece"}, {"vocab", tiny_vocab()}}}};
  const std::string path = dir.write("tokenizer.json", root.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(path); }, {path, "WordPiece"});
  root["model"]["type"] = "BPE";
  root["model"]["merges"] = {"l l", "h e"};
  root["pre_tokenizer"]["type"] = "Whitespace";
  dir.write("tokenizer.json", root.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(path); }, {path, "Whitespace"});
  root["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}};
  dir.write("tokenizer.json", root.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(path); }, {path, "add_prefix_space"});
  root["pre_tokenizer"] = {{"type", "ByteLevel"}};
  root["model"]["merges"] = {"l l", "h z"};
  dir.write("tokenizer.json", root.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(path); }, {path, "model.merges[1]", "hz"});
  root["model"]["merges"] = {"l l", 5};
  dir.write("tokenizer.json", root.dump());
  expect_error_naming([&] { Gpt2Tokenizer::load(path); }, {path, "model.merges[1]"});
  dir.write("tokenizer.json", "[1, 2]");
  expect_error_naming([&] { Gpt2Tokenizer::load(path); }, {path});
  // Loading from the directory finds the same file and the same fault.
  expect_error_naming([&] { Gpt2Tokenizer::load(dir.path().string()); }, {path});
}

}  // namespace
}  // namespace trainscope::training
