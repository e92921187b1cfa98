#include "analysis/suite_data.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "base/check.h"
#include "profiler/stats.h"

namespace trainscope::analysis {

std::vector<const RunData*> CaseData::usable_runs() const {
  std::vector<const RunData*> out;
  for (const auto& r : runs) {
    if (r.usable()) out.push_back(&r);
  }
  return out;
}

bool alike_but(const CaseData& a, const CaseData& b, std::initializer_list<const char*> ignored) {
  nlohmann::json x = a.run_case.config, y = b.run_case.config;
  if (!x.is_object() || !y.is_object()) return false;
  for (const char* key : {"name", "skip_reason"}) {
    x.erase(key);
    y.erase(key);
  }
  for (const char* key : ignored) {
    x.erase(key);
    y.erase(key);
  }
  return x == y;
}

results::MemoryByCategory peak_by_category(const results::RunSummary& s) {
  results::MemoryByCategory m;
  m.values.fill(-1);
  for (const auto& r : s.ranks) {
    for (size_t i = 0; i < m.values.size(); ++i) {
      m.values[i] = std::max(m.values[i], r.tracked_peak_by_category.values[i]);
    }
  }
  return m;
}

const CaseData* SuiteData::find_case(std::string_view name) const {
  for (const auto& c : cases) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

int64_t resolve_suite(results::ResultsDb& db, std::string_view selector) {
  const std::string where = db.path().string();
  if (selector == "latest") {
    auto id = db.latest_suite_id();
    if (!id) throw Error(fmt::format("{}: the database holds no suite", where));
    return *id;
  }
  int64_t id = 0;
  auto [end, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), id);
  if (ec != std::errc() || end != selector.data() + selector.size() || id <= 0) {
    throw Error(fmt::format("--suite '{}': expected 'latest' or a suite id (a positive integer)",
                            selector));
  }
  if (!db.suite(id)) {
    throw Error(
        fmt::format("{}: no suite with id {} (trainscope report --db {} --format md "
                    "--suite all lists them)",
                    where, id, where));
  }
  return id;
}

std::vector<int64_t> resolve_suites(results::ResultsDb& db, std::string_view selector) {
  if (selector != "all") return {resolve_suite(db, selector)};
  std::vector<int64_t> ids;
  for (const auto& s : db.list_suites()) ids.push_back(s.id);
  if (ids.empty()) throw Error(fmt::format("{}: the database holds no suite", db.path().string()));
  return ids;
}

SuiteData load_suite(results::ResultsDb& db, int64_t suite_id) {
  SuiteData out;
  out.db_path = db.path().string();
  // The runner may be committing cases while a report is made.
  auto snapshot = db.snapshot();
  auto suite = db.suite(suite_id);
  if (!suite) throw Error(fmt::format("{}: no suite with id {}", out.db_path, suite_id));
  out.suite = *suite;
  std::map<std::string, size_t> index;
  for (auto& row : db.list_runs(suite_id)) {
    auto [it, inserted] = index.try_emplace(row.run_case.case_name, out.cases.size());
    if (inserted) {
      out.cases.push_back(CaseData{row.run_case.case_name, row.run_case, {}});
    }
    RunData run;
    run.summary = db.run_summary(row.id);
    run.poller = db.poller_samples(row.id);
    run.allreduce = db.allreduce_rows(row.id);
    run.row = std::move(row);
    out.cases[it->second].runs.push_back(std::move(run));
  }
  out.simulations = db.simulations(suite_id);
  out.limits = db.machine_limits(suite_id);
  if (out.limits.empty()) {
    const auto host = out.suite.info.host_facts.find("hostname");
    for (auto& l : db.machine_limits(std::nullopt)) {  // the doctor's, latest first
      if (host != out.suite.info.host_facts.end() && host->is_string() && *host == l.host) {
        out.limits.push_back(std::move(l));
      }
    }
  }
  return out;
}

namespace {

// The busiest load over the runs; *loaded counts the loaded runs.
results::RunLoad busiest_load(const std::vector<results::RunFigures>& runs, int* loaded) {
  results::RunLoad out;
  for (const auto& run : runs) {
    out = results::busier(out, run.load);
    if (!run.load.loaded.empty()) ++*loaded;
  }
  return out;
}

// Rank by rank, the median over the repetitions of each time; the flags
// follow from those medians.
std::vector<results::RankTimes> median_rank_times(const std::vector<results::RunFigures>& runs) {
  std::map<int, std::vector<const results::RankTimes*>> by_rank;
  for (const auto& run : runs) {
    for (const auto& t : run.rank_times) by_rank[t.rank].push_back(&t);
  }
  std::vector<results::RankTimes> out;
  for (const auto& [rank, times] : by_rank) {
    auto median = [&times](double results::RankTimes::*member) {
      std::vector<double> values;
      for (const auto* t : times) values.push_back(t->*member);
      return results::median_of(std::move(values));
    };
    out.push_back({.rank = rank,
                   .compute_s = median(&results::RankTimes::compute_s),
                   .wait_s = median(&results::RankTimes::wait_s),
                   .comm_time_s = median(&results::RankTimes::comm_time_s),
                   .waiting_for_others_s = median(&results::RankTimes::waiting_for_others_s),
                   .transfer_s = median(&results::RankTimes::transfer_s),
                   .optimizer_s = median(&results::RankTimes::optimizer_s)});
  }
  results::flag_stragglers(out);
  return out;
}

}  // namespace

std::vector<results::RunFigures> repetition_figures(const CaseData& c) {
  std::vector<results::RunFigures> out;
  for (const RunData* r : c.usable_runs())
    out.push_back(results::run_figures(&*r->summary, r->allreduce));
  return out;
}

CaseFigures case_figures(const CaseData& c) {
  CaseFigures f;
  f.repetitions = static_cast<int>(c.runs.size());
  f.world_size = c.run_case.world_size;
  auto usable = c.usable_runs();
  f.usable = static_cast<int>(usable.size());
  for (const auto& r : c.runs) {
    if (r.usable()) continue;
    if (f.reason.empty()) {
      std::string error = r.row.error;
      if (error.empty() && r.summary) error = r.summary->error;
      if (error.empty() && r.row.status == results::RunStatus::kOk) error = "no run summary";
      if (error.empty() && r.row.exit_code) error = fmt::format("exit code {}", *r.row.exit_code);
      f.reason = error.empty() ? std::string("no reason recorded") : error;
      f.status = std::string(results::to_string(r.row.status));
    }
  }
  if (f.usable == f.repetitions) {
    f.status = "ok";
  } else if (f.usable > 0) {
    f.status = "partial";
    f.reason = fmt::format("{} of {} repetitions not usable; first {}: {}",
                           f.repetitions - f.usable, f.repetitions, f.status, f.reason);
  }
  const std::vector<results::RunFigures> runs = repetition_figures(c);
  auto median = [&](auto figure) {
    std::vector<double> values;
    for (const auto& run : runs) values.push_back(figure(run));
    return results::median_of(std::move(values));
  };
  f.tokens_per_s = median([](const auto& r) { return r.tokens_per_s; });
  f.step_median_s = median([](const auto& r) { return r.step_median_s; });
  f.step_p95_s = median([](const auto& r) { return r.step_p95_s; });
  f.step_mean_s = median([](const auto& r) { return r.step_mean_s; });
  for (size_t p = 0; p < profiler::kPhaseNames.size(); ++p) {
    f.phase_mean_s.push_back(median([p](const auto& r) { return r.phase_mean_s.values[p]; }));
  }
  f.comm_share = median([](const auto& r) { return r.comm_share; });
  f.comm_exposed_s = median([](const auto& r) { return r.comm_exposed_s; });
  f.load = busiest_load(runs, &f.loaded);
  f.rank_times = median_rank_times(runs);
  f.straggler_s = median([](const auto& r) { return r.straggler_s; });
  f.rank_gflops = median([](const auto& r) { return r.rank_gflops; });
  f.grad_busbw_gbps = median([](const auto& r) { return r.grad_busbw_gbps; });
  f.host_cpu_busy = median([](const auto& r) { return r.host_cpu_busy; });
  return f;
}

MemoryTotals memory_totals(const CaseData& c) {
  MemoryTotals t;
  const RunData* run = c.first_usable();
  if (!run) return t;
  int64_t tracked = 0, hwm = 0, pss = 0;
  bool hwm_known = !run->summary->ranks.empty(), pss_known = hwm_known;
  for (const auto& r : run->summary->ranks) {
    tracked += r.tracked_peak_total;
    if (r.vm_hwm < 0) hwm_known = false;
    hwm += std::max<int64_t>(r.vm_hwm, 0);
    if (r.pss < 0) pss_known = false;
    pss += std::max<int64_t>(r.pss, 0);
  }
  t.tracked_peak = tracked;
  t.vm_hwm = hwm_known ? hwm : -1;
  // The poller sees the whole run, the ranks only their final reading: prefer
  // the poller's peak per rank process.
  std::map<int64_t, int64_t> peak_by_pid;
  for (const auto& s : run->poller) {
    if (s.rank < 0 || s.pss_bytes < 0) continue;
    auto& p = peak_by_pid[s.pid];
    p = std::max(p, s.pss_bytes);
  }
  if (!peak_by_pid.empty()) {
    int64_t sum = 0;
    for (const auto& [pid, peak] : peak_by_pid) sum += peak;
    t.pss_peak = sum;
    t.pss_source = "poller";
  } else if (pss_known) {
    t.pss_peak = pss;
    t.pss_source = "ranks";
  }
  return t;
}

int tcp_links(const std::string& links) {
  int n = 0;
  const char* end = links.data() + links.size();
  const auto [ptr, ec] = std::from_chars(links.data(), end, n);
  return ec == std::errc() && ptr == end && n > 0 ? n : 0;
}

}  // namespace trainscope::analysis
