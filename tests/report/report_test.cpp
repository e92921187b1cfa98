// Report library: comparison figures, the Amdahl fit, charts drawn by
// gnuplot, tables without gnuplot, HTML and Markdown escaping.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/check.h"
#include "profiler/supervise.h"
#include "report/charts.h"
#include "report/comparison.h"
#include "report/gnuplot.h"
#include "report/report.h"
#include "analysis/suite_data.h"
#include "tests/run_command.h"
#include "tests/suite_builder.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::build_suite_db;
using testing::CaseSpec;
using testing::reductions_suite;
using testing::scaling_suite;
using testing::SuiteSpec;

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope-report-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  analysis::SuiteData load(const SuiteSpec& spec) {
    return testing::build_and_load_suite(dir_ / (spec.name + ".db"), spec);
  }

  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
    return n;
  }

  fs::path dir_;
};

TEST(AmdahlTest, RecoversTheSerialFractionOfExactSpeedups) {
  for (double f : {0.0, 0.05, 0.3}) {
    std::vector<AmdahlPoint> points;
    for (double n : {1.0, 2.0, 4.0, 8.0}) points.push_back({n, amdahl_speedup(f, n)});
    auto fit = fit_amdahl(points);
    ASSERT_TRUE(fit);
    EXPECT_NEAR(fit->serial_fraction, f, 1e-12);
    EXPECT_NEAR(fit->rms_residual, 0, 1e-9);
    EXPECT_EQ(fit->points, 3);  // n = 1 says nothing about f
  }
}

TEST(AmdahlTest, LeastSquaresOfNoisySpeedupsAndDegenerateInput) {
  // 1/S - 1/n = f (1 - 1/n): with y = x * 0.1 +- 0.01 alternating, the
  // least-squares slope is computable by hand.
  std::vector<AmdahlPoint> points;
  double sxy = 0, sxx = 0;
  int i = 0;
  for (double n : {2.0, 4.0, 8.0, 16.0}) {
    const double x = 1 - 1 / n, y = 0.1 * x + (i++ % 2 ? 0.01 : -0.01);
    sxy += x * y;
    sxx += x * x;
    points.push_back({n, 1 / (y + 1 / n)});
  }
  auto fit = fit_amdahl(points);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->serial_fraction, sxy / sxx, 1e-12);
  EXPECT_GT(fit->rms_residual, 0);
  EXPECT_FALSE(fit_amdahl({{1.0, 1.0}}));
  EXPECT_FALSE(fit_amdahl({}));
}

TEST_F(ReportTest, ComparesEachCaseWithTheNaiveBaseline) {
  auto spec = reductions_suite();
  spec.cases.push_back({.name = "broken", .reduction = "fused", .fail_reason = "rank 1: NaN loss"});
  spec.cases.push_back({.name = "eight-ranks", .world_size = 8, .skip = true});
  const analysis::SuiteData suite = load(spec);
  const Comparison cmp = compare_cases(suite);
  EXPECT_EQ(cmp.baseline_case, "naive");
  ASSERT_EQ(cmp.rows.size(), 6u);
  const auto& naive = cmp.rows[0].figures;
  const auto& fused = cmp.rows[2];
  EXPECT_TRUE(cmp.rows[0].is_baseline);
  EXPECT_DOUBLE_EQ(cmp.rows[0].speedup, 1.0);
  EXPECT_EQ(fused.figures.usable, 5);
  EXPECT_DOUBLE_EQ(fused.speedup, fused.figures.tokens_per_s / naive.tokens_per_s);
  EXPECT_DOUBLE_EQ(fused.efficiency, fused.speedup / 2);
  // Two ranks at ~0.05 s per step against one at ~0.08: about 3.2x.
  EXPECT_NEAR(fused.speedup, 3.2, 0.3);
  EXPECT_NEAR(fused.figures.comm_share, 0.2, 1e-9);
  EXPECT_GT(fused.figures.comm_exposed_s, 0.0);
  EXPECT_TRUE(std::isnan(cmp.rows[5].figures.comm_exposed_s));  // skipped: no steps
  EXPECT_EQ(cmp.rows[4].figures.status, "failed");
  EXPECT_NE(cmp.rows[4].figures.reason.find("rank 1: NaN loss"), std::string::npos);
  EXPECT_TRUE(std::isnan(cmp.rows[4].speedup));
  EXPECT_EQ(cmp.rows[5].figures.status, "skipped");
  EXPECT_NE(cmp.rows[5].figures.reason.find("needs 8 ranks"), std::string::npos);
}

