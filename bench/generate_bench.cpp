// Generation speed of the KV-cache decoder (training/kv_decoder.h) against
// the memory-bound rate: decoding a token streams every weight matrix from
// memory once, so at best tok/s = memory bandwidth / bytes read per token.
// The bandwidth is the copy probe's (profiler/copy_probe.h), measured in the
// same run on the same threads. One row per case, the same columns every
// time (nccl-tests style); docs/METRICS.md defines the columns.
//
//   build/bench/generate_bench                       # seed, default threads
//   build/bench/generate_bench --threads 1 --reps 9 --tokens 64 --prompt 8
//
// Each repetition feeds a prompt (untimed), then generates greedily until
// the cache is full (max_seq_len), time-stamping every token; the cases are
// windows of those same runs. A benchmark measures: it prints whether each
// row reaches 70% of the bound (the target) and exits 0 either way
// (2 for bad arguments).
#include <CLI/CLI.hpp>
#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli/validators.h"
#include "base/check.h"
#include "kernels/storage.h"
#include "kernels/thread_count.h"
#include "profiler/clock.h"
#include "profiler/copy_probe.h"
#include "profiler/stats.h"
#include "results/environment.h"
#include "training/kv_decoder.h"
#include "training/model_config.h"
#include "training/param_layout.h"

using namespace trainscope;

namespace {

constexpr double kTarget = 0.70;  // the share of the bound

struct Options {
  std::string model = "seed";
  int reps = 5;
  int threads = 0;  // 0: OpenMP's default (OMP_NUM_THREADS or the cores)
  int tokens = 64;  // generated tokens in the short and deep cases
  int prompt = 8;
};

// A window of every repetition's generated tokens: [begin, end) counted
// from the first generated token.
struct Case {
  std::string name;
  int begin, end;
};

// What a decoded token reads from memory, in bytes.
struct Traffic {
  double weights = 0;        // per token, whatever the position
  double cache_per_pos = 0;  // key/value bytes per cached position
  double at(int position) const { return weights + cache_per_pos * (position + 1); }
};

// Every matrix and norm once, and one row of the embedding table: an untied
// table's other rows are not touched (a tied one is read whole by the head).
// Attention reads each layer's keys and values of positions 0..position.
Traffic traffic(const training::ModelConfig& c) {
  const training::ParamLayout layout(c);
  const int64_t table = int64_t{c.vocab_size} * c.dim;
  const int64_t read = layout.total() - (c.tie_embeddings ? 0 : table - c.dim);
  return {4.0 * static_cast<double>(read), 4.0 * 2 * c.n_layers * c.kv_dim()};
}

// Weights need only be finite for timing; N(0, 0.02) as training starts.
kernels::Buffer<float> random_params(const training::ModelConfig& c) {
  kernels::Buffer<float> p(training::ParamLayout(c).total(), kernels::MemoryCategory::kParameters);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& x : p) x = normal(rng);
  return p;
}

// One repetition: the prompt, then greedy tokens until the cache is full.
// Returns the clock (seconds) before the first generated token and after
// each one: stamps[i + 1] - stamps[i] is token i's time, sampling included.
std::vector<double> generate_once(training::KvDecoder& decoder, int prompt, int vocab_size) {
  decoder.reset();
  const float* logits = nullptr;
  for (int i = 0; i < prompt; ++i) logits = decoder.step((1 + i) % vocab_size);
  std::mt19937_64 rng(0);  // unused by greedy sampling
  const auto vocab = static_cast<std::size_t>(vocab_size);
  std::vector<double> stamps;
  const auto start = profiler::Clock::now();
  stamps.push_back(0.0);
  while (decoder.position() < decoder.capacity()) {
    logits = decoder.step(training::sample_token({logits, vocab}, 0.0f, 1.0f, rng));
    stamps.push_back(profiler::seconds_since(start));
  }
  return stamps;
}

// Tokens per second of `c` in every repetition's stamps: the median.
double median_rate(const std::vector<std::vector<double>>& runs, const Case& c) {
  std::vector<double> rates;
  for (const auto& stamps : runs) {
    rates.push_back((c.end - c.begin) / (stamps[c.end] - stamps[c.begin]));
  }
  return profiler::summarize(rates).median;
}

// The three windows: the first and the last `tokens` generated (short and
// deep context), and all of them.
std::vector<Case> cases(const Options& o, int generated) {
  return {
      {"short", 0, o.tokens}, {"deep", generated - o.tokens, generated}, {"full", 0, generated}};
}

