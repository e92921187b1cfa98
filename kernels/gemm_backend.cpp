#include "kernels/gemm_backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/check.h"
#include "kernels/blas_core.h"
#include "kernels/gemm.h"
#include "kernels/onednn_matmul.h"
#include "kernels/storage.h"
#include "kernels/thread_count.h"

namespace trainscope::kernels {

namespace {

using nlohmann::json;

struct State {
  GemmBackend backend = GemmBackend::kOpenBlas;
  // This process's, by the threads a call runs on (a tile's one, or all).
  std::map<std::pair<int, GemmKey>, GemmChoice> chosen;
  std::optional<json> cache;             // the file's, once read
};
State& state() {
  static State s;
  return s;
}

std::string key_text(const GemmKey& k) {
  return fmt::format("{}{}{} M{} N{} K{}", k.a_transposed ? 'T' : 'N', k.b_transposed ? 'T' : 'N',
                     k.accumulate ? "+" : "=", k.M, k.N, k.K);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// What a cached choice is valid for: the CPU, both libraries as they run
// here (machine_prefix), and the threads a GEMM gets.
std::string machine_prefix() {
  const BlasInfo blas = blas_info();
  return fmt::format("{} | {} {} | {} | ", cpu_model(), blas.library, blas.core,
                     internal::onednn_version_and_isa());
}
std::string machine_key(int threads) {
  return fmt::format("{}{} threads", machine_prefix(), threads);
}

json& cache() {
  State& s = state();
  if (!s.cache) {
    s.cache = json::object();
    try {
      std::ifstream in(gemm_cache_path());
      if (in) s.cache = json::parse(in);
      if (!s.cache->is_object()) s.cache = json::object();
    } catch (const std::exception&) {
      s.cache = json::object();  // unreadable: measured again, rewritten
    }
  }
  return *s.cache;
}

void save_cache() {
  try {
    std::filesystem::create_directories(gemm_cache_path().parent_path());
    write_file_atomically(gemm_cache_path(), cache().dump(2) + "\n");
  } catch (const std::exception&) {
    // A cache that cannot be written costs the timing again next run, nothing more.
  }
}

// Seconds of the fastest of `reps` calls.
double best_seconds(GemmBackend backend, const GemmKey& k, float* dst, const float* a,
                    const float* b, int reps) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm_f32(backend, k, dst, a, b);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                              .count());
  }
  return best;
}

GemmChoice measure(const GemmKey& k) {
  Buffer<float> a(k.M * k.K, MemoryCategory::kWorkspace), b(k.K * k.N, MemoryCategory::kWorkspace),
      dst(k.M * k.N, MemoryCategory::kWorkspace);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>((i % 13) - 6) / 8;
  for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = static_cast<float>((i % 11) - 5) / 8;
  std::fill(dst.data(), dst.data() + dst.size(), 0.0f);
  const double flops = 2.0 * static_cast<double>(k.M) * static_cast<double>(k.N) *
                       static_cast<double>(k.K);
  GemmChoice c{k, GemmBackend::kOpenBlas, 0, 0};
  try {
    best_seconds(GemmBackend::kOneDnn, k, dst.data(), a.data(), b.data(), 1);  // makes the primitive
    best_seconds(GemmBackend::kOpenBlas, k, dst.data(), a.data(), b.data(), 1);
    // Alternated, so that a drift of the machine's speed hits both.
    double blas = 1e300, dnn = 1e300;
    for (int round = 0; round < 3; ++round) {
      blas = std::min(blas, best_seconds(GemmBackend::kOpenBlas, k, dst.data(), a.data(), b.data(), 1));
      dnn = std::min(dnn, best_seconds(GemmBackend::kOneDnn, k, dst.data(), a.data(), b.data(), 1));
    }
    c.openblas_gflops = flops / blas / 1e9;
    c.onednn_gflops = flops / dnn / 1e9;
    c.backend = dnn < blas ? GemmBackend::kOneDnn : GemmBackend::kOpenBlas;
  } catch (const std::exception&) {
    c.backend = GemmBackend::kOpenBlas;  // oneDNN has no such primitive here
  }
  return c;
}

