#include "training/data/prepare_data.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "tests/data/test_util.h"
#include "training/data/pipeline.h"
#include "training/data/records.h"
#include "training/tokenizers/byte_tokenizer.h"

namespace trainscope::training {
namespace {

using testing::TempDir;

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// 20 instruction records of growing length, 3 bad lines, 2 chat records.
std::string write_input(const TempDir& dir) {
  std::string lines;
  for (int i = 0; i < 20; ++i) {
    lines += "{\"instruction\":\"q" + std::to_string(i) + "\",\"context\":\"\",\"response\":\"" +
             std::string(i * 10, 'r') + "\"}\n";
  }
  lines += "not json\n{\"text\": 3}\n{\"other\":\"x\"}\n";
  lines +=
      "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":"
      "\"yo\"}]}\n";
  lines +=
      "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":"
      "\"b\"}]}\n";
  return dir.write("in.jsonl", lines);
}

TEST(PrepareDataTest, ConvertsDropsLongShufflesAndSplits) {
  TempDir dir;
  ByteTokenizer tok;
  PrepareOptions o;
  o.input = write_input(dir);
  o.out_dir = dir.file("out");
  // Instruction i < 10 renders to 59 + 10 i bytes, + 1 end-of-text: 9 fits.
  o.max_seq_length = 150;
  o.valid_fraction = 0.25;
  o.seed = 5;
  const PrepareResult r = prepare_data(o, tok);
  EXPECT_EQ(r.read, 25);
  EXPECT_EQ(r.dropped_bad, 3);
  EXPECT_EQ(r.bad_samples.size(), 3u);
  EXPECT_NE(r.bad_samples[0].find("in.jsonl:21"), std::string::npos) << r.bad_samples[0];
  EXPECT_EQ(r.dropped_too_long, 10);  // i = 10..19 exceed 150 tokens
  EXPECT_EQ(r.kept, 12);
  EXPECT_LE(r.max_tokens_kept, 150);
  EXPECT_EQ(r.valid, 3);  // round(12 * 0.25)
  EXPECT_EQ(r.train, 9);
  const auto train = read_jsonl(dir.file("out/train.jsonl"));
  const auto valid = read_jsonl(dir.file("out/valid.jsonl"));
  ASSERT_EQ(train.size(), 9u);
  ASSERT_EQ(valid.size(), 3u);
  std::set<std::string> all;
  for (const auto& v : {train, valid}) {
    for (const auto& j : v) {
      ASSERT_TRUE(j.contains("messages")) << j.dump();
      EXPECT_TRUE(all.insert(j.dump()).second);
      // Dropped, not truncated: every kept record fits.
      std::string text;
      render_record(parse_record(j, "text", "x"), &text);
      EXPECT_LE(static_cast<int64_t>(tok.encode(text).size()) + 1, 150);
    }
  }
  // Shuffled: the file order (q0, q1, ...) is not kept.
  std::vector<std::string> firsts;
  for (const auto& j : train) firsts.push_back(j["messages"][0]["content"]);
  EXPECT_FALSE(std::is_sorted(firsts.begin(), firsts.end()));
  // Same seed, same split; the directory is a SOURCE with a valid split.
  prepare_data(o, tok);
  EXPECT_EQ(read_jsonl(dir.file("out/train.jsonl")), train);
  options::DataOptions d;
  d.source = o.out_dir;
  d.global_batch = 2;
  EXPECT_NE(open_validation_source(d, tok), nullptr);
  EXPECT_EQ(open_batch_source(d, tok)->stats().examples_total, 9);
  // No temporaries left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(o.out_dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2);
}

// A disk that fills up while the second file is written must not leave a
// new train.jsonl beside the old valid.jsonl. The disk is a file-size limit
// (RLIMIT_FSIZE) in a child process: the small train file fits under it, the
// large valid file does not.
TEST(PrepareDataTest, BothFilesChangeTogetherOrNotAtAll) {
  TempDir dir;
  PrepareOptions o;
  o.input = write_input(dir);
  o.out_dir = dir.file("out");
  o.valid_fraction = 0.9;
  ByteTokenizer tok;
  const PrepareResult first = prepare_data(o, tok);
  const std::string old_train = dir.read("out/train.jsonl");
  const std::string old_valid = dir.read("out/valid.jsonl");
  ASSERT_LT(old_train.size(), old_valid.size());
  o.seed = 99;  // a new split: both files would change
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    const rlimit limit{old_train.size() + 64, old_train.size() + 64};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      prepare_data(o, tok);
    } catch (const Error&) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << "the write past the limit did not fail";
  EXPECT_EQ(dir.read("out/train.jsonl"), old_train);
  EXPECT_EQ(dir.read("out/valid.jsonl"), old_valid);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("out"))) files += e.exists();
  EXPECT_EQ(files, 2) << "a temporary was left behind";
  EXPECT_EQ(first.train + first.valid, first.kept);
}

TEST(PrepareDataTest, AFifoInputIsNamedForWhatItIs) {
  TempDir dir;
  const std::string fifo = dir.file("pipe.jsonl");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  PrepareOptions o;
  o.input = fifo;
  o.out_dir = dir.file("out");
  ByteTokenizer tok;
  try {
    prepare_data(o, tok);
    ADD_FAILURE() << "a FIFO was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(PrepareDataTest, NothingWrittenWhenNothingKept) {
  TempDir dir;
  ByteTokenizer tok;
  PrepareOptions o;
  o.input = write_input(dir);
  o.out_dir = dir.file("out");
  o.max_seq_length = 5;
  try {
    prepare_data(o, tok);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no example kept"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/train.jsonl")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/valid.jsonl")));
}

TEST(PrepareDataTest, BadOptionsAndMissingInput) {
  TempDir dir;
  ByteTokenizer tok;
  PrepareOptions o;
  o.input = dir.file("missing.jsonl");
  o.out_dir = dir.file("out");
  EXPECT_THROW(prepare_data(o, tok), Error);
  o.input = write_input(dir);
  o.valid_fraction = 1.0;
  try {
    prepare_data(o, tok);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--valid-fraction"), std::string::npos);
  }
  o.valid_fraction = 0;
  const PrepareResult r = prepare_data(o, tok);
  EXPECT_EQ(r.valid, 0);
  EXPECT_EQ(r.train, 22);
  EXPECT_TRUE(read_jsonl(dir.file("out/valid.jsonl")).empty());
}

}  // namespace
}  // namespace trainscope::training
