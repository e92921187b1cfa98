#include "suites/limit_probes.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <new>
#include <chrono>
#include <map>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/blas_core.h"
#include "kernels/gemm_backend.h"
#include "base/check.h"
#include "base/process.h"
#include "kernels/onednn_matmul.h"
#include "kernels/matmul_bf16.h"
#include "kernels/storage.h"
#include "kernels/thread_count.h"
#include "profiler/clock.h"
#include "profiler/copy_probe.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"
#include "results/records.h"
#include "results/results_db.h"
#include "suites/cpus.h"
#include "training/threads.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using results::LimitKind;
using results::MachineLimit;

// A forward projection as the model runs it: y [rows, out] = x [rows, in] @
// w [out, in]^T (matmul_forward).
kernels::GemmKey key_of(const GemmShape& s) { return {s.rows, s.out, s.in, false, true, false}; }

// The library each shape runs on under `gemm` (kernels/gemm_backend.h): the
// one forced, or under auto the one a rank of `threads` threads picks
// (cached, or timed now), so a limit is of what the case's ranks run.
std::vector<options::GemmBackend> libraries_for(std::span<const GemmShape> shapes,
                                                options::GemmBackend gemm,
                                                options::Precision precision, int threads) {
  // bf16 runs through oneDNN's bf16 GEMM whatever --gemm says: nothing to choose.
  if (precision == options::Precision::kBf16) {
    return std::vector(shapes.size(), options::GemmBackend::kOneDnn);
  }
  if (gemm != options::GemmBackend::kAuto) return std::vector(shapes.size(), gemm);
  std::vector<options::GemmBackend> out;
  for (const GemmShape& s : shapes) {
    out.push_back(kernels::auto_choice(key_of(s), kernels::kAutoMinFlops, threads));
  }
  return out;
}

// "OpenBLAS 0.3.21 Cooperlake", "oneDNN 2.6.3, ...", or under auto with both
// "OpenBLAS 0.3.21 Cooperlake for 2 and oneDNN 2.6.3, ... for 5 of 7 shapes".
// bf16's oneDNN is the bf16 path's (which tests may emulate), fp32's the
// matmul's.
std::string describe_libraries(std::span<const options::GemmBackend> libraries,
                               options::Precision precision) {
  const std::string blas = kernels::blas_info().library + " " + kernels::blas_info().core;
  const std::string dnnl = precision == options::Precision::kBf16
                               ? kernels::onednn_description()
                               : kernels::internal::onednn_version_and_isa();
  const auto onednn = std::count(libraries.begin(), libraries.end(), options::GemmBackend::kOneDnn);
  const auto n = static_cast<std::ptrdiff_t>(libraries.size());
  if (onednn == 0) return blas;
  if (onednn == n) return dnnl;
  return fmt::format("{} for {} and {} for {} of {} shapes (--gemm auto)", blas, n - onednn, dnnl,
                     onednn, n);
}

