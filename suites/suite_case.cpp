#include "suites/suite_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "base/check.h"
#include "results/allreduce_algorithms.h"

namespace trainscope::suites {
namespace {

using options::TrainOption;
using options::TrainOptions;

// The parts of a generated name in order; the option table's rows not
// listed here (options added since) follow the listed ones, placement keys
// (options/placement.h) before them.
constexpr std::array<std::string_view, 21> kNameOrder = {
    "model",         "mode",           "ranks",     "reduce",         "bucket_mb", "allreduce",
    "mpi_algorithm", "zero",           "precision", "comm_dtype",     "fine_tune", "threads",
    "transport",     "links",          "hosts",     "cores_per_host", "cpu_share", "link",
    "tcp_interface", "batch_per_rank", "batch"};

// A placement key's name part, "" for none; std::nullopt: not a placement key.
std::optional<std::string> placement_part(const SuiteCase& c, std::string_view key,
                                          const std::set<std::string>& varying) {
  const options::PlacementKey* row = options::find_placement_key(key);
  if (row == nullptr) return std::nullopt;
  return row->name_part(c, varying.contains(std::string(key)));
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
      {"name", name},
      {"kind", kind == CaseKind::kTrain ? "train" : "allreduce"},
      {"threads", train.threads},
  };
  options::record_placement(*this, j);
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
    if (!replay_from.empty()) j["replay_from"] = replay_from;
  } else {
    j["sweep"] = {{"min_bytes", sweep.min_bytes},
                  {"max_bytes", sweep.max_bytes},
                  {"factor", sweep.factor},
                  {"iters", sweep.iters},
                  {"warmup", sweep.warmup}};
  }
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
  if (c.transport != options::Transport::kTcp) c.links = 0;
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
  const auto listed = [&](std::string_view key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  for (const options::PlacementKey& row : options::placement_table()) {
    if (!listed(row.key)) keys.emplace_back(row.key);
  }
  for (const options::TrainOption& row : options::train_option_table()) {
    if (!row.suite.empty() && (row.name_part != nullptr || row.axis) && !listed(row.suite)) {
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

}  // namespace trainscope::suites
