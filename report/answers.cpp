#include "report/answers.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/algorithms.h"
#include "report/comparison.h"
#include "report/dilation.h"
#include "report/finetune.h"
#include "report/findings.h"
#include "base/format.h"
#include "kernels/storage.h"
#include "report/model_check.h"
#include "report/suite_prediction.h"
#include "report/table.h"

namespace trainscope::report {
namespace {

std::string ms_1dp(double s) { return format_number(s * 1e3, 1); }
std::string times(double x) { return std::isfinite(x) ? format_number(x, 2) + "x" : "-"; }
std::string gbit(double bytes_per_s) { return format_number(bytes_per_s * 8 / 1e9, 2); }
std::string pct(double share) {
  return std::isfinite(share) ? fmt::format("{:+.1f}%", share * 100) : "-";
}

// "12.3% [8.1%, 15.0%]": time saved with its interval over the repetitions.
std::string saved_text(const MachineRow& r) {
  if (!std::isfinite(r.time_saved)) return "-";
  const analysis::Interval& iv = r.time_saved_interval;
  const std::string shown = format_number(r.time_saved * 100, 1) + "%";
  if (!iv.has_interval()) return shown;
  return fmt::format("{} [{}%, {}%]", shown, format_number(iv.low * 100, 1),
                     format_number(iv.high * 100, 1));
}

Table machines_table(const analysis::SuiteData& suite) {
  Table t{"What each added machine buys (time for the case's steps, time saved on the same data)",
          {"case", "hosts", "cores/host", "link", "measured Gbit/s", "scaling", "reduction",
           "steps", "steps x median step s", "tokens/s", "vs", "time saved", "status"},
          {},
          fmt::format("Time saved = 1 - tokens/s of one machine / tokens/s of N (the time to "
                      "train the same tokens). The walkthrough's two Macs over Thunderbolt: "
                      "{:.1f}% (2611 s vs 4259 s).",
                      time_saved(1 / 4259.0, 1 / 2611.0) * 100),
          {0, 3, 5, 6, 10, 12}};
  for (const auto& r : machine_rows(suite)) {
    t.rows.push_back({r.case_name,
                      std::to_string(r.hosts) +
                          (r.cpu_share < 1 ? " (" + dilation_label(r.cpu_share) + ")" : ""),
                      r.cores_per_host > 0 ? std::to_string(r.cores_per_host) : "all",
                      r.link.empty() ? "-" : r.link, format_number(r.link_gbps, 2), r.scaling,
                      r.reduction, std::to_string(r.steps), format_number(r.wall_s, 2),
                      format_number(r.tokens_per_s, 0), r.baseline.empty() ? "-" : r.baseline,
                      saved_text(r), r.status});
  }
  return t;
}

Table algorithms_table(const analysis::SuiteData& suite) {
  Table t{"Bus bandwidth at the largest size per all-reduce algorithm",
          {"case", "algorithm", "size", "busbw GB/s", "vs Open MPI's default", "default case"},
          {},
          "Median busbw over the repetitions that ended ok, at the largest size the case swept; "
          "the ratio is to the case with Open MPI's own choice of algorithm and otherwise the "
          "same settings, at the same size.",
          {0, 1, 5}};
  for (const auto& r : algorithm_busbw(suite)) {
    t.rows.push_back({r.case_name, r.label,
                      r.size_bytes > 0 ? kernels::format_bytes(r.size_bytes) : "-",
                      format_number(r.busbw_gbps, 3), times(r.ratio),
                      r.baseline_case.empty() ? "-" : r.baseline_case});
  }
  return t;
}

std::vector<std::string> memory_cells(const RankMemory& m) {
  return {kernels::format_bytes(m.parameters), kernels::format_bytes(m.gradients),
          kernels::format_bytes(m.optimizer_state)};
}

Table zero_table(const analysis::SuiteData& suite) {
  Table t{
      "Memory per rank with and without ZeRO-1 (tracked peaks of the largest rank, first "
      "usable repetition)",
      {"case", "ZeRO", "ranks", "parameters", "gradients", "optimizer state"},
      {},
      "",
      {0, 1}};
  std::vector<std::string> sentences;
  for (const auto& z : zero_memory(suite)) {
    auto add = [&](const std::string& name, const char* zero, const RankMemory& m) {
      std::vector<std::string> row{name, zero, std::to_string(z.ranks)};
      for (auto& cell : memory_cells(m)) row.push_back(std::move(cell));
      t.rows.push_back(std::move(row));
    };
    if (!z.peer_case.empty()) add(z.peer_case, "off", z.peer);
    add(z.case_name, "ZeRO-1", z.zero);
    sentences.push_back(z.case_name + ": " + z.sentence() + ".");
  }
  t.note = fmt::format("{}", fmt::join(sentences, " "));
  return t;
}

// "12.35M": parameter counts; "-" unknown.
std::string millions(int64_t n) {
  return n < 0 ? "-" : format_number(static_cast<double>(n) / 1e6, 3) + "M";
}

Table fine_tune_table(const analysis::SuiteData& suite) {
  Table t{
      "Full fine-tuning vs LoRA: time, gradient traffic, parameters and memory per rank "
      "(tracked peaks of the largest rank, first usable repetition)",
      {"case", "fine-tune", "ranks", "step median ms", "tokens/s", "comm bytes/step",
       "bytes per trainable", "parameters", "trainable", "trainable share"},
      {},
      "Comm bytes per step: rank 0's gradient all-reduce, median over the measured steps; "
      "one all-reduce of fp32 gradients moves 4 bytes per trainable parameter (one rank "
      "counts them too, though its all-reduce sends nothing). Only what trains has gradients "
      "and AdamW state (two fp32 moments per trainable parameter): under LoRA the adapters, "
      "not the frozen weights.",
      {0, 1}};
  for (kernels::MemoryCategory m : kFineTuneMemory) {
    std::string name(kernels::category_name(m));
    std::replace(name.begin(), name.end(), '_', ' ');
    t.headers.push_back("memory: " + name);
  }
  for (const auto& r : fine_tune_rows(suite)) {
    std::vector<std::string> row{r.case_name,
                                 r.label,
                                 std::to_string(r.ranks),
                                 ms_1dp(r.step_median_s),
                                 format_number(r.tokens_per_s, 0),
                                 kernels::format_bytes(static_cast<double>(r.comm_bytes_per_step)),
                                 format_number(r.comm_bytes_per_trainable(), 2),
                                 millions(r.parameters),
                                 millions(r.trainable_parameters),
                                 std::isfinite(r.trainable_share())
                                     ? format_number(r.trainable_share() * 100, 3) + "%"
                                     : "-"};
    for (kernels::MemoryCategory m : kFineTuneMemory)
      row.push_back(kernels::format_bytes(r.memory[m]));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table rank_savings_table(const analysis::SuiteData& suite) {
  Table t{"What the second rank saves, per fine-tune (time for the case's steps on the same data)",
          {"fine-tune", "1 rank", "steps x median step s", "N ranks", "ranks",
           "steps x median step s", "speedup", "time saved"},
          {},
          "",
          {0, 1, 3}};
  std::vector<std::string> sentences;
  for (const auto& r : rank_savings(suite)) {
    const std::string saved =
        std::isfinite(r.time_saved()) ? format_number(r.time_saved() * 100, 1) + "%" : "-";
    t.rows.push_back({r.label, r.one_rank_case, format_number(r.one_rank_wall_s, 2), r.case_name,
                      std::to_string(r.ranks), format_number(r.wall_s, 2), times(r.speedup()),
                      saved});
    sentences.push_back(
        fmt::format("{}: {} steps in {} s on {} ranks vs {} s on one, time saved "
                    "{}.",
                    r.label, r.steps, format_number(r.wall_s, 2), r.ranks,
                    format_number(r.one_rank_wall_s, 2), saved));
  }
  t.note = fmt::format(
      "Time saved = 1 - (N ranks' time) / (one rank's time) for the same steps "
      "of the same global batch. {}",
      fmt::join(sentences, " "));
  return t;
}

std::vector<Table> prediction_tables(const SuitePrediction& p) {
  std::vector<Table> out;
  const analysis::StepModel& s = p.step;
  Table links{"Links the prediction uses",
              {"link", "Gbit/s", "latency us", "from"},
              {},
              p.latency_note,
              {0, 3}};
  for (const auto& l : p.links) {
    links.rows.push_back({l.model.name, gbit(l.model.bandwidth_Bps),
                          format_number(l.model.latency_s * 1e6, 0), l.source});
  }
  out.push_back(std::move(links));
  const std::vector<int> hosts = analysis::host_counts(kMaxPredictedHosts);
  for (analysis::Scaling scaling : {analysis::Scaling::kWeak, analysis::Scaling::kStrong}) {
    const bool weak = scaling == analysis::Scaling::kWeak;
    Table t{weak ? "Predicted speedup over one host, batch per rank fixed (weak scaling)"
                 : "Predicted speedup over one host, global batch fixed (strong scaling)",
            {"link", "all-reduce"},
            {},
            "",
            {0, 1}};
    for (int n : hosts) {
      if (n > 1) t.headers.push_back(fmt::format("{} hosts", n));
    }
    for (const auto& l : p.links) {
      for (bool overlap : {false, true}) {
        std::vector<std::string> row{l.model.name, overlap ? "overlap" : "after backward"};
        for (int n : hosts) {
          if (n > 1)
            row.push_back(times(analysis::predict(s, l.model, n, overlap, scaling).speedup));
        }
        t.rows.push_back(std::move(row));
      }
    }
    out.push_back(std::move(t));
  }
  const double latency = p.links.empty() ? 0 : p.links.front().model.latency_s;
  Table bw{"Link bandwidth for 90% scaling efficiency (weak scaling)",
           {"hosts", "Gbit/s, all-reduce after backward", "Gbit/s, overlapped"},
           {},
           fmt::format("At a latency of {:.0f} us per ring step; '-' where latency alone keeps "
                       "efficiency below 90%.",
                       latency * 1e6)};
  for (int n : {2, 4, 8}) {
    auto a = analysis::bandwidth_for_efficiency(s, latency, n, 0.9, false);
    auto b = analysis::bandwidth_for_efficiency(s, latency, n, 0.9, true);
    bw.rows.push_back({std::to_string(n), a ? gbit(*a) : "-", b ? gbit(*b) : "-"});
  }
  out.push_back(std::move(bw));
  Table bucket{"The bucket that hides the most all-reduce behind backward (8 hosts, weak scaling)",
               {"link", "best bucket", "step ms", "step ms at the measured bucket"},
               {},
               ""};
  for (const auto& l : p.links) {
    analysis::StepModel best = s;
    best.bucket_bytes = analysis::best_bucket_bytes(s, l.model, 8);
    bucket.rows.push_back(
        {l.model.name, kernels::format_bytes(static_cast<int64_t>(best.bucket_bytes)),
         ms_1dp(analysis::predict(best, l.model, 8, true, analysis::Scaling::kWeak).step_s),
         ms_1dp(analysis::predict(s, l.model, 8, true, analysis::Scaling::kWeak).step_s)});
  }
  out.push_back(std::move(bucket));
  Table v{"Predicted vs measured on the virtual cluster",
          {"case", "link", "hosts", "scaling", "all-reduce", "measured step ms",
           "predicted step ms", "error", "measured speedup", "predicted speedup", "compute from"},
          {},
          "",
          {0, 1, 3, 4, 10}};
  bool dilated = false, loaded = false;
  for (const auto& r : p.validation) {
    dilated = dilated || r.cpu_share < 1;
    loaded = loaded || r.loaded;
    if (r.overlap && r.cores_per_host == 1) {
      v.note =
          "On a host with one core, overlap's reduction thread takes CPU time from the training "
          "thread (compare the per-rank compute of the overlap and fused cases below); the model "
          "counts no CPU for the all-reduce, so it expects more from overlap there than such a "
          "host gives.";
    }
    // The spread of the repetitions beside the median, when there are several.
    const std::string spread = r.repetitions > 1
                                   ? fmt::format(" ({}-{}, {} reps)", ms_1dp(r.measured_min_s),
                                                 ms_1dp(r.measured_max_s), r.repetitions)
                                   : "";
    v.rows.push_back({r.case_name, r.link,
                      std::to_string(r.hosts) +
                          (r.cpu_share < 1 ? " (" + dilation_label(r.cpu_share) + ")" : ""),
                      r.scaling == analysis::Scaling::kWeak ? "weak" : "strong",
                      r.overlap ? "overlap" : "after backward", ms_1dp(r.measured_step_s) + spread,
                      ms_1dp(r.predicted_step_s), pct(r.error()) + (r.loaded ? " (loaded)" : ""),
                      with_interval(r.measured_speedup, r.measured_speedup_interval, 2, "x"),
                      times(r.predicted_speedup), r.compute_from});
  }
  if (loaded) {
    v.note += std::string(v.note.empty() ? "" : " ") +
              "An error marked (loaded): the case or its one-machine case was measured on a "
              "loaded machine (see Machine load), so it measures the other load as much as the "
              "model.";
  }
  if (dilated) {
    v.note += std::string(v.note.empty() ? "" : " ") +
              "Hosts marked dilated xK ran at a CPU share of 1/K of a core behind links of 1/K "
              "the rate: their step times are divided by K (and their link's bandwidth "
              "multiplied by K) before they are set beside the prediction.";
  }
  out.push_back(std::move(v));
  return out;
}

std::string model_sentence(const SuitePrediction& p) {
  const analysis::StepModel& s = p.step;
  return fmt::format(
      "From {}: forward {} ms, backward {} ms{}, data and optimizer {} ms per step for {:.0f} "
      "tokens; gradient {} ({}){}. Ring all-reduce T(N, S) = 2(N-1)/N x S / bandwidth + 2(N-1) x "
      "latency; with overlap, buckets reduce while backward runs and only the last one's time "
      "shows. The model leaves out what hosts share (a switch, memory bandwidth).",
      p.compute_case, ms_1dp(s.forward_s), ms_1dp(s.backward_s),
      s.head_backward_s > 0
          ? fmt::format(" (of which the LM head's {} ms, before any gradient is ready to reduce)",
                        ms_1dp(s.head_backward_s))
          : "",
      ms_1dp(s.other_s), s.tokens_per_rank,
      kernels::format_bytes(static_cast<int64_t>(s.grad_bytes)), p.grad_source,
      s.bucket_bytes > 0 ? fmt::format(", buckets of {}",
                                       kernels::format_bytes(static_cast<int64_t>(s.bucket_bytes)))
                         : "");
}

std::string notes(const analysis::SuiteData& suite) {
  const Comparison cmp = compare_cases(suite);
  return same_cores_note(suite, cmp);
}

}  // namespace

std::string answers_html(const analysis::SuiteData& suite) {
  std::string out;
  if (const std::string note = notes(suite); !note.empty()) {
    out += "<p class=\"note\">" + html_escape(note) + "</p>\n";
  }
  const auto findings = suite_findings(suite);
  if (!findings.empty()) {
    out += "<h3>Findings</h3>\n<dl class=\"findings\">\n";
    for (const auto& f : findings) {
      out += fmt::format("<dt id=\"finding-{}-{}\">{}</dt><dd>{}</dd>\n", suite.suite.id, f.id,
                         html_escape(f.question), html_escape(f.answer));
    }
    out += "</dl>\n";
  }
  out += to_html(machines_table(suite));
  out += to_html(dilation_table(suite));
  out += to_html(algorithms_table(suite));
  out += to_html(zero_table(suite));
  out += to_html(fine_tune_table(suite));
  out += to_html(rank_savings_table(suite));
  if (auto p = suite_prediction(suite)) {
    out += "<h3>Prediction: what N hosts would do</h3>\n<p>" + html_escape(model_sentence(*p)) +
           "</p>\n";
    for (const auto& t : prediction_tables(*p)) out += to_html(t);
    for (auto scaling : {analysis::Scaling::kWeak, analysis::Scaling::kStrong}) {
      if (auto t = model_check_table(suite, *p, scaling)) out += to_html(*t);
    }
  }
  return out;
}

std::string answers_markdown(const analysis::SuiteData& suite) {
  std::string out;
  if (const std::string note = notes(suite); !note.empty()) out += markdown_cell(note) + "\n\n";
  const auto findings = suite_findings(suite);
  if (!findings.empty()) {
    out += "### Findings\n\n";
    for (const auto& f : findings) {
      out += "- **" + markdown_cell(f.question) + "**: " + markdown_cell(f.answer) + "\n";
    }
    out += "\n";
  }
  out += to_markdown(machines_table(suite));
  out += to_markdown(dilation_table(suite));
  out += to_markdown(algorithms_table(suite));
  out += to_markdown(zero_table(suite));
  out += to_markdown(fine_tune_table(suite));
  out += to_markdown(rank_savings_table(suite));
  if (auto p = suite_prediction(suite)) {
    out += "### Prediction: what N hosts would do\n\n" + markdown_cell(model_sentence(*p)) + "\n\n";
    for (const auto& t : prediction_tables(*p)) out += to_markdown(t);
    for (auto scaling : {analysis::Scaling::kWeak, analysis::Scaling::kStrong}) {
      if (auto t = model_check_table(suite, *p, scaling)) out += to_markdown(*t);
    }
  }
  return out;
}

namespace {

// One panel of the prediction chart: scaling efficiency (speedup / hosts)
// against hosts on log2 axes under one scaling mode, each link's curve with
// and without overlap, and the measured cases of that mode with their
// intervals. Its data files are named after the mode.
std::string prediction_panel(const SuitePrediction& p, analysis::Scaling scaling,
                             std::string_view mode, ChartSpec& chart) {
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  std::string plot = "plot 100 with lines dt 3 lc rgb '#888888' title 'ideal'";
  for (std::size_t i = 0; i < p.links.size(); ++i) {
    const analysis::LinkModel& link = p.links[i].model;
    std::string data;
    for (int n = 1; n <= kMaxPredictedHosts; n *= 2) {
      data += fmt::format("{} {:.6g} {:.6g}\n", n,
                          100 * analysis::predict(p.step, link, n, false, scaling).efficiency,
                          100 * analysis::predict(p.step, link, n, true, scaling).efficiency);
    }
    const std::string file = fmt::format("predicted-{}-{}.dat", mode, i);
    chart.data.push_back({file, data});
    const char* color = kColors[i % std::size(kColors)];
    plot += fmt::format(
        ", '{}' using 1:3 with linespoints pt 7 ps 0.6 lw 2 lc rgb '{}' title {}, '' using 1:2 "
        "with linespoints pt 6 ps 0.6 dt 2 lc rgb '{}' title {}",
        file, color, gnuplot_quote(link.name + ", overlap"), color,
        gnuplot_quote(link.name + ", after backward"));
  }
  std::string measured;
  for (const auto& v : p.validation) {
    if (v.scaling != scaling || !std::isfinite(v.measured_speedup) || v.hosts < 1) continue;
    // Error bars from the repetitions; none (the point itself) with one.
    const analysis::Interval& iv = v.measured_speedup_interval;
    const double percent_per_host = 100.0 / v.hosts;
    measured +=
        fmt::format("{} {:.6g} {:.6g} {:.6g}\n", v.hosts, v.measured_speedup * percent_per_host,
                    (iv.has_interval() ? iv.low : v.measured_speedup) * percent_per_host,
                    (iv.has_interval() ? iv.high : v.measured_speedup) * percent_per_host);
  }
  if (!measured.empty()) {
    const std::string file = fmt::format("measured-{}.dat", mode);
    chart.data.push_back({file, measured});
    plot += fmt::format(
        ", '{}' using 1:2:3:4 with yerrorbars pt 5 ps 1.2 lc rgb '#000000' "
        "title 'measured (95% interval)'",
        file);
  }
  return plot;
}

}  // namespace

// Efficiency, not speedup: on log2 hosts every speedup curve looked
// exponential and eight of them overlapped; one panel per scaling mode, the
// legend outside the plots so that no label runs into a curve or the axis.
std::optional<ChartSpec> prediction_chart(const analysis::SuiteData& suite) {
  auto p = suite_prediction(suite);
  if (!p || p->links.empty()) return std::nullopt;
  ChartSpec chart;
  chart.id = "prediction";
  chart.title = "Predicted scaling efficiency vs hosts, per scaling mode, with the measured cases";
  chart.width = 1100;
  chart.height = 560;
  const std::string weak = prediction_panel(*p, analysis::Scaling::kWeak, "weak", chart);
  const std::string strong = prediction_panel(*p, analysis::Scaling::kStrong, "strong", chart);
  chart.script = fmt::format(
      "set logscale x 2\nset xrange [1:{}]\nset xtics 2\nset yrange [0:115]\n"
      "set ytics 10\nset format y '%g%%'\nset grid ytics lc rgb '#dddddd'\n"
      "set xlabel 'hosts'\nset ylabel 'scaling efficiency (speedup / hosts)'\n"
      "set key outside below horizontal maxcols 3 font ',10'\n"
      "set multiplot layout 1,2\n"
      "set title 'batch per rank fixed (weak scaling)'\n{}\n"
      "set title 'global batch fixed (strong scaling)'\n{}\n"
      "unset multiplot\n",
      kMaxPredictedHosts, weak, strong);
  return chart;
}

}  // namespace trainscope::report