// One GEMM shape's operands and its call: fp32 on `library` (OpenBLAS or
// oneDNN), or bf16 through oneDNN as --precision bf16 runs it, the inputs
// rounded once, outside the timing, as the model's weights are once per
// step.
class GemmProbe {
 public:
  GemmProbe(const GemmShape& shape, options::Precision precision, options::GemmBackend library)
      : shape_(shape), precision_(precision), library_(library) {
    for (std::size_t i = 0; i < x_.size(); ++i) x_.data()[i] = 0.001f * static_cast<float>(i % 97);
    for (std::size_t i = 0; i < w_.size(); ++i) w_.data()[i] = 0.002f * static_cast<float>(i % 89);
    if (precision == options::Precision::kBf16) {
      x16_ = Buffer<uint16_t>(x_.size(), MemoryCategory::kWorkspace);
      w16_ = Buffer<uint16_t>(w_.size(), MemoryCategory::kWorkspace);
      kernels::to_bf16(x16_.data(), x_.data(), static_cast<int64_t>(x_.size()));
      kernels::to_bf16(w16_.data(), w_.data(), static_cast<int64_t>(w_.size()));
    }
  }
  void call() {
    if (precision_ == options::Precision::kBf16) {
      kernels::matmul_forward_bf16(y_.data(), x16_.data(), w16_.data(), shape_.rows, shape_.in,
                                   shape_.out);
    } else {
      kernels::gemm_f32(library_, key_of(shape_), y_.data(), x_.data(), w_.data());
    }
  }
  // Median seconds of a call, after a warm-up call (caches, the BLAS
  // threads): at least 3 timed calls, more while under 50 ms in all.
  double median_seconds() {
    call();
    std::vector<double> times;
    double total = 0;
    while (times.size() < 3 || (total < 0.05 && times.size() < 1000)) {
      const auto start = profiler::Clock::now();
      call();
      times.push_back(profiler::seconds_since(start));
      total += times.back();
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  using MemoryCategory = kernels::MemoryCategory;
  template <typename T>
  using Buffer = kernels::Buffer<T>;
  static std::size_t elements(int rows, int cols) {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  }
  GemmShape shape_;
  options::Precision precision_;
  options::GemmBackend library_;
  Buffer<float> x_{elements(shape_.rows, shape_.in), MemoryCategory::kWorkspace};
  Buffer<float> w_{elements(shape_.out, shape_.in), MemoryCategory::kWorkspace};
  Buffer<float> y_{elements(shape_.rows, shape_.out), MemoryCategory::kWorkspace};
  Buffer<uint16_t> x16_, w16_;
};

// What the copies of median_seconds_at_once share: a start line and each
// one's result, in memory mapped shared before they fork.
struct AtOnce {
  static constexpr int kMaxCopies = 256;
  std::atomic<int> ready{0}, done{0};
  double medians[kMaxCopies] = {};
};

// One copy, in its own process: pinned to `cpu`, with operands of its own
// (made here, so the parent never holds every copy's at once), it waits
// until every copy is ready, times its calls, then keeps calling until every
// copy is done, so no timed call runs with the others idle. A copy that
// fails lets the others go at once rather than at the deadline.
[[noreturn]] void run_copy(AtOnce* shared, int index, int copies, int cpu, const GemmShape& shape,
                           options::GemmBackend library) {
  const auto give_up = [shared] {
    shared->ready.fetch_add(AtOnce::kMaxCopies);
    shared->done.fetch_add(AtOnce::kMaxCopies);
    _exit(1);
  };
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) give_up();
  // A copy that died without a word must not keep the others waiting.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  const auto waited_too_long = [&] { return std::chrono::steady_clock::now() > deadline; };
  try {
    GemmProbe probe(shape, options::Precision::kFp32, library);
    probe.call();
    shared->ready.fetch_add(1);
    while (shared->ready.load() < copies) {
      if (waited_too_long()) _exit(1);
    }
    shared->medians[index] = probe.median_seconds();
    shared->done.fetch_add(1);
    while (shared->done.load() < copies && !waited_too_long()) probe.call();
  } catch (...) {
    give_up();
  }
  _exit(0);
}

// The median call of `shape` in cpus.size() processes at once, each pinned
// to its CPU. Processes, not threads: OpenBLAS serialises GEMMs called from
// several threads of one process, and ranks are processes.
std::vector<double> median_seconds_at_once(const GemmShape& shape, std::span<const int> cpus,
                                           options::GemmBackend library) {
  const int copies = static_cast<int>(cpus.size());
  if (copies > AtOnce::kMaxCopies) {
    throw Error(
        fmt::format("sgemm at once: {} CPUs, at most {} copies", copies, AtOnce::kMaxCopies));
  }
  void* memory =
      mmap(nullptr, sizeof(AtOnce), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw Error("sgemm at once: mmap failed");
  auto* shared = new (memory) AtOnce;
  std::vector<ChildProcess> children;
  for (int i = 0; i < copies; ++i) {
    try {
      children.push_back(fork_call([&] { run_copy(shared, i, copies, cpus[i], shape, library); }));
    } catch (const Error&) {
      break;  // the system refused: the ones started are let go below
    }
  }
  bool ok = static_cast<int>(children.size()) == copies;
  if (!ok) {  // the started ones must not wait for the others forever
    shared->ready.store(AtOnce::kMaxCopies + copies);
    shared->done.store(AtOnce::kMaxCopies + copies);
  }
  for (ChildProcess& child : children) ok = child.wait() == 0 && ok;
  std::vector<double> medians(shared->medians, shared->medians + copies);
  shared->~AtOnce();
  munmap(memory, sizeof(AtOnce));
  if (!ok)
    throw Error(fmt::format("sgemm at once: a copy of {} failed or could not start", copies));
  return medians;
}

MachineLimit stamped(LimitKind kind, std::string_view source) {
  MachineLimit l;
  l.kind = kind;
  l.source = std::string(source);
  l.host = profiler::host_name();
  l.measured_at = results::utc_timestamp();
  return l;
}

// What a train case's ranks will run with, as the trainer decides it: the
// global batch split over the ranks, block - 1 tokens a row, and the
// threads it was given or the trainer's default (its cores over the ranks
// on its host; training/threads.h default_threads_per_rank).
struct CaseShape {
  std::string model;
  int64_t rows = 0;
  int threads = 1;
  std::string precision = "fp32";
  options::GemmBackend gemm = options::GemmBackend::kAuto;  // fp32: the case's --gemm
  auto key() const { return std::tie(model, rows, threads, precision, gemm); }
  bool operator<(const CaseShape& o) const { return key() < o.key(); }
};
CaseShape case_shape(const SuiteCase& c, const training::ModelConfig& m) {
  const int batch = c.train.batch > 0 ? c.train.batch : m.default_batch;
  const int block = c.train.block > 0 ? c.train.block : m.default_block;
  int threads = c.train.threads;
  if (threads <= 0) {
    const int local = (c.ranks + c.hosts - 1) / std::max(1, c.hosts);
    int cores = cores_available();
    if (c.cores_per_host > 0) cores = std::min(cores, c.cores_per_host);
    threads = training::threads_per_rank(cores, local,
                                         static_cast<int>(std::thread::hardware_concurrency()));
  }
  const bool fp32 = c.train.precision == options::Precision::kFp32;
  return {c.train.model, int64_t{batch / std::max(1, c.ranks)} * (block - 1), threads,
          std::string(enum_name(c.train.precision)),
          fp32 ? c.train.gemm : options::GemmBackend::kAuto};  // bf16: oneDNN whatever --gemm
}

// The peak busbw of a short sweep over `c`'s transport and ranks, run as a
// suite's sweep case is; std::nullopt (and why, on `progress`) if it failed.
std::optional<double> allreduce_peak(const Suite& suite, const SuiteCase& c, const PlanContext& ctx,
                                     const fs::path& work_dir, std::FILE* progress) {
  SuiteCase sweep = c;
  sweep.kind = CaseKind::kAllReduce;
  sweep.train.allreduce = options::AllReduceAlgorithm::kMpi;
  sweep.mpi_algorithm = 0;  // the transport's limit, under Open MPI's own choice
  sweep.sweep = {
      .min_bytes = 256 << 10, .max_bytes = 16 << 20, .factor = 4, .iters = 5, .warmup = 2};
  const fs::path rows_file = work_dir / fmt::format("limits-{}-{}.jsonl", case_links(c), c.ranks);
  const LaunchPlan plan = plan_case(suite, sweep, ctx, rows_file);
  SpawnOptions o;
  o.argv = plan.argv;
  o.env = plan.env;
  try {
    const profiler::CompletedRun r = profiler::run_to_completion(o, 60);
    if (r.exit_code != 0 || r.timed_out) {
      throw Error(r.timed_out ? "timed out after 60 s"
                              : fmt::format("exit {}: {}", r.exit_code, r.err.substr(0, 300)));
    }
    double peak = 0;
    for (const auto& row : results::load_allreduce_rows(rows_file)) {
      peak = std::max(peak, row.busbw_gbps);
    }
    if (peak > 0) return peak;
    throw Error("the sweep wrote no rows");
  } catch (const Error& e) {
    std::fprintf(progress, "  limits: the all-reduce sweep over %s with %d ranks failed (%s)\n",
                 case_links(c).c_str(), c.ranks, e.what());
    return std::nullopt;
  }
}

}  // namespace

std::vector<GemmShape> model_gemm_shapes(const training::ModelConfig& m, int64_t rows) {
  const int n = static_cast<int>(std::clamp<int64_t>(rows, 1, kMaxProbeRows));
  const int C = m.dim, Q = m.q_dim(), KV = m.kv_dim(), F = m.mlp_dim, L = m.n_layers;
  return {
      {n, C, Q + 2 * KV, L}, {n, Q, C, L}, {n, C, 2 * F, L}, {n, F, C, L}, {n, C, m.vocab_size, 1}};
}

std::string describe_shapes(std::span<const GemmShape> shapes) {
  std::vector<std::string> layer, once;
  int layers = 0;
  for (const GemmShape& s : shapes) {
    const std::string text = fmt::format("{}x{}->{}", s.rows, s.in, s.out);
    if (s.count > 1) layers = s.count;
    (s.count > 1 ? layer : once).push_back(text);
  }
  std::string out = layer.empty() ? "" : fmt::format("{} x ({})", layers, fmt::join(layer, ", "));
  if (!once.empty()) out += fmt::format("{}{}", out.empty() ? "" : " + ", fmt::join(once, ", "));
  return out;
}

namespace {

// GFLOP/s of the shapes, each on its library, on the threads set now.
double gflops_on(std::span<const GemmShape> shapes, options::Precision precision,
                 std::span<const options::GemmBackend> libraries) {
  double flops = 0, seconds = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    flops += 2.0 * s.rows * s.in * s.out * s.count;
    seconds += GemmProbe(s, precision, libraries[i]).median_seconds() * s.count;
  }
  return seconds > 0 ? flops / seconds / 1e9 : 0.0;
}

// A copy's GFLOP/s, averaged over copies, with one on each of `cpus` at once
// (one thread each; the libraries chosen before, not in the forked copies).
double gflops_at_once_on(std::span<const GemmShape> shapes, std::span<const int> cpus,
                         std::span<const options::GemmBackend> libraries) {
  double flops = 0;
  std::vector<double> seconds(cpus.size(), 0.0);
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const GemmShape& s = shapes[k];
    flops += 2.0 * s.rows * s.in * s.out * s.count;
    const std::vector<double> medians = median_seconds_at_once(s, cpus, libraries[k]);
    for (std::size_t i = 0; i < cpus.size(); ++i) seconds[i] += medians[i] * s.count;
  }
  double sum = 0;
  for (double t : seconds) sum += t > 0 ? flops / t / 1e9 : 0.0;
  return sum / static_cast<double>(cpus.size());
}

