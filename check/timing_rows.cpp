#include "check/timing_rows.h"

#include <fmt/format.h>

#include <cmath>

#include "analysis/intervals.h"
#include "analysis/rank_test.h"
#include "base/format.h"
#include "results/figures.h"

namespace trainscope::check {

namespace {

// A timing figure as a check row shows it.
struct TimedFigure {
  std::string name;      // "step time median", "busbw 1048576 B"
  bool lower_is_better;  // step time yes, tokens/s and busbw no
  double scale;          // for display: seconds -> ms
  std::string unit;
};

// How many repetitions a side a gate of this threshold needs at this noise.
std::string repetitions_advice(double noise, double threshold_pct, double alpha) {
  const int64_t reach = repetitions_to_reach(alpha);
  if (!std::isfinite(noise)) {
    return fmt::format("needs at least {} repetitions a side (then their noise decides)", reach);
  }
  const int64_t n =
      std::max(reach, analysis::repetitions_for_effect(noise, threshold_pct / 100, alpha));
  return fmt::format("needs {} repetitions a side at this noise", n);
}

CheckRow timed_row(const std::string& case_name, const TimedFigure& figure,
                   const std::vector<double>& base, const std::vector<double>& cur,
                   const CheckOptions& o) {
  CheckRow row;
  row.case_name = case_name;
  row.metric = figure.name;
  const double mb = results::median_of(base), mc = results::median_of(cur);
  row.baseline = format_number(mb * figure.scale, 3) + figure.unit;
  row.current = format_number(mc * figure.scale, 3) + figure.unit;
  if (base.empty() || cur.empty() || !std::isfinite(mb) || !std::isfinite(mc) || mb == 0) {
    row.verdict = Verdict::kInfo;
    row.note = "no repetitions on one side";
    return row;
  }
  // "+3.1% [-1.2%, +7.4%]": current over baseline, Hodges-Lehmann on logs.
  row.change = analysis::format_change(analysis::hodges_lehmann_ratio(cur, base), 1);
  const double threshold = o.threshold_pct.value_or(kDefaultThresholdPct);
  const double noise = analysis::relative_noise(base, cur);
  const auto m = static_cast<int64_t>(base.size()), n = static_cast<int64_t>(cur.size());
  const double detectable = analysis::minimum_detectable_effect(noise, m, n, o.alpha);
  row.detectable = std::isfinite(detectable) ? fmt::format("{:.1f}%", detectable * 100) : "-";
  row.note = fmt::format("{} vs {} repetitions", m, n);
  if (analysis::mann_whitney_min_p_value(m, n) >= o.alpha) {
    row.verdict = Verdict::kInconclusive;
    row.note += fmt::format(": the test cannot reach p < {:g} whatever the times; {}", o.alpha,
                            repetitions_advice(noise, threshold, o.alpha));
    return row;
  }
  const auto test = analysis::mann_whitney_u(base, cur);
  row.p_value = fmt::format("{:.4f}", test.p_value);
  const double worse_pct = (figure.lower_is_better ? (mc - mb) : (mb - mc)) / std::fabs(mb) * 100;
  const bool significant = test.p_value < o.alpha;
  if (significant && worse_pct > threshold) {
    row.verdict = Verdict::kRegression;
  } else if (significant && -worse_pct > threshold) {
    row.verdict = Verdict::kImproved;
  } else if (!(detectable * 100 <= threshold)) {
    // Passing here would say "no slowdown" of a comparison that could not
    // have seen one of the threshold's size.
    row.verdict = Verdict::kInconclusive;
    row.note +=
        fmt::format(": noise {:.1f}% per repetition, a slowdown of {:g}% would go unseen; {}",
                    noise * 100, threshold, repetitions_advice(noise, threshold, o.alpha));
  } else {
    row.verdict = Verdict::kSame;
    if (std::fabs(worse_pct) > threshold) row.note += ", not significant";
  }
  return row;
}

const BusbwSamples* find_sweep_size(const std::vector<BusbwSamples>& sweep, int64_t size_bytes) {
  for (const auto& s : sweep) {
    if (s.size_bytes == size_bytes) return &s;
  }
  return nullptr;
}

}  // namespace

int64_t repetitions_to_reach(double alpha) {
  int64_t n = 1;
  while (n < 1000 && analysis::mann_whitney_min_p_value(n, n) >= alpha) ++n;
  return n;
}

void compare_step_timings(const CaseRecord& b, const CaseRecord& c, const CheckOptions& o,
                          std::vector<CheckRow>& rows) {
  const TimedFigure step_time{"step time median", true, 1e3, " ms"};
  const TimedFigure tokens{"tokens/s", false, 1, ""};
  rows.push_back(
      timed_row(c.name, step_time, b.timings.step_time_median_s, c.timings.step_time_median_s, o));
  // Shown with its interval, not tested: the step time row already tests the
  // speed (a second test of the same runs would add false alarms), and a
  // run's tokens/s carries its preempted steps, which its median step does not.
  CheckRow row = timed_row(c.name, tokens, b.timings.tokens_per_s, c.timings.tokens_per_s, o);
  row.p_value.clear();
  row.detectable.clear();
  row.verdict = Verdict::kInfo;
  row.note = fmt::format("{} vs {} repetitions; not tested: the step time median row decides",
                         b.timings.tokens_per_s.size(), c.timings.tokens_per_s.size());
  rows.push_back(std::move(row));
}

void compare_sweep_busbw(const CaseRecord& b, const CaseRecord& c, const CheckOptions& o,
                         std::vector<CheckRow>& rows) {
  for (const BusbwSamples& base : b.timings.busbw) {
    const TimedFigure figure{fmt::format("busbw {} B", base.size_bytes), false, 1, " GB/s"};
    const BusbwSamples* cur = find_sweep_size(c.timings.busbw, base.size_bytes);
    if (!cur) {
      rows.push_back({c.name, figure.name,
                      format_number(results::median_of(base.per_repetition), 3), "-", "", "",
                      Verdict::kRegression, "size missing in the current sweep", ""});
      continue;
    }
    rows.push_back(timed_row(c.name, figure, base.per_repetition, cur->per_repetition, o));
  }
}

}  // namespace trainscope::check