TEST(MeasuredStepsTest, WarmupStepsAreLeftOutUnlessNothingWouldRemain) {
  results::RunSummary run;
  std::vector<results::StepRecord> steps(5);
  for (int i = 0; i < 5; ++i) steps[i].step = i;
  EXPECT_EQ(measured_steps(run, steps).size(), 5u);  // no warmup_steps: all
  run.options = {{"warmup_steps", 2}};
  ASSERT_EQ(measured_steps(run, steps).size(), 3u);
  EXPECT_EQ(measured_steps(run, steps).front().step, 2);
  run.options = {{"warmup_steps", 9}};
  EXPECT_EQ(measured_steps(run, steps).size(), 5u);
}

// docs/METRICS.md, "Machine load": other processes' runnable threads plus
// the job's own threads on a host outnumber the host's cores.
TEST(RunLoadTest, LoadedMeansOthersPlusTheJobOutnumberTheCores) {
  results::RunSummary s;
  s.world_size = 2;
  s.threads_per_rank = 1;
  s.ranks.resize(2);
  s.ranks[0].host = s.ranks[1].host = "node0";
  for (auto& r : s.ranks) r.load_start = r.load_end = {1.5, 1.0, 0.5, 3, 2, 4};
  auto load = [&] { return results::run_figures(&s, {}).load; };
  EXPECT_EQ(load().loaded, "");  // 2 others + 2 ranks fit 4 cores
  EXPECT_EQ(load().loadavg_1m_start, 1.5);
  s.ranks[1].load_end.other_runnable = 3;
  EXPECT_EQ(load().loaded,
            "node0 at the end: 3 runnable threads of other processes + 2 of the job's > 4 cores");
  EXPECT_EQ(load().other_runnable_start, 2);
  EXPECT_EQ(load().other_runnable_end, 3);
  s.ranks[1].host = "node1";  // one rank per host: 3 + 1 fit
  EXPECT_EQ(load().loaded, "");
  s.threads_per_rank = 2;  // two threads per rank: they do not
  EXPECT_EQ(load().loaded,
            "node1 at the end: 3 runnable threads of other processes + 2 of the job's > 4 cores");
  // Runs made before the load was recorded are never called loaded.
  for (auto& r : s.ranks) r.load_start = r.load_end = {};
  EXPECT_EQ(load().loaded, "");
  EXPECT_TRUE(std::isnan(load().loadavg_1m_end));
  EXPECT_EQ(load().other_runnable_start, results::kUnknown);
}

// Every case shows its GEMM kernels; one on weaker kernels than its CPU runs
// is flagged, and results that recorded none show no table.
TEST_F(ReportTest, GemmKernelsPerCaseAndAFallbackFlagged) {
  auto spec = reductions_suite();
  spec.blas_core = "Haswell";  // the suite builder's CPU runs Cooperlake
  const std::string md = render_markdown({load(spec)});
  EXPECT_NE(md.find("| fused | OpenBLAS 0.3.21 Haswell | detected | Cooperlake | AVX-512 + "
                    "AVX512-BF16 | 1/1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("fused: ran OpenBLAS's Haswell (detected) kernels where the CPU runs "
                    "Cooperlake"),
            std::string::npos)
      << md;
  spec.blas_core = "Cooperlake";
  const std::string good = render_markdown({load(spec)});
  EXPECT_NE(good.find("| fused | OpenBLAS 0.3.21 Cooperlake |"), std::string::npos) << good;
  EXPECT_EQ(good.find("kernels where the CPU runs"), std::string::npos) << good;
  EXPECT_EQ(render_markdown({load(reductions_suite())}).find("GEMM kernels"), std::string::npos);
}

