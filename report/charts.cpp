#include "report/charts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/algorithms.h"
#include "report/answers.h"

namespace trainscope::report {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr size_t kMaxProcesses = 16;

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "NaN"; }

// `set xtics (...)` labelling positions 0..n-1 of a histogram.
std::string histogram_xtics(const std::vector<std::string>& labels) {
  std::string out = "set xtics rotate by -25 nomirror (";
  for (size_t i = 0; i < labels.size(); ++i) {
    out += fmt::format("{}{} {}", i ? ", " : "", gnuplot_quote(labels[i]), i);
  }
  out += ")\n";
  out += fmt::format("set xrange [-0.6:{}]\n", static_cast<double>(labels.size()) - 0.4);
  return out;
}

std::string plot_columns(const std::string& file, int first_column,
                         const std::vector<std::string>& titles) {
  std::string out = "plot ";
  for (size_t i = 0; i < titles.size(); ++i) {
    out += fmt::format("{}{} using {} title {}", i ? ", " : "", i ? "''" : gnuplot_quote(file),
                       first_column + static_cast<int>(i), gnuplot_quote(titles[i]));
  }
  return out + "\n";
}

const char* kHistogramStyle =
    "set style data histograms\n"
    "set style fill solid 0.85 border -1\n"
    "set boxwidth 0.75\n"
    "set yrange [0:*]\n"
    "set bmargin 8\n";

// One stacked bar per rank (`labels`, "case rN"), a segment per column of
// `data` after the first (`titles`), wide enough for every bar's label.
ChartSpec bars_per_rank(std::pair<std::string, std::string> id_and_title,
                        const std::vector<std::string>& labels, DataFile data,
                        const std::string& ylabel, const std::vector<std::string>& titles) {
  ChartSpec chart;
  chart.id = std::move(id_and_title.first);
  chart.title = std::move(id_and_title.second);
  chart.width = std::max(860, 60 * static_cast<int>(labels.size()) + 300);
  chart.script = std::string(kHistogramStyle) + "set style histogram rowstacked\n" + "set ylabel " +
                 gnuplot_quote(ylabel) + "\n" + histogram_xtics(labels) +
                 plot_columns(data.name, 2, titles);
  chart.data.push_back(std::move(data));
  return chart;
}

}  // namespace

std::optional<ChartSpec> phase_chart(const analysis::SuiteData& suite) {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> rows;
  for (const auto& c : suite.cases) {
    auto f = analysis::case_figures(c);
    if (f.usable == 0) continue;
    labels.push_back(c.name);
    rows.push_back(f.phase_mean_s);
  }
  if (rows.empty()) return std::nullopt;
  std::vector<size_t> phases;  // those that took any time anywhere
  for (size_t p = 0; p < std::size(profiler::kPhaseNames); ++p) {
    for (const auto& r : rows) {
      if (r[p] > 0) {
        phases.push_back(p);
        break;
      }
    }
  }
  if (phases.empty()) return std::nullopt;
  std::string data;
  for (size_t i = 0; i < rows.size(); ++i) {
    data += std::to_string(i);
    for (size_t p : phases) {
      data += ' ';
      data += num(rows[i][p] * 1e3);
    }
    data += "\n";
  }
  std::vector<std::string> titles;
  for (size_t p : phases) titles.emplace_back(profiler::kPhaseNames[p]);
  ChartSpec chart;
  chart.id = "phases";
  chart.title = "Step time by phase (mean per step, mean over ranks, median over repetitions)";
  chart.data.push_back({"phases.dat", data});
  chart.script = std::string(kHistogramStyle) + "set style histogram rowstacked\n" +
                 "set ylabel 'ms per step'\n" + histogram_xtics(labels) +
                 plot_columns("phases.dat", 2, titles);
  return chart;
}

std::optional<ChartSpec> rank_times_chart(const analysis::SuiteData& suite) {
  std::vector<std::string> labels;
  std::string data;
  for (const auto& c : suite.cases) {
    const auto ranks = analysis::case_figures(c).rank_times;
    if (ranks.size() < 2) continue;
    for (const auto& r : ranks) {
      labels.push_back(fmt::format("{} r{}{}", c.name, r.rank, r.straggler ? " (straggler)" : ""));
      data +=
          fmt::format("{} {} {}\n", labels.size() - 1, num(r.compute_s * 1e3), num(r.wait_s * 1e3));
    }
  }
  if (labels.empty()) return std::nullopt;
  return bars_per_rank(
      {"rank-times", "Compute and wait in collectives per rank (median ms per step)"}, labels,
      {"ranks.dat", data}, "ms per step", {"compute", "wait"});
}

