#include "suites/suite_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "kernels/blas_core.h"
#include "base/check.h"
#include "results/allreduce_algorithms.h"
#include "suites/cpus.h"
#include "suites/pytorch_peer.h"
#include "training/lora.h"
#include "training/model_config.h"

namespace trainscope::suites {
namespace {

using options::TrainOption;
using options::TrainOptions;

// The parts of a generated name in order; the option table's rows not
// listed here (options added since) follow the listed ones. Placement keys
// are the case's own (placement_part).
constexpr std::array<std::string_view, 21> kNameOrder = {
    "model",         "mode",           "ranks",     "reduce",         "bucket_mb", "allreduce",
    "mpi_algorithm", "zero",           "precision", "comm_dtype",     "fine_tune", "threads",
    "transport",     "links",          "hosts",     "cores_per_host", "cpu_share", "link",
    "tcp_interface", "batch_per_rank", "batch"};

// A placement key's name part, "" for none; std::nullopt: not a placement key.
std::optional<std::string> placement_part(const SuiteCase& c, std::string_view key,
                                          const std::set<std::string>& varying) {
  if (key == "ranks") return fmt::format("r{}", c.ranks);
  if (key == "mpi_algorithm")
    return c.mpi_algorithm > 0 ? fmt::format("alg{}", c.mpi_algorithm) : "";
  if (key == "transport") return c.transport != "auto" ? c.transport : "";
  if (key == "links") return c.links > 0 ? fmt::format("l{}", c.links) : "";
  if (key == "hosts") return c.hosts > 1 ? fmt::format("h{}", c.hosts) : "";
  if (key == "cores_per_host") {
    return c.cores_per_host > 0 ? fmt::format("c{}", c.cores_per_host) : "";
  }
  if (key == "cpu_share") return c.cpu_share < 1 ? fmt::format("f{:g}", c.cpu_share) : "";
  if (key == "link") return c.link;
  if (key == "tcp_interface") {
    return !c.tcp_interface.empty() && varying.contains("tcp_interface") ? c.tcp_interface : "";
  }
  if (key == "batch_per_rank") {
    return c.batch_per_rank > 0 ? fmt::format("bpr{}", c.batch_per_rank) : "";
  }
  return std::nullopt;
}

// A training option's name part, "" for none.
std::string option_part(const SuiteCase& c, const options::TrainOption& row,
                        const std::set<std::string>& varying) {
  // An axis without a part of its own: "key-value" when set, so that the
  // cases it makes have names of their own.
  if (row.name_when == options::NameWhen::kNever) return "";
  if (row.name_part == nullptr) {
    return row.axis && c.is_set(row)
               ? fmt::format("{}-{}", row.suite, options::option_text(row, c.train))
               : "";
  }
  if (c.kind == CaseKind::kAllReduce) {
    if (row.suite == "mode") return "allreduce";
    if (row.suite == "reduce" || row.suite == "bucket_mb") return "";
  }
  const bool set = c.is_set(row), varies = varying.contains(std::string(row.suite));
  bool named = false;
  switch (row.name_when) {
    case options::NameWhen::kAlways: named = true; break;
    case options::NameWhen::kWhenSet: named = set; break;
    case options::NameWhen::kWhenVarying: named = varies; break;
    case options::NameWhen::kWhenSetOrVarying: named = set || varies; break;
    case options::NameWhen::kNever: break;
  }
  return named ? row.name_part(c.train) : "";
}

// Whether `key` belongs to a case of `kind` (the sweep has no training).
bool recorded_for(const SuiteCase& c, const options::TrainOption& row) {
  return c.kind == CaseKind::kTrain || row.suite == "allreduce";
}

}  // namespace

bool SuiteCase::is_set(const options::TrainOption& row) const {
  // An optional setting (the trainer decides unless given) is set by giving it.
  if (row.recorded == options::Emit::kNullUnlessSet) return given.contains(row.suite);
  return !options::option_is_default(row, train);
}

nlohmann::json SuiteCase::to_json() const {
  nlohmann::json j = {
      {"name", name},           {"kind", kind == CaseKind::kTrain ? "train" : "allreduce"},
      {"ranks", ranks},         {"threads", train.threads},
      {"transport", transport}, {"links", links},
  };
  for (const options::TrainOption& row : options::train_option_table()) {
    if (row.suite.empty() || !recorded_for(*this, row)) continue;
    const bool applies = row.applies_to(train);
    nlohmann::json value;
    switch (row.recorded) {
      case options::Emit::kAlways:
        if (!applies) continue;
        value = options::option_json(row, train);
        break;
      case options::Emit::kWhenSet:
        if (!applies || !is_set(row)) continue;
        value = options::option_json(row, train);
        break;
      case options::Emit::kNullUnlessSet:
        value = applies && is_set(row) ? options::option_json(row, train) : nullptr;
        break;
      case options::Emit::kNever: continue;
    }
    const std::string path(row.config_path());
    const std::size_t dot = path.find('.');
    if (dot == std::string::npos) {
      j[path] = std::move(value);
    } else {
      j[path.substr(0, dot)][path.substr(dot + 1)] = std::move(value);
    }
  }
  if (kind == CaseKind::kTrain) {
    j["extra_args"] = extra_args;
  } else {
    j["sweep"] = {{"min_bytes", sweep.min_bytes},
                  {"max_bytes", sweep.max_bytes},
                  {"factor", sweep.factor},
                  {"iters", sweep.iters},
                  {"warmup", sweep.warmup}};
  }
  // Only when set, so that configurations recorded before these existed
  // (baselines compare them) still match.
  if (hosts > 1) j["hosts"] = hosts;
  if (cores_per_host > 0) j["cores_per_host"] = cores_per_host;
  if (cpu_share < 1) j["cpu_share"] = cpu_share;
  if (!link.empty()) j["link"] = link;
  if (!tcp_interface.empty()) j["tcp_interface"] = tcp_interface;
  if (batch_per_rank > 0) j["batch_per_rank"] = batch_per_rank;
  if (mpi_algorithm > 0) j["mpi_algorithm"] = mpi_algorithm;
  if (!skip_reason.empty()) j["skip_reason"] = skip_reason;
  return j;
}

void collapse(SuiteCase& c) {
  if (c.ranks == 0) c.ranks = c.hosts;  // one rank on each host
  if (c.batch_per_rank > 0) c.train.batch = c.batch_per_rank * c.ranks;
  // One rank all-reduces nothing.
  if (c.ranks == 1) {
    c.train.allreduce = options::AllReduceAlgorithm::kMpi;
    c.given.erase("allreduce");
  }
  for (const options::TrainOption& row : options::train_option_table()) {
    const bool sweep_drops = c.kind == CaseKind::kAllReduce && row.suite == "bucket_mb";
    if (!row.suite.empty() && (!row.applies_to(c.train) || sweep_drops)) {
      options::reset_option(row, c.train);
      c.given.erase(std::string(row.suite));
    }
  }
  if (c.transport != "tcp") c.links = 0;
  if (c.hosts <= 1) c.link.clear();
  if (c.cpu_share_cores > 0) {
    c.cpu_share = std::min(1.0, static_cast<double>(c.cpu_share_cores) / c.hosts);
  }
  // "C/hosts" on one host gives a whole core (or more) and so collapses; a
  // number there runs the one host under that quota (runs_alone_under_quota).
  // Open MPI's algorithms are its MPI_Allreduce's.
  if (c.ranks == 1 || c.train.allreduce != options::AllReduceAlgorithm::kMpi) c.mpi_algorithm = 0;
}

std::string generated_case_name(const SuiteCase& c, const std::set<std::string>& varying) {
  std::vector<std::string> keys(kNameOrder.begin(), kNameOrder.end());
  for (const options::TrainOption& row : options::train_option_table()) {
    if (!row.suite.empty() && (row.name_part != nullptr || row.axis) &&
        std::find(kNameOrder.begin(), kNameOrder.end(), row.suite) == kNameOrder.end()) {
      keys.emplace_back(row.suite);
    }
  }
  std::vector<std::string> parts;
  for (const std::string& key : keys) {
    std::optional<std::string> part = placement_part(c, key, varying);
    if (!part) part = option_part(c, *options::find_suite_option(key), varying);
    if (!part->empty()) parts.push_back(std::move(*part));
  }
  return fmt::format("{}", fmt::join(parts, "-"));
}

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
  if (c.transport == "shm" && c.hosts > 1) {
    return fmt::format("shm carries messages within one host; this case spans {} hosts", c.hosts);
  }
  if (c.train.allreduce == options::AllReduceAlgorithm::kShm && c.hosts > 1) {
    return fmt::format("shm reduces within one host; this case spans {} hosts: use hier", c.hosts);
  }
  if (c.transport != "auto" && c.ranks == 1) {
    return fmt::format("one rank sends nothing over the {} transport", c.transport);
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

std::string skip_reason(const SuiteCase& c) {
  std::string why = setting_skip_reason(c);
  if (why.empty()) why = pytorch_skip_reason(c);
  return why.empty() ? placement_skip_reason(c) : why;
}

}  // namespace trainscope::suites
