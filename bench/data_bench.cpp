// Data pipeline throughput: what a rank pays at start (generate or read, then
// tokenize its documents) and per step (fill its rows).
//
//   data_bench [--benchmark_filter=...]
// BM_GenerateStories        story generation alone, bytes/s
// BM_OpenBuiltin/<tok>/<N>  open_batch_source on builtin:stories?docs=N, pad
//                           mode, naive; docs/s and bytes/s (byte, gpt2)
// BM_ScanJsonl              ExampleIndex::scan of a JSONL file, bytes/s
// BM_Batch                  batch() of 8 x 128 rows after loading
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "training/data/example_index.h"
#include "training/data/pipeline.h"
#include "training/data/stories.h"
#include "training/tokenizers/make_tokenizer.h"

namespace trainscope::training {
namespace {

const Tokenizer* tokenizer(int which) {
  static const std::unique_ptr<Tokenizer> byte = make_tokenizer("byte");
  static const std::unique_ptr<Tokenizer> gpt2 = []() -> std::unique_ptr<Tokenizer> {
    try {
      return make_tokenizer(std::string("gpt2:") + TRAINSCOPE_GPT2_DIR);
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  return which == 0 ? byte.get() : gpt2.get();
}

void BM_GenerateStories(benchmark::State& state) {
  std::string story;
  int64_t i = 0, bytes = 0;
  for (auto _ : state) {
    generate_story(42, i++, &story);
    bytes += static_cast<int64_t>(story.size());
  }
  state.SetBytesProcessed(bytes);
  state.SetItemsProcessed(i);
}
BENCHMARK(BM_GenerateStories);

void BM_OpenBuiltin(benchmark::State& state) {
  const Tokenizer* tok = tokenizer(static_cast<int>(state.range(0)));
  if (tok == nullptr) {
    state.SkipWithError("gpt2 vocabulary not available");
    return;
  }
  options::DataOptions o;
  o.source = fmt::format("builtin:stories?docs={}", state.range(1));
  o.block = 257;
  int64_t bytes = 0, tokens = 0;
  for (auto _ : state) {
    auto source = open_batch_source(o, *tok);
    bytes += source->stats().bytes_read;
    tokens += source->stats().tokens_held;
  }
  state.SetLabel(tok->spec().substr(0, 4));
  state.SetBytesProcessed(bytes);
  state.SetItemsProcessed(state.iterations() * state.range(1));
  state.counters["tokens_held"] =
      benchmark::Counter(static_cast<double>(tokens) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_OpenBuiltin)->Args({0, 20000})->Args({1, 20000})->Unit(benchmark::kMillisecond);

void BM_ScanJsonl(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "trainscope_data_bench.jsonl").string();
  {
    std::ofstream out(path);
    std::string story;
    for (int i = 0; i < 20000; ++i) {
      generate_story(1, i, &story);
      out << nlohmann::json{{"text", story}}.dump() << '\n';
    }
  }
  ScanOptions scan;
  int64_t bytes = 0;
  for (auto _ : state) {
    const ExampleIndex index = ExampleIndex::scan(path, scan);
    bytes += index.bytes_scanned();
    benchmark::DoNotOptimize(index.size());
  }
  state.SetBytesProcessed(bytes);
  std::filesystem::remove(path);
}
BENCHMARK(BM_ScanJsonl)->Unit(benchmark::kMillisecond);

void BM_Batch(benchmark::State& state) {
  options::DataOptions o;
  o.source = "builtin:stories?docs=2000";
  o.block = 129;
  o.global_batch = 8;
  auto source = open_batch_source(o, *tokenizer(0));
  std::vector<int32_t> inputs(8 * 128), targets(8 * 128);
  int64_t step = 0;
  for (auto _ : state) source->batch(step++, inputs, targets);
  state.SetItemsProcessed(state.iterations() * 8 * 128);
}
BENCHMARK(BM_Batch);

}  // namespace
}  // namespace trainscope::training

BENCHMARK_MAIN();