std::optional<ChartSpec> memory_per_rank_chart(const analysis::SuiteData& suite) {
  std::vector<std::string> labels;
  std::string data;
  for (const auto& c : suite.cases) {
    const analysis::RunData* run = c.first_usable();
    if (!run) continue;
    for (const auto& r : run->summary->ranks) {
      labels.push_back(fmt::format("{} r{}", c.name, r.rank));
      data += std::to_string(labels.size() - 1);
      for (int64_t bytes : r.tracked_peak_by_category.values)
        data += fmt::format(" {}", num(bytes / kMiB));
      data += "\n";
    }
  }
  if (labels.empty()) return std::nullopt;
  std::vector<std::string> titles;
  for (std::string_view name : kernels::kMemoryCategoryNames) {
    std::string title(name);
    std::replace(title.begin(), title.end(), '_', ' ');
    titles.push_back(title);
  }
  return bars_per_rank({"memory-per-rank", "Tracked peak memory per rank, by category"}, labels,
                       {"memory.dat", data}, "MiB", titles);
}

std::optional<ChartSpec> memory_totals_chart(const analysis::SuiteData& suite) {
  std::vector<std::string> labels;
  std::string data;
  for (const auto& c : suite.cases) {
    auto t = analysis::memory_totals(c);
    if (t.tracked_peak < 0) continue;
    auto mib = [](int64_t v) { return v < 0 ? std::string("NaN") : num(v / kMiB); };
    data += fmt::format("{} {} {} {}\n", labels.size(), mib(t.tracked_peak), mib(t.vm_hwm),
                        mib(t.pss_peak));
    labels.push_back(c.name);
  }
  if (labels.empty()) return std::nullopt;
  ChartSpec chart;
  chart.id = "memory-totals";
  chart.title = "Memory summed over all ranks: tracked peak, VmHWM, peak PSS";
  chart.data.push_back({"totals.dat", data});
  chart.script = std::string(kHistogramStyle) + "set style histogram clustered gap 1\n" +
                 "set ylabel 'MiB (sum over ranks)'\n" + histogram_xtics(labels) +
                 plot_columns("totals.dat", 2, {"tracked peak", "VmHWM", "peak PSS"});
  return chart;
}

std::vector<ChartSpec> memory_over_time_charts(const analysis::SuiteData& suite) {
  std::vector<ChartSpec> out;
  for (size_t ci = 0; ci < suite.cases.size(); ++ci) {
    const auto& c = suite.cases[ci];
    const analysis::RunData* run = nullptr;
    for (const auto& r : c.runs) {
      if (!r.poller.empty()) {
        run = &r;
        break;
      }
    }
    if (!run) continue;
    std::map<int64_t, std::vector<const profiler::ProcessSample*>> by_pid;
    std::map<int64_t, int64_t> peak;
    for (const auto& s : run->poller) {
      by_pid[s.pid].push_back(&s);
      peak[s.pid] = std::max(peak[s.pid], s.rss_bytes);
    }
    std::vector<int64_t> pids;
    for (const auto& [pid, samples] : by_pid) pids.push_back(pid);
    std::stable_sort(pids.begin(), pids.end(),
                     [&](int64_t a, int64_t b) { return peak[a] > peak[b]; });
    if (pids.size() > kMaxProcesses) pids.resize(kMaxProcesses);
    ChartSpec chart;
    chart.id = fmt::format("memory-time-{}", ci);
    chart.title = fmt::format(
        "Memory over time per process: {} (repetition {}{})", c.name, run->row.run_case.repetition,
        by_pid.size() > kMaxProcesses
            ? fmt::format(", the {} largest of {} processes", kMaxProcesses, by_pid.size())
            : "");
    std::string plot = "plot ";
    for (size_t i = 0; i < pids.size(); ++i) {
      const auto& samples = by_pid[pids[i]];
      std::string data;
      bool has_pss = false;
      for (const auto* s : samples) {
        has_pss = has_pss || s->pss_bytes >= 0;
        data += fmt::format("{} {} {}\n", num(s->time_seconds), num(s->rss_bytes / kMiB),
                            s->pss_bytes < 0 ? "NaN" : num(s->pss_bytes / kMiB));
      }
      const std::string file = fmt::format("p{}.dat", i);
      chart.data.push_back({file, data});
      const auto* first = samples.front();
      const std::string who =
          first->rank >= 0 ? fmt::format("rank {} pid {}", first->rank, first->pid)
                           : fmt::format("{} pid {}", profiler::role_name(first->role), first->pid);
      plot += fmt::format("{}{} using 1:2 with lines lw 2 lc {} title {}", i ? ", " : "",
                          gnuplot_quote(file), i + 1, gnuplot_quote(who + " RSS"));
      if (has_pss) {
        plot += fmt::format(", {} using 1:3 with lines dt 2 lc {} title {}", gnuplot_quote(file),
                            i + 1, gnuplot_quote(who + " PSS"));
      }
    }
    chart.script = "set xlabel 'seconds'\nset ylabel 'MiB'\nset yrange [0:*]\n" + plot + "\n";
    out.push_back(std::move(chart));
  }
  return out;
}

