// Builders of varied, self-consistent records for the results tests. Values
// differ per rank, step and field so that a column stored in the wrong place
// or dropped shows up as a mismatch.
#ifndef TRAINSCOPE_TESTS_RESULTS_SAMPLE_RECORDS_H_
#define TRAINSCOPE_TESTS_RESULTS_SAMPLE_RECORDS_H_

#include <string>

#include "results/records.h"

namespace trainscope::results::testing {

inline TimeStats sample_stats(double base) {
  return TimeStats{base, base * 0.97, base * 1.31, base * 0.61, base * 1.73};
}

inline RunSummary sample_summary(int world_size, int steps, int seed = 1) {
  RunSummary s;
  s.trainscope_version = "0.1.0";
  s.git_revision = "abc123def456";
  s.model = {{"n_layer", 2}, {"n_embd", 64 + seed}, {"vocab", 256}};
  s.options = {{"batch", 4},           {"block", 32},       {"steps", steps}, {"lr", 3e-4},
               {"reduce", "bucketed"}, {"bucket_mb", 25.0}, {"seed", seed}};
  s.world_size = world_size;
  s.threads_per_rank = 2;
  s.transport = {{"OMPI_MCA_btl", "self,tcp"}, {"OMPI_MCA_btl_tcp_if_include", "lo"}};
  s.status = RunStatus::kOk;
  for (int r = 0; r < world_size; ++r) {
    s.hosts.push_back("host" + std::to_string(r % 2));
    std::vector<StepRecord> per_rank;
    for (int k = 0; k < steps; ++k) {
      StepRecord st;
      st.step = k;
      st.loss = 5.5 - 0.01 * k + 0.001 * seed;
      st.lr = 3e-4 * (k + 1) / steps;
      st.grad_norm = 1.0 + 0.1 * k + 0.01 * r;
      st.tokens = 128 + r;
      st.step_time_s = 0.05 + 0.001 * k + 0.0001 * r;
      st.phases = {0.001 * (r + 1), 0.02 + k * 1e-4, 0.025, 0.003 * (r + 1), 0.002, 0.0, 1e-5 * k};
      st.comm_calls = 3 + r;
      st.comm_bytes = 1000000 + 17 * k + r;
      st.comm_exposed_s = 0.001 * (k % 3);
      st.mem_active = 5000000 + 1000 * k + r;
      st.mem_peak = 7000000 + 1000 * k + r;
      st.comm_time_s = 0.002 + 1e-4 * k + 1e-5 * r;
      per_rank.push_back(st);
    }
    s.steps.push_back(per_rank);
    RankResult rr;
    rr.rank = r;
    rr.host = s.hosts.back();
    rr.pid = 4000 + r;
    rr.tokens_per_s = 2500.5 + r;
    rr.step_time = sample_stats(0.05 + 0.001 * r);
    rr.phases = {sample_stats(0.001), sample_stats(0.02),
                 sample_stats(0.025), sample_stats(0.003 + r * 1e-4),
                 sample_stats(0.002), sample_stats(0.0004),
                 sample_stats(0.0001)};
    rr.tracked_peak_total = 9000000 + r;
    rr.tracked_peak_by_category = {100 + r, 200, 300, 400, 500, 600, 700, 800};
    rr.vm_hwm = 50000000 + r;
    rr.vm_rss = 40000000 + r;
    rr.pss = r == 1 ? kUnknown : 30000000 + r;
    rr.data = {1000 + r, 32000 + r, 64000 + r, 128000 + r};
    rr.comm = {3 * steps, 1000000LL * steps, 0.004 * steps, 0.001 * steps};
    rr.load_start = {0.25 + r, 0.5 + r, 0.75 + r, 2 + r, 1 + r, 8};
    rr.load_end = {1.25 + r, 0.625 + r, 0.875 + r, 3 + r, r, 8};
    rr.cpu_s = 1.5 + r;
    rr.steps_wall_s = 2.25;
    s.ranks.push_back(rr);
  }
  if (world_size > 1) {
    for (int r = 0; r < world_size; ++r) {
      s.transport_per_rank.push_back(
          {{"OMPI_MCA_btl", "self,tcp"}, {"iface", "eth" + std::to_string(r)}});
    }
  }
  for (int k = 0; k < steps; k += 5) s.val.push_back({k, 5.6 - 0.01 * k});
  s.totals = {2500.5 * world_size, 0.0505, 0.065};
  return s;
}

inline AllReduceRow sample_allreduce_row(int64_t size_bytes) {
  return AllReduceRow{"tcp",
                      "lo",
                      2,
                      size_bytes,
                      size_bytes / 4,
                      "float32",
                      "sum",
                      12.5 + size_bytes * 1e-3,
                      size_bytes / 12.5e3,
                      size_bytes / 12.5e3,
                      0,
                      {12.0, 13.5 + size_bytes * 1e-3, 12.25}};
}

inline profiler::ProcessSample sample_poller(int i) {
  using profiler::ProcessRole;
  return profiler::ProcessSample{0.1 * i,
                                 100 + i % 3,
                                 99,
                                 i % 3 == 0 ? ProcessRole::kLauncher : ProcessRole::kRank,
                                 i % 3 == 0 ? -1 : i % 3 - 1,
                                 1000000LL * (i + 1),
                                 i % 4 == 0 ? kUnknown : 900000LL * (i + 1),
                                 "trainscope train"};
}

}  // namespace trainscope::results::testing

#endif  // TRAINSCOPE_TESTS_RESULTS_SAMPLE_RECORDS_H_