TEST_F(ReportTest, MachineLoadTableAndAWarningPerLoadedCase) {
  auto spec = reductions_suite();        // naive on 1 rank, the others on 2; one thread each
  spec.load = {3.5, 2.0, 1.0, 4, 3, 4};  // 3 other runnable threads on 4 cores
  const analysis::SuiteData suite = load(spec);
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("| case | load avg 1 min, start | end | other runnable threads, start | end | "
                    "loaded reps |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| naive | 3.50 | 3.50 | 3 | 3 | 0/5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fused | 3.50 | 3.50 | 3 | 3 | 5/5 |"), std::string::npos) << md;
  EXPECT_EQ(count(md, "**Warning**"), 3u) << md;  // per-tensor, fused, overlap
  EXPECT_NE(md.find("fused: measured on a loaded machine in 5 of 5 usable repetition(s) (node0 at "
                    "the start: 3 runnable threads of other processes + 2 of the job's &gt; 4 "
                    "cores)"),
            std::string::npos)
      << md;
  const std::string html = render_html({suite}, std::nullopt).html;
  EXPECT_NE(html.find("<h4>Machine load"), std::string::npos);
  EXPECT_EQ(count(html, "<p class=\"note\">Warning: "), 3u);
  // In the comparison too, where its timings are read: the loaded cases'
  // status carries a mark and the table a footnote naming them (it showed a
  // plain "ok"); naive, measured unloaded, carries none.
  EXPECT_NE(md.find("| ok \u2020 |"), std::string::npos) << md;
  EXPECT_EQ(count(md, "| ok \u2020 |"), 3u) << md;
  EXPECT_NE(md.find("\u2020 measured on a loaded machine: per-tensor (5 of 5 usable repetitions), "
                    "fused (5 of 5 usable repetitions), overlap (5 of 5 usable repetitions)"),
            std::string::npos)
      << md;
  EXPECT_NE(html.find("<p class=\"meta loaded\">\u2020 measured on a loaded machine: "),
            std::string::npos);

  auto before = reductions_suite();  // results made before the load was recorded
  before.name = "before";
  const analysis::SuiteData old = load(before);
  EXPECT_EQ(render_markdown({old}).find("load avg"), std::string::npos);
  EXPECT_EQ(render_html({old}, std::nullopt).html.find("Machine load"), std::string::npos);
}

TEST_F(ReportTest, MarkdownHasTheComparisonTable) {
  auto spec = reductions_suite();
  spec.cases.push_back({.name = "broken", .fail_reason = "rank 1: NaN loss"});
  const analysis::SuiteData suite = load(spec);
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("| case | ranks | reps | tokens/s | speedup | scaling eff. |"),
            std::string::npos)
      << md;
  for (const char* name :
       {"| naive (baseline) |", "| per-tensor |", "| fused |", "| overlap |", "| broken |"}) {
    EXPECT_NE(md.find(name), std::string::npos) << name << "\n" << md;
  }
  EXPECT_NE(md.find("rank 1: NaN loss"), std::string::npos);
  EXPECT_NE(md.find("| 1.00x |"), std::string::npos);
}

TEST_F(ReportTest, EscapesCaseNamesInHtmlAndMarkdown) {
  auto spec = reductions_suite();
  spec.cases[1].name = "<script>alert('x')</script>|*";
  const analysis::SuiteData suite = load(spec);
  for (auto gnuplot : {std::optional<std::string>{}, find_gnuplot()}) {
    const auto html = render_html({suite}, gnuplot).html;
    EXPECT_EQ(html.find("<script"), std::string::npos) << "gnuplot: " << gnuplot.value_or("none");
    EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  }
  const std::string md = render_markdown({suite});
  EXPECT_EQ(md.find("<script"), std::string::npos);
  EXPECT_NE(md.find("&lt;script&gt;alert('x')&lt;/script&gt;\\|\\*"), std::string::npos) << md;
}