std::optional<ChartSpec> loss_chart(const analysis::SuiteData& suite) {
  ChartSpec chart;
  chart.id = "loss";
  chart.title = "Train loss (rank 0, first usable repetition) and validation loss";
  std::string plot;
  int series = 0;
  for (size_t ci = 0; ci < suite.cases.size(); ++ci) {
    const auto& c = suite.cases[ci];
    const analysis::RunData* run = c.first_usable();
    if (!run) continue;
    const auto& s = *run->summary;
    if (!s.steps.empty() && !s.steps.front().empty()) {
      std::string data;
      for (const auto& st : s.steps.front()) data += fmt::format("{} {}\n", st.step, num(st.loss));
      const std::string file = fmt::format("train{}.dat", ci);
      chart.data.push_back({file, data});
      plot += fmt::format("{}{} using 1:2 with lines lw 2 lc {} title {}", series++ ? ", " : "",
                          gnuplot_quote(file), ci + 1, gnuplot_quote(c.name + " train"));
    }
    if (!s.val.empty()) {
      std::string data;
      for (const auto& v : s.val) data += fmt::format("{} {}\n", v.step, num(v.loss));
      const std::string file = fmt::format("val{}.dat", ci);
      chart.data.push_back({file, data});
      plot += fmt::format("{}{} using 1:2 with linespoints dt 2 pt 7 lc {} title {}",
                          series++ ? ", " : "", gnuplot_quote(file), ci + 1,
                          gnuplot_quote(c.name + " validation"));
    }
  }
  if (series == 0) return std::nullopt;
  chart.script = "set xlabel 'step'\nset ylabel 'loss'\nplot " + plot + "\n";
  return chart;
}

std::optional<ChartSpec> bucket_chart(const analysis::SuiteData& suite) {
  struct Point {
    double bucket_mb;
    analysis::Interval comm_ms;  // median over the repetitions and its 95% interval
    bool operator<(const Point& o) const { return bucket_mb < o.bucket_mb; }
  };
  std::map<std::string, std::vector<Point>> by_reduction;
  std::set<double> sizes;
  for (const auto& c : suite.cases) {
    if (!c.run_case.bucket_mb) continue;
    std::vector<double> comm_ms;
    for (const results::RunFigures& f : analysis::repetition_figures(c)) {
      comm_ms.push_back(f.phase_mean_s.values[static_cast<size_t>(profiler::Phase::kComm)] * 1e3);
    }
    if (comm_ms.empty()) continue;
    by_reduction[c.run_case.reduction].push_back(
        {*c.run_case.bucket_mb, analysis::bootstrap_median(comm_ms)});
    sizes.insert(*c.run_case.bucket_mb);
  }
  if (sizes.size() < 2) return std::nullopt;
  ChartSpec chart;
  chart.id = "buckets";
  chart.title = "Gradient reduction time per step vs bucket size (medians, 95% intervals)";
  std::string plot;
  int i = 0;
  for (auto& [reduction, points] : by_reduction) {
    std::sort(points.begin(), points.end());
    std::string data;  // bucket, comm ms and its interval (a bar of no length without one)
    for (const Point& p : points) {
      const analysis::Interval& v = p.comm_ms;
      const bool iv = v.has_interval();
      data += fmt::format("{} {} {} {}\n", num(p.bucket_mb), num(v.estimate),
                          num(iv ? v.low : v.estimate), num(iv ? v.high : v.estimate));
    }
    const std::string file = fmt::format("bucket{}.dat", i);
    chart.data.push_back({file, data});
    plot += fmt::format("{}{} using 1:2:3:4 with yerrorlines lw 2 pt 7 title {}", i++ ? ", " : "",
                        gnuplot_quote(file),
                        gnuplot_quote(reduction.empty() ? "(no reduction)" : reduction));
  }
  chart.script =
      "set xlabel 'bucket size (MiB)'\nset ylabel 'comm ms per step'\nset yrange [0:*]\n"
      "plot " +
      plot + "\n";
  return chart;
}

