// Tokenizer throughput in MB/s of input text: GPT-2 byte-level BPE on
// generated English prose and on prose that is mostly non-ASCII (Cyrillic,
// unspaced CJK, accented Latin, emoji), with each word cache policy, from
// one and two threads sharing one tokenizer; plus the pre-tokenizer alone,
// decoding, and the byte tokenizer for scale.
//
// The GPT-2 files are read from $TRAINSCOPE_GPT2_DIR, else from the shared data
// directory next to the source tree; without them the GPT-2 cases are skipped.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "training/tokenizers/byte_tokenizer.h"
#include "training/tokenizers/gpt2_pretokenizer.h"
#include "training/tokenizers/gpt2_tokenizer.h"

namespace trainscope::training {
namespace {

constexpr std::size_t kTextBytes = 1 << 20;

// Zipf-like weights: the i-th word is drawn with probability ~ 1/(i+1).
std::size_t zipf_pick(std::mt19937& rng, std::size_t n) {
  std::uniform_real_distribution<double> u(0.0, std::log(static_cast<double>(n) + 1.0));
  return std::min(n - 1, static_cast<std::size_t>(std::exp(u(rng)) - 1.0));
}

// An invented word from English-like syllables: the long tail that a fixed
// word list lacks, so the cache also misses now and then.
std::string rare_word(std::mt19937& rng) {
  static const char* const kSyllables[] = {"ca", "ter", "lo",  "mi", "qua", "ven", "stri",
                                           "ol", "pha", "dge", "ny", "sch", "ex",  "bru"};
  std::string word;
  const int n = 2 + rng() % 3;
  for (int i = 0; i < n; ++i) word += kSyllables[rng() % std::size(kSyllables)];
  return word;
}

std::string english_text() {
  static const char* const kWords[] = {"the",
                                       "of",
                                       "and",
                                       "to",
                                       "a",
                                       "in",
                                       "is",
                                       "it",
                                       "you",
                                       "that",
                                       "he",
                                       "was",
                                       "for",
                                       "on",
                                       "are",
                                       "with",
                                       "as",
                                       "I",
                                       "his",
                                       "they",
                                       "be",
                                       "at",
                                       "one",
                                       "have",
                                       "this",
                                       "from",
                                       "or",
                                       "had",
                                       "by",
                                       "not",
                                       "word",
                                       "but",
                                       "what",
                                       "some",
                                       "we",
                                       "can",
                                       "out",
                                       "other",
                                       "were",
                                       "all",
                                       "there",
                                       "when",
                                       "up",
                                       "use",
                                       "your",
                                       "how",
                                       "said",
                                       "an",
                                       "each",
                                       "she",
                                       "which",
                                       "do",
                                       "their",
                                       "time",
                                       "if",
                                       "will",
                                       "way",
                                       "about",
                                       "many",
                                       "then",
                                       "them",
                                       "write",
                                       "would",
                                       "like",
                                       "so",
                                       "these",
                                       "her",
                                       "long",
                                       "make",
                                       "thing",
                                       "see",
                                       "him",
                                       "two",
                                       "has",
                                       "look",
                                       "more",
                                       "day",
                                       "could",
                                       "go",
                                       "come",
                                       "did",
                                       "number",
                                       "sound",
                                       "no",
                                       "most",
                                       "people",
                                       "my",
                                       "over",
                                       "know",
                                       "water",
                                       "than",
                                       "call",
                                       "first",
                                       "who",
                                       "may",
                                       "down",
                                       "side",
                                       "been",
                                       "now",
                                       "find",
                                       "any",
                                       "new",
                                       "work",
                                       "part",
                                       "take",
                                       "get",
                                       "place",
                                       "made",
                                       "live",
                                       "where",
                                       "after",
                                       "back",
                                       "little",
                                       "only",
                                       "round",
                                       "man",
                                       "year",
                                       "came",
                                       "show",
                                       "every",
                                       "good",
                                       "me",
                                       "give",
                                       "our",
                                       "under",
                                       "name",
                                       "very",
                                       "through",
                                       "just",
                                       "form",
                                       "sentence",
                                       "great",
                                       "think",
                                       "say",
                                       "help",
                                       "low",
                                       "line",
                                       "differ",
                                       "turn",
                                       "cause",
                                       "much",
                                       "mean",
                                       "before",
                                       "move",
                                       "right",
                                       "boy",
                                       "old",
                                       "too",
                                       "same",
                                       "tell",
                                       "does",
                                       "set",
                                       "three",
                                       "want",
                                       "air",
                                       "well",
                                       "also",
                                       "play",
                                       "small",
                                       "end",
                                       "put",
                                       "home",
                                       "read",
                                       "hand",
                                       "port",
                                       "large",
                                       "spell",
                                       "add",
                                       "even",
                                       "land",
                                       "here",
                                       "must",
                                       "big",
                                       "high",
                                       "such",
                                       "follow",
                                       "act",
                                       "why",
                                       "ask",
                                       "men",
                                       "change",
                                       "went",
                                       "light",
                                       "kind",
                                       "off",
                                       "need",
                                       "house",
                                       "picture",
                                       "try",
                                       "us",
                                       "again",
                                       "animal",
                                       "point",
                                       "mother",
                                       "world",
                                       "near",
                                       "build",
                                       "self",
                                       "earth",
                                       "father",
                                       "head",
                                       "stand",
                                       "own",
                                       "page",
                                       "should",
                                       "country",
                                       "found",
                                       "answer",
                                       "school",
                                       "grow",
                                       "study",
                                       "still",
                                       "learn",
                                       "plant",
                                       "cover",
                                       "food",
                                       "sun",
                                       "four",
                                       "between",
                                       "state",
                                       "keep",
                                       "eye",
                                       "never",
                                       "last",
                                       "let",
                                       "thought",
                                       "city",
                                       "tree",
                                       "cross",
                                       "farm",
                                       "hard",
                                       "start",
                                       "might",
                                       "story",
                                       "saw",
                                       "far",
                                       "sea",
                                       "draw",
                                       "left",
                                       "late",
                                       "run",
                                       "don't",
                                       "it's",
                                       "I'm",
                                       "we're",
                                       "they'll",
                                       "while",
                                       "press",
                                       "close",
                                       "night",
                                       "real",
                                       "life",
                                       "few",
                                       "north",
                                       "government",
                                       "experiment",
                                       "distribution",
                                       "understanding",
                                       "Lily",
                                       "London",
                                       "Tuesday",
                                       "September",
                                       "algorithm",
                                       "however"};
  std::mt19937 rng(42);
  std::string text;
  bool sentence_start = true;
  while (text.size() < kTextBytes) {
    std::string word =
        (rng() % 100 < 4) ? rare_word(rng) : kWords[zipf_pick(rng, std::size(kWords))];
    if (rng() % 100 < 2) word = std::to_string(rng() % (rng() % 2 ? 100 : 100000));
    if (sentence_start && !word.empty()) word[0] = static_cast<char>(std::toupper(word[0]));
    if (!sentence_start) text += ' ';
    if (rng() % 100 < 2) word = "\"" + word + "\"";
    text += word;
    sentence_start = false;
    const unsigned r = rng() % 100;
    if (r < 6) {
      text += ',';
    } else if (r < 13) {
      text += (r < 11) ? "." : (r == 11 ? "?" : "!");
      sentence_start = true;
      if (rng() % 8 == 0)
        text += "\n\n";
      else
        text += ' ';
    }
  }
  return text;
}

std::string non_ascii_text() {
  static const char* const kWords[] = {
      "Привет", "мир",    "как",      "дела",   "сегодня", "хорошо",  "погода",   "книга",
      "читать", "café",   "naïve",    "résumé", "über",    "Straße",  "Ångström", "Łódź",
      "mañana", "façade", "Ελληνικά", "γλώσσα", "مرحبا",   "بالعالم", "😀",        "👍🏽",
      "❤️", "2024",   "и",        "в",      "не"};
  static const char* const kCjk[] = {"日", "本", "語", "中", "文", "字", "的", "是",
                                     "我", "你", "他", "人", "大", "小", "年", "月",
                                     "한", "국", "어", "の", "に", "は", "を", "た"};
  std::mt19937 rng(43);
  std::string text;
  while (text.size() < kTextBytes) {
    if (rng() % 3 == 0) {  // an unspaced CJK sentence: one long \p{L}+ piece
      const int n = 5 + rng() % 25;
      for (int i = 0; i < n; ++i) text += kCjk[zipf_pick(rng, std::size(kCjk))];
      text += (rng() % 2) ? "。" : "，";
    } else {
      const int n = 4 + rng() % 12;
      for (int i = 0; i < n; ++i) {
        text += kWords[zipf_pick(rng, std::size(kWords))];
        text += (i + 1 < n) ? " " : ". ";
      }
    }
    if (rng() % 6 == 0) text += "\n";
  }
  return text;
}

const std::string& text_for(int which) {
  static const std::string english = english_text();
  static const std::string non_ascii = non_ascii_text();
  return which == 0 ? english : non_ascii;
}

std::string gpt2_dir() {
  if (const char* dir = std::getenv("TRAINSCOPE_GPT2_DIR")) return dir;
  return TRAINSCOPE_GPT2_DIR;
}

// One tokenizer per WordCache setting, shared by all threads of a benchmark.
const Gpt2Tokenizer* gpt2(WordCache cache) {
  static std::unique_ptr<Gpt2Tokenizer> tokenizers[3];
  static bool tried = false;
  if (!tried) {
    tried = true;
    try {
      for (WordCache c : {WordCache::kNone, WordCache::kSharded, WordCache::kThreadLocal}) {
        tokenizers[static_cast<int>(c)] = Gpt2Tokenizer::load(gpt2_dir(), {.cache = c});
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tokenizer_bench: GPT-2 cases skipped: %s\n", e.what());
    }
  }
  return tokenizers[static_cast<int>(cache)].get();
}

// Arg 0: text (0 English, 1 non-ASCII); arg 1: WordCache (0 none, 1 sharded,
// 2 thread-local). The cache is warm after the first iteration, as it is
// through most of a long corpus.
void BM_Gpt2Encode(benchmark::State& state) {
  const std::string& text = text_for(static_cast<int>(state.range(0)));
  const Gpt2Tokenizer* tok = gpt2(static_cast<WordCache>(state.range(1)));
  if (tok == nullptr) {
    state.SkipWithError("GPT-2 vocabulary not found; set TRAINSCOPE_GPT2_DIR");
    return;
  }
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    tok->encode(text, &ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  // Averaged, not summed, over threads: every thread encodes the same text.
  state.counters["bytes_per_token"] = benchmark::Counter(
      static_cast<double>(text.size()) / ids.size(), benchmark::Counter::kAvgThreads);
  state.SetLabel(state.range(0) == 0 ? "english" : "non_ascii");
}
BENCHMARK(BM_Gpt2Encode)
    ->ArgNames({"text", "cache"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);
// One and two threads encoding at once through one tokenizer: the lock cost
// of the sharded cache against per-thread caches. Real time, so that two
// threads doing twice the work in the same time show as twice the MB/s.
BENCHMARK(BM_Gpt2Encode)
    ->ArgNames({"text", "cache"})
    ->ArgsProduct({{0}, {1, 2}})
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_Gpt2Pretokenize(benchmark::State& state) {
  const std::string& text = text_for(static_cast<int>(state.range(0)));
  std::size_t pieces = 0;
  for (auto _ : state) {
    pieces = 0;
    for (std::size_t pos = 0; pos < text.size(); ++pieces) pos += gpt2_piece_length(text, pos);
    benchmark::DoNotOptimize(pieces);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.SetLabel(state.range(0) == 0 ? "english" : "non_ascii");
}
BENCHMARK(BM_Gpt2Pretokenize)->ArgName("text")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Bytes processed here are those of the decoded text, to compare with encode.
void BM_Gpt2Decode(benchmark::State& state) {
  const std::string& text = text_for(static_cast<int>(state.range(0)));
  const Gpt2Tokenizer* tok = gpt2(WordCache::kSharded);
  if (tok == nullptr) {
    state.SkipWithError("GPT-2 vocabulary not found; set TRAINSCOPE_GPT2_DIR");
    return;
  }
  const std::vector<int32_t> ids = tok->encode(text);
  for (auto _ : state) benchmark::DoNotOptimize(tok->decode(ids));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Gpt2Decode)->ArgName("text")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ByteEncode(benchmark::State& state) {
  const std::string& text = text_for(0);
  ByteTokenizer tok;
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    tok.encode(text, &ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ByteEncode)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trainscope::training

BENCHMARK_MAIN();
