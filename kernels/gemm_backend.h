// Which library runs the fp32 GEMMs of the linear layers (--gemm): OpenBLAS,
// oneDNN (already a dependency, for bf16), or, shape by shape, whichever is
// faster on this machine (auto).
//
// Neither library wins everywhere: at a model's shapes (tall-skinny
// activations times square or very wide weights, one operand transposed)
// the fastest differs by CPU and by shape. Under kAuto a GEMM of at least
// kAutoMinFlops is timed once on each library (on scratch of its shape),
// the faster is kept for the process and written to a cache file keyed by
// the CPU, the libraries and the thread count, so that later runs on the
// machine take the same choice without timing it again. Smaller GEMMs stay
// on OpenBLAS: timing them would cost more than they do. A run records what
// it chose (gemm_choices_summary), as it records the OpenBLAS core.
//
// Results differ between the libraries only by the order of sums; a run is
// deterministic once its choices are made (every choice is kept).
//
// Thread-safety: one thread at a time (the trainer's compute thread).
#ifndef TRAINSCOPE_KERNELS_GEMM_BACKEND_H_
#define TRAINSCOPE_KERNELS_GEMM_BACKEND_H_

#include <compare>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "options/choices.h"

namespace trainscope::kernels {

using options::GemmBackend;  // its names: options/choices.h

// Process-wide; OpenBLAS until set (the trainer sets it from its options).
void set_gemm_backend(GemmBackend b);
GemmBackend gemm_backend();

// One of the model's GEMMs (a linear layer's, or an attention tile's):
// dst[M, N] (+)= op(a)[M, K] @ op(b)[K, N].
struct GemmKey {
  int64_t M, N, K;
  bool a_transposed, b_transposed, accumulate;
  auto operator<=>(const GemmKey&) const = default;
};
inline constexpr double kAutoMinFlops = 5e7;

// The library that runs `key` now (kOpenBlas or kOneDnn): the one set, or
// under kAuto the cached or measured choice (OpenBLAS below `min_flops`: a
// caller that runs a small shape many times, as attention's tiles, times it
// with a lower bound).
GemmBackend backend_for(const GemmKey& key, double min_flops = kAutoMinFlops);
// The same for a GEMM called inside a parallel loop, a call per thread
// (attention's tiles): each library then runs it on the calling thread
// alone, so it is timed, cached and chosen at one thread, not at all of them.
GemmBackend backend_for_one_thread(const GemmKey& key, double min_flops);
// What kAuto picks for `key` with `threads` per call, whatever is set now
// (a probe asking what a rank on auto would run).
GemmBackend auto_choice(const GemmKey& key, double min_flops, int threads);

// dst (+)= op(a) @ op(b) for `key` on `backend` (kOpenBlas or kOneDnn), the
// operands dense and row-major as stored (a transposed: [K, M]).
void gemm_f32(GemmBackend backend, const GemmKey& key, float* dst, const float* a, const float* b);

// What kAuto chose, shape by shape and thread count by thread count, in
// this process.
struct GemmChoice {
  GemmKey key;
  GemmBackend backend;
  double openblas_gflops, onednn_gflops;  // as measured (or as cached)
  int threads = 0;                        // a call's: 1 for a tile's, else the rank's
};
std::vector<GemmChoice> gemm_choices();
// "openblas", "onednn", or "auto: onednn for 3 of 7 shapes": what a run's
// GEMMs ran on, for its record.
std::string gemm_choices_summary();

// What the cache holds for this CPU and these libraries, per thread count,
// for doctor: "1 threads: onednn for 3 of 7 cached shapes; 2 threads: ..."
// or "no shape timed yet".
std::string gemm_cache_summary();

// $TRAINSCOPE_CACHE_DIR/gemm-choices.json, else ~/.cache/trainscope/...
std::filesystem::path gemm_cache_path();
// Forgets this process's choices (tests), not the cache file.
void reset_gemm_choices();

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_GEMM_BACKEND_H_