std::optional<ChartSpec> links_chart(const analysis::SuiteData& suite) {
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  std::set<int> counts;
  for (const auto& c : suite.cases) {
    const int links = analysis::tcp_links(c.run_case.links);
    const analysis::RunData* run = c.first_usable();
    if (links == 0 || !run) continue;
    double gbps = std::numeric_limits<double>::quiet_NaN();
    if (!run->allreduce.empty()) {
      gbps = 0;
      for (const auto& r : run->allreduce) gbps = std::max(gbps, r.busbw_gbps);
    } else {
      double sum = 0;
      int n = 0;
      for (const auto& r : run->summary->ranks) {
        if (r.comm.time_s > 0) {
          sum += static_cast<double>(r.comm.bytes) / r.comm.time_s / 1e9;
          ++n;
        }
      }
      if (n) gbps = sum / n;
    }
    if (!std::isfinite(gbps)) continue;
    const std::string name =
        run->allreduce.empty()
            ? fmt::format("{} {} (comm bytes / comm time)", c.run_case.mode, c.run_case.reduction)
            : "all-reduce peak busbw";
    series[name].emplace_back(links, gbps);
    counts.insert(links);
  }
  if (counts.size() < 2) return std::nullopt;
  ChartSpec chart;
  chart.id = "links";
  chart.title = "Bandwidth vs number of TCP links";
  std::string plot;
  int i = 0;
  for (auto& [name, points] : series) {
    std::sort(points.begin(), points.end());
    std::string data;
    for (auto [x, y] : points) data += fmt::format("{} {}\n", num(x), num(y));
    const std::string file = fmt::format("links{}.dat", i);
    chart.data.push_back({file, data});
    plot += fmt::format("{}{} using 1:2 with linespoints lw 2 pt 7 title {}", i++ ? ", " : "",
                        gnuplot_quote(file), gnuplot_quote(name));
  }
  chart.script =
      "set xlabel 'links'\nset xtics 1\nset ylabel 'GB/s'\nset yrange [0:*]\n"
      "plot " +
      plot + "\n";
  return chart;
}

namespace {

// The first run of a case with sweep rows; nullptr when none has.
const analysis::RunData* first_sweep(const analysis::CaseData& c) {
  for (const auto& r : c.runs) {
    if (!r.allreduce.empty()) return &r;
  }
  return nullptr;
}

// What a case's busbw curves are called: its name, or, in a suite that
// compares all-reduce algorithms, the algorithm's (with the case's name where
// two cases share an algorithm).
std::map<std::string, std::string> busbw_series_names(const analysis::SuiteData& suite) {
  std::map<std::string, std::string> names;
  std::map<std::string, int> uses;
  for (const auto& c : suite.cases) {
    if (first_sweep(c)) ++uses[case_reduction(c).label()];
  }
  const bool by_algorithm = suite_varies_reduction(suite);
  for (const auto& c : suite.cases) {
    const std::string label = case_reduction(c).label();
    names[c.name] = !by_algorithm ? c.name : uses[label] > 1 ? label + " (" + c.name + ")" : label;
  }
  return names;
}

}  // namespace

