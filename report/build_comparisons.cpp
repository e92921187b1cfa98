#include "report/build_comparisons.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "profiler/stats.h"
#include "analysis/paired.h"

namespace trainscope::report {
namespace {

using BuildComparison = results::ComparisonRow;

std::string ms(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "-"; }

double median_ms(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return profiler::percentile_sorted(v, 0.5) * 1e3;
}

std::string sides(const BuildComparison& c) {
  return fmt::format("base {} ({}), head {} ({})", c.info.base.binary,
                     c.info.base.version.empty() ? "no version" : c.info.base.version,
                     c.info.head.binary, c.info.head.version);
}

std::string verdict_text(const BuildComparison& c) {
  return c.info.verdict.empty() ? "unfinished (running, or its runner died)" : c.info.verdict;
}

Table paired_table(results::ResultsDb& db, const BuildComparison& c) {
  Table t(fmt::format("Paired comparison {} of suite {}: {}", c.id, c.info.suite, verdict_text(c)),
          {"case", "pairs", "base step ms", "head step ms", "head/base [95%]", "verdict", "note"},
          {}, "", {0, 5, 6});
  std::map<std::string, std::vector<double>> base, head;
  for (const auto& p : db.comparison_pairs(c.id)) {
    base[p.case_name].push_back(p.base_step_s);
    head[p.case_name].push_back(p.head_step_s);
  }
  for (const auto& k : db.comparison_cases(c.id)) {
    analysis::Interval iv;
    iv.estimate = k.ratio;
    iv.low = k.low;
    iv.high = k.high;
    std::string note = k.note;
    if (k.verdict == "INCONCLUSIVE" && k.pairs_needed > 0)
      note = fmt::format("needs about {} pairs to decide", k.pairs_needed);
    t.rows.push_back({k.case_name, std::to_string(k.pairs), ms(median_ms(base[k.case_name])),
                      ms(median_ms(head[k.case_name])),
                      k.pairs > 0 ? analysis::format_ratio(iv) : "-", k.verdict, note});
  }
  t.note = fmt::format(
      "{}. Each pair ran one base and one head run back to back, in an order drawn at random "
      "(seed {}); head/base is the Hodges-Lehmann median of the pairs' ratios of step-time "
      "medians with its Wilcoxon signed-rank interval. REGRESSION: the interval above 1 and the "
      "estimate above {:g}% slower; PASS: the interval below that. Pairs {} to {} a case, at "
      "most {:g} minutes; started {}.",
      sides(c), c.info.seed, c.info.threshold_pct, c.info.min_pairs, c.info.max_pairs,
      c.info.max_minutes, c.info.started_at);
  return t;
}

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:+.3f}%", v) : "-"; }

double change(int64_t base, int64_t head) {
  return base > 0 ? (static_cast<double>(head) / static_cast<double>(base) - 1) * 100 : NAN;
}

Table work_table(results::ResultsDb& db, const BuildComparison& c) {
  Table t(fmt::format("Work lane {} of suite {}: {}", c.id, c.info.suite, verdict_text(c)),
          {"case", "phase", "base instructions", "head instructions", "change", "base est. cycles",
           "head est. cycles", "change", "L1 data misses change", "verdict"},
          {}, "", {0, 1, 9});
  struct Sums {
    int64_t instructions = 0, cycles = 0, traffic = 0;
  };
  std::map<std::pair<std::string, std::string>, std::map<std::string, Sums>> by_phase;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& w : db.work_counts(c.id)) {
    if (w.repeat != 0) continue;
    const auto key = std::make_pair(w.case_name, w.phase);
    if (!by_phase.contains(key)) order.push_back(key);
    Sums& s = by_phase[key][w.side];
    s.instructions += w.instructions;
    s.cycles += w.est_cycles;
    s.traffic += w.l1_data_misses;
  }
  std::map<std::string, std::string> verdicts;
  for (const auto& k : db.comparison_cases(c.id)) verdicts[k.case_name] = k.verdict;
  for (const auto& key : order) {
    const Sums b = by_phase[key]["base"], h = by_phase[key]["head"];
    const auto count = [](int64_t v) { return v > 0 ? std::to_string(v) : std::string("-"); };
    const auto v = verdicts.find(key.first + ":" + key.second);
    t.rows.push_back({key.first, key.second, count(b.instructions), count(h.instructions),
                      pct(change(b.instructions, h.instructions)), count(b.cycles), count(h.cycles),
                      pct(change(b.cycles, h.cycles)), pct(change(b.traffic, h.traffic)),
                      v == verdicts.end() ? "-" : v->second});
  }
  t.note = fmt::format(
      "{}. Counted by callgrind in steps 1.. of each case, summed over ranks: the data, "
      "forward, backward and optimizer phases only (communication and waiting left out), ASLR "
      "off, one thread a rank, the ISA held to AVX2; estimated cycles = L1 hits + 5 x LL hits + "
      "35 x RAM accesses under a fixed cache geometry; L1 data misses: the data lines the L1 "
      "missed on a read or a write, the phase's traffic past the L1, judged in one-rank cases "
      "only (with more ranks they move run to run). REGRESSION: a phase's instructions, cycles "
      "or L1 data misses up by more than {:g}%; started {}.",
      sides(c), c.info.threshold_pct, c.info.started_at);
  return t;
}

}  // namespace

std::vector<Table> build_comparison_tables(results::ResultsDb& db) {
  std::vector<Table> tables;
  for (const BuildComparison& c : db.list_comparisons()) {
    tables.push_back(c.info.kind == results::ComparisonKind::kPaired ? paired_table(db, c)
                                                                     : work_table(db, c));
  }
  return tables;
}

}  // namespace trainscope::report
