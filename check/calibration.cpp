#include "check/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "analysis/intervals.h"
#include "check/timing_rows.h"

namespace trainscope::check {

namespace {

bool is_timing_metric(const CheckRow& row) {
  return row.metric == "step time median" || row.metric == "tokens/s" ||
         row.metric.starts_with("busbw ");
}

// The figures one noise is measured on: step time medians, or for a sweep
// its busbw per repetition at every size (sizes pooled: the noisiest decide).
std::vector<std::vector<double>> case_samples(const std::vector<CheckSuite>& runs,
                                              const std::string& name) {
  std::vector<std::vector<double>> out;
  for (const CheckSuite& run : runs) {
    const CaseRecord* c = run.find(name);
    if (!c || !c->usable()) continue;
    if (c->timings.busbw.empty()) {
      out.push_back(c->timings.step_time_median_s);
      continue;
    }
    for (const BusbwSamples& s : c->timings.busbw) out.push_back(s.per_repetition);
  }
  return out;
}

CaseNoise case_noise(const std::vector<CheckSuite>& runs, const std::string& name, int64_t per_run,
                     double threshold_pct, double alpha) {
  CaseNoise n;
  n.case_name = name;
  // Every repetition of every run as one sample: the noise a check of one
  // run against another meets includes what differs between the runs.
  std::vector<double> all;
  for (const auto& samples : case_samples(runs, name))
    all.insert(all.end(), samples.begin(), samples.end());
  n.repetitions = static_cast<int64_t>(all.size());
  n.noise = analysis::relative_noise(all, {});
  n.detectable = analysis::minimum_detectable_effect(n.noise, std::max<int64_t>(n.repetitions, 1),
                                                     per_run, alpha);
  n.repetitions_needed =
      std::max(repetitions_to_reach(alpha),
               analysis::repetitions_for_effect(n.noise, threshold_pct / 100, alpha));
  return n;
}

}  // namespace

nlohmann::json Calibration::to_json() const {
  nlohmann::json noise = nlohmann::json::object();
  for (const CaseNoise& c : cases) {
    noise[c.case_name] = {{"repetitions", c.repetitions},
                          {"noise", std::isfinite(c.noise) ? nlohmann::json(c.noise) : nullptr},
                          {"repetitions_needed", c.repetitions_needed}};
  }
  return {{"runs", runs},
          {"repetitions_per_run", repetitions_per_run},
          {"pairs", pairs},
          {"false_alarm_pairs", false_alarm_pairs},
          {"inconclusive_pairs", inconclusive_pairs},
          {"threshold_pct", threshold_pct},
          {"alpha", alpha},
          {"cases", noise}};
}

Calibration calibrate_gate(const std::vector<CheckSuite>& runs, const CheckOptions& options) {
  if (runs.size() < 2) {
    throw Error(fmt::format("calibration needs at least 2 runs of the suite, got {}", runs.size()));
  }
  Calibration cal;
  cal.suite = runs.front().name;
  cal.runs = static_cast<int>(runs.size());
  cal.threshold_pct = options.threshold_pct.value_or(kDefaultThresholdPct);
  cal.alpha = options.alpha;
  CheckOptions aa = options;
  aa.timings_across_machines = true;  // the same machine, by construction
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = i + 1; j < runs.size(); ++j) {
      const CheckResult r = run_check(&runs[i], runs[j], aa);
      ++cal.pairs;
      bool alarm = false;
      for (const CheckRow& row : r.rows) {
        if (row.verdict != Verdict::kRegression || !is_timing_metric(row)) continue;
        alarm = true;
        cal.false_alarms.push_back(fmt::format("run {} vs {}: {} {} ({})", i + 1, j + 1,
                                               row.case_name, row.metric, row.change));
      }
      cal.false_alarm_pairs += alarm;
      cal.inconclusive_pairs += r.inconclusive() > 0;
    }
  }
  // A case that never ran cannot be calibrated, and a baseline without it
  // would gate nothing of it ("needs 0 repetitions").
  for (const CaseRecord& c : runs.front().cases) {
    if (c.status == "skipped") continue;
    for (size_t i = 0; i < runs.size(); ++i) {
      const CaseRecord* r = runs[i].find(c.name);
      if (r && r->usable()) continue;
      throw Error(fmt::format("case '{}' of suite '{}' {} in calibration run {}{}: a calibration "
                              "needs every case measured in every run",
                              c.name, cal.suite, r ? r->status : "is missing", i + 1,
                              r && !r->reason.empty() ? " (" + r->reason + ")" : ""),
                  kExitFailure);
    }
  }
  cal.repetitions_per_run = std::numeric_limits<int64_t>::max();
  for (const CaseRecord& c : runs.front().cases) {
    if (c.usable()) {
      cal.repetitions_per_run = std::min(cal.repetitions_per_run,
                                         static_cast<int64_t>(c.timings.step_time_median_s.size()));
    }
  }
  if (cal.repetitions_per_run == std::numeric_limits<int64_t>::max()) cal.repetitions_per_run = 0;
  for (const CaseRecord& c : runs.front().cases) {
    if (!c.usable()) continue;
    cal.cases.push_back(
        case_noise(runs, c.name, cal.repetitions_per_run, cal.threshold_pct, cal.alpha));
    cal.repetitions_needed = std::max(cal.repetitions_needed, cal.cases.back().repetitions_needed);
  }
  return cal;
}

