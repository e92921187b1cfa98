#include "training/tokenizers/make_tokenizer.h"
#include "training/data/pipeline.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "base/check.h"
#include "kernels/storage.h"
#include "tests/data/test_util.h"
#include "tests/tokenizers/test_util.h"
#include "training/data/example_index.h"
#include "training/tokenizers/byte_tokenizer.h"
#include "tests/expect_error.h"

namespace trainscope::training {
namespace {

using ::trainscope::testing::error_of;

using testing::TempDir;

struct Batch {
  std::vector<int32_t> inputs, targets;
};

Batch get(BatchSource& source, int64_t step) {
  Batch b;
  const std::size_t n = static_cast<std::size_t>(source.rows()) * source.seq_len();
  b.inputs.resize(n);
  b.targets.resize(n);
  source.batch(step, b.inputs, b.targets);
  return b;
}

// Row i of a batch as [inputs..., targets...] so rows can be compared whole.
std::vector<int32_t> row(const Batch& b, int seq_len, int i) {
  std::vector<int32_t> r(b.inputs.begin() + i * seq_len, b.inputs.begin() + (i + 1) * seq_len);
  r.insert(r.end(), b.targets.begin() + i * seq_len, b.targets.begin() + (i + 1) * seq_len);
  return r;
}

// M JSONL documents "example NNNN: ..." of varied lengths; every document
// is identified by its first 12 bytes.
std::string write_examples(const TempDir& dir, int m) {
  std::string lines;
  for (int i = 0; i < m; ++i) {
    lines += fmt::format("{{\"text\":\"example {:04d}: {}\"}}\n", i,
                         std::string(5 + i % 23, 'a' + i % 26));
  }
  return dir.write("examples.jsonl", lines);
}

int example_id(const Batch& b, int seq_len, int i) {
  std::string s;
  for (int j = 8; j < 12; ++j) s.push_back(static_cast<char>(b.inputs[i * seq_len + j]));
  return std::stoi(s);
}

TEST(PipelineTest, PadModeTruncatesPadsAndMasks) {
  TempDir dir;
  ByteTokenizer tok;
  const int32_t E = ByteTokenizer::kEotId;
  options::DataOptions o;
  o.source = dir.write("d.jsonl", "{\"text\":\"ab\"}\n{\"text\":\"abcdefg\"}\n");
  o.block = 5;
  o.global_batch = 1;
  o.shuffle = false;
  auto source = open_batch_source(o, tok);
  EXPECT_EQ(source->rows(), 1);
  EXPECT_EQ(source->seq_len(), 4);
  EXPECT_EQ(source->batches_per_epoch(), 2);
  Batch b0 = get(*source, 0);
  EXPECT_EQ(b0.inputs, (std::vector<int32_t>{'a', 'b', E, E}));
  EXPECT_EQ(b0.targets, (std::vector<int32_t>{'b', E, E, E}));
  Batch b1 = get(*source, 1);
  EXPECT_EQ(b1.inputs, (std::vector<int32_t>{'a', 'b', 'c', 'd'}));
  EXPECT_EQ(b1.targets, (std::vector<int32_t>{'b', 'c', 'd', 'e'}));
  EXPECT_EQ(source->stats().tokens_held, 2 + 5);  // truncated to block

  o.mask_padding = true;
  auto masked = open_batch_source(o, tok);
  Batch m0 = get(*masked, 0);
  EXPECT_EQ(m0.inputs, (std::vector<int32_t>{'a', 'b', E, E}));
  EXPECT_EQ(m0.targets, (std::vector<int32_t>{'b', E, -1, -1}));
  EXPECT_EQ(get(*masked, 1).targets, (std::vector<int32_t>{'b', 'c', 'd', 'e'}));
  EXPECT_EQ(get(*masked, 2).targets, m0.targets);  // epoch 1, identity order
}

// --mask-prompt: targets up to and with the last assistant header are -1;
// the answer (and its end-of-text) are learned; a chat whose prompt fills the
// block trains on nothing; text records and packing are refused by name.
TEST(PipelineTest, MaskPromptLeavesThePromptOutOfTheLoss) {
  TempDir dir;
  ByteTokenizer tok;
  const int32_t E = ByteTokenizer::kEotId;
  options::DataOptions o;
  o.source = dir.write("chat.jsonl",
                       "{\"messages\":[{\"role\":\"user\",\"content\":\"Q\"},"
                       "{\"role\":\"assistant\",\"content\":\"ok\"}]}\n");
  const std::string prompt = "<|user|>\nQ\n<|assistant|>\n";  // 24 bytes
  o.block = 32;
  o.global_batch = 1;
  o.shuffle = false;
  o.mask_prompt = true;
  auto source = open_batch_source(o, tok);
  const Batch b = get(*source, 0);
  const int P = static_cast<int>(prompt.size());
  for (int j = 0; j + 1 < P; ++j) EXPECT_EQ(b.targets[j], -1) << j;  // predicting prompt bytes
  EXPECT_EQ(b.targets[P - 1], 'o');                                  // the answer's first byte
  EXPECT_EQ(b.targets[P], 'k');
  EXPECT_EQ(b.targets[P + 1], '\n');
  EXPECT_EQ(b.targets[P + 2], E);
  for (int j = 0; j < P; ++j) EXPECT_EQ(b.inputs[j], static_cast<unsigned char>(prompt[j]));

  o.block = 10;  // the prompt alone overflows the block: nothing to learn in it
  auto cut = open_batch_source(o, tok);
  for (int32_t t : get(*cut, 0).targets) EXPECT_EQ(t, -1);

  o.block = 32;
  o.source = dir.write("text.jsonl", "{\"text\":\"just text\"}\n");
  EXPECT_NE(error_of([&] { open_batch_source(o, tok); }).find("has none"), std::string::npos);
  o.source = "builtin:instruct?docs=8";
  o.mode = options::BatchMode::kPack;
  EXPECT_NE(error_of([&] { open_batch_source(o, tok); }).find("--batching pad"), std::string::npos);
}

TEST(PipelineTest, PackModeJoinsWithEndOfTextAndCutsBlocks) {
  TempDir dir;
  ByteTokenizer tok;
  const int32_t E = ByteTokenizer::kEotId;
  options::DataOptions o;
  o.source = dir.write("d.txt", "ab\ncd\nef\n");
  o.one_per_line = true;
  o.mode = options::BatchMode::kPack;
  o.block = 4;
  o.global_batch = 1;
  o.shuffle = false;
  auto source = open_batch_source(o, tok);
  // Stream a b E c d E e f E -> blocks [a b E c] [d E e f], rest dropped.
  EXPECT_EQ(source->batches_per_epoch(), 2);
  EXPECT_EQ(source->stats().examples_total, 2);
  Batch b0 = get(*source, 0);
  EXPECT_EQ(b0.inputs, (std::vector<int32_t>{'a', 'b', E}));
  EXPECT_EQ(b0.targets, (std::vector<int32_t>{'b', E, 'c'}));
  Batch b1 = get(*source, 1);
  EXPECT_EQ(b1.inputs, (std::vector<int32_t>{'d', E, 'e'}));
  EXPECT_EQ(b1.targets, (std::vector<int32_t>{E, 'e', 'f'}));
  EXPECT_EQ(get(*source, 2).inputs, b0.inputs);
}

// The contract's central promise: duplicated and sharded-strided ranks
// together yield exactly the naive run's global batch, every step.
TEST(PipelineTest, DuplicatedAndStridedRowsEqualNaiveBatches) {
  TempDir dir;
  ByteTokenizer tok;
  options::DataOptions base;
  base.source = write_examples(dir, 103);
  base.block = 17;
  base.global_batch = 8;
  base.seed = 99;
  auto naive = open_batch_source(base, tok);
  const int64_t K = naive->batches_per_epoch();
  ASSERT_EQ(K, 103 / 8);
  const int seq = naive->seq_len();
  for (int N : {2, 4}) {
    std::vector<std::unique_ptr<BatchSource>> dup, strided;
    for (int r = 0; r < N; ++r) {
      options::DataOptions o = base;
      o.world_size = N;
      o.rank = r;
      o.data_mode = options::DataMode::kDuplicated;
      dup.push_back(open_batch_source(o, tok));
      o.data_mode = options::DataMode::kSharded;
      o.shard = options::ShardMode::kStrided;
      strided.push_back(open_batch_source(o, tok));
      EXPECT_EQ(dup.back()->batches_per_epoch(), K);
      EXPECT_EQ(strided.back()->batches_per_epoch(), K);
    }
    const int b = 8 / N;
    std::set<int> epoch0_order;
    for (int64_t step = 0; step < 3 * K + 2; ++step) {
      const Batch want = get(*naive, step);
      for (int r = 0; r < N; ++r) {
        const Batch d = get(*dup[r], step);
        const Batch s = get(*strided[r], step);
        for (int i = 0; i < b; ++i) {
          ASSERT_EQ(row(d, seq, i), row(want, seq, r * b + i))
              << "duplicated N=" << N << " rank " << r << " step " << step << " row " << i;
          ASSERT_EQ(row(s, seq, i), row(want, seq, r + i * N))
              << "strided N=" << N << " rank " << r << " step " << step << " row " << i;
        }
      }
    }
  }
  // The epochs really are shuffled differently.
  EXPECT_NE(get(*naive, 0).inputs, get(*naive, K).inputs);
  std::set<int> seen;
  for (int64_t k = 0; k < K; ++k) {
    const Batch batch = get(*naive, k);
    for (int i = 0; i < 8; ++i) seen.insert(example_id(batch, seq, i));
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(K * 8));  // no repeats within an epoch
}

TEST(PipelineTest, ContiguousShardsAreDisjointAndCoverNTimesMs) {
  TempDir dir;
  ByteTokenizer tok;
  options::DataOptions base;
  base.source = write_examples(dir, 98);
  base.block = 17;
  base.global_batch = 8;
  base.data_mode = options::DataMode::kSharded;
  base.shard = options::ShardMode::kContiguous;
  for (int N : {2, 4}) {
    const int ms = 98 / N;
    std::set<int> all;
    for (int r = 0; r < N; ++r) {
      options::DataOptions o = base;
      o.world_size = N;
      o.rank = r;
      auto source = open_batch_source(o, tok);
      EXPECT_EQ(source->stats().examples_held, ms);
      EXPECT_EQ(source->batches_per_epoch(), ms / (8 / N));
      std::set<int> mine;
      for (int64_t step = 0; step < 10 * source->batches_per_epoch(); ++step) {
        const Batch batch = get(*source, step);
        for (int i = 0; i < source->rows(); ++i) {
          const int id = example_id(batch, source->seq_len(), i);
          ASSERT_GE(id, r * ms) << "rank " << r;
          ASSERT_LT(id, (r + 1) * ms) << "rank " << r;
          mine.insert(id);
        }
      }
      EXPECT_EQ(mine.size(), static_cast<std::size_t>(ms)) << "N=" << N << " rank " << r;
      for (int id : mine) EXPECT_TRUE(all.insert(id).second) << "example " << id << " twice";
    }
    EXPECT_EQ(all.size(), static_cast<std::size_t>(N * ms));
  }
}

TEST(PipelineTest, UnshuffledStridedShardIsReadOnce) {
  TempDir dir;
  ByteTokenizer tok;
  options::DataOptions o;
  o.source = write_examples(dir, 64);
  o.block = 33;
  o.global_batch = 8;
  o.world_size = 2;
  o.rank = 1;
  o.data_mode = options::DataMode::kSharded;
  o.shard = options::ShardMode::kStrided;
  o.shuffle = false;
  auto source = open_batch_source(o, tok);
  const int64_t K = source->batches_per_epoch();
  const Batch first = get(*source, 0);
  const int64_t read = source->stats().bytes_read;
  EXPECT_GT(read, 0);
  // Every epoch has the same order: the next one reuses what is held.
  const Batch again = get(*source, K);
  EXPECT_EQ(again.inputs, first.inputs);
  EXPECT_EQ(again.targets, first.targets);
  EXPECT_EQ(source->stats().bytes_read, read);
}

TEST(PipelineTest, ShardedRanksHoldAndReadAboutOneNth) {
  TempDir dir;
  ByteTokenizer tok;
  const std::string path = write_examples(dir, 400);
  for (const std::string& source : {std::string("builtin:stories?docs=400"), path}) {
    options::DataOptions base;
    base.source = source;
    base.block = 65;
    base.global_batch = 8;
    base.world_size = 4;
    base.rank = 1;
    base.data_mode = options::DataMode::kDuplicated;
    auto dup = open_batch_source(base, tok);
    const DataStats d = dup->stats();
    for (options::ShardMode shard :
         {options::ShardMode::kStrided, options::ShardMode::kContiguous}) {
      options::DataOptions o = base;
      o.data_mode = options::DataMode::kSharded;
      o.shard = shard;
      auto sharded = open_batch_source(o, tok);
      const DataStats s = sharded->stats();
      const double tokens = static_cast<double>(s.tokens_held) / d.tokens_held;
      // A strided rank keeps, like every duplicated rank, the whole epoch
      // permutation and the whole file index: O(M), not O(M / N).
      const bool file = source == path;
      const int64_t whole =
          shard == options::ShardMode::kStrided
              ? 400 * static_cast<int64_t>(sizeof(int64_t) + (file ? sizeof(IndexEntry) : 0))
              : 0;
      const double bytes =
          static_cast<double>(s.bytes_held - whole) / static_cast<double>(d.bytes_held - whole);
      const double read = static_cast<double>(s.bytes_read) / d.bytes_read;
      EXPECT_NEAR(tokens, 0.25, 0.05) << source << " " << enum_name(shard);
      EXPECT_NEAR(bytes, 0.25, 0.05) << source << " " << enum_name(shard);
      EXPECT_NEAR(read, 0.25, 0.05) << source << " " << enum_name(shard);
    }
    EXPECT_EQ(d.examples_held, 400);
  }
  // Duplicated reads the whole file's records; the scan reads it once more.
  options::DataOptions o;
  o.source = path;
  o.world_size = 2;
  o.data_mode = options::DataMode::kDuplicated;
  const DataStats d = open_batch_source(o, tok)->stats();
  const auto file_bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  EXPECT_EQ(d.bytes_scanned, file_bytes);
  EXPECT_EQ(d.bytes_read, file_bytes - 400);  // every line but its newline
}

TEST(PipelineTest, HeldBytesAreTrackedAsData) {
  ByteTokenizer tok;
  options::DataOptions o;
  o.source = "builtin:stories?docs=300";
  o.block = 129;
  const int64_t before = kernels::memory_snapshot()[kernels::MemoryCategory::kData].active;
  {
    auto source = open_batch_source(o, tok);
    get(*source, 0);
    const int64_t during = kernels::memory_snapshot()[kernels::MemoryCategory::kData].active;
    EXPECT_EQ(during - before, source->stats().bytes_held);
    EXPECT_GE(source->stats().bytes_held, source->stats().tokens_held * 4);
  }
  EXPECT_EQ(kernels::memory_snapshot()[kernels::MemoryCategory::kData].active, before);
}

TEST(PipelineTest, DeterministicAndIndependentOfThreads) {
  ByteTokenizer tok;
  options::DataOptions o;
  o.source = "builtin:stories?docs=5000";
  o.block = 33;
  o.global_batch = 4;
  o.mode = options::BatchMode::kPack;
  o.threads = 1;
  auto one = open_batch_source(o, tok);
  o.threads = 2;
  auto two = open_batch_source(o, tok);
  EXPECT_EQ(one->stats().tokens_held, two->stats().tokens_held);
  for (int64_t step : {0, 1, 7, 1000}) {
    EXPECT_EQ(get(*one, step).inputs, get(*two, step).inputs) << step;
  }
  o.seed = 7;
  auto other = open_batch_source(o, tok);
  EXPECT_NE(get(*one, 0).inputs, get(*other, 0).inputs);
  // Going back to an earlier epoch gives the same batch again.
  const Batch first = get(*one, 3);
  get(*one, 5 * one->batches_per_epoch());
  EXPECT_EQ(get(*one, 3).inputs, first.inputs);
}

TEST(PipelineTest, ShardedPackModePacksOwnDocuments) {
  ByteTokenizer tok;
  options::DataOptions o;
  o.source = "builtin:stories?docs=400";
  o.block = 65;
  o.global_batch = 8;
  o.mode = options::BatchMode::kPack;
  o.world_size = 4;
  o.data_mode = options::DataMode::kDuplicated;
  const int64_t all_tokens = open_batch_source(o, tok)->stats().tokens_held;
  int64_t sum = 0;
  for (options::ShardMode shard : {options::ShardMode::kStrided, options::ShardMode::kContiguous}) {
    sum = 0;
    for (int r = 0; r < 4; ++r) {
      o.data_mode = options::DataMode::kSharded;
      o.shard = shard;
      o.rank = r;
      auto s = open_batch_source(o, tok);
      EXPECT_EQ(s->stats().examples_total, -1);
      EXPECT_GT(s->batches_per_epoch(), 0);
      sum += s->stats().tokens_held;
      get(*s, s->batches_per_epoch() + 1);
    }
    // Each rank drops less than one block of its stream.
    EXPECT_LE(sum, all_tokens + 4 * 65);
    EXPECT_GE(sum, all_tokens - 4 * 65);
  }
}

TEST(PipelineErrorsTest, TooSmallAfterShardingSaysHowMany) {
  TempDir dir;
  ByteTokenizer tok;
  options::DataOptions o;
  o.source = write_examples(dir, 10);
  o.global_batch = 8;
  o.world_size = 4;
  o.data_mode = options::DataMode::kSharded;
  o.shard = options::ShardMode::kContiguous;
  o.block = 9;
  EXPECT_NO_THROW(open_batch_source(o, tok));  // 2 per rank = 2 rows
  o.global_batch = 12;                         // 3 rows per rank, 2 held
  const std::string msg = error_of([&] { open_batch_source(o, tok); });
  EXPECT_NE(msg.find("10 examples"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 ranks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("global batch 12"), std::string::npos) << msg;
  o.data_mode = options::DataMode::kDuplicated;
  o.global_batch = 16;
  EXPECT_NE(error_of([&] { open_batch_source(o, tok); }).find("10 examples"), std::string::npos);
  o.mode = options::BatchMode::kPack;
  o.data_mode = options::DataMode::kSharded;
  o.rank = 2;
  o.block = 200;
  o.global_batch = 4;
  EXPECT_NE(error_of([&] { open_batch_source(o, tok); }).find("rank 2"), std::string::npos);
}

TEST(PipelineErrorsTest, BadOptionsNameTheCulprit) {
  ByteTokenizer tok;
  options::DataOptions o;
  o.source = "builtin:stories?docs=100";
  o.global_batch = 6;
  o.world_size = 4;
  o.data_mode = options::DataMode::kDuplicated;
  EXPECT_NE(error_of([&] { open_batch_source(o, tok); }).find("not divisible by the world size 4"),
            std::string::npos);
  o.global_batch = 8;
  o.data_mode = options::DataMode::kNaive;
  EXPECT_NE(error_of([&] { open_batch_source(o, tok); }).find("naive"), std::string::npos);
  o.data_mode = options::DataMode::kSharded;
  o.rank = 4;
  EXPECT_NE(error_of([&] { open_batch_source(o, tok); }).find("rank 4"), std::string::npos);
  o.rank = 0;
  o.block = 1;
  EXPECT_THROW(open_batch_source(o, tok), Error);
  EXPECT_NE(error_of([] {
              parse_choice<options::DataMode>("sharted", "--data-mode");
            }).find("--data-mode"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { parse_choice<options::BatchMode>("packed", "--batching"); }).find("'packed'"),
      std::string::npos);
  EXPECT_EQ(parse_choice<options::ShardMode>("contiguous", "--shard"),
            options::ShardMode::kContiguous);
}

TEST(PipelineTest, ValidationSourceWhenTheSourceHasOne) {
  TempDir dir;
  ByteTokenizer tok;
  options::DataOptions o;
  o.source = "builtin:stories?docs=100&valid_docs=20";
  o.global_batch = 4;
  auto valid = open_validation_source(o, tok);
  ASSERT_NE(valid, nullptr);
  EXPECT_EQ(valid->stats().examples_total, 20);
  o.source = write_examples(dir, 20);
  EXPECT_EQ(open_validation_source(o, tok), nullptr);
  dir.write("train.jsonl", "{\"text\":\"t\"}\n");
  o.source = dir.path().string();
  EXPECT_EQ(open_validation_source(o, tok), nullptr);
  dir.write("valid.jsonl",
            "{\"text\":\"v1\"}\n{\"text\":\"v2\"}\n{\"text\":\"v3\"}\n{\"text\":\"v4\"}\n");
  auto from_dir = open_validation_source(o, tok);
  ASSERT_NE(from_dir, nullptr);
  EXPECT_EQ(from_dir->stats().examples_total, 4);
}

TEST(PipelineTest, Gpt2TokenizerWhenAvailable) {
  // Skipped only when the files are absent: a loader error must fail.
  TS_REQUIRE_GPT2_FILES();
  std::unique_ptr<Tokenizer> tok = make_tokenizer("gpt2:" + testing::kGpt2Dir);
  options::DataOptions o;
  o.source = "builtin:stories?docs=200";
  o.block = 65;
  o.mode = options::BatchMode::kPack;
  auto source = open_batch_source(o, *tok);
  const Batch b = get(*source, 0);
  for (int32_t id : b.inputs) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, tok->vocab_size());
  }
  // Words, not bytes: far fewer tokens than the byte tokenizer makes.
  ByteTokenizer bytes;
  EXPECT_LT(source->stats().tokens_held * 3, open_batch_source(o, bytes)->stats().tokens_held);
}

}  // namespace
}  // namespace trainscope::training
