// What this machine can reach at most, measured (suites/limit_probes.h): the
// yardsticks the report holds a run's achieved figures against.
//
//  * sgemm: GFLOP/s of the model's forward projection GEMMs (q/k/v, output,
//    gate/up, down, LM head) at a rank's rows per step and thread count, on
//    the library the case's --gemm picks (OpenBLAS on the kernels in use, or
//    oneDNN); for --precision bf16 cases the same GEMMs with bf16 inputs
//    through oneDNN (training/precision.h). A step's FLOPs are mostly these
//    GEMMs, so a rank's model FLOP/s share of it says how much of the step
//    is not GEMM.
//    With ranks > 1: the same GEMMs on that many CPUs at once, one thread
//    each, a copy's GFLOP/s: what one-thread ranks side by side can reach.
//  * memcpy: GB/s copied by one thread between buffers beyond the caches.
//  * allreduce: the peak bus bandwidth (nccl-tests' busbw) of an all-reduce
//    sweep over a transport at a world size, the ceiling of gradient sync.
//
// Stored in the results database's machine_limits table: measured once per
// suite run (suite_id set) or by `trainscope doctor --db` (no suite). A
// database made before the table existed has none and says so.
//
// Thread-safety: plain values.
#ifndef TRAINSCOPE_RESULTS_MACHINE_LIMITS_H_
#define TRAINSCOPE_RESULTS_MACHINE_LIMITS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "results/fields.h"

namespace trainscope::results {

enum class LimitKind { kSgemm, kMemcpy, kAllReduce };
}  // namespace trainscope::results
namespace trainscope {
template <>
struct EnumNames<results::LimitKind> {
  static constexpr std::array<std::string_view, 3> names = {"sgemm", "memcpy", "allreduce"};
  static constexpr bool sql_check = true;
};
}  // namespace trainscope
namespace trainscope::results {

// "GFLOP/s" for sgemm, else "GB/s".
std::string_view limit_unit(LimitKind kind);

// Who measured the limits: the suite runner before its first case, or
// `trainscope doctor --db`.
inline constexpr std::string_view kLimitsBySuiteRun = "trainscope suite run";
inline constexpr std::string_view kLimitsByDoctor = "trainscope doctor";

// One measured limit. What it applies to is its key: sgemm (model, rows,
// threads, precision, gemm, ranks), allreduce (transport, ranks), memcpy
// (threads).
struct MachineLimit {
  LimitKind kind = LimitKind::kSgemm;
  std::string model;               // sgemm: the case's model (preset or config path); else ""
  int64_t rows = 0;                // sgemm: the GEMMs' rows (a rank's tokens per step); else 0
  int threads = 1;                 // sgemm, memcpy: threads that ran it; allreduce: 1
  std::string precision = "fp32";  // sgemm: the GEMMs' inputs, fp32 or bf16
  // sgemm fp32: the case's --gemm (auto, openblas, onednn), which picks the
  // library each GEMM runs on. Empty for bf16 (always oneDNN's) and for
  // limits stored before it was recorded: those apply under any --gemm.
  std::string gemm;
  std::string transport;  // allreduce: the case's transport as runs record it (RunCase::links)
  int ranks = 1;          // allreduce: world size; sgemm: copies run at once, a CPU each
  double value = 0;       // in limit_unit(kind)
  std::string detail;     // how it was measured: shapes, kernels, sizes
  std::string source;     // kLimitsBySuiteRun or kLimitsByDoctor
  std::string host;
  std::string measured_at;  // ISO-8601 UTC
  bool operator==(const MachineLimit&) const = default;
};
template <>
struct Fields<MachineLimit> {
  static constexpr auto table = std::tuple{
      field("kind", &MachineLimit::kind),
      field("model", &MachineLimit::model),
      field("rows", &MachineLimit::rows),
      field("threads", &MachineLimit::threads),
      field("precision", &MachineLimit::precision),
      field("gemm", &MachineLimit::gemm).absent_ok(),
      field("transport", &MachineLimit::transport),
      field("ranks", &MachineLimit::ranks),
      field("value", &MachineLimit::value),
      field("detail", &MachineLimit::detail),
      field("source", &MachineLimit::source),
      field("host", &MachineLimit::host),
      field("measured_at", &MachineLimit::measured_at),
  };
};

// "sgemm, tiny, 62 rows, 1 thread" and so on: what a limit is of.
std::string describe_key(const MachineLimit& limit);

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_MACHINE_LIMITS_H_
