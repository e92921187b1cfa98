// A benchmark suite as written in TOML, and the cases it expands to.
//
// A suite file names a base configuration shared by every case, then either a
// parameter grid (the cases are its cartesian product), a list of explicit
// [[case]] tables, or both (the grid's cases first). Each case is one job:
// `trainscope train` (kind "train") or `trainscope allreduce-bench` (kind
// "allreduce"), launched by the runner (suites/runner.h), usually under mpirun.
//
//   name = "dp-modes"
//   description = "naive vs duplicated vs sharded"
//   kind = "train"            # or "allreduce"
//   repetitions = 1
//   timeout_s = 300           # per case
//   bind_to = "none"          # mpirun --bind-to
//   [base]                    # train: model data batch block steps warmup_steps
//   model = "seed"            #   tokenizer eval_every shard threads lr extra_args
//                             #   init_from
//   [grid]                    # axes: model mode ranks reduce bucket_mb threads
//   mode = ["naive", "sharded"]  #     transport links hosts cores_per_host link
//                             #     tcp_interface batch batch_per_rank
//                             #     allreduce mpi_algorithm zero comm_dtype
//                             #     fine_tune lora_rank lora_alpha
//                             #     lora_dropout lora_layers lora_targets
//                             #     precision
//   ranks = [1, 2]
//   [[case]]                  # any axis key, plus optional name, timeout_s
//                             #   and (train) extra_args, replacing [base]'s
//   mode = "duplicated"
//   ranks = 2
//
// Axes that do not apply to a case collapse instead of multiplying it: the
// bucket size only matters to fused/overlap, the link count only to the tcp
// transport, the link profile only to several hosts, the Open MPI algorithm
// only to the mpi all-reduce, the all-reduce to more than one rank, the LoRA
// settings to fine_tune = "lora". A combination that is well-formed but
// cannot run (naive with 2 ranks, a batch the ranks do not divide, hosts
// whose cores the machine does not have, the shm all-reduce across hosts,
// ZeRO-1 without fused, on one rank or over hier, LoRA on more layers than the model
// has, bf16 on a CPU without bf16 instructions) becomes a skipped case with
// the reason. `hosts` without `ranks` puts one rank on each host;
// `batch_per_rank` scales the global batch with the ranks (weak scaling) and
// does not go with `batch`. Everything else that is wrong (unknown key, wrong type, unknown
// mode, links on a non-tcp case...) throws trainscope::Error naming the file,
// line and key, before anything runs.
//
// Relative model paths (a config.json) and init_from directories (a Hugging
// Face checkpoint, e.g. a step directory of an earlier run) are resolved
// against the suite file's directory, so a suite can ship its model config
// beside it. init_from names the model (its config.json): it does not go
// with `model`.
//
// Thread-safety: plain values and pure functions.
#ifndef TRAINSCOPE_SUITES_SUITE_CONFIG_H_
#define TRAINSCOPE_SUITES_SUITE_CONFIG_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "suites/suite_case.h"

namespace trainscope::suites {

struct Suite {
  std::string name;
  std::string description;
  std::filesystem::path file;  // where it was read from ("" for a string)
  std::string text;            // the TOML as read
  CaseKind kind = CaseKind::kTrain;
  int repetitions = 1;
  double timeout_s = 600;
  std::string bind_to = "none";
  std::string tcp_interface = "lo";  // btl/oob_tcp_if_include for tcp cases
  std::vector<SuiteCase> cases;      // in run order, skipped ones included
};

// Parses a suite. `source_name` names the text in errors ("x.toml");
// `base_dir` resolves relative model paths. Throws trainscope::Error
// "FILE:LINE:COL: ..." on any problem.
Suite parse_suite(std::string_view toml_text, const std::string& source_name,
                  const std::filesystem::path& base_dir);
// Reads and parses a suite file.
Suite load_suite_file(const std::filesystem::path& path);

// Where the built-in suites live: $TRAINSCOPE_SUITES_DIR if set, else the
// suites/ folder of the source tree this binary was built from.
std::filesystem::path builtin_suites_dir();
// Names of the built-in suites (file stems), sorted.
std::vector<std::string> builtin_suite_names();
// A built-in suite name, or a path to a TOML file. Unknown names throw an
// Error listing the built-in ones.
Suite resolve_suite(const std::string& name_or_path);

// One host of a hostfile, all its lines taken together.
struct HostEntry {
  std::string host;   // as written, without `user@`
  int slots = 1;      // >= 1: hosts with slots=0 are left out
  int max_slots = 0;  // 0: no limit given
  std::string user;   // the `user@` login name, "" when not given
};
// Parses an Open MPI hostfile as mpirun 4.1 reads it: `[user@]host
// [slots=N] [max_slots=N]` lines (and the synonyms, spaces around '='),
// comments after # or //, blank lines; a host listed again adds a slot per
// bare line, slots=0 leaves a host out (suites/hostfile.cpp has the rules).
// Hosts in the order of their first line. Errors name the file and line (an
// unknown word, a bad number, max_slots below slots, two slot counts for one
// host); a file with no host with slots is an error too.
std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string& source_name);
std::vector<HostEntry> load_hostfile(const std::filesystem::path& path);
// Writes `hosts` as a hostfile mpirun reads back the same (`[user@]host
// slots=N [max_slots=M]`), atomically; `slots` > 0 gives every host that
// many slots instead of its own (one rank per host for a probe).
void write_hostfile(const std::filesystem::path& path, const std::vector<HostEntry>& hosts,
                    int slots = 0);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_SUITE_CONFIG_H_