void print_header(const Options& o, const training::ModelConfig& c, const Traffic& t,
                  int64_t copy_bytes) {
  const nlohmann::json env = results::capture_environment("generate_bench");
  const auto& cpu = env["cpu_model"];  // null when /proc/cpuinfo has no model name
  fmt::print(
      "# generate_bench: model {} ({:.1f} M f32 parameters, {:.1f} MB of weights read "
      "per token), KvDecoder, greedy, prompt {} tokens then generation to position {}, "
      "{} reps\n",
      c.name, training::ParamLayout(c).total() / 1e6, t.weights / 1e6, o.prompt, c.max_seq_len,
      o.reps);
  fmt::print("# CPU {} ({} cores), {} threads (OpenMP and OpenBLAS: {})\n",
             cpu.is_string() ? cpu.get<std::string>() : "?", env["cores"].dump(),
             omp_get_max_threads(), openblas_get_config());
  fmt::print(
      "# MB/token: the parameters a token reads (every matrix and norm, one embedding "
      "row) + the key/value cache attention reads ({:.0f} B per position so far), mean over "
      "the case; logits (cache-resident) not counted\n",
      t.cache_per_pos);
  fmt::print(
      "# copy GB/s: bytes MOVED by memcpy (read + written = 2 x bytes copied; MB/token "
      "counts bytes read), {:.1f} MB copied by {} threads at once, median of every copy "
      "before each rep and after the last\n",
      copy_bytes / 1e6, omp_get_max_threads());
  fmt::print(
      "# bound tok/s = copy GB/s / MB/token; tok/s is the median over reps; target: "
      "tok/s >= {:.0f}% of bound\n",
      100 * kTarget);
  fmt::print("# {:>5} {:>9} {:>6} {:>8} {:>9} {:>9} {:>11} {:>8} {:>7}\n", "case", "positions",
             "tokens", "tok/s", "MB/token", "copy GB/s", "bound tok/s", "of bound", "target");
}

void print_row(const Case& c, int prompt, double rate, double bytes_per_token, double copy_gbps) {
  const double bound = copy_gbps * 1e9 / bytes_per_token;
  const double share = rate / bound;
  fmt::print("  {:>5} {:>9} {:>6} {:>8.1f} {:>9.2f} {:>9.2f} {:>11.1f} {:>7.1f}% {:>7}\n", c.name,
             fmt::format("{}-{}", prompt + c.begin, prompt + c.end - 1), c.end - c.begin, rate,
             bytes_per_token / 1e6, copy_gbps, bound, 100 * share,
             share >= kTarget ? "met" : "NOT met");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Generation speed of the KV-cache decoder against the memory-bound rate that the "
      "copy bandwidth measured in the same run allows (docs/METRICS.md)."};
  app.add_option("--model", o.model, "Model preset (training/model_config.h)")
      ->capture_default_str();
  app.add_option("--reps", o.reps, "Repetitions; tok/s is their median")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "OpenMP and OpenBLAS threads (0: OpenMP's default)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--tokens", o.tokens, "Generated tokens in the short and deep cases")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--prompt", o.prompt, "Prompt tokens fed (untimed) before generating")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  if (const auto code = cli::parse_flags(app, argc, argv)) return *code;
  try {
    const training::ModelConfig config = training::model_preset(o.model);
    if (o.prompt + o.tokens > config.max_seq_len) {
      throw Error(fmt::format("--prompt {} and --tokens {} need {} positions; {} has {}", o.prompt,
                              o.tokens, o.prompt + o.tokens, o.model, config.max_seq_len));
    }
    if (o.threads > 0) kernels::set_compute_threads(o.threads);
    const kernels::Buffer<float> params = random_params(config);
    training::KvDecoder decoder(config, params.span(), config.max_seq_len);
    const Traffic t = traffic(config);
    // As many bytes as a token's weights: the same volume, far past the
    // caches for a memory-bound model.
    const profiler::CopyProbeOptions probe{
        .bytes = static_cast<int64_t>(t.weights), .reps = 5, .threads = omp_get_max_threads()};
    print_header(o, config, t, probe.bytes);
    generate_once(decoder, o.prompt, config.vocab_size);  // warm-up: OpenBLAS buffers, caches
    std::vector<std::vector<double>> runs;
    std::vector<double> copies;
    for (int r = 0; r <= o.reps; ++r) {
      const std::vector<double> c = profiler::time_copies(probe);
      copies.insert(copies.end(), c.begin(), c.end());
      if (r < o.reps) runs.push_back(generate_once(decoder, o.prompt, config.vocab_size));
    }
    const double copy_moved_gbps = 2 * profiler::copy_gbps(probe.bytes, copies);
    const int generated = config.max_seq_len - o.prompt;
    for (const Case& c : cases(o, generated)) {
      double bytes = 0;
      for (int i = c.begin; i < c.end; ++i) bytes += t.at(o.prompt + i);
      print_row(c, o.prompt, median_rate(runs, c), bytes / (c.end - c.begin), copy_moved_gbps);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "generate_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