CheckSuite pooled_baseline(const std::vector<CheckSuite>& runs, const Calibration& calibration) {
  CheckSuite out = runs.front();
  for (CaseRecord& c : out.cases) {
    for (size_t i = 1; i < runs.size(); ++i) {
      const CaseRecord* more = runs[i].find(c.name);
      if (!more || !more->usable()) continue;
      if (!c.usable()) {
        c = *more;  // the first usable run's deterministic figures
        continue;
      }
      CaseTimings& t = c.timings;
      const CaseTimings& m = more->timings;
      t.step_time_median_s.insert(t.step_time_median_s.end(), m.step_time_median_s.begin(),
                                  m.step_time_median_s.end());
      t.tokens_per_s.insert(t.tokens_per_s.end(), m.tokens_per_s.begin(), m.tokens_per_s.end());
      t.step_times_s.insert(t.step_times_s.end(), m.step_times_s.begin(), m.step_times_s.end());
      for (BusbwSamples& s : t.busbw) {
        for (const BusbwSamples& ms : m.busbw) {
          if (ms.size_bytes != s.size_bytes) continue;
          s.per_repetition.insert(s.per_repetition.end(), ms.per_repetition.begin(),
                                  ms.per_repetition.end());
          s.per_call.insert(s.per_call.end(), ms.per_call.begin(), ms.per_call.end());
        }
      }
    }
  }
  out.source = fmt::format("{} pooled runs of suite {} (check calibrate)", runs.size(), out.name);
  out.threshold_pct = calibration.threshold_pct;
  out.repetitions = calibration.repetitions_needed;
  out.calibration = calibration.to_json();
  return out;
}

std::string calibration_text(const Calibration& cal) {
  std::string out = fmt::format(
      "calibration of suite {}: {} runs of {} repetition(s), threshold {:g}%, alpha {:g}\n",
      cal.suite, cal.runs, cal.repetitions_per_run, cal.threshold_pct, cal.alpha);
  out += fmt::format("A/A false alarms: {} of {} pairs ({:.0f}%); {} pair(s) inconclusive\n",
                     cal.false_alarm_pairs, cal.pairs,
                     cal.pairs > 0 ? 100.0 * cal.false_alarm_pairs / cal.pairs : 0.0,
                     cal.inconclusive_pairs);
  for (const auto& alarm : cal.false_alarms) out += "  " + alarm + "\n";
  out += fmt::format("{:<44} {:>5} {:>8} {:>12} {:>8}\n", "case", "reps", "noise",
                     fmt::format("detect@{}", cal.repetitions_per_run), "needs");
  for (const CaseNoise& c : cal.cases) {
    const std::string noise = std::isfinite(c.noise) ? fmt::format("{:.2f}%", c.noise * 100) : "-";
    const std::string detect =
        std::isfinite(c.detectable) ? fmt::format("{:.1f}%", c.detectable * 100) : "-";
    out += fmt::format("{:<44} {:>5} {:>8} {:>12} {:>8}\n", c.case_name, c.repetitions, noise,
                       detect, c.repetitions_needed);
  }
  out += fmt::format(
      "a gate of {:g}% on this machine needs {} repetitions a side (noise: 1.4826 x the median "
      "absolute deviation of the log step time median over every repetition of every run; "
      "detect@R: the smallest slowdown a run of R repetitions shows against the pooled "
      "baseline with 80% power)\n",
      cal.threshold_pct, cal.repetitions_needed);
  return out;
}

}  // namespace trainscope::check