TEST_F(ReportTest, AStragglerIsNamedInTheTablesAndTheMarkdown) {
  SuiteSpec spec;
  spec.name = "stragglers";
  spec.repetitions = 3;
  spec.cases = {
      {.name = "even", .mode = "sharded", .step_time_s = 0.05},
      {.name = "slow", .mode = "sharded", .step_time_s = 0.05, .slow_rank = 1, .slow_by_s = 0.02}};
  const analysis::SuiteData suite = load(spec);
  const std::string md = render_markdown({suite});
  // Rank 1 computes 0.8*50 + 20 ms against rank 0's 40 (with seeded noise):
  // 20% above the median of 50.
  // The slow rank arrives last: its wait is all transfer, none waiting for others.
  EXPECT_NE(md.find("| slow | 1 | 59.76 | 2.48 | 9.94 | 0.00 | 9.94 |"), std::string::npos) << md;
  EXPECT_NE(md.find("**rank 1 computes 20% above the median** |"), std::string::npos) << md;
  EXPECT_EQ(md.find("rank 0 computes"), std::string::npos) << md;
  EXPECT_EQ(count(md, "computes"), 1u) << md;
  EXPECT_NE(md.find("slow 19.84 ms"), std::string::npos) << md;  // the straggler figure
  const std::string html = render_html({suite}, std::nullopt).html;
  EXPECT_EQ(count(html, "<tr class=\"straggler\">"), 1u);
  EXPECT_NE(html.find("<td class=\"name\">rank 1 computes 20% above the median</td>"),
            std::string::npos);
}

TEST_F(ReportTest, WithoutGnuplotTheReportHasTablesAndSaysWhy) {
  const analysis::SuiteData suite = load(reductions_suite());
  const auto report = render_html({suite}, std::nullopt);
  EXPECT_EQ(report.charts, 0);
  EXPECT_EQ(report.html.find("<svg"), std::string::npos);
  EXPECT_NE(report.html.find("gnuplot not found"), std::string::npos);
  EXPECT_NE(report.html.find("<table class=\"comparison\">"), std::string::npos);
  EXPECT_NE(report.html.find("<table class=\"memory-totals\">"), std::string::npos);
  ASSERT_FALSE(report.notes.empty());
}

TEST_F(ReportTest, ChartsAreDrawnByGnuplot) {
  auto gnuplot = find_gnuplot();
  if (!gnuplot) GTEST_SKIP() << "gnuplot not installed (scripts/install-deps.sh)";
  const analysis::SuiteData suite = load(reductions_suite());
  const auto report = render_html({suite}, gnuplot);
  EXPECT_TRUE(report.notes.empty()) << report.notes.front();
  // phases, compute and wait per rank, memory per rank, memory totals, memory
  // over time for each of the 4 cases, loss, bucket sizes (1 and 4 MiB), and
  // the predicted speedup for N hosts.
  EXPECT_EQ(report.charts, 11);
  EXPECT_EQ(count(report.html, "<svg"), 11u);
  for (const char* id : {"phases", "rank-times", "memory-per-rank", "memory-totals",
                         "memory-time-0", "loss", "buckets", "prediction"}) {
    EXPECT_NE(report.html.find(std::string("id=\"chart-1-") + id + "\""), std::string::npos) << id;
  }
  EXPECT_EQ(report.html.find("<?xml"), std::string::npos);
  EXPECT_GT(count(report.html, "<path"), 20u);
}

