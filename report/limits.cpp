#include "report/limits.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/case_options.h"
#include "base/format.h"
#include "kernels/gemm_backend.h"

namespace trainscope::report {
namespace {

using results::LimitKind;
using results::MachineLimit;

// The latest limit (suite.limits is latest first) that `pred` accepts.
template <typename Pred>
const MachineLimit* find_limit(const analysis::SuiteData& suite, LimitKind kind, Pred pred) {
  for (const MachineLimit& l : suite.limits) {
    if (l.kind == kind && pred(l)) return &l;
  }
  return nullptr;
}

// The sgemm limit of `run`'s GEMMs: its case's model, a rank's tokens per
// step (the GEMMs' rows), its threads per rank, its precision (recorded
// when not fp32), its --gemm (recorded for fp32 since the limit had it;
// failing that, the doctor's, measured on OpenBLAS, stand in under any, as
// the note says), measured alone (at_once 1) or on `at_once` CPUs at once.
const MachineLimit* sgemm_limit_of(const analysis::SuiteData& suite, const analysis::CaseData& c,
                                   const analysis::RunData& run, int at_once = 1) {
  const CaseOptions o = case_options(c);
  if (!o.trains || run.summary->steps.empty() || run.summary->steps.front().empty()) {
    return nullptr;
  }
  const int64_t rows = run.summary->steps.front().front().tokens;
  const int threads = run.summary->threads_per_rank;
  const std::string_view precision = enum_name(o.train.precision);
  const std::string_view gemm = enum_name(o.train.gemm);
  const auto of_key = [&](const MachineLimit& l) {
    return l.model == o.train.model && l.rows == rows && l.threads == threads &&
           (l.precision.empty() ? "fp32" : l.precision) == precision &&
           std::max(l.ranks, 1) == at_once;
  };
  const MachineLimit* own = find_limit(suite, LimitKind::kSgemm, [&](const MachineLimit& l) {
    return of_key(l) && (l.gemm.empty() || l.gemm == gemm);
  });
  if (own) return own;
  return find_limit(suite, LimitKind::kSgemm, [&](const MachineLimit& l) {
    return of_key(l) && l.source == results::kLimitsByDoctor;
  });
}

std::string share_text(double share) {
  return std::isnan(share) ? "-" : format_number(share * 100, 1) + "%";
}

// "1.52x of 2", or "-" without both limits.
std::string ceiling_text(const LimitShare& s) {
  if (std::isnan(s.cores_ceiling)) return "-";
  return fmt::format("{}x of {}", format_number(s.cores_ceiling, 2), s.sgemm_at_once->ranks);
}

std::string limit_note(const MachineLimit& l) {
  return fmt::format("{}: {} {} ({}; by {} on {} at {})", results::describe_key(l),
                     format_number(l.value, 2), results::limit_unit(l.kind), l.detail, l.source,
                     l.host, l.measured_at);
}

}  // namespace

std::vector<LimitShare> limit_shares(const analysis::SuiteData& suite) {
  std::vector<LimitShare> out;
  for (const analysis::CaseData& c : suite.cases) {
    const analysis::RunData* run = c.first_usable();
    if (!run || c.run_case.mode == "allreduce") continue;
    const analysis::CaseFigures f = analysis::case_figures(c);
    LimitShare s{.case_name = c.name, .gflops = f.rank_gflops, .busbw = f.grad_busbw_gbps};
    s.sgemm = sgemm_limit_of(suite, c, *run);
    if (s.sgemm && s.sgemm->value > 0) s.gflops_share = s.gflops / s.sgemm->value;
    const int ranks = c.run_case.world_size;
    if (ranks > 1 && c.run_case.host_count <= 1) {
      s.sgemm_at_once = sgemm_limit_of(suite, c, *run, ranks);
    }
    if (s.sgemm && s.sgemm_at_once && s.sgemm->value > 0) {
      s.cores_ceiling = ranks * s.sgemm_at_once->value / s.sgemm->value;
    }
    if (c.run_case.world_size > 1) {
      s.allreduce = find_limit(suite, LimitKind::kAllReduce, [&](const MachineLimit& l) {
        return l.transport == c.run_case.links && l.ranks == c.run_case.world_size;
      });
    }
    if (s.allreduce && s.allreduce->value > 0) s.busbw_share = s.busbw / s.allreduce->value;
    out.push_back(s);
  }
  return out;
}

std::string no_limits_note(const analysis::SuiteData& suite) {
  if (!suite.limits.empty() || limit_shares(suite).empty()) return "";
  return "No machine limits were measured for this suite (it ran with --no-limits, or before "
         "limits were recorded), and trainscope doctor --db stored none for its host: achieved "
         "FLOP/s and bus bandwidth are not shown as shares of a limit.";
}

Table limits_table(const analysis::SuiteData& suite) {
  Table t{"Achieved vs the machine's measured limits",
          {"case", "model GFLOP/s per rank", "sgemm limit", "share", "ranks' CPUs at once",
           "grad-sync busbw GB/s", "all-reduce peak", "share"}};
  std::vector<const MachineLimit*> used;
  auto use = [&](const MachineLimit* l) {
    if (l && std::find(used.begin(), used.end(), l) == used.end()) used.push_back(l);
    return l ? format_number(l->value, 2) : std::string("-");
  };
  for (const LimitShare& s : limit_shares(suite)) {
    use(s.sgemm_at_once);  // named in the note
    t.rows.push_back({s.case_name, format_number(s.gflops, 2), use(s.sgemm),
                      share_text(s.gflops_share), ceiling_text(s), format_number(s.busbw, 3),
                      use(s.allreduce), share_text(s.busbw_share)});
  }
  if (suite.limits.empty()) {
    // Nothing to hold the figures against: the note alone (report.cpp), no column of dashes.
    t.rows.clear();
    return t;
  }
  if (const auto* memcpy =
          find_limit(suite, LimitKind::kMemcpy, [](const auto&) { return true; })) {
    used.push_back(memcpy);
  }
  std::vector<std::string> parts;
  for (const MachineLimit* l : used) parts.push_back(limit_note(*l));
  t.note = fmt::format(
      "Share: a rank's model FLOPs per step over the step median, against sgemm over the model's "
      "forward GEMMs at the same rows, threads, precision (bf16: oneDNN's bf16 GEMM) and --gemm. "
      "Ranks' "
      "CPUs at once: the same sgemm run on as many CPUs as the case has ranks, side by side, "
      "all copies together against one alone (\"1.52x of 2\": two one-thread ranks can run "
      "the GEMMs at most 1.52x as fast as one one-thread process here; work the ranks split, such "
      "as "
      "ZeRO-1's optimizer, can go past it); the "
      "gradient sync's bus bandwidth against the "
      "peak busbw of an all-reduce sweep over the same transport and ranks. \"-\": no limit "
      "measured for that key. Limits: {}.",
      fmt::join(parts, "; "));
  return t;
}

}  // namespace trainscope::report
