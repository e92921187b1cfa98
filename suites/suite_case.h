// One case of a suite, typed: what trains (options::TrainOptions, every
// suite key of the option table), where it runs, and what a case is derived
// from those: its generated name, its recorded config (runs.config), and why
// it would be skipped. The parser (suites/suite_config.h) fills cases in;
// the runner (suites/runner.h) launches them (suites/launch_plan.h).
//
// Thread-safety: plain values and pure functions.
#ifndef TRAINSCOPE_SUITES_SUITE_CASE_H_
#define TRAINSCOPE_SUITES_SUITE_CASE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "options/placement.h"
#include "options/train_option_table.h"

namespace trainscope::suites {

enum class CaseKind { kTrain, kAllReduce };

// Settings of the all-reduce sweep (kind "allreduce").
struct SweepSettings {
  int64_t min_bytes = 8;
  int64_t max_bytes = 256ll << 20;
  int factor = 2;
  int iters = 20;
  int warmup = 5;
};

// One job of a suite, fully resolved: where it runs (options/placement.h)
// and what trains.
struct SuiteCase : options::Placement {
  std::string name;  // unique within the suite, e.g. "sharded-r2-fused-b4"
  CaseKind kind = CaseKind::kTrain;
  // What trains, typed: every option of options/train_option_table.h a
  // suite key sets (model, mode, reduce, bucket_mb, comm_dtype, lora_*...).
  // A case that does not set one runs with the trainer's default, except
  // steps (10) and model (seed). The sweep (kind allreduce) uses
  // train.allreduce only.
  options::TrainOptions train;
  // The suite keys of `train` the suite wrote for this case (after
  // collapsing those that do not apply): an optional setting (lr,
  // bucket_mb) is set when given, even at the trainer's default.
  std::set<std::string, std::less<>> given;

  // Where it runs (ranks, hosts, transport, cpu_share...): the placement
  // keys' fields are the case's own, c.ranks, c.hosts.
  std::string skip_reason;          // non-empty: recorded as skipped, not run
  std::optional<double> timeout_s;  // [[case]] only; else the suite's

  int cpu_share_cores = 0;              // > 0: cpu_share = min(1, this / hosts), set by collapse()
  std::vector<std::string> extra_args;  // appended to the trainscope command
  std::string extra_args_at;            // "FILE:LINE:COL" of extra_args in the suite, for errors
  // Non-empty: a training case of this suite, run before, whose compute this
  // case replays (training/run/replay.h): the runner passes its latest
  // summary as --replay-compute. Recorded in the config; the case is
  // reported as replayed.
  std::string replay_from;
  SweepSettings sweep;

  // Whether `row` is set for this case: given (an optional setting) or not
  // the trainer's default; what goes on its command line and in its name.
  bool is_set(const options::TrainOption& row) const;
  // The case as JSON (stored as runs.config).
  nlohmann::json to_json() const;
};

// Settings that do not apply collapse to their defaults instead of
// multiplying the cases: the bucket size under per-tensor, the LoRA settings
// under full fine-tuning, the link count off tcp, the link profile on one
// host, the all-reduce and Open MPI's algorithm on one rank. Also: no ranks
// given means one on each host, batch_per_rank sets the global batch.
void collapse(SuiteCase& c);

// The generated name: the mode, the ranks and every setting that is set, in
// a fixed order ("sharded-r2-fused-b4-comm-bf16-t1"); `varying` are the
// settings the suite varies (the model and the batch are named only then).
std::string generated_case_name(const SuiteCase& c, const std::set<std::string>& varying);

// One host under a CPU share, without a cluster: the whole job runs in a
// cgroup with that quota of one core (scripts/cpu-share-run.sh).
inline bool runs_alone_under_quota(const SuiteCase& c) { return c.hosts <= 1 && c.cpu_share < 1; }

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_SUITE_CASE_H_
