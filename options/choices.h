// The enumerations among the training options, each with its names: the
// one place a flag's, a suite key's and a record's spelling of them is
// written (base/enum_names.h derives names, parsing and the choices listed
// in errors). The code that acts on a choice is in its own library (a
// strategy in comm/, a GEMM library in kernels/); only the choice lives here.
//
// Thread-safety: compile-time tables.
#ifndef TRAINSCOPE_OPTIONS_CHOICES_H_
#define TRAINSCOPE_OPTIONS_CHOICES_H_

#include <array>
#include <string_view>

#include "base/enum_names.h"

namespace trainscope::options {

// The precision of the linear layers' GEMMs (training/precision.h).
enum class Precision { kFp32, kBf16 };
// The library of the fp32 GEMMs (kernels/gemm_backend.h): per shape the
// faster on this machine, OpenBLAS, or oneDNN.
enum class GemmBackend { kAuto, kOpenBlas, kOneDnn };
// When and over which ranges gradients are summed (comm/grad_sync.h).
enum class ReduceStrategy { kPerTensor, kFused, kOverlap, kOverlapPoll };
// How a sum runs (comm/all_reducer.h).
enum class AllReduceAlgorithm { kMpi, kShm, kHier };
// What gradients travel as: fp32, or bf16 summed in fp32 (comm/all_reducer.h).
enum class CommDtype { kFp32, kBf16 };
// The learning-rate schedule (training/lr_schedule.h).
enum class LrScheduleKind { kConstant, kCosine };
// What trains: every weight, or LoRA adapters over frozen weights.
enum class FineTune { kFull, kLora };
// What a rank does when a wait passes --stall-timeout: say where it is, or
// also end the job after the grace period (profiler/stall_watchdog.h).
enum class StallAction { kWarn, kAbort };
// Which program trains a suite case: trainscope, or the PyTorch peer
// (bench/pytorch/ddp_train.py), to measure them side by side.
enum class Engine { kTrainscope, kPytorch };
// How documents become `block`-token examples: one a document, truncated or
// padded with end-of-text; or joined by end-of-text and cut into blocks.
enum class BatchMode { kPad, kPack };
// How the global batch is spread over the ranks (training/data/batch_source.h):
// one process; every rank holds everything and takes its slice of each
// batch; every rank holds only its part.
enum class DataMode { kNaive, kDuplicated, kSharded };
// Which examples a sharded rank holds: rows r, r+N, ... of each global batch
// (DistributedSampler), or a contiguous 1/N shuffled locally.
enum class ShardMode { kStrided, kContiguous };
// What carries a suite case's MPI messages (options/placement.h): Open MPI's
// own choice, shared memory only, or TCP only (with btl_tcp_links).
enum class Transport { kAuto, kShm, kTcp };
// The projections of a decoder block LoRA adapts, in forward (and arena) order.
enum class LoraTarget { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr int kLoraTargets = 7;

}  // namespace trainscope::options

namespace trainscope {

#define TS_OPTION_NAMES(E, noun_text, ...)                                        \
  template <>                                                                     \
  struct EnumNames<options::E> {                                                  \
    static constexpr auto names = std::to_array<std::string_view>({__VA_ARGS__}); \
    static constexpr std::string_view noun = noun_text;                           \
  }

TS_OPTION_NAMES(Precision, "precision", "fp32", "bf16");
TS_OPTION_NAMES(GemmBackend, "GEMM library", "auto", "openblas", "onednn");
TS_OPTION_NAMES(ReduceStrategy, "strategy", "per-tensor", "fused", "overlap", "overlap-poll");
TS_OPTION_NAMES(AllReduceAlgorithm, "all-reduce algorithm", "mpi", "shm", "hier");
TS_OPTION_NAMES(CommDtype, "communication dtype", "fp32", "bf16");
TS_OPTION_NAMES(LrScheduleKind, "schedule", "constant", "cosine");
TS_OPTION_NAMES(FineTune, "fine-tune mode", "full", "lora");
TS_OPTION_NAMES(StallAction, "stall action", "warn", "abort");
TS_OPTION_NAMES(Engine, "engine", "trainscope", "pytorch");
TS_OPTION_NAMES(BatchMode, "batching", "pad", "pack");
TS_OPTION_NAMES(DataMode, "data mode", "naive", "duplicated", "sharded");
TS_OPTION_NAMES(ShardMode, "shard order", "strided", "contiguous");
TS_OPTION_NAMES(Transport, "transport", "auto", "shm", "tcp");
// PEFT's and mlx-lm's module names (parse_lora_target also takes "q"...).
TS_OPTION_NAMES(LoraTarget, "target module", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                "up_proj", "down_proj");

#undef TS_OPTION_NAMES

}  // namespace trainscope

#endif  // TRAINSCOPE_OPTIONS_CHOICES_H_
