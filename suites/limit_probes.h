// Measuring this machine's limits (results/machine_limits.h): the sgemm
// GFLOP/s of a model's GEMMs, memcpy GB/s and an all-reduce's peak busbw.
// One module for `trainscope doctor` (what it prints, and stores with --db)
// and for the suite runner (once per suite, before its first case, at the
// shapes, thread counts and transports its cases use).
//
// The GEMMs run in this process (at once: in processes forked from it, one
// pinned to each CPU) on the BLAS kernels it loaded (kernels/blas_core.h:
// main() chose them, as every rank's main() does) or oneDNN; the all-reduce
// runs as a short sweep job launched exactly as a suite's sweep case is
// (suites/launch_plan.h).
//
// Thread-safety: call from one thread; the sgemm probes change the process's
// OpenMP and OpenBLAS thread counts while they run (restored on return), and
// the at-once ones fork.
#ifndef TRAINSCOPE_SUITES_LIMIT_PROBES_H_
#define TRAINSCOPE_SUITES_LIMIT_PROBES_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/gemm_backend.h"
#include "results/machine_limits.h"
#include "suites/launch_plan.h"
#include "suites/suite_config.h"
#include "training/model_config.h"
#include "training/precision.h"

namespace trainscope::suites {

// One GEMM of a forward pass: [rows, in] x [in, out], `count` times a step.
struct GemmShape {
  int rows = 0, in = 0, out = 0;
  int count = 1;
};

// The sgemm probe measures at most this many rows: the LM head of a large
// batch would take seconds, and GEMMs this tall already run at full rate.
inline constexpr int kMaxProbeRows = 512;

// The forward projections of `model` at `rows` rows (capped at
// kMaxProbeRows): per layer q/k/v, output, gate/up and down; the LM head once.
std::vector<GemmShape> model_gemm_shapes(const training::ModelConfig& model, int64_t rows);
// "2 x (62x32->96, 62x32->32, 62x32->128, 62x64->32) + 62x32->260".
std::string describe_shapes(std::span<const GemmShape> shapes);

// FLOPs of the shapes over their time, GFLOP/s: each shape's median call
// after a warm-up call, on `threads` threads; fp32 on the library `gemm`
// names (under auto each shape on the one --gemm auto picks at `threads`,
// as a rank would: kernels/gemm_backend.h), or bf16 inputs through oneDNN
// (kernels/matmul_bf16.h) as --precision bf16 runs them.
double sgemm_gflops(std::span<const GemmShape> shapes, int threads,
                    options::Precision precision = options::Precision::kFp32,
                    options::GemmBackend gemm = options::GemmBackend::kOpenBlas);

// The same shapes on every CPU in `cpus` at once, fp32, one thread each
// (as one-thread ranks bound to cores compute side by side): each copy's
// GFLOP/s, averaged. Against sgemm_gflops on 1 thread it says what this
// machine's cores give together: two vCPUs that share a physical core, or a
// memory bus, give less than twice one.
double sgemm_gflops_at_once(std::span<const GemmShape> shapes, std::span<const int> cpus,
                            options::GemmBackend gemm = options::GemmBackend::kOpenBlas);

// memcpy GB/s, one thread, 256 MiB (profiler/copy_probe.h).
double memcpy_gbps();
// The limit records of sgemm_gflops and memcpy_gbps, stamped now on this
// host; `source` says who measured them (results/machine_limits.h).
results::MachineLimit sgemm_limit(const std::string& model_name, const training::ModelConfig& model,
                                  int64_t rows, int threads, std::string_view source,
                                  options::Precision precision = options::Precision::kFp32,
                                  options::GemmBackend gemm = options::GemmBackend::kOpenBlas);
results::MachineLimit memcpy_limit(std::string_view source);
// sgemm_gflops_at_once as a limit (fp32, as the probe): sgemm with ranks =
// cpus.size() copies.
results::MachineLimit sgemm_at_once_limit(
    const std::string& model_name, const training::ModelConfig& model, int64_t rows,
    std::span<const int> cpus, std::string_view source,
    options::GemmBackend gemm = options::GemmBackend::kOpenBlas);

// What a suite's cases need measured, measured: sgemm for each (model, a
// rank's rows per step, threads, --gemm) of its train cases, and at once on
// as many CPUs as ranks for each one-thread fp32 multi-rank case on this host
// whose ranks have a CPU each, memcpy, and the peak
// busbw of each (transport, ranks) its multi-rank one-host cases use, by a
// short sweep job in `work_dir`. A probe that fails is reported on
// `progress` and left out. A few seconds in all.
std::vector<results::MachineLimit> measure_suite_limits(const Suite& suite,
                                                        std::span<const SuiteCase* const> cases,
                                                        const PlanContext& ctx,
                                                        const std::filesystem::path& work_dir,
                                                        std::FILE* progress);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_LIMIT_PROBES_H_
