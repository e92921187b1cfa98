#include "report/algorithms.h"

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "kernels/storage.h"
#include "report/case_options.h"
#include "results/allreduce_algorithms.h"

namespace trainscope::report {
namespace {

using results::kNaN;

// The runner records a sweep case's mode as "allreduce".
bool is_sweep(const analysis::CaseData& c) { return c.run_case.mode == "allreduce"; }

// Runs of a sweep case that ended ok with rows.
std::vector<const analysis::RunData*> ok_sweeps(const analysis::CaseData& c) {
  std::vector<const analysis::RunData*> out;
  for (const auto& r : c.runs) {
    if (r.row.status == results::RunStatus::kOk && !r.allreduce.empty()) out.push_back(&r);
  }
  return out;
}

int64_t largest_size(const analysis::CaseData& c) {
  int64_t size = 0;
  for (const analysis::RunData* r : ok_sweeps(c)) {
    for (const auto& row : r->allreduce) size = std::max(size, row.size_bytes);
  }
  return size;
}

// Median over the case's ok runs of its busbw at `size`; NaN when none has it.
double busbw_at(const analysis::CaseData& c, int64_t size) {
  std::vector<double> values;
  for (const analysis::RunData* r : ok_sweeps(c)) {
    for (const auto& row : r->allreduce) {
      if (row.size_bytes == size) values.push_back(row.busbw_gbps);
    }
  }
  return values.empty() ? kNaN : results::median_of(std::move(values));
}

// Open MPI's default all-reduce with otherwise the same settings as `c`.
const analysis::CaseData* default_algorithm_case(const analysis::SuiteData& suite,
                                                 const analysis::CaseData& c) {
  for (const auto& other : suite.cases) {
    if (is_sweep(other) && case_reduction(other).is_default() &&
        analysis::alike_but(other, c, {"allreduce", "mpi_algorithm"})) {
      return &other;
    }
  }
  return nullptr;
}

// The largest of each category over the ranks.
RankMemory rank_memory(const results::RunSummary& s) {
  using kernels::MemoryCategory;
  const results::MemoryByCategory peak = analysis::peak_by_category(s);
  return {peak[MemoryCategory::kParameters], peak[MemoryCategory::kGradients],
          peak[MemoryCategory::kOptimizerState]};
}

// The usable case configured like the ZeRO-1 case `c` but without ZeRO.
const analysis::CaseData* without_zero(const analysis::SuiteData& suite,
                                       const analysis::CaseData& c) {
  for (const auto& other : suite.cases) {
    if (case_reduction(other).zero == 0 && other.first_usable() &&
        analysis::alike_but(other, c, {"zero"})) {
      return &other;
    }
  }
  return nullptr;
}

}  // namespace

bool CaseReduction::is_default() const {
  return algorithm == results::kDefaultAllReduceAlgorithm && mpi_algorithm == 0 && zero == 0 &&
         comm_dtype == "fp32";
}

std::string CaseReduction::label() const {
  const std::string label = results::allreduce_algorithm_label(algorithm, mpi_algorithm);
  return fmt::format("{}{}{}", label, zero > 0 ? fmt::format(", ZeRO-{}", zero) : "",
                     comm_dtype != "fp32" ? ", " + comm_dtype : "");
}

CaseReduction case_reduction(const analysis::CaseData& c) {
  const CaseOptions o = case_options(c);
  return {.algorithm = std::string(enum_name(o.train.allreduce)),
          .mpi_algorithm = o.placement.mpi_algorithm,
          .zero = o.train.zero,
          .comm_dtype = std::string(enum_name(o.train.comm_dtype))};
}

bool suite_varies_reduction(const analysis::SuiteData& suite) {
  return std::any_of(suite.cases.begin(), suite.cases.end(),
                     [](const analysis::CaseData& c) { return !case_reduction(c).is_default(); });
}

std::vector<AlgorithmBusbw> algorithm_busbw(const analysis::SuiteData& suite) {
  std::set<std::string> labels;
  for (const auto& c : suite.cases) {
    if (is_sweep(c)) labels.insert(case_reduction(c).label());
  }
  if (labels.size() < 2) return {};
  std::vector<AlgorithmBusbw> out;
  for (const auto& c : suite.cases) {
    if (!is_sweep(c)) continue;
    AlgorithmBusbw row{c.name, case_reduction(c).label(), largest_size(c), kNaN, "", kNaN};
    row.busbw_gbps = busbw_at(c, row.size_bytes);
    if (const analysis::CaseData* base = default_algorithm_case(suite, c)) {
      row.baseline_case = base->name;
      row.ratio = row.busbw_gbps / busbw_at(*base, row.size_bytes);
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::string ZeroMemory::sentence() const {
  using kernels::format_bytes;
  if (optimizer_total < 0) {
    return fmt::format(
        "optimizer state per rank = {} (no case of the suite runs without ZeRO: "
        "nothing to hold it against)",
        format_bytes(static_cast<double>(zero.optimizer_state)));
  }
  const double per_rank = static_cast<double>(optimizer_total) / ranks;
  return fmt::format(
      "optimizer state per rank = {} (total / N = {}: {} over {} ranks; the total "
      "is {})",
      format_bytes(static_cast<double>(zero.optimizer_state)), format_bytes(per_rank),
      format_bytes(static_cast<double>(optimizer_total)), ranks, total_from);
}

std::vector<ZeroMemory> zero_memory(const analysis::SuiteData& suite) {
  std::vector<ZeroMemory> out;
  for (const auto& c : suite.cases) {
    const analysis::RunData* run = c.first_usable();
    if (case_reduction(c).zero == 0 || !run) continue;
    ZeroMemory z;
    z.case_name = c.name;
    z.ranks = std::max(1, run->summary->world_size);
    z.zero = rank_memory(*run->summary);
    if (const analysis::CaseData* peer = without_zero(suite, c)) {
      z.peer_case = peer->name;
      z.peer = rank_memory(*peer->first_usable()->summary);
      z.optimizer_total = z.peer.optimizer_state;
      z.total_from = fmt::format("what each rank of {} holds without ZeRO", peer->name);
    }
    out.push_back(std::move(z));
  }
  return out;
}

}  // namespace trainscope::report
