#include "suites/case_skips.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "kernels/blas_core.h"
#include "suites/cpus.h"
#include "suites/pytorch_peer.h"
#include "training/lora.h"
#include "training/model_config.h"

namespace trainscope::suites {
namespace {

std::string setting_skip_reason(const SuiteCase& c) {
  const options::TrainOptions& t = c.train;
  const bool train = c.kind == CaseKind::kTrain;
  if (train && t.data.data_mode == options::DataMode::kNaive && c.ranks > 1) {
    return fmt::format("naive runs one process; this case has {} ranks", c.ranks);
  }
  if (train && t.batch > 0 && t.batch % c.ranks != 0) {
    return fmt::format("global batch {} is not divisible by {} ranks", t.batch, c.ranks);
  }
  // The trainer refuses these three (training/run/setup.cpp, check_zero).
  if (t.zero > 0 && t.reduce != options::ReduceStrategy::kFused) {
    return fmt::format(
        "ZeRO-1 shards the optimizer state of the fused reduction (reduce = "
        "\"fused\"); this case reduces with {}",
        enum_name(t.reduce));
  }
  if (t.zero > 0 && c.ranks < 2) {
    return "ZeRO-1 shards the optimizer state over the ranks; this case has 1 rank";
  }
  if (t.zero > 0 && t.allreduce == options::AllReduceAlgorithm::kHier) {
    return "ZeRO-1 is not offered with allreduce = \"hier\" (its reduce-scatter would need a "
           "third level); use mpi or shm";
  }
  // A CPU without bf16 instructions: the trainer's own refusal, as a skip, so
  // a suite written for another machine still runs its fp32 cases here.
  if (train && t.precision == options::Precision::kBf16) {
    try {
      training::check_precision_supported(options::Precision::kBf16, kernels::detect_cpu_isa());
    } catch (const Error& e) {
      return e.what();
    }
  }
  // The last N layers of this case's model (the trainer's own check and words).
  if (t.fine_tune == options::FineTune::kLora && t.lora.layers > 0) {
    try {
      training::validate_lora(t.lora, training::resolve_model(t.model));
    } catch (const Error& e) {
      return e.what();
    }
  }
  return "";
}

std::string placement_skip_reason(const SuiteCase& c) {
  const int cores = cores_available();
  if (c.ranks % c.hosts != 0) {
    return fmt::format("{} ranks do not spread evenly over {} hosts", c.ranks, c.hosts);
  }
  // cores_per_host 0 would run unpinned, its default threads one per core
  // under one core's quota: dilated by the cores over F, not by 1/F.
  if (runs_alone_under_quota(c) && (c.ranks > 1 || c.cores_per_host != 1)) {
    return fmt::format(
        "cpu_share {:g} on one host is a quota of one core for one process: "
        "give it ranks = 1 and cores_per_host = 1, or hosts = 2 or more",
        c.cpu_share);
  }
  if (c.cpu_share < 1) {
    // As netns-cluster.sh places them: floor(1/F) hosts share a core group.
    const int per_group = static_cast<int>(1 / c.cpu_share + 1e-9);
    const int need = (c.hosts + per_group - 1) / per_group * std::max(1, c.cores_per_host);
    if (need > cores) {
      return fmt::format("{} hosts at a CPU share of {:g} need {} cores; this machine has {}",
                         c.hosts, c.cpu_share, need, cores);
    }
  } else if (c.cores_per_host > 0 && c.hosts * c.cores_per_host > cores) {
    return fmt::format("{} hosts x {} cores need {} cores; this machine has {}", c.hosts,
                       c.cores_per_host, c.hosts * c.cores_per_host, cores);
  }
  if (c.transport == options::Transport::kShm && c.hosts > 1) {
    return fmt::format("shm carries messages within one host; this case spans {} hosts", c.hosts);
  }
  if (c.train.allreduce == options::AllReduceAlgorithm::kShm && c.hosts > 1) {
    return fmt::format("shm reduces within one host; this case spans {} hosts: use hier", c.hosts);
  }
  if (c.transport != options::Transport::kAuto && c.ranks == 1) {
    return fmt::format("one rank sends nothing over the {} transport", enum_name(c.transport));
  }
  if (c.links > 4) {
    return fmt::format(
        "btl_tcp_links {} hangs Open MPI 4.1 once a message exceeds the eager limit (at most 4; "
        "docs/SUITES.md, known problems)",
        c.links);
  }
  return "";
}

}  // namespace

// The PyTorch peer's reason first: it holds on every machine, while a
// setting's (bf16 on a CPU without it) depends on the one it runs on, and a
// skip should say the same thing wherever the suite is read.
std::string skip_reason(const SuiteCase& c) {
  std::string why = pytorch_skip_reason(c);
  if (why.empty()) why = setting_skip_reason(c);
  return why.empty() ? placement_skip_reason(c) : why;
}

}  // namespace trainscope::suites