TEST_F(ReportTest, ScalingSuiteFitsAmdahlAndAllreduceRowsGiveBusbw) {
  SuiteSpec spec = scaling_suite();
  spec.repetitions = 1;
  for (int64_t size = 1024; size <= (1 << 20); size *= 4) {
    spec.cases[1].allreduce.push_back({"tcp", "lo", 2, size, size / 4, "float32", "sum",
                                       10.0 + size * 1e-3, size / 1e4, size / 1e4, 0});
  }
  const analysis::SuiteData suite = load(spec);
  const Comparison cmp = compare_cases(suite);
  auto points = scaling_points(suite, cmp);
  ASSERT_EQ(points.size(), 3u);
  auto fit = fit_amdahl(points);
  ASSERT_TRUE(fit);
  EXPECT_GT(fit->serial_fraction, 0.03);
  EXPECT_LT(fit->serial_fraction, 0.2);
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find(fmt::format("serial fraction **{:.4f}**", fit->serial_fraction)),
            std::string::npos)
      << md;
  auto busbw = busbw_chart(suite);
  ASSERT_TRUE(busbw);
  ASSERT_EQ(busbw->data.size(), 1u);
  EXPECT_EQ(std::count(busbw->data[0].content.begin(), busbw->data[0].content.end(), '\n'), 6);
  auto amdahl = amdahl_chart(suite, cmp);
  ASSERT_TRUE(amdahl);
  EXPECT_NE(amdahl->title.find(fmt::format("{:.4f}", fit->serial_fraction)), std::string::npos);
  if (auto gnuplot = find_gnuplot()) {
    const auto html = render_html({suite}, gnuplot);
    EXPECT_NE(html.html.find("id=\"chart-1-amdahl\""), std::string::npos);
    EXPECT_NE(html.html.find("id=\"chart-1-busbw\""), std::string::npos);
    EXPECT_TRUE(html.notes.empty());
  }
}

// Rows of a chart's "x y low high" data file, as numbers.
std::vector<std::array<double, 4>> error_bar_rows(const std::string& content) {
  std::vector<std::array<double, 4>> rows;
  std::istringstream in(content);
  std::array<double, 4> r{};
  while (in >> r[0] >> r[1] >> r[2] >> r[3]) rows.push_back(r);
  return rows;
}

// With repetitions the points carry their 95% intervals: a bar from low to
// high around the median (the speedup's as the comparison gives it), which
// gnuplot draws. With one repetition the bars have no length (the test
// above); here they must have some.
TEST_F(ReportTest, ChartErrorBarsSpanTheRepetitionsIntervals) {
  SuiteSpec spec = scaling_suite();
  spec.repetitions = 5;
  spec.run_noise = 0.05;
  const analysis::SuiteData suite = load(spec);
  const Comparison cmp = compare_cases(suite);
  const auto amdahl = amdahl_chart(suite, cmp);
  ASSERT_TRUE(amdahl);
  const auto rows = error_bar_rows(amdahl->data.at(0).content);
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 1; i < rows.size(); ++i) {  // the baseline's own speedup has no interval
    const analysis::Interval& iv = cmp.rows[i].speedup_interval;
    ASSERT_TRUE(iv.has_interval()) << cmp.rows[i].case_name;
    EXPECT_NEAR(rows[i][1], cmp.rows[i].speedup, 1e-6);
    EXPECT_NEAR(rows[i][2], iv.low, 1e-6);
    EXPECT_NEAR(rows[i][3], iv.high, 1e-6);
    EXPECT_LT(rows[i][2], rows[i][3]) << "a bar of some length";
  }

  SuiteSpec buckets = reductions_suite();
  buckets.repetitions = 5;
  buckets.run_noise = 0.05;
  const analysis::SuiteData reductions = load(buckets);
  const auto bucket = bucket_chart(reductions);
  ASSERT_TRUE(bucket);
  ASSERT_EQ(bucket->data.size(), 2u);  // fused at 1 MiB, overlap at 4 MiB
  for (const DataFile& file : bucket->data) {
    ASSERT_EQ(error_bar_rows(file.content).size(), 1u) << file.name << ": " << file.content;
    for (const auto& r : error_bar_rows(file.content)) {
      EXPECT_LT(r[2], r[1]) << file.name << ": " << file.content;
      EXPECT_LT(r[1], r[3]) << file.name << ": " << file.content;
    }
  }
  // Drawn as bars from the files' low and high columns.
  EXPECT_NE(amdahl->script.find("using 1:2:3:4 with yerrorbars"), std::string::npos);
  EXPECT_NE(bucket->script.find("using 1:2:3:4 with yerrorlines"), std::string::npos);
}