// GFLOP/s and the library each shape ran on.
struct Measured {
  double gflops = 0;
  std::vector<options::GemmBackend> libraries;
};

Measured measure_alone(std::span<const GemmShape> shapes, int threads, options::Precision precision,
                       options::GemmBackend gemm) {
  TS_CHECK(threads >= 1 && !shapes.empty());
  const kernels::ScopedComputeThreads scope(threads);
  Measured m{.libraries = libraries_for(shapes, gemm, precision, threads)};
  m.gflops = gflops_on(shapes, precision, m.libraries);
  return m;
}

Measured measure_at_once(std::span<const GemmShape> shapes, std::span<const int> cpus,
                         options::GemmBackend gemm) {
  TS_CHECK(!shapes.empty() && !cpus.empty());
  const kernels::ScopedComputeThreads scope(1);
  Measured m{.libraries = libraries_for(shapes, gemm, options::Precision::kFp32, 1)};
  m.gflops = gflops_at_once_on(shapes, cpus, m.libraries);
  return m;
}

}  // namespace

double sgemm_gflops(std::span<const GemmShape> shapes, int threads, options::Precision precision,
                    options::GemmBackend gemm) {
  return measure_alone(shapes, threads, precision, gemm).gflops;
}

double sgemm_gflops_at_once(std::span<const GemmShape> shapes, std::span<const int> cpus,
                            options::GemmBackend gemm) {
  return measure_at_once(shapes, cpus, gemm).gflops;
}