std::optional<ChartSpec> busbw_chart(const analysis::SuiteData& suite) {
  ChartSpec chart;
  chart.id = "busbw";
  chart.title = "All-reduce bus bandwidth vs message size";
  std::string plot;
  int i = 0;
  const auto series_names = busbw_series_names(suite);
  for (const auto& c : suite.cases) {
    const analysis::RunData* run = first_sweep(c);
    if (!run) continue;
    const std::string& name = series_names.at(c.name);
    std::map<std::string, std::vector<const results::AllReduceRow*>> by_links;
    for (const auto& row : run->allreduce) {
      by_links[fmt::format("{} {} np{}", row.transport, row.links, row.world_size)].push_back(&row);
    }
    for (auto& [key, rows] : by_links) {
      std::sort(rows.begin(), rows.end(),
                [](auto* a, auto* b) { return a->size_bytes < b->size_bytes; });
      std::string data;
      for (const auto* r : rows) {
        if (r->size_bytes > 0) data += fmt::format("{} {}\n", r->size_bytes, num(r->busbw_gbps));
      }
      if (data.empty()) continue;
      const std::string file = fmt::format("busbw{}.dat", i);
      chart.data.push_back({file, data});
      plot += fmt::format("{}{} using 1:2 with linespoints lw 2 pt 7 title {}", i++ ? ", " : "",
                          gnuplot_quote(file),
                          gnuplot_quote(by_links.size() > 1 ? name + " (" + key + ")" : name));
    }
  }
  if (i == 0) return std::nullopt;
  chart.script =
      "set logscale x 2\nset format x '%.0s%cB'\nset xlabel 'message size'\n"
      "set ylabel 'busbw GB/s'\nset yrange [0:*]\nplot " +
      plot + "\n";
  return chart;
}

std::optional<ChartSpec> amdahl_chart(const analysis::SuiteData& suite,
                                      const Comparison& comparison) {
  auto points = scaling_points(suite, comparison);
  auto fit = fit_amdahl(points);
  if (!fit) return std::nullopt;
  double n_max = 1;
  std::string data;  // n, speedup and its 95% interval (a bar of no length without one)
  for (const auto& p : points) {
    const bool iv = p.interval.has_interval();
    data +=
        fmt::format("{} {} {} {}\n", num(p.n), num(p.speedup), num(iv ? p.interval.low : p.speedup),
                    num(iv ? p.interval.high : p.speedup));
    n_max = std::max(n_max, p.n);
  }
  ChartSpec chart;
  chart.id = "amdahl";
  chart.title =
      fmt::format("Speedup vs ranks, Amdahl fit: serial fraction {:.4f}", fit->serial_fraction);
  chart.data.push_back({"speedup.dat", data});
  chart.script = fmt::format(
      "f = {}\n"
      "amdahl(x) = 1.0 / (f + (1.0 - f) / x)\n"
      "set xlabel 'ranks (relative to the baseline)'\nset ylabel 'speedup (tokens/s)'\n"
      "set xrange [1:{}]\nset yrange [0:*]\nset samples 200\n"
      "plot x with lines dt 3 lc rgb '#888888' title 'ideal', "
      "amdahl(x) with lines lw 2 lc rgb '#d62728' title {}, "
      "'speedup.dat' using 1:2:3:4 with yerrorbars pt 7 ps 1.5 lc rgb '#1f77b4' "
      "title 'measured (95% interval)'\n",
      num(fit->serial_fraction), num(std::max(2.0, n_max)),
      gnuplot_quote(fmt::format("Amdahl, serial fraction {:.4f}", fit->serial_fraction)));
  return chart;
}

std::vector<ChartSpec> suite_charts(const analysis::SuiteData& suite,
                                    const Comparison& comparison) {
  std::vector<ChartSpec> out;
  auto add = [&](std::optional<ChartSpec> c) {
    if (c) out.push_back(std::move(*c));
  };
  add(phase_chart(suite));
  add(rank_times_chart(suite));
  add(memory_per_rank_chart(suite));
  add(memory_totals_chart(suite));
  for (auto& c : memory_over_time_charts(suite)) out.push_back(std::move(c));
  add(loss_chart(suite));
  add(bucket_chart(suite));
  add(links_chart(suite));
  add(busbw_chart(suite));
  add(amdahl_chart(suite, comparison));
  add(prediction_chart(suite));
  return out;
}

}  // namespace trainscope::report