TEST_F(ReportTest, LinkCountsAndLinksChart) {
  // What the runner stores (suites/runner.cpp, run_case_record).
  EXPECT_EQ(analysis::tcp_links("4"), 4);
  EXPECT_EQ(analysis::tcp_links("shm"), 0);
  EXPECT_EQ(analysis::tcp_links("auto"), 0);
  EXPECT_EQ(analysis::tcp_links(""), 0);
  EXPECT_EQ(analysis::tcp_links("2x"), 0);
  SuiteSpec spec;
  spec.name = "tcp-links";
  spec.repetitions = 1;
  spec.cases = {{.name = "shm", .links = "shm", .step_time_s = 0.04},
                {.name = "one", .links = "1", .step_time_s = 0.06},
                {.name = "two", .links = "2", .step_time_s = 0.05}};
  const analysis::SuiteData suite = load(spec);
  auto chart = links_chart(suite);
  ASSERT_TRUE(chart);
  ASSERT_EQ(chart->data.size(), 1u);
  EXPECT_EQ(chart->data[0].content.substr(0, 2), "1 ");
  EXPECT_NE(chart->data[0].content.find("\n2 "), std::string::npos);
  EXPECT_FALSE(links_chart(load(reductions_suite())));  // one link count only
}

TEST_F(ReportTest, SuiteSelectorsNameTheCulprit) {
  build_suite_db(dir_ / "r.db", reductions_suite());
  auto db = results::ResultsDb::open_for_reading(dir_ / "r.db");
  EXPECT_EQ(analysis::resolve_suite(db, "1"), 1);
  try {
    analysis::resolve_suite(db, "7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no suite with id 7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(analysis::resolve_suite(db, "newest"), Error);
}

TEST_F(ReportTest, AHungGnuplotIsKilledAndItsChartDirectoryRemoved) {
  // A "gnuplot" that never finishes.
  const fs::path fake = dir_ / "gnuplot";
  const fs::path pid_file = dir_ / "gnuplot.pid";
  std::ofstream(fake) << "#!/bin/sh\necho $$ > " << pid_file.string() << "\nexec sleep 100\n";
  fs::permissions(fake, fs::perms::owner_all);
  ::setenv("TRAINSCOPE_GNUPLOT", fake.c_str(), 1);
  const auto gnuplot = find_gnuplot();
  ::unsetenv("TRAINSCOPE_GNUPLOT");
  ASSERT_EQ(gnuplot, fake.string());

  // Chart directories go to a TMPDIR of this test's own, to see what is left.
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::optional<std::string> saved_tmpdir =
      old_tmpdir ? std::optional<std::string>(old_tmpdir) : std::nullopt;
  fs::create_directories(dir_ / "tmp");
  ::setenv("TMPDIR", (dir_ / "tmp").c_str(), 1);
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    render_svg(*gnuplot, ChartSpec{.id = "hung-chart", .script = "plot x\n"}, 0.5);
  } catch (const Error& e) {
    error = e.what();
    EXPECT_EQ(e.exit_code(), kExitFailure);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (saved_tmpdir)
    ::setenv("TMPDIR", saved_tmpdir->c_str(), 1);
  else
    ::unsetenv("TMPDIR");

  EXPECT_NE(error.find("chart 'hung-chart'"), std::string::npos) << error;
  EXPECT_NE(error.find("did not finish within 0.5 s"), std::string::npos) << error;
  EXPECT_LT(seconds, 5.0);
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "a trainscope-chart-* directory was left";
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(pid))) << "the hung gnuplot still runs";
}