double memcpy_gbps() {
  const int64_t bytes = 256 << 20;
  return profiler::copy_gbps(bytes, profiler::time_copies({.bytes = bytes, .reps = 5}));
}

MachineLimit sgemm_limit(const std::string& model_name, const training::ModelConfig& model,
                         int64_t rows, int threads, std::string_view source,
                         options::Precision precision, options::GemmBackend gemm) {
  MachineLimit l = stamped(LimitKind::kSgemm, source);
  l.model = model_name;
  l.rows = rows;
  l.threads = threads;
  l.precision = std::string(enum_name(precision));
  if (precision == options::Precision::kFp32) l.gemm = enum_name(gemm);
  const auto shapes = model_gemm_shapes(model, rows);
  const Measured m = measure_alone(shapes, threads, precision, gemm);
  l.value = m.gflops;
  l.detail =
      fmt::format("{}: {}", describe_libraries(m.libraries, precision), describe_shapes(shapes));
  return l;
}

MachineLimit sgemm_at_once_limit(const std::string& model_name, const training::ModelConfig& model,
                                 int64_t rows, std::span<const int> cpus, std::string_view source,
                                 options::GemmBackend gemm) {
  MachineLimit l = stamped(LimitKind::kSgemm, source);
  l.model = model_name;
  l.rows = rows;
  l.threads = 1;
  l.ranks = static_cast<int>(cpus.size());
  l.gemm = enum_name(gemm);
  const auto shapes = model_gemm_shapes(model, rows);
  const Measured m = measure_at_once(shapes, cpus, gemm);
  l.value = m.gflops;
  l.detail = fmt::format("{}, a copy on each of CPUs {} at once: {}",
                         describe_libraries(m.libraries, options::Precision::kFp32),
                         fmt::join(cpus, ","), describe_shapes(shapes));
  return l;
}

