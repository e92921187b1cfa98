// What N hosts would do: step time, tokens/s and speedup of data-parallel
// training predicted from one run's measured compute and a link's measured
// all-reduce cost, the way one sizes a cluster before buying it.
//
// The link (LinkModel) is latency + bytes / bandwidth, fitted from all-reduce
// sweep rows (fit_link) or taken from a run's own collectives. A ring
// all-reduce of S bytes over N hosts costs
//     T(N, S) = 2 (N - 1) / N * S / bandwidth + 2 (N - 1) * latency
// (every byte crosses the link about twice however many hosts there are;
// the latency term grows with N). A step (StepModel) is forward, backward and
// the rest (data, optimizer) of one rank's compute at its per-rank batch,
// plus the gradient all-reduce: after backward without overlap,
// concurrently with backward with it, where a bucketed reduction can hide
// all but its last bucket:
//     no overlap: forward + backward + other + T
//     overlap:    forward + other + head + max(backward - head, T) + T(one bucket)
// (head: the fused LM head's share of backward, which ends before the first
// gradient is ready to reduce)
// Weak scaling keeps the per-rank batch (a host adds data, as the
// walkthrough does); strong scaling keeps the global batch, so per-rank
// compute shrinks as 1/N. The model leaves out what the hosts share (a
// switch, memory bandwidth) and treats compute as linear in the rows.
// Every rank waits for the slowest at the all-reduce: when the one-host
// case's compute of each measured step is known (StepModel::compute_samples),
// the step adds the expected slowest of N draws from those steps over one
// draw (expected_slowest), which grows with N as step-to-step noise does.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_ANALYSIS_PREDICTION_H_
#define TRAINSCOPE_ANALYSIS_PREDICTION_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "results/records.h"

namespace trainscope::analysis {

struct LinkModel {
  std::string name;          // e.g. "gige", or the transport of the rows
  double latency_s = 0;      // per message step of the ring
  double bandwidth_Bps = 0;  // bytes per second one host sends
};

// Least squares of the rows' time against size for their world size (rows
// of one transport and link count), inverted through the ring formula.
// std::nullopt with fewer than two sizes or a fit that is not physical
// (non-positive bandwidth).
std::optional<LinkModel> fit_link(std::span<const results::AllReduceRow> rows,
                                  const std::string& name);

// Seconds of a ring all-reduce of `bytes` over `hosts` hosts (0 for one).
double allreduce_seconds(const LinkModel& link, int hosts, double bytes);

struct StepModel {
  double forward_s = 0;  // one rank, at the measured per-rank batch
  double backward_s = 0;
  // Of backward_s: the fused head's gradient GEMMs, done before any gradient
  // is ready to reduce (results::StepRecord::head_backward_s). Overlap hides
  // the all-reduce behind the rest of backward only.
  double head_backward_s = 0;
  double other_s = 0;          // data, optimizer
  double grad_bytes = 0;       // all-reduced per step
  double bucket_bytes = 0;     // overlap's bucket (<= 0 or >= grad_bytes: one bucket)
  double tokens_per_rank = 0;  // tokens one rank trains per step at the measured batch
  // One rank's compute (forward + backward + other) in each measured step,
  // for the slowest of N ranks; empty: ranks are taken to be alike.
  std::vector<double> compute_samples;
  double compute_s() const { return forward_s + backward_s + other_s; }
};

enum class Scaling {
  kWeak,    // per-rank batch fixed: N hosts train N times the tokens per step
  kStrong,  // global batch fixed: per-rank compute is 1/N
};

struct Prediction {
  int hosts = 1;
  double step_s = 0;
  double comm_s = 0;  // the all-reduce, hidden or not
  double tokens_per_s = 0;
  double speedup = 1;     // tokens/s over one host's
  double efficiency = 1;  // speedup / hosts
};

Prediction predict(const StepModel& step, const LinkModel& link, int hosts, bool overlap,
                   Scaling scaling);

// The expected largest of `n` independent draws from the empirical
// distribution of `samples` (NaN when empty): with them sorted, the sum of
// x_(i) ((i/m)^n - ((i-1)/m)^n). n = 1 gives their mean.
double expected_slowest(std::span<const double> samples, int n);

// The hosts counts 1, 2, 4, ... up to `max_hosts` (and max_hosts itself).
std::vector<int> host_counts(int max_hosts);

// The link bandwidth (bytes/s) at which `hosts` hosts reach `efficiency`
// (e.g. 0.9) at the link's latency, weak scaling; std::nullopt when no
// bandwidth does (latency alone costs too much).
std::optional<double> bandwidth_for_efficiency(const StepModel& step, double latency_s, int hosts,
                                               double efficiency, bool overlap);

// The bucket size, among powers of two from 64 KiB to the whole gradient,
// that leaves the least all-reduce time exposed with overlap on `hosts`
// hosts; more buckets hide more but each pays the latency.
double best_bucket_bytes(const StepModel& step, const LinkModel& link, int hosts);

}  // namespace trainscope::analysis

#endif  // TRAINSCOPE_ANALYSIS_PREDICTION_H_
