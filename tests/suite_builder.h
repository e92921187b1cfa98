// Builds results databases for the report and check tests through the
// ResultsDb writer API, with realistic run summaries: step times with seeded
// noise, phases that add up to the step, tracked memory that follows the data
// parallel mode (sharded ranks hold 1/N of the data), deterministic losses
// and collective counts. Two databases built with different noise seeds are
// "two honest runs of the same code"; slowdown and memory factors inject
// regressions.
#ifndef TRAINSCOPE_TESTS_SUITE_BUILDER_H_
#define TRAINSCOPE_TESTS_SUITE_BUILDER_H_

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "profiler/stats.h"
#include "analysis/suite_data.h"
#include "results/records.h"
#include "results/results_db.h"

namespace trainscope::testing {

struct CaseSpec {
  std::string name;
  std::string mode = "duplicated";
  std::string reduction = "fused";
  std::optional<double> bucket_mb;
  int world_size = 2;
  std::string links = "lo";
  double step_time_s = 0.05;  // per-step time before noise
  double comm_share = 0.2;    // of the step
  std::string fail_reason;    // non-empty: every repetition fails
  bool skip = false;          // recorded as skipped
  std::vector<results::AllReduceRow> allreduce;
  int slow_rank = -1;    // this rank computes slow_by_s longer every step,
  double slow_by_s = 0;  //   and the others wait that much longer
  // Where and how it ran (0 / empty: the suite's defaults, as before these
  // were recorded).
  int threads = 1;       // per rank
  int cores_online = 0;  // the ranks' hosts' cores (load_start.cores)
  // Cores each rank kept busy over its steps (RankResult::cpu_s over
  // steps_wall_s); NaN: not recorded, as before it was.
  double cpu_busy_per_rank = std::numeric_limits<double>::quiet_NaN();
  int hosts = 1;
  int cores_per_host = 0;
  std::string link;
  std::optional<double> link_gbps;
  std::optional<double> link_latency_us;
  int batch = 0;           // global batch; 0: the suite's, tokens as before
  int batch_per_rank = 0;  // recorded in the config (weak scaling)
  int calls = 0;           // collective calls a step; 0: 20 per-tensor, else 2
  double loss_offset = 0;  // added to this case's losses
  std::string model = "tiny";
  nlohmann::json config = nlohmann::json::object();  // more of the case's config (allreduce, zero)
  double optimizer_state_share = 1.0;  // of the whole optimizer state each rank holds (ZeRO-1: 1/N)
  // > 0: the summary counts parameters (3M) and these trainable ones, and
  // memory and traffic follow them as the trainer's do: 4 bytes a parameter,
  // gradients 4 and AdamW state 8 bytes a trainable one, a step's all-reduce
  // 4 bytes a trainable one (counted on one rank too; LoRA: few of them).
  int64_t trainable_parameters = 0;
  nlohmann::json options = nlohmann::json::object();  // more of the summary's options (fine_tune)
  double flops_per_step = 0;  // the summary's model FLOPs per step; 0: not recorded
};

struct SuiteSpec {
  std::string name = "reductions";
  std::vector<CaseSpec> cases;
  int repetitions = 5;
  int steps = 20;
  int warmup_steps = 1;  // slower steps, left out of the measured ones
  unsigned seed = 1;
  // Noise: each step's time is multiplied by 1 + N(0, step_noise), and by
  // 2..15 for a share outlier_rate of steps (preempted ones); each run's by
  // 1 + N(0, run_noise) (a run on a slightly faster or slower machine state).
  double step_noise = 0.03;
  double outlier_rate = 0;
  double run_noise = 0;
  double slowdown = 1.0;       // multiplies every step time
  double memory_factor = 1.0;  // multiplies tracked activations
  double loss_offset = 0.0;    // added to every loss
  int batch = 4;               // goes into the case config
  bool with_poller = true;
  // Every rank's host load at start and end; unknown (as before it was
  // recorded) unless set.
  profiler::HostLoad load;
  std::string blas_core;                 // the OpenBLAS core every rank ran; empty: not recorded
  std::string cpu_model = "Test CPU";    // the machine it was measured on
  std::string git_revision = "testrev";  // the suite's
  std::vector<results::MachineLimit> limits;  // stored with the suite, as the runner does
};

inline results::TimeStats time_stats(std::vector<double> v) {
  auto s = profiler::summarize(v);
  return {s.mean, s.median, s.p95, s.min, s.max};
}

inline results::RunSummary make_summary(const SuiteSpec& suite, const CaseSpec& c, int rep) {
  std::mt19937 rng(suite.seed * 7919u + rep * 104729u +
                   static_cast<unsigned>(std::hash<std::string>{}(c.name)));
  std::normal_distribution<double> noise(0.0, suite.step_noise);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double run_factor =
      suite.run_noise > 0 ? 1.0 + std::normal_distribution<double>(0.0, suite.run_noise)(rng) : 1.0;
  auto outlier = [&] {
    return suite.outlier_rate > 0 && uniform(rng) < suite.outlier_rate ? 2 + 13 * uniform(rng)
                                                                       : 1.0;
  };
  results::RunSummary s;
  s.trainscope_version = "0.1.0";
  s.git_revision = "testrev";
  s.model = {{"preset", "tiny"}, {"n_layer", 2}};
  s.options = {{"batch", suite.batch},
               {"block", 32},
               {"steps", suite.steps},
               {"seed", 1},
               {"warmup_steps", suite.warmup_steps}};  // the slow steps below
  s.options.update(c.options);
  s.world_size = c.world_size;
  s.threads_per_rank = c.threads;
  s.flops_per_step = c.flops_per_step;
  const int64_t params = 3'000'000;
  const int64_t dataset = 8'000'000;
  const int64_t trainable = c.trainable_parameters;
  if (trainable > 0) {
    s.parameters = params;
    s.trainable_parameters = trainable;
  }
  double tokens_per_s_total = 0;
  std::vector<double> all_steps;
  for (int r = 0; r < c.world_size; ++r) {
    s.hosts.push_back("node0");
    std::vector<results::StepRecord> steps;
    std::vector<double> times, ph[7];
    for (int k = 0; k < suite.steps; ++k) {
      results::StepRecord st;
      st.step = k;
      st.loss = 5.5 * std::exp(-0.03 * k) + 0.5 + suite.loss_offset + c.loss_offset;
      st.lr = 3e-4;
      st.tokens = c.batch > 0 ? c.batch / c.world_size * 32 : suite.batch * 32;
      const double jitter = 1.0 + noise(rng);
      const double t = c.step_time_s * suite.slowdown * run_factor * jitter * outlier() *
                       (k < suite.warmup_steps ? 1.5 : 1.0);
      const double late = c.slow_rank < 0 ? 0 : c.slow_by_s;
      st.step_time_s = t + late;
      st.phases = {0.05 * t, 0.3 * t, (0.6 - c.comm_share) * t, c.comm_share * t, 0.05 * t, 0, 0};
      st.phases[profiler::Phase::kForward] += r == c.slow_rank ? late : 0;
      st.phases[profiler::Phase::kComm] += r == c.slow_rank ? 0 : late;
      st.comm_exposed_s = c.comm_share * t;
      st.comm_time_s = st.comm_exposed_s;
      st.comm_calls = c.calls > 0 ? c.calls : c.reduction == "per-tensor" ? 20 : 2;
      st.comm_bytes = trainable == 0 ? params : 4 * trainable;
      steps.push_back(st);
      times.push_back(t);
      all_steps.push_back(t);
      for (int i = 0; i < 7; ++i) ph[i].push_back(st.phases.values[i]);
    }
    s.steps.push_back(steps);
    results::RankResult rr;
    rr.rank = r;
    rr.host = "node0";
    rr.pid = 1000 + r;
    rr.step_time = time_stats(times);
    for (int i = 0; i < 7; ++i) rr.phases.values[i] = time_stats(ph[i]);
    rr.tokens_per_s = static_cast<double>(steps.front().tokens) / rr.step_time.mean;
    tokens_per_s_total += rr.tokens_per_s;
    using kernels::MemoryCategory;
    auto& m = rr.tracked_peak_by_category;
    m[MemoryCategory::kParameters] = params;
    m[MemoryCategory::kGradients] = params;
    m[MemoryCategory::kOptimizerState] = static_cast<int64_t>(2 * params * c.optimizer_state_share);
    if (trainable > 0) {
      m[MemoryCategory::kParameters] = 4 * params;
      m[MemoryCategory::kGradients] = 4 * trainable;
      m[MemoryCategory::kOptimizerState] =
          static_cast<int64_t>(8 * trainable * c.optimizer_state_share);
    }
    m[MemoryCategory::kActivations] = static_cast<int64_t>(5'000'000 * suite.memory_factor);
    m[MemoryCategory::kData] = c.mode == "sharded" ? dataset / c.world_size : dataset;
    m[MemoryCategory::kComm] = c.reduction == "per-tensor" ? 0 : params / 2;
    m[MemoryCategory::kWorkspace] = 100'000;
    rr.tracked_peak_total = 0;
    for (int64_t bytes : m.values) rr.tracked_peak_total += bytes;
    rr.vm_hwm = rr.tracked_peak_total + 40'000'000;
    rr.vm_rss = rr.vm_hwm - 1'000'000;
    rr.pss = rr.vm_rss - 5'000'000;
    rr.comm = {suite.steps * (c.reduction == "per-tensor" ? 20 : 2), suite.steps * params,
               rr.phases[profiler::Phase::kComm].mean * suite.steps,
               0.5 * rr.phases[profiler::Phase::kComm].mean * suite.steps};
    rr.load_start = rr.load_end = suite.load;
    if (!suite.blas_core.empty()) {
      rr.kernels = {.blas_library = "OpenBLAS 0.3.21",
                    .blas_core = suite.blas_core,
                    .blas_choice = "detected",
                    .blas_best = "Cooperlake",
                    .cpu_isa = "AVX-512 + AVX512-BF16",
                    .omp_threads = 1,
                    .blas_threads = 1};
    }
    if (c.cores_online > 0) rr.load_start.cores = c.cores_online;
    if (!std::isnan(c.cpu_busy_per_rank)) {
      rr.steps_wall_s = 2.0;
      rr.cpu_s = c.cpu_busy_per_rank * rr.steps_wall_s;
    }
    rr.data.bytes_held = m[MemoryCategory::kData];
    s.ranks.push_back(rr);
  }
  for (int k = 0; k < suite.steps; k += 5) {
    s.val.push_back({k, 5.6 * std::exp(-0.03 * k) + 0.5 + suite.loss_offset});
  }
  auto all = profiler::summarize(all_steps);
  s.totals = {tokens_per_s_total, all.median, all.p95};
  return s;
}

inline void build_suite_db(const std::filesystem::path& path, const SuiteSpec& suite) {
  auto db = results::ResultsDb::open_for_writing(path);
  results::SuiteInfo info;
  info.name = suite.name;
  info.definition = "[suite]\nname = \"" + suite.name + "\"\n";
  info.git_revision = suite.git_revision;
  info.host_facts = {{"hostname", "node0"}, {"cpu_model", suite.cpu_model}, {"cores", 8}};
  const int64_t sid = db.begin_suite(info);
  if (!suite.limits.empty()) db.add_machine_limits(sid, suite.limits);
  for (int rep = 0; rep < suite.repetitions; ++rep) {
    for (const auto& c : suite.cases) {
      results::RunCase rc;
      rc.case_name = c.name;
      rc.config = {{"model", c.model},
                   {"batch", c.batch > 0 ? c.batch : suite.batch},
                   {"steps", suite.steps},
                   {"mode", c.mode},
                   {"reduce", c.reduction}};
      if (c.batch_per_rank > 0) rc.config["batch_per_rank"] = c.batch_per_rank;
      rc.config.update(c.config);
      rc.threads = c.threads;
      rc.host_count = c.hosts;
      rc.cores_per_host = c.cores_per_host;
      rc.link = c.link;
      rc.link_gbps = c.link_gbps;
      rc.link_latency_us = c.link_latency_us;
      rc.mode = c.mode;
      rc.reduction = c.reduction;
      rc.bucket_mb = c.bucket_mb;
      rc.world_size = c.world_size;
      rc.links = c.links;
      rc.repetition = rep;
      if (c.skip) {
        db.mark_skipped(sid, rc, "needs 8 ranks, the host has 2 cores");
        continue;
      }
      const int64_t run = db.begin_run(sid, rc);
      if (!c.fail_reason.empty()) {
        db.finish_run(run, results::RunStatus::kFailed, 134, c.fail_reason, nullptr);
        continue;
      }
      auto summary = make_summary(suite, c, rep);
      db.finish_run(run, results::RunStatus::kOk, 0, "", &summary);
      if (suite.with_poller && rep == 0) {
        using profiler::ProcessRole;
        std::vector<profiler::ProcessSample> samples;
        for (int i = 0; i < 10; ++i) {
          samples.push_back(
              {0.2 * i, 900, 1, ProcessRole::kLauncher, -1, 20'000'000, 15'000'000, "mpirun"});
          for (int r = 0; r < c.world_size; ++r) {
            const int64_t rss = summary.ranks[r].vm_hwm * (i + 1) / 10;
            samples.push_back({0.2 * i + 0.01, 1000 + r, 900, ProcessRole::kRank, r, rss,
                               rss - 4'000'000, "trainscope train"});
          }
        }
        db.add_poller_samples(run, samples);
      }
      if (!c.allreduce.empty()) db.add_allreduce_rows(run, c.allreduce);
    }
  }
  db.finish_suite(sid);
}

// `suite` written into a fresh database at `path` (any earlier file there
// removed) and read back as the report reads it: its latest suite.
inline analysis::SuiteData build_and_load_suite(const std::filesystem::path& path,
                                                const SuiteSpec& suite) {
  std::filesystem::remove(path);
  build_suite_db(path, suite);
  auto db = results::ResultsDb::open_for_reading(path);
  return analysis::load_suite(db, analysis::resolve_suite(db, "latest"));
}

// An all-reduce sweep suite as the runner stores it: mode "allreduce", runs
// without a summary, one row per size with every timed call's time. Calls
// follow latency + size / bandwidth with noise; `slowdown` multiplies the
// calls of some sizes.
struct SweepSpec {
  std::string name = "allreduce";
  std::vector<std::string> cases = {"shm", "tcp-l2"};
  std::vector<int64_t> sizes = {8, 1024, 131072, 1 << 20, 16 << 20};
  int repetitions = 1;
  int iters = 10;
  unsigned seed = 1;
  double call_noise = 0.05;
  std::map<int64_t, double> slowdown;  // size -> factor on its calls' times
  bool with_call_times = true;         // false: rows as written before they were kept
  // Per case: more of its config (allreduce, mpi_algorithm), which its rows
  // record too, and a factor on its bandwidth.
  std::map<std::string, nlohmann::json> config;
  std::map<std::string, double> speed;
};

inline std::vector<results::AllReduceRow> sweep_rows(const SweepSpec& spec, const std::string& name,
                                                     int rep) {
  std::mt19937 rng(spec.seed * 7919u + rep * 104729u +
                   static_cast<unsigned>(std::hash<std::string>{}(name)));
  std::normal_distribution<double> noise(0.0, spec.call_noise);
  std::vector<results::AllReduceRow> rows;
  for (int64_t size : spec.sizes) {
    const auto speed = spec.speed.find(name);
    const double model_us = (5.0 + static_cast<double>(size) / 5e3) /  // 5 us + 5 GB/s
                            (speed == spec.speed.end() ? 1.0 : speed->second);
    const auto it = spec.slowdown.find(size);
    const double factor = it == spec.slowdown.end() ? 1.0 : it->second;
    results::AllReduceRow row{"shm", "", 2, size, size / 4, "float32", "sum", 0, 0, 0, 0, {}};
    if (const auto c = spec.config.find(name); c != spec.config.end()) {
      row.algorithm = c->second.value("allreduce", "mpi");
      row.mpi_algorithm = c->second.value("mpi_algorithm", 0);
    }
    double sum = 0;
    for (int i = 0; i < spec.iters; ++i) {
      row.call_time_us.push_back(model_us * factor * (1.0 + noise(rng)));
      sum += row.call_time_us.back();
    }
    row.time_us = sum / spec.iters;
    row.algbw_gbps = row.busbw_gbps = static_cast<double>(size) / row.time_us / 1e3;
    if (!spec.with_call_times) row.call_time_us.clear();
    rows.push_back(std::move(row));
  }
  return rows;
}

inline void build_sweep_db(const std::filesystem::path& path, const SweepSpec& spec) {
  auto db = results::ResultsDb::open_for_writing(path);
  results::SuiteInfo info;
  info.name = spec.name;
  info.git_revision = "testrev";
  info.host_facts = {{"hostname", "node0"}, {"cpu_model", "Test CPU"}, {"cores", 8}};
  const int64_t sid = db.begin_suite(info);
  for (int rep = 0; rep < spec.repetitions; ++rep) {
    for (const auto& name : spec.cases) {
      results::RunCase rc;
      rc.case_name = name;
      rc.config = {{"kind", "allreduce"}, {"iters", spec.iters}};
      if (const auto c = spec.config.find(name); c != spec.config.end())
        rc.config.update(c->second);
      rc.mode = "allreduce";  // as the runner records sweeps
      rc.world_size = 2;
      rc.repetition = rep;
      const int64_t run = db.begin_run(sid, rc);
      db.add_allreduce_rows(run, sweep_rows(spec, name, rep));
      db.finish_run(run, results::RunStatus::kOk, 0, "", nullptr);
    }
  }
  db.finish_suite(sid);
}

// One process computing `step_s` a step at global `batch`: the one-machine
// case multi-host cases are predicted from.
inline CaseSpec one_machine_spec(std::string name, double step_s, int batch) {
  return {.name = std::move(name),
          .mode = "naive",
          .reduction = "none",
          .world_size = 1,
          .step_time_s = step_s,
          .comm_share = 0,
          .batch = batch};
}

// Two hosts of a core each over gige, measured at 1 Gbit/s and 50 us, a
// fifth of the step in the all-reduce; batch_per_rank > 0: weak scaling.
inline CaseSpec two_hosts_gige_spec(std::string name, double step_s, int batch,
                                    int batch_per_rank = 0) {
  return {.name = std::move(name),
          .mode = "sharded",
          .step_time_s = step_s,
          .comm_share = 0.2,
          .hosts = 2,
          .cores_per_host = 1,
          .link = "gige",
          .link_gbps = 1.0,
          .link_latency_us = 50,
          .batch = batch,
          .batch_per_rank = batch_per_rank};
}

// The reductions suite: naive baseline, then per-tensor, fused and overlap.
// One, two and four ranks whose per-rank step grows with them: speedup 1,
// 1.8, 3.1 (an Amdahl fit's serial fraction between 0.03 and 0.2).
inline SuiteSpec scaling_suite() {
  SuiteSpec s;
  s.name = "scaling";
  s.cases = {{.name = "np1", .mode = "naive", .world_size = 1, .step_time_s = 0.05},
             {.name = "np2", .mode = "sharded", .world_size = 2, .step_time_s = 0.05 / 0.9},
             {.name = "np4", .mode = "sharded", .world_size = 4, .step_time_s = 0.05 / 0.775}};
  return s;
}

inline SuiteSpec reductions_suite() {
  SuiteSpec s;
  s.name = "reductions";
  s.cases = {
      {.name = "naive",
       .mode = "naive",
       .reduction = "none",
       .world_size = 1,
       .step_time_s = 0.08,
       .comm_share = 0.0},
      {.name = "per-tensor", .reduction = "per-tensor", .step_time_s = 0.06, .comm_share = 0.35},
      {.name = "fused",
       .reduction = "fused",
       .bucket_mb = 1.0,
       .step_time_s = 0.05,
       .comm_share = 0.2},
      {.name = "overlap",
       .reduction = "overlap",
       .bucket_mb = 4.0,
       .step_time_s = 0.045,
       .comm_share = 0.1},
  };
  return s;
}

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_SUITE_BUILDER_H_
