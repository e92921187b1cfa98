#include "report/report.h"

#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/blas_core.h"
#include "base/check.h"
#include "kernels/storage.h"
#include "report/algorithms.h"
#include "report/answers.h"
#include "report/engines.h"
#include "report/charts.h"
#include "report/comparison.h"
#include "report/gnuplot.h"
#include "report/limits.h"
#include "report/table.h"

namespace trainscope::report {

namespace {

constexpr std::string_view kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.name, th.name { text-align: left; }
td { white-space: nowrap; } td.name { white-space: normal; }
tr.baseline { background: #eef6ff; }
tr.straggler { background: #fff0e0; }
.status-failed, .status-skipped, .status-running { color: #b00020; }
.status-partial { color: #a66a00; }
.note { background: #fff6d6; border: 1px solid #e0c060; padding: 0.5em 1em; }
.error { background: #fde8e8; border: 1px solid #d08080; padding: 0.5em 1em; }
figure { margin: 1em 0; } figcaption { font-weight: 600; margin-bottom: 0.3em; }
figure svg { max-width: 100%; height: auto; }
dl.findings dt { font-weight: 600; margin-top: 0.6em; } dl.findings dd { margin-left: 1.5em; }
.meta { color: #555; font-size: 0.9em; }
)css";

std::string td(std::string_view text, std::string_view cls = "") {
  return cls.empty() ? fmt::format("<td>{}</td>", html_escape(text))
                     : fmt::format("<td class=\"{}\">{}</td>", cls, html_escape(text));
}

std::string ms_2dp(double seconds) { return format_number(seconds * 1e3, 2); }

std::string percent(double share) {
  return std::isnan(share) ? "-" : format_number(share * 100, 1) + "%";
}

// A case with repetitions measured on a loaded machine carries this mark in
// its status, "ok" or not, and the table a footnote naming it, as `check`
// warns of it: its timings may be the machine's (issue 37).
constexpr std::string_view kLoadedMark = "\u2020";  // a dagger

std::string status_text(const analysis::CaseFigures& f) {
  std::string text = f.reason.empty() ? f.status : f.status + " (" + f.reason + ")";
  if (f.loaded > 0) text += fmt::format(" {}", kLoadedMark);
  return text;
}

// The footnote of the marked cases; "" when none is.
std::string loaded_footnote(const Comparison& cmp) {
  std::vector<std::string> cases;
  for (const auto& r : cmp.rows) {
    if (r.figures.loaded == 0) continue;
    cases.push_back(fmt::format("{} ({} of {} usable repetitions)", r.case_name, r.figures.loaded,
                                r.figures.usable));
  }
  if (cases.empty()) return "";
  return fmt::format(
      "{} measured on a loaded machine: {}; the timings may be the machine's, not the code's "
      "(see Machine load)",
      kLoadedMark, fmt::join(cases, ", "));
}

// Each case's all-reduce (algorithm, ZeRO, comm dtype) by name, for the comparison
// tables; empty for a suite whose cases all use the defaults, which then
// have no such column.
std::map<std::string, std::string> reduction_labels(const analysis::SuiteData& suite) {
  std::map<std::string, std::string> labels;
  if (!suite_varies_reduction(suite)) return labels;
  for (const auto& c : suite.cases) labels[c.name] = case_reduction(c).label();
  return labels;
}

// How the comparison's intervals are made, and which cases have none.
std::string interval_caption(const Comparison& cmp) {
  std::vector<std::string> single;
  for (const auto& r : cmp.rows) {
    if (r.figures.usable == 1) single.push_back(r.case_name);
  }
  std::string out =
      "tokens/s and speedup with 95% intervals over the repetitions (bootstrap of the median and "
      "of the ratio of medians)";
  if (single.size() == cmp.rows.size()) return out + "; one repetition: no interval";
  if (!single.empty())
    out += fmt::format("; one repetition, no interval: {}", fmt::join(single, ", "));
  return out;
}

std::string comparison_table_html(const analysis::SuiteData& suite, const Comparison& cmp) {
  const auto reductions = reduction_labels(suite);
  std::string out = fmt::format(
      "<table class=\"comparison\"><tr><th class=\"name\">case</th>{}<th>ranks</th><th>reps</th>"
      "<th>tokens/s</th><th>speedup</th><th>scaling eff.</th><th>step median ms</th>"
      "<th>step p95 ms</th><th>comm share</th><th>exposed comm ms</th>"
      "<th class=\"name\">status</th></tr>\n",
      reductions.empty() ? "" : "<th class=\"name\">all-reduce</th>");
  for (const auto& r : cmp.rows) {
    const auto& f = r.figures;
    out += r.is_baseline ? "<tr class=\"baseline\">" : "<tr>";
    out += td(r.is_baseline ? r.case_name + " (baseline)" : r.case_name, "name");
    if (!reductions.empty()) out += td(reductions.at(r.case_name), "name");
    out += td(std::to_string(f.world_size));
    out += td(fmt::format("{}/{}", f.usable, f.repetitions));
    out += td(with_interval(f.tokens_per_s, r.tokens_interval, 1, ""));
    out += td(with_interval(r.speedup, r.speedup_interval, 2, "x"));
    out += td(percent(r.efficiency));
    out += td(ms_2dp(f.step_median_s));
    out += td(ms_2dp(f.step_p95_s));
    out += td(percent(f.comm_share));
    out += td(ms_2dp(f.comm_exposed_s));
    out += td(status_text(f), "name status-" + f.status);
    out += "</tr>\n";
  }
  out += "</table>\n<p class=\"meta\">" + html_escape(interval_caption(cmp)) + "</p>\n";
  if (const std::string note = loaded_footnote(cmp); !note.empty()) {
    out += "<p class=\"meta loaded\">" + html_escape(note) + "</p>\n";
  }
  return out;
}

// ---- per-rank compute and wait, and stragglers ----

constexpr std::string_view kRankTimesCaption =
    "Per-rank time per step: compute is the training thread's time outside collectives (the "
    "optimizer is part of it), wait its time inside them (arrival to completion), split step by "
    "step into waiting for slower ranks and transfer (the least wait of any rank in the step: the "
    "last to arrive waits for nothing else), all-reduce the gradient reduction in flight (overlap: "
    "its thread); medians over the measured steps and the repetitions";

// Cases with more than one rank that measured anything.
std::vector<const ComparisonRow*> multi_rank_rows(const Comparison& cmp) {
  std::vector<const ComparisonRow*> rows;
  for (const auto& r : cmp.rows) {
    if (r.figures.rank_times.size() > 1) rows.push_back(&r);
  }
  return rows;
}

std::string signed_percent(double share) {
  return std::isnan(share) ? "-" : fmt::format("{:+.1f}%", share * 100);
}

// "even 0.05 ms, rank1-slow 51.70 ms": the straggler figure of each case.
std::string straggler_figures(const std::vector<const ComparisonRow*>& rows) {
  std::vector<std::string> parts;
  for (const auto* r : rows) {
    parts.push_back(r->case_name + " " + ms_2dp(r->figures.straggler_s) + " ms");
  }
  return fmt::format(
      "Straggler figure per step (sum over ranks of compute beyond the fastest "
      "rank): {}.",
      fmt::join(parts, ", "));
}

std::string rank_times_html(const Comparison& cmp) {
  const auto rows = multi_rank_rows(cmp);
  if (rows.empty()) return "";
  std::string out = fmt::format(
      "<h3>Compute and wait per rank</h3>\n<p class=\"meta\">{}.</p>\n"
      "<table class=\"rank-times\"><tr><th class=\"name\">case</th><th>rank</th>"
      "<th>compute ms</th><th>optimizer ms</th><th>wait ms</th><th>waiting for others ms</th>"
      "<th>transfer ms</th><th>all-reduce ms</th><th>compute vs median</th>"
      "<th class=\"name\">straggler</th></tr>\n",
      html_escape(kRankTimesCaption));
  for (const auto* r : rows) {
    for (const auto& t : r->figures.rank_times) {
      out += t.straggler ? "<tr class=\"straggler\">" : "<tr>";
      out += td(r->case_name, "name") + td(std::to_string(t.rank)) + td(ms_2dp(t.compute_s)) +
             td(ms_2dp(t.optimizer_s)) + td(ms_2dp(t.wait_s)) + td(ms_2dp(t.waiting_for_others_s)) +
             td(ms_2dp(t.transfer_s)) + td(ms_2dp(t.comm_time_s)) +
             td(signed_percent(t.compute_vs_median)) +
             td(t.straggler ? results::straggler_note(t) : "", "name") + "</tr>\n";
    }
  }
  return out + "</table>\n<p class=\"stragglers\">" + html_escape(straggler_figures(rows)) +
         "</p>\n";
}

std::string rank_times_markdown(const Comparison& cmp) {
  const auto rows = multi_rank_rows(cmp);
  if (rows.empty()) return "";
  std::string out = fmt::format("{}:\n\n", kRankTimesCaption);
  out +=
      "| case | rank | compute ms | optimizer ms | wait ms | waiting for others ms | transfer ms "
      "| all-reduce ms | compute vs median | straggler |\n"
      "|:--|--:|--:|--:|--:|--:|--:|--:|--:|:--|\n";
  for (const auto* r : rows) {
    for (const auto& t : r->figures.rank_times) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                         markdown_cell(r->case_name), t.rank, ms_2dp(t.compute_s),
                         ms_2dp(t.optimizer_s), ms_2dp(t.wait_s), ms_2dp(t.waiting_for_others_s),
                         ms_2dp(t.transfer_s), ms_2dp(t.comm_time_s),
                         signed_percent(t.compute_vs_median),
                         t.straggler ? "**" + results::straggler_note(t) + "**" : "");
    }
  }
  return out + "\n" + markdown_cell(straggler_figures(rows)) + "\n\n";
}

std::string memory_table_html(const analysis::SuiteData& suite) {
  std::string out = "<table class=\"memory\"><tr><th class=\"name\">case</th><th>rank</th>";
  for (std::string_view label : kernels::kMemoryCategoryLabels)
    out += fmt::format("<th>{}</th>", label);
  out += "<th>tracked peak</th><th>VmHWM</th><th>PSS</th></tr>\n";
  std::string totals =
      "<table class=\"memory-totals\"><tr><th class=\"name\">case</th><th>tracked peak</th>"
      "<th>VmHWM</th><th>peak PSS</th><th class=\"name\">PSS from</th></tr>\n";
  bool any = false;
  for (const auto& c : suite.cases) {
    auto runs = c.usable_runs();
    if (runs.empty()) continue;
    any = true;
    for (const auto& r : runs.front()->summary->ranks) {
      out += "<tr>" + td(c.name, "name") + td(std::to_string(r.rank));
      for (int64_t bytes : r.tracked_peak_by_category.values)
        out += td(kernels::format_bytes(bytes));
      out += td(kernels::format_bytes(r.tracked_peak_total)) + td(kernels::format_bytes(r.vm_hwm)) +
             td(kernels::format_bytes(r.pss)) + "</tr>\n";
    }
    auto t = analysis::memory_totals(c);
    totals += "<tr>" + td(c.name, "name") + td(kernels::format_bytes(t.tracked_peak)) +
              td(kernels::format_bytes(t.vm_hwm)) + td(kernels::format_bytes(t.pss_peak)) +
              td(t.pss_source.empty() ? "-" : t.pss_source, "name") + "</tr>\n";
  }
  if (!any) return "";
  return "<h3>Memory per rank (first usable repetition)</h3>\n" + out +
         "</table>\n<h3>Memory totals across ranks</h3>\n" + totals + "</table>\n";
}

// ---- Per-case tables with warnings: machine load, GEMM kernels -------------------

std::string count_text(int64_t n) { return n < 0 ? "-" : std::to_string(n); }

// Machine load (docs/METRICS.md): the cases whose ranks recorded their hosts'
// load; no rows for results made before it was recorded.
Table load_table(const analysis::SuiteData& suite) {
  Table t{"Machine load (busiest rank host, usable repetitions)",
          {"case", "load avg 1 min, start", "end", "other runnable threads, start", "end",
           "loaded reps"}};
  for (const auto& c : suite.cases) {
    const analysis::CaseFigures f = analysis::case_figures(c);
    if (std::isnan(f.load.loadavg_1m_start) && f.load.other_runnable_start < 0) continue;
    t.rows.push_back(
        {c.name, format_number(f.load.loadavg_1m_start, 2), format_number(f.load.loadavg_1m_end, 2),
         count_text(f.load.other_runnable_start), count_text(f.load.other_runnable_end),
         fmt::format("{}/{}", f.loaded, f.usable)});
    if (f.loaded > 0) {
      t.warnings.push_back(
          fmt::format("{}: measured on a loaded machine in {} of {} usable "
                      "repetition(s) ({}); its timings may be the machine's, "
                      "not the code's",
                      c.name, f.loaded, f.usable, f.load.loaded));
    }
  }
  return t;
}

// The GEMM kernels each case's usable runs recorded (kernels/blas_core.h); no
// rows for results made before they were recorded.
Table kernels_table(const analysis::SuiteData& suite) {
  Table t{"GEMM kernels",
          {"case", "GEMM kernels", "chosen", "best for the CPU", "CPU vector ISA",
           "threads (OpenMP/BLAS)"}};
  t.text_columns = {0, 1, 2, 3, 4};
  auto join = [](const std::set<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); };
  for (const auto& c : suite.cases) {
    std::set<std::string> cores, choices, bests, isas, threads, weak;
    for (const analysis::RunData* r : c.usable_runs()) {
      for (const auto& rank : r->summary->ranks) {
        const results::KernelInfo& k = rank.kernels;
        if (k.blas_core.empty()) continue;
        cores.insert(k.label());
        choices.insert(k.blas_choice);
        bests.insert(k.blas_best);
        isas.insert(k.cpu_isa);
        threads.insert(fmt::format("{}/{}", k.omp_threads, k.blas_threads));
        if (kernels::is_fallback(k.blas_core, k.blas_best)) {
          weak.insert(fmt::format("{} ({})", k.blas_core, k.blas_choice));
        }
      }
    }
    if (cores.empty()) continue;
    t.rows.push_back({c.name, join(cores), join(choices), join(bests), join(isas), join(threads)});
    if (!weak.empty()) {
      t.warnings.push_back(
          fmt::format("{}: ran OpenBLAS's {} kernels where the CPU runs {}: its "
                      "GEMM timings understate the machine",
                      c.name, join(weak), join(bests)));
    }
  }
  return t;
}

// The charts of every suite, drawn in order. After one gnuplot timed out
// the rest are counted, not drawn: a gnuplot that hangs on one chart hangs on
// each, and 60 s a chart made one database cost minutes.
struct ChartRun {
  const ChartOptions& options;
  std::string timeout;  // the chart that timed out, once one has
  int left_out = 0;
};

// The suite's charts, each as a <figure>; a chart gnuplot fails on is a
// visible error and a note. GnuplotInterrupted goes through.
std::string charts_html(const analysis::SuiteData& suite, const Comparison& cmp, ChartRun& run,
                        HtmlReport& report) {
  const std::vector<ChartSpec> charts = suite_charts(suite, cmp);
  std::string out;
  std::size_t tried = 0;
  for (; tried < charts.size() && run.timeout.empty(); ++tried) {
    const ChartSpec& chart = charts[tried];
    out += fmt::format("<figure class=\"chart\" id=\"chart-{}-{}\"><figcaption>{}</figcaption>\n",
                       suite.suite.id, chart.id, html_escape(chart.title));
    try {
      out +=
          render_svg(*run.options.gnuplot, chart, run.options.timeout_seconds, run.options.signals);
      ++report.charts;
    } catch (const GnuplotInterrupted&) {
      throw;
    } catch (const Error& e) {
      const std::string what = fmt::format("suite {}: {}", suite.suite.id, e.what());
      if (dynamic_cast<const GnuplotTimeout*>(&e) != nullptr)
        run.timeout = what;
      else
        report.notes.push_back(what);
      out += fmt::format("<p class=\"error\">{}</p>", html_escape(e.what()));
    }
    out += "</figure>\n";
  }
  if (const std::size_t left = charts.size() - tried; left > 0) {
    run.left_out += static_cast<int>(left);
    out += fmt::format("<p class=\"error\">{} chart(s) left out: {}</p>\n", left,
                       html_escape(run.timeout));
  }
  return out;
}

// Test hooks in effect when the suite ran (results/environment.h): its
// timings include a planted slowdown. "" when none was.
std::string test_hooks_text(const results::SuiteInfo& info) {
  const auto hooks = info.environment.find("test_hooks");
  if (hooks == info.environment.end() || !hooks->is_object() || hooks->empty()) return "";
  std::vector<std::string> set;
  for (const auto& [name, value] : hooks->items()) set.push_back(name + "=" + value.dump());
  return fmt::format(
      "test hook in effect: {} (a planted slowdown of every rank's compute; these timings are "
      "not the code's)",
      fmt::join(set, ", "));
}

std::string suite_html(const analysis::SuiteData& suite, ChartRun& charts, HtmlReport& report) {
  const auto& info = suite.suite.info;
  std::string out =
      fmt::format("<section class=\"suite\" id=\"suite-{}\">\n<h2>Suite {} (id {})</h2>\n",
                  suite.suite.id, html_escape(info.name), suite.suite.id);
  out += fmt::format(
      "<p class=\"meta\">started {} &middot; finished {} &middot; git {} &middot; database "
      "{}</p>\n",
      html_escape(info.started_at),
      html_escape(info.finished_at.value_or("never (running, or the runner died)")),
      html_escape(info.git_revision.empty() ? "unknown" : info.git_revision),
      html_escape(suite.db_path));
  if (const std::string hooks = test_hooks_text(info); !hooks.empty()) {
    out += "<p class=\"note\">" + html_escape(hooks) + "</p>\n";
  }
  if (suite.cases.empty()) {
    return out + "<p class=\"note\">This suite has no runs recorded.</p>\n</section>\n";
  }
  if (const Table engines = engine_pairs_table(suite); !engines.rows.empty()) {
    out += to_html(engines);
  }
  const Comparison cmp = compare_cases(suite);
  out += fmt::format("<h3>Comparison against the baseline case {}</h3>\n",
                     html_escape(cmp.baseline_case));
  out += comparison_table_html(suite, cmp);
  auto fit = fit_amdahl(scaling_points(suite, cmp));
  if (fit) {
    out += fmt::format(
        "<p class=\"amdahl\">Amdahl's law fitted by least squares to {} measured speedups: "
        "serial fraction <b>{:.4f}</b> (RMS residual {:.3f}; at most {:.1f}x speedup with "
        "unlimited ranks).</p>\n",
        fit->points, fit->serial_fraction, fit->rms_residual,
        fit->serial_fraction > 0 ? 1.0 / fit->serial_fraction : INFINITY);
  }
  if (const std::string why = amdahl_not_fitted_reason(suite, cmp); !why.empty()) {
    out += "<p class=\"meta\">" + html_escape(why) + "</p>\n";
  }
  out += answers_html(suite);
  out += rank_times_html(cmp);
  out += memory_table_html(suite);
  out += to_html(load_table(suite));
  out += to_html(kernels_table(suite));
  out += to_html(limits_table(suite));
  if (const std::string note = no_limits_note(suite); !note.empty()) {
    out += "<p class=\"meta\">" + html_escape(note) + "</p>\n";
  }
  if (charts.options.gnuplot) out += charts_html(suite, cmp, charts, report);
  return out + "</section>\n";
}

}  // namespace

HtmlReport render_html(const std::vector<analysis::SuiteData>& suites, const ChartOptions& charts) {
  HtmlReport report;
  std::string body;
  ChartRun run{charts, {}, 0};
  for (const auto& s : suites) body += suite_html(s, run, report);
  if (!run.timeout.empty()) {
    report.notes.push_back(
        fmt::format("{}; the other {} charts are left out (a gnuplot that "
                    "hangs on one chart hangs on each)",
                    run.timeout, run.left_out));
  }
  if (!charts.gnuplot) {
    report.notes.insert(report.notes.begin(),
                        "gnuplot not found on PATH (install gnuplot-nox, see "
                        "scripts/install-deps.sh): the report has tables only, no charts");
  }
  std::string head = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>trainscope report</title>\n<style>{}</style>\n</head>\n<body>\n"
      "<h1>trainscope report</h1>\n<p class=\"meta\">generated {} &middot; {} suite(s)</p>\n",
      kStyle, html_escape(results::utc_timestamp()), suites.size());
  for (const auto& n : report.notes) head += "<p class=\"note\">" + html_escape(n) + "</p>\n";
  report.html = head + body + "</body>\n</html>\n";
  return report;
}

std::string render_markdown(const std::vector<analysis::SuiteData>& suites) {
  std::string out;
  for (const auto& suite : suites) {
    out += fmt::format("## trainscope suite {} (id {}, git {})\n\n",
                       markdown_cell(suite.suite.info.name), suite.suite.id,
                       markdown_cell(suite.suite.info.git_revision));
    if (const std::string hooks = test_hooks_text(suite.suite.info); !hooks.empty()) {
      out += "**Note**: " + markdown_cell(hooks) + "\n\n";
    }
    if (suite.cases.empty()) {
      out += "No runs recorded.\n\n";
      continue;
    }
    if (const Table engines = engine_pairs_table(suite); !engines.rows.empty()) {
      out += to_markdown(engines);
    }
    const Comparison cmp = compare_cases(suite);
    out += fmt::format("Baseline: {}\n\n", markdown_cell(cmp.baseline_case));
    const auto reductions = reduction_labels(suite);
    out += fmt::format(
        "| case |{} ranks | reps | tokens/s | speedup | scaling eff. | step median "
        "ms | step p95 ms | comm share | exposed comm ms | status |\n"
        "|:--|{}--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|\n",
        reductions.empty() ? "" : " all-reduce |", reductions.empty() ? "" : ":--|");
    for (const auto& r : cmp.rows) {
      const auto& f = r.figures;
      const std::string reduction =
          reductions.empty() ? "" : fmt::format(" {} |", markdown_cell(reductions.at(r.case_name)));
      out += fmt::format(
          "| {}{} |{} {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
          markdown_cell(r.case_name), r.is_baseline ? " (baseline)" : "", reduction, f.world_size,
          f.usable, f.repetitions, with_interval(f.tokens_per_s, r.tokens_interval, 1, ""),
          with_interval(r.speedup, r.speedup_interval, 2, "x"), percent(r.efficiency),
          ms_2dp(f.step_median_s), ms_2dp(f.step_p95_s), percent(f.comm_share),
          ms_2dp(f.comm_exposed_s), markdown_cell(status_text(f)));
    }
    out += "\n" + markdown_cell(interval_caption(cmp)) + ".\n\n";
    if (const std::string note = loaded_footnote(cmp); !note.empty()) {
      out += markdown_cell(note) + ".\n\n";
    }
    if (auto fit = fit_amdahl(scaling_points(suite, cmp))) {
      out += fmt::format(
          "Amdahl fit over {} speedups: serial fraction **{:.4f}** (RMS residual "
          "{:.3f}).\n\n",
          fit->points, fit->serial_fraction, fit->rms_residual);
    } else if (const std::string why = amdahl_not_fitted_reason(suite, cmp); !why.empty()) {
      out += markdown_cell(why) + "\n\n";
    }
    out += answers_markdown(suite);
    out += rank_times_markdown(cmp);
    std::string mem;
    for (const auto& c : suite.cases) {
      auto t = analysis::memory_totals(c);
      if (t.tracked_peak < 0) continue;
      mem += fmt::format("| {} | {} | {} | {} |\n", markdown_cell(c.name),
                         kernels::format_bytes(t.tracked_peak), kernels::format_bytes(t.vm_hwm),
                         kernels::format_bytes(t.pss_peak));
    }
    if (!mem.empty()) {
      out +=
          "| case | tracked peak (all ranks) | VmHWM (all ranks) | peak PSS (all ranks) |\n"
          "|:--|--:|--:|--:|\n" +
          mem + "\n";
    }
    out += to_markdown(load_table(suite));
    out += to_markdown(kernels_table(suite));
    out += to_markdown(limits_table(suite));
    if (const std::string note = no_limits_note(suite); !note.empty()) {
      out += markdown_cell(note) + "\n\n";
    }
  }
  return out;
}

}  // namespace trainscope::report