// TMPDIR set to `dir` for a scope (chart and run directories go there, so a
// test sees what is left), restored afterwards.
class ScopedTmpdirEnv {
 public:
  explicit ScopedTmpdirEnv(const fs::path& dir) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    fs::create_directories(dir);
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~ScopedTmpdirEnv() {
    if (old_)
      ::setenv("TMPDIR", old_->c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }
  ScopedTmpdirEnv(const ScopedTmpdirEnv&) = delete;
  ScopedTmpdirEnv& operator=(const ScopedTmpdirEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

// A "gnuplot" that says it started (its pid in `pid_file`, one line per call
// in `calls`) and never finishes.
fs::path write_hung_gnuplot(const fs::path& dir) {
  const fs::path fake = dir / "gnuplot";
  std::ofstream(fake) << "#!/bin/sh\necho $$ >> " << (dir / "calls").string() << "\necho $$ > "
                      << (dir / "pid.tmp").string() << "\nmv " << (dir / "pid.tmp").string() << " "
                      << (dir / "gnuplot.pid").string() << "\nexec sleep 100\n";
  fs::permissions(fake, fs::perms::owner_all);
  return fake;
}

// Item 4: one hung gnuplot costs one timeout, not one per chart: the
// remaining charts are left out, and the report says so.
TEST_F(ReportTest, AfterAGnuplotTimeoutTheRemainingChartsAreLeftOut) {
  const analysis::SuiteData suite = load(reductions_suite());
  const fs::path fake = write_hung_gnuplot(dir_);
  const ScopedTmpdirEnv tmpdir(dir_ / "tmp");
  const auto start = std::chrono::steady_clock::now();
  const HtmlReport report =
      render_html({suite}, ChartOptions{.gnuplot = fake.string(), .timeout_seconds = 0.3});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream calls(dir_ / "calls");
  EXPECT_EQ(std::count(std::istreambuf_iterator<char>(calls), {}, '\n'), 1) << "gnuplot calls";
  EXPECT_LT(seconds, 2.5);
  EXPECT_EQ(report.charts, 0);
  const std::string notes = fmt::format("{}", fmt::join(report.notes, "\n"));
  EXPECT_NE(notes.find("chart 'phases': gnuplot"), std::string::npos) << notes;
  EXPECT_NE(notes.find("did not finish within 0.3 s"), std::string::npos) << notes;
  EXPECT_NE(notes.find("the other 10 charts are left out"), std::string::npos) << notes;
  EXPECT_NE(report.html.find("the other 10 charts are left out"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

// Item 4: SIGINT or SIGTERM to `report` while gnuplot runs stops gnuplot and
// removes the chart's and the run's temporary directories; the report ends
// by the signal's exit code, with no output file.
TEST_F(ReportTest, ASignalWhileGnuplotRunsLeavesNoTemporariesAndNoGnuplot) {
  build_suite_db(dir_ / "r.db", reductions_suite());
  const fs::path fake = write_hung_gnuplot(dir_);
  for (const int sig : {SIGINT, SIGTERM}) {
    fs::remove(dir_ / "gnuplot.pid");
    SpawnOptions spawn;
    spawn.argv = {testing::trainscope_binary(), "report", "--db",
                  (dir_ / "r.db").string(),     "--out",  (dir_ / "r.html").string()};
    spawn.env = {"TMPDIR=" + (dir_ / "tmp").string(), "TRAINSCOPE_GNUPLOT=" + fake.string()};
    spawn.stdout_file = dir_ / "out";
    spawn.stderr_file = dir_ / "err";
    fs::create_directories(dir_ / "tmp");
    ChildProcess report = trainscope::spawn(spawn);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(dir_ / "gnuplot.pid") && !report.try_wait() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(fs::exists(dir_ / "gnuplot.pid")) << "gnuplot never ran";
    pid_t gnuplot = 0;
    std::ifstream(dir_ / "gnuplot.pid") >> gnuplot;
    ::kill(report.pid(), sig);
    const std::optional<int> code = report.wait_for(20);
    ASSERT_TRUE(code.has_value()) << "report did not stop";
    EXPECT_EQ(*code, 128 + sig);
    for (int i = 0; i < 500 && fs::exists(fmt::format("/proc/{}", gnuplot)); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_FALSE(fs::exists(fmt::format("/proc/{}", gnuplot))) << "gnuplot still runs";
    if (fs::exists(fmt::format("/proc/{}", gnuplot))) ::kill(gnuplot, SIGKILL);
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir_ / "tmp")) left.push_back(e.path().filename());
    EXPECT_EQ(left, std::vector<std::string>{}) << strsignal(sig);
    EXPECT_FALSE(fs::exists(dir_ / "r.html"));
  }
}

TEST(GnuplotQuoteTest, QuotesAreDoubledAndControlCharactersDropped) {
  EXPECT_EQ(gnuplot_quote("it's"), "'it''s'");
  EXPECT_EQ(gnuplot_quote("a\nb"), "'a b'");
}

}  // namespace
}  // namespace trainscope::report
