#include "report/engines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/format.h"
#include "report/case_options.h"

namespace trainscope::report {
namespace {

bool is_pytorch(const analysis::CaseData& c) {
  return case_options(c).train.engine == options::Engine::kPytorch;
}

std::string losses_cell(const analysis::CaseData& ts, const analysis::CaseData& pt) {
  const analysis::RunData* a = ts.first_usable();
  const analysis::RunData* b = pt.first_usable();
  if (a == nullptr || b == nullptr) return "-";
  const LossAgreement l = compare_losses(*a->summary, *b->summary);
  if (!l.comparable) return "no losses";
  const bool bf16 = a->summary->comm_dtype == "bf16" || b->summary->comm_dtype == "bf16";
  if (l.first_over < 0) {
    return fmt::format("follow: within {:.1e} relative over {} steps (worst {:.1e}, step {})",
                       kEngineLossTolerance, l.steps, l.worst_rel, l.worst_step);
  }
  return fmt::format("part at step {} (worst {:.1e} at step {}, over {} steps){}", l.first_over,
                     l.worst_rel, l.worst_step, l.steps,
                     bf16 ? "; bf16 gradients round differently in each" : "");
}

std::string placement(const analysis::CaseFigures& f, const analysis::CaseData& c) {
  const int hosts = c.run_case.host_count;
  return fmt::format("{} rank{} x {} thread{}{}", f.world_size, f.world_size == 1 ? "" : "s",
                     c.run_case.threads, c.run_case.threads == 1 ? "" : "s",
                     hosts > 1 ? fmt::format(", {} hosts ({})", hosts, c.run_case.link) : "");
}

}  // namespace

LossAgreement compare_losses(const results::RunSummary& ours, const results::RunSummary& theirs) {
  LossAgreement l;
  if (ours.steps.empty() || theirs.steps.empty()) return l;
  const auto& a = ours.steps[0];
  const auto& b = theirs.steps[0];
  l.steps = static_cast<int>(std::min(a.size(), b.size()));
  l.comparable = l.steps > 0;
  for (int i = 0; i < l.steps; ++i) {
    const double rel = std::abs(a[i].loss - b[i].loss) / std::max(std::abs(a[i].loss), 1e-30);
    // NaN (a diverged run) is never within tolerance.
    if (!(rel <= l.worst_rel)) {
      l.worst_rel = std::isnan(rel) ? INFINITY : rel;
      l.worst_step = static_cast<int>(a[i].step);
    }
    if (l.first_over < 0 && !(rel <= kEngineLossTolerance)) {
      l.first_over = static_cast<int>(a[i].step);
    }
  }
  return l;
}

std::vector<EnginePair> engine_pairs(const analysis::SuiteData& suite) {
  std::vector<EnginePair> pairs;
  for (const analysis::CaseData& pt : suite.cases) {
    if (!is_pytorch(pt)) continue;
    for (const analysis::CaseData& ts : suite.cases) {
      if (!is_pytorch(ts) && analysis::alike_but(ts, pt, {"engine"})) {
        pairs.push_back({&ts, &pt});
        break;
      }
    }
  }
  return pairs;
}

Table engine_pairs_table(const analysis::SuiteData& suite) {
  Table t("trainscope vs PyTorch DDP (same weights, same batches)",
          {"pair", "placement", "trainscope tokens/s", "PyTorch tokens/s", "trainscope / PyTorch",
           "reps", "losses"},
          {}, "", {0, 1, 6});
  for (const EnginePair& p : engine_pairs(suite)) {
    const analysis::CaseFigures ts = analysis::case_figures(*p.trainscope);
    const analysis::CaseFigures pt = analysis::case_figures(*p.pytorch);
    const bool both = ts.usable > 0 && pt.usable > 0 && pt.tokens_per_s > 0;
    const std::string status =
        both ? ""
             : fmt::format(
                   " ({}: {})", ts.usable > 0 ? p.pytorch->name : p.trainscope->name,
                   ts.usable > 0 ? pt.status + " " + pt.reason : ts.status + " " + ts.reason);
    t.rows.push_back(
        {p.trainscope->name + " / " + p.pytorch->name + status, placement(ts, *p.trainscope),
         format_number(ts.tokens_per_s, 0), format_number(pt.tokens_per_s, 0),
         both ? format_number(ts.tokens_per_s / pt.tokens_per_s, 2) + "x" : "-",
         fmt::format("{}/{}", ts.usable, pt.usable), losses_cell(*p.trainscope, *p.pytorch)});
  }
  t.note =
      "Ratio of the medians of repetitions of each case's tokens/s (the slowest rank's). Both "
      "engines start from trainscope's step-0 weights and read the same global batches; "
      "\"follow\" means every step's loss is within the tolerance of the other's.";
  return t;
}

}  // namespace trainscope::report