// Timed (or cached) with `threads` per call.
GemmChoice choose(const GemmKey& k, int threads) {
  json& machine = cache()[machine_key(threads)];
  const std::string text = key_text(k);
  if (machine.contains(text) && machine[text].is_object()) {
    const json& e = machine[text];
    return {k, e.value("backend", "openblas") == "onednn" ? GemmBackend::kOneDnn
                                                          : GemmBackend::kOpenBlas,
            e.value("openblas_gflops", 0.0), e.value("onednn_gflops", 0.0)};
  }
  const GemmChoice c = [&] {
    const ScopedComputeThreads scope(threads);
    return measure(k);
  }();
  machine[text] = {{"backend", enum_name(c.backend)},
                   {"openblas_gflops", c.openblas_gflops},
                   {"onednn_gflops", c.onednn_gflops}};
  save_cache();
  return c;
}

}  // namespace

void set_gemm_backend(GemmBackend b) { state().backend = b; }
GemmBackend gemm_backend() { return state().backend; }

GemmBackend auto_choice(const GemmKey& k, double min_flops, int threads) {
  State& s = state();
  const double flops = 2.0 * static_cast<double>(k.M) * static_cast<double>(k.N) *
                       static_cast<double>(k.K);
  if (flops < min_flops) return GemmBackend::kOpenBlas;
  const auto key = std::pair(threads, k);
  auto it = s.chosen.find(key);
  if (it == s.chosen.end()) it = s.chosen.emplace(key, choose(k, threads)).first;
  return it->second.backend;
}

GemmBackend backend_for(const GemmKey& k, double min_flops) {
  const GemmBackend set = state().backend;
  return set != GemmBackend::kAuto ? set : auto_choice(k, min_flops, omp_get_max_threads());
}

GemmBackend backend_for_one_thread(const GemmKey& k, double min_flops) {
  const GemmBackend set = state().backend;
  return set != GemmBackend::kAuto ? set : auto_choice(k, min_flops, 1);
}

std::vector<GemmChoice> gemm_choices() {
  std::vector<GemmChoice> out;
  for (const auto& [k, c] : state().chosen) {
    out.push_back(c);
    out.back().threads = k.first;
  }
  return out;
}

std::string gemm_choices_summary() {
  const State& s = state();
  if (s.backend != GemmBackend::kAuto) return std::string(enum_name(s.backend));
  const auto dnn = std::count_if(s.chosen.begin(), s.chosen.end(), [](const auto& e) {
    return e.second.backend == GemmBackend::kOneDnn;
  });
  return fmt::format("auto: onednn for {} of {} timed shapes", dnn, s.chosen.size());
}

std::string gemm_cache_summary() {
  const std::string prefix = machine_prefix();
  std::vector<std::string> parts;
  for (const auto& [key, shapes] : cache().items()) {
    if (!key.starts_with(prefix) || !shapes.is_object() || shapes.empty()) continue;
    int dnn = 0;
    for (const auto& [text, e] : shapes.items()) {
      dnn += e.is_object() && e.value("backend", "") == "onednn";
    }
    parts.push_back(fmt::format("{}: onednn for {} of {} cached shapes",
                                key.substr(prefix.size()), dnn, shapes.size()));
  }
  return parts.empty() ? "no shape timed yet" : fmt::format("{}", fmt::join(parts, "; "));
}

std::filesystem::path gemm_cache_path() {
  if (const char* dir = std::getenv("TRAINSCOPE_CACHE_DIR"); dir && *dir) {
    return std::filesystem::path(dir) / "gemm-choices.json";
  }
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "trainscope" /
         "gemm-choices.json";
}

void reset_gemm_choices() {
  state().chosen.clear();
  state().cache.reset();
}

void gemm_f32(GemmBackend backend, const GemmKey& k, float* dst, const float* a, const float* b) {
  if (backend == GemmBackend::kOneDnn) {
    internal::onednn_matmul({.M = k.M, .N = k.N, .K = k.K, .a_transposed = k.a_transposed,
                             .b_transposed = k.b_transposed, .accumulate = k.accumulate},
                            dst, a, b);
    return;
  }
  const auto M = static_cast<int>(k.M), N = static_cast<int>(k.N), K = static_cast<int>(k.K);
  internal::gemm(k.a_transposed, k.b_transposed, M, N, K, 1.0f, a, k.a_transposed ? M : K, b,
                 k.b_transposed ? K : N, k.accumulate ? 1.0f : 0.0f, dst, N);
}

}  // namespace trainscope::kernels