MachineLimit memcpy_limit(std::string_view source) {
  MachineLimit l = stamped(LimitKind::kMemcpy, source);
  l.value = memcpy_gbps();
  l.detail = "memcpy of 256 MiB, median of 5";
  return l;
}

std::vector<MachineLimit> measure_suite_limits(const Suite& suite,
                                               std::span<const SuiteCase* const> cases,
                                               const PlanContext& ctx, const fs::path& work_dir,
                                               std::FILE* progress) {
  std::map<CaseShape, training::ModelConfig> gemms;
  std::map<std::pair<CaseShape, int>, training::ModelConfig> at_once;  // and the ranks
  std::map<std::pair<std::string, int>, const SuiteCase*> transports;
  const bool one_host = ctx.hostfile.empty();
  for (const SuiteCase* c : cases) {
    if (!c->skip_reason.empty() || c->kind != CaseKind::kTrain) continue;
    const bool ranks_here = one_host && c->ranks > 1 && c->hosts <= 1;  // several, this host
    try {
      const training::ModelConfig m = training::resolve_model(c->train.model);
      const CaseShape shape = case_shape(*c, m);
      gemms.emplace(shape, m);
      // A CPU each, as the copies are pinned: not ranks that share fewer cores.
      const bool cpu_each = c->cores_per_host <= 0 || c->cores_per_host >= c->ranks;
      if (ranks_here && shape.threads == 1 && shape.precision == "fp32" && cpu_each) {
        at_once.emplace(std::pair(shape, c->ranks), m);
      }
    } catch (const Error& e) {
      std::fprintf(progress, "  limits: no sgemm limit for %s (%s)\n", c->name.c_str(), e.what());
    }
    if (ranks_here) transports.emplace(std::pair(case_links(*c), c->ranks), c);
  }
  std::vector<MachineLimit> limits;
  for (const auto& [shape, model] : gemms) {
    limits.push_back(
        sgemm_limit(shape.model, model, shape.rows, shape.threads, results::kLimitsBySuiteRun,
                    parse_choice<options::Precision>(shape.precision, "precision"), shape.gemm));
  }
  const std::vector<int> cpus = allowed_cpus();
  for (const auto& [key, model] : at_once) {
    const auto& [shape, ranks] = key;
    if (ranks > static_cast<int>(cpus.size())) {
      std::fprintf(progress, "  limits: no sgemm at once for %d ranks: %zu CPUs here\n", ranks,
                   cpus.size());
      continue;
    }
    try {
      limits.push_back(sgemm_at_once_limit(shape.model, model, shape.rows,
                                           std::span(cpus).first(static_cast<std::size_t>(ranks)),
                                           results::kLimitsBySuiteRun, shape.gemm));
    } catch (const Error& e) {
      std::fprintf(progress, "  limits: no sgemm at once for %d ranks (%s)\n", ranks, e.what());
    }
  }
  limits.push_back(memcpy_limit(results::kLimitsBySuiteRun));
  for (const auto& [key, c] : transports) {
    if (auto peak = allreduce_peak(suite, *c, ctx, work_dir, progress)) {
      MachineLimit l = stamped(LimitKind::kAllReduce, results::kLimitsBySuiteRun);
      l.transport = key.first;
      l.ranks = key.second;
      l.value = *peak;
      l.detail = "peak busbw of a 256 KiB..16 MiB sweep, Open MPI's algorithm";
      limits.push_back(std::move(l));
    }
  }
  return limits;
}

}  // namespace trainscope::suites
