#include "training/data/document_source.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "base/check.h"
#include "tests/data/test_util.h"
#include "training/data/example_index.h"
#include "training/data/pipeline.h"
#include "training/tokenizers/byte_tokenizer.h"
#include "tests/expect_error.h"

namespace trainscope::training {
namespace {

using ::trainscope::testing::error_of;

using testing::TempDir;

std::vector<std::string> all_texts(const DocumentSource& source) {
  std::vector<std::string> out;
  std::string text;
  for (int64_t i = 0; i < source.size(); ++i) {
    source.text(i, &text);
    out.push_back(text);
  }
  return out;
}

options::DataOptions options_for(const std::string& source) {
  options::DataOptions o;
  o.source = source;
  return o;
}

TEST(SourcesTest, TextFileWithDelimiterLines) {
  TempDir dir;
  const std::string path = dir.write("stories.txt",
                                     "Once there was a cat.\nIt was happy.\n<|endoftext|>\n"
                                     "  Second story.  \n\n<|endoftext|>\n\n<|endoftext|>\nThird");
  auto source = open_document_source(options_for(path), "train");
  EXPECT_EQ(all_texts(*source), (std::vector<std::string>{"Once there was a cat.\nIt was happy.",
                                                          "Second story.", "Third"}));
  options::DataOptions custom = options_for(path);
  custom.delimiter = "===";
  dir.write("custom.txt", "a\n===\nb\n");
  custom.source = dir.file("custom.txt");
  EXPECT_EQ(all_texts(*open_document_source(custom, "train")),
            (std::vector<std::string>{"a", "b"}));
}

TEST(SourcesTest, TextFileOnePerLine) {
  TempDir dir;
  options::DataOptions o = options_for(dir.write("lines.txt", "one\n\ntwo\r\nthree"));
  o.one_per_line = true;
  EXPECT_EQ(all_texts(*open_document_source(o, "train")),
            (std::vector<std::string>{"one", "two", "three"}));
}

TEST(SourcesTest, JsonlKindsAndDirectorySplits) {
  TempDir dir;
  dir.write("train.jsonl",
            "{\"text\":\"plain\"}\n"
            "{\"messages\":[{\"role\":\"user\",\"content\":\"Q\"},{\"role\":\"assistant\","
            "\"content\":\"A\"}]}\n"
            "{\"instruction\":\"Do\",\"context\":\"\",\"response\":\"Done\"}\n");
  dir.write("valid.jsonl", "{\"text\":\"v\"}\n");
  options::DataOptions o = options_for(dir.path().string());
  EXPECT_EQ(all_texts(*open_document_source(o, "train")),
            (std::vector<std::string>{
                "plain", "<|user|>\nQ\n<|assistant|>\nA\n",
                "<|user|>\nYou are a helpful assistant.\n\nDo\n<|assistant|>\nDone\n"}));
  EXPECT_EQ(all_texts(*open_document_source(o, "valid")), (std::vector<std::string>{"v"}));
  EXPECT_EQ(open_document_source(o, "test", /*missing_split_ok=*/true), nullptr);
  const std::string msg = error_of([&] { open_document_source(o, "test"); });
  EXPECT_NE(msg.find("test.jsonl"), std::string::npos) << msg;
}

TEST(SourcesTest, SlicesByCountAndPercent) {
  TempDir dir;
  std::string lines;
  for (int i = 0; i < 10; ++i) lines += "{\"text\":\"d" + std::to_string(i) + "\"}\n";
  options::DataOptions o = options_for(dir.write("d.jsonl", lines));
  EXPECT_EQ(all_texts(*open_document_source(o, "train[2:5]")),
            (std::vector<std::string>{"d2", "d3", "d4"}));
  EXPECT_EQ(all_texts(*open_document_source(o, "train[0%:20%]")),
            (std::vector<std::string>{"d0", "d1"}));
  EXPECT_EQ(open_document_source(o, "train[80%:]")->size(), 2);
  EXPECT_EQ(open_document_source(o, "train[:3]")->size(), 3);
  // Only the slice is read.
  auto sliced = open_document_source(o, "train[0:1]");
  all_texts(*sliced);
  EXPECT_EQ(sliced->bytes_read(), static_cast<int64_t>(std::string("{\"text\":\"d0\"}").size()));
  EXPECT_NE(error_of([&] { open_document_source(o, "train[5"); }).find("train[5"),
            std::string::npos);
  EXPECT_THROW(open_document_source(o, "train[a:b]"), Error);
  EXPECT_NE(error_of([&] { open_document_source(o, "train[5:5]"); }).find("empty dataset"),
            std::string::npos);
  // Builtin slices too.
  options::DataOptions b = options_for("builtin:stories?docs=100");
  EXPECT_EQ(open_document_source(b, "train[10%:30%]")->size(), 20);
}

TEST(SourcesTest, BuiltinStoriesOptionsAndSplits) {
  options::DataOptions o = options_for("builtin:stories?docs=50&valid_docs=7&seed=3");
  auto train = open_document_source(o, "train");
  auto valid = open_document_source(o, "valid");
  EXPECT_EQ(train->size(), 50);
  EXPECT_EQ(valid->size(), 7);
  std::string t, v;
  train->text(0, &t);
  valid->text(0, &v);
  EXPECT_NE(t, v);
  EXPECT_THROW(open_document_source(options_for("builtin:stories?pages=3"), "train"), Error);
  EXPECT_THROW(open_document_source(options_for("builtin:poems"), "train"), Error);
  EXPECT_THROW(open_document_source(options_for("builtin:stories?docs=x"), "train"), Error);
  EXPECT_THROW(open_document_source(options_for("builtin:stories?docs=0"), "train"), Error);
}

TEST(SourcesErrorsTest, MissingFileOrDirectory) {
  TempDir dir;
  const std::string missing = dir.file("nope.jsonl");
  EXPECT_NE(error_of([&] { open_document_source(options_for(missing), "train"); }).find(missing),
            std::string::npos);
  const std::string missing_dir = dir.file("nodir/");
  EXPECT_NE(error_of([&] {
              open_document_source(options_for(missing_dir), "train");
            }).find("does not exist"),
            std::string::npos);
  // A directory without train.jsonl.
  EXPECT_NE(error_of([&] {
              open_document_source(options_for(dir.path().string()), "train");
            }).find("train.jsonl"),
            std::string::npos);
}

TEST(SourcesErrorsTest, EmptyDataset) {
  TempDir dir;
  const std::string path = dir.write("empty.jsonl", "\n  \n");
  EXPECT_NE(
      error_of([&] { open_document_source(options_for(path), "train"); }).find("empty dataset"),
      std::string::npos);
  const std::string text = dir.write("empty.txt", "<|endoftext|>\n\n");
  EXPECT_THROW(open_document_source(options_for(text), "train"), Error);
}

TEST(SourcesErrorsTest, MalformedJsonNamesFileAndLineOrIsSkipped) {
  TempDir dir;
  const std::string path =
      dir.write("bad.jsonl", "{\"text\":\"ok\"}\n{\"text\": oops}\n{\"text\":\"fine\"}\n");
  auto source = open_document_source(options_for(path), "train");
  ASSERT_EQ(source->size(), 3);  // the index does not parse
  const std::string msg = error_of([&] { all_texts(*source); });
  EXPECT_NE(msg.find(path + ":2: not valid JSON"), std::string::npos) << msg;

  options::DataOptions skip = options_for(path);
  skip.skip_bad_records = true;
  auto skipped = open_document_source(skip, "train");
  EXPECT_EQ(all_texts(*skipped), (std::vector<std::string>{"ok", "fine"}));
  EXPECT_EQ(skipped->bad_records(), 1);
}

TEST(SourcesErrorsTest, MissingFieldNamesFieldAndLine) {
  TempDir dir;
  const std::string path = dir.write("f.jsonl", "{\"text\":\"ok\"}\n\n{\"body\":\"x\"}\n");
  auto source = open_document_source(options_for(path), "train");
  const std::string msg = error_of([&] { all_texts(*source); });
  EXPECT_NE(msg.find(path + ":3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'text'"), std::string::npos) << msg;
  options::DataOptions o = options_for(path);
  o.text_field = "body";
  EXPECT_THROW(all_texts(*open_document_source(o, "train")), Error);  // line 1 lacks body
}

TEST(SourcesErrorsTest, InvalidUtf8NamesFileAndLine) {
  TempDir dir;
  const std::string text = dir.write("u.txt", "good\nstill good\nbad \xff byte\n<|endoftext|>\n");
  auto source = open_document_source(options_for(text), "train");
  const std::string msg = error_of([&] { all_texts(*source); });
  EXPECT_NE(msg.find(text + ":3: invalid UTF-8"), std::string::npos) << msg;
  const std::string jsonl = dir.write("u.jsonl", "{\"text\":\"a\"}\n{\"text\":\"\xc3\"}\n");
  const std::string msg2 =
      error_of([&] { all_texts(*open_document_source(options_for(jsonl), "train")); });
  EXPECT_NE(msg2.find(jsonl + ":2: invalid UTF-8"), std::string::npos) << msg2;
}

TEST(SourcesErrorsTest, LineOverTheLimitIsNamed) {
  TempDir dir;
  const std::string path = dir.write(
      "long.jsonl", "{\"text\":\"short\"}\n{\"text\":\"" + std::string(5000, 'x') + "\"}\n");
  options::DataOptions o = options_for(path);
  o.max_record_bytes = 1000;
  const std::string msg = error_of([&] { open_document_source(o, "train"); });
  EXPECT_NE(msg.find(path + ":2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1000 byte limit"), std::string::npos) << msg;
  o.max_record_bytes = 10000;
  EXPECT_EQ(open_document_source(o, "train")->size(), 2);
}

TEST(ExampleIndexTest, LinesSpanningScanChunks) {
  // Lines longer than the scanner's 1 MiB chunk must be gathered whole.
  TempDir dir;
  const std::string big(3u << 20, 'y');
  const std::string path =
      dir.write("big.jsonl", "{\"text\":\"a\"}\n{\"text\":\"" + big + "\"}\n{\"text\":\"b\"}");
  ScanOptions scan;
  const ExampleIndex index = ExampleIndex::scan(path, scan);
  ASSERT_EQ(index.size(), 3);
  EXPECT_EQ(index[1].line, 2);
  EXPECT_EQ(index[1].length, static_cast<int64_t>(big.size() + 11));
  EXPECT_EQ(index[2].line, 3);
  auto source = open_document_source(options_for(path), "train");
  std::string text;
  source->text(1, &text);
  EXPECT_EQ(text, big);
}

// Item 9: a built-in corpus larger than memory (or than the story numbers
// before the validation stories) is bad input naming the source, not a
// std::bad_alloc.
TEST(SourcesTest, AnImpossiblyLargeBuiltinCorpusIsBadInput) {
  ByteTokenizer tokenizer;
  for (const std::string source :
       {"builtin:stories?docs=99999999999999", "builtin:stories?docs=100000000000"}) {
    options::DataOptions o = options_for(source);
    o.block = 16;
    o.global_batch = 2;
    try {
      open_batch_source(o, tokenizer);
      ADD_FAILURE() << source << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), kExitBadInput) << e.what();
      EXPECT_NE(std::string(e.what()).find(source), std::string::npos) << e.what();
    }
  }
}

// Items 11 and 14: a FIFO (or other stream) as the data file is refused at
// once, saying what it is: reading it would block until a writer came, and
// the index-then-read design needs a file it can read twice.
TEST(SourcesTest, AFifoIsRefusedNotWaitedOn) {
  TempDir dir;
  const std::string fifo = dir.file("stream.jsonl");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string message = error_of([&] { open_document_source(options_for(fifo), "train"); });
  EXPECT_NE(message.find(fifo), std::string::npos) << message;
  EXPECT_NE(message.find("FIFO"), std::string::npos) << message;
}

}  // namespace
}  // namespace trainscope::training
