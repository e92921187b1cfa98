#include "check/history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/quote.h"
#include "base/format.h"

namespace trainscope::check {

namespace {

// One case's repetitions at one revision, pooled over that revision's suites.
struct RevisionSamples {
  std::string revision;
  int64_t first_suite_id = 0;
  std::vector<double> step_time_s;
  std::vector<double> tokens_per_s;
};

std::string revision_of(const analysis::SuiteData& s) {
  return s.suite.info.git_revision.empty() ? "unknown" : s.suite.info.git_revision;
}

void add_case_runs(const analysis::CaseData& c, RevisionSamples& into) {
  for (const analysis::RunData* run : c.usable_runs()) {
    into.step_time_s.push_back(run->summary->totals.step_time_median_s);
    into.tokens_per_s.push_back(run->summary->totals.tokens_per_s);
  }
}

CaseHistory case_history(const std::string& suite, const std::string& name,
                         const std::vector<RevisionSamples>& by_revision, double alpha) {
  CaseHistory h{suite, name, {}, {}, {}};
  std::vector<double> medians;
  for (const RevisionSamples& r : by_revision) {
    if (r.step_time_s.empty()) continue;
    HistoryPoint p;
    p.revision = r.revision;
    p.first_suite_id = r.first_suite_id;
    p.repetitions = static_cast<int>(r.step_time_s.size());
    p.step_time_s = analysis::bootstrap_median(r.step_time_s);
    p.tokens_per_s = analysis::bootstrap_median(r.tokens_per_s);
    medians.push_back(p.step_time_s.estimate);
    h.points.push_back(std::move(p));
  }
  for (const analysis::ChangePoint& cp : analysis::find_change_points(medians, alpha)) {
    h.changes.push_back({cp.index, h.points[cp.index].revision, cp});
  }
  if (medians.size() >= 2 && !(analysis::pettitt_min_p_value(medians.size()) < alpha)) {
    h.too_short = fmt::format(
        "{} / {}: {} revisions cannot show a change at p < {:g} (the smallest p of Pettitt's test "
        "over {} values is {:.2f}): no change is found or ruled out before {} revisions",
        suite, name, medians.size(), alpha, medians.size(),
        analysis::pettitt_min_p_value(medians.size()), analysis::pettitt_values_needed(alpha));
  }
  return h;
}

}  // namespace

std::string interval_ms(const analysis::Interval& iv) {
  analysis::Interval ms = iv;
  ms.estimate *= 1e3;
  ms.low *= 1e3;
  ms.high *= 1e3;
  return analysis::format_interval(ms, 3, "");
}

std::string change_sentence(const CaseHistory& h, const HistoryChange& c) {
  return fmt::format(
      "{} / {}: step time changed at revision {} (first after the change; median {} -> {} ms, "
      "Pettitt p = {:.3f})",
      h.suite, h.case_name, c.first_revision, format_number(c.test.median_before * 1e3, 3),
      format_number(c.test.median_after * 1e3, 3), c.test.p_value);
}

std::map<std::string, std::vector<const CaseHistory*>> by_suite(
    const std::vector<CaseHistory>& history) {
  std::map<std::string, std::vector<const CaseHistory*>> out;
  for (const CaseHistory& h : history) out[h.suite].push_back(&h);
  return out;
}

size_t revision_count(const std::vector<analysis::SuiteData>& suites) {
  std::set<std::string> revisions;
  for (const analysis::SuiteData& s : suites) revisions.insert(revision_of(s));
  return revisions.size();
}

std::vector<CaseHistory> build_history(const std::vector<analysis::SuiteData>& suites,
                                       double alpha) {
  // suite name -> case name -> revisions in order of first measurement.
  std::map<std::string, std::map<std::string, std::vector<RevisionSamples>>> samples;
  std::vector<std::pair<std::string, std::string>> order;  // (suite, case) as first seen
  // Suite ids grow as suites are run: the revisions in the order measured.
  std::vector<const analysis::SuiteData*> by_id;
  for (const analysis::SuiteData& s : suites) by_id.push_back(&s);
  std::sort(by_id.begin(), by_id.end(),
            [](const analysis::SuiteData* a, const analysis::SuiteData* b) {
              return a->suite.id < b->suite.id;
            });
  for (const analysis::SuiteData* suite : by_id) {
    const analysis::SuiteData& s = *suite;
    const std::string revision = revision_of(s);
    for (const analysis::CaseData& c : s.cases) {
      auto& revisions = samples[s.suite.info.name][c.name];
      if (revisions.empty()) order.emplace_back(s.suite.info.name, c.name);
      auto it = std::find_if(revisions.begin(), revisions.end(),
                             [&](const RevisionSamples& r) { return r.revision == revision; });
      if (it == revisions.end()) {
        revisions.push_back({revision, s.suite.id, {}, {}});
        it = revisions.end() - 1;
      }
      add_case_runs(c, *it);
    }
  }
  std::vector<CaseHistory> out;
  for (const auto& [suite, name] : order) {
    out.push_back(case_history(suite, name, samples[suite][name], alpha));
  }
  return out;
}

std::string history_text(const std::vector<CaseHistory>& history) {
  std::string out;
  for (const auto& [suite, cases] : by_suite(history)) {
    out += fmt::format("suite {}: step time median ms [95% interval] per revision\n",
                       terminal_safe(suite));
    for (const CaseHistory* h : cases) {
      out += fmt::format("  {}\n", terminal_safe(h->case_name));
      for (size_t i = 0; i < h->points.size(); ++i) {
        const HistoryPoint& p = h->points[i];
        const bool change = std::any_of(h->changes.begin(), h->changes.end(),
                                        [&](const HistoryChange& c) { return c.index == i; });
        out += fmt::format("    {:<20} {:>3} reps  {}  tokens/s {}{}\n", terminal_safe(p.revision),
                           p.repetitions, interval_ms(p.step_time_s),
                           analysis::format_interval(p.tokens_per_s, 1, ""),
                           change ? "  <- change" : "");
      }
    }
    for (const CaseHistory* h : cases) {
      for (const HistoryChange& c : h->changes)
        out += terminal_safe(change_sentence(*h, c), 1000) + "\n";
      if (!h->too_short.empty()) out += terminal_safe(h->too_short, 1000) + "\n";
    }
  }
  return out;
}

std::string history_markdown(const std::vector<CaseHistory>& history) {
  std::string out = "## History across revisions\n\n";
  for (const auto& [suite, cases] : by_suite(history)) {
    out += fmt::format(
        "Suite {}: step time median, ms, with its 95% interval over the "
        "repetitions of each revision.\n\n",
        markdown_cell(suite));
    out += "| case | revision | reps | step ms | tokens/s | change |\n|:--|:--|--:|--:|--:|:--|\n";
    for (const CaseHistory* h : cases) {
      for (size_t i = 0; i < h->points.size(); ++i) {
        const HistoryPoint& p = h->points[i];
        const bool change = std::any_of(h->changes.begin(), h->changes.end(),
                                        [&](const HistoryChange& c) { return c.index == i; });
        out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", markdown_cell(h->case_name),
                           markdown_cell(p.revision), p.repetitions, interval_ms(p.step_time_s),
                           analysis::format_interval(p.tokens_per_s, 1, ""),
                           change ? "**change**" : "");
      }
    }
    out += "\n";
    for (const CaseHistory* h : cases) {
      for (const HistoryChange& c : h->changes)
        out += "- " + markdown_cell(change_sentence(*h, c)) + "\n";
      if (!h->too_short.empty()) out += "- " + markdown_cell(h->too_short) + "\n";
    }
  }
  return out + "\n";
}

}  // namespace trainscope::check
