#include "analysis/prediction.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace trainscope::analysis {

namespace {

// The step of one rank on `hosts` hosts: compute scaled for strong scaling.
StepModel scaled(const StepModel& step, int hosts, Scaling scaling) {
  if (scaling == Scaling::kWeak) return step;
  StepModel s = step;
  const double f = 1.0 / hosts;
  s.forward_s *= f;
  s.backward_s *= f;
  s.head_backward_s *= f;
  s.other_s *= f;
  s.tokens_per_rank *= f;
  for (double& x : s.compute_samples) x *= f;
  return s;
}

int bucket_count(const StepModel& step) {
  if (step.bucket_bytes <= 0 || step.bucket_bytes >= step.grad_bytes) return 1;
  return static_cast<int>(std::ceil(step.grad_bytes / step.bucket_bytes));
}

// When the last of `buckets` equal buckets is reduced, counted from the start
// of backward: bucket i is ready when backward has done (i+1)/buckets of its
// work, and one thread reduces the buckets in order.
double overlapped_comm_end(double backward_s, int buckets, double bucket_s) {
  double end = 0;
  for (int i = 0; i < buckets; ++i) {
    const double ready = backward_s * (i + 1) / buckets;
    end = std::max(end, ready) + bucket_s;
  }
  return end;
}

// Seconds of one step of one rank: compute and the all-reduce.
double step_seconds(const StepModel& s, const LinkModel& link, int hosts, bool overlap,
                    double* comm_s) {
  const int buckets = bucket_count(s);
  const double bucket_s = allreduce_seconds(link, hosts, s.grad_bytes / buckets);
  *comm_s = buckets * bucket_s;
  if (hosts <= 1) return s.compute_s();
  // The all-reduce starts when the slowest rank gets there.
  const double slowest = s.compute_samples.empty()
                             ? 0
                             : std::max(0.0, expected_slowest(s.compute_samples, hosts) -
                                                 expected_slowest(s.compute_samples, 1));
  if (!overlap) return s.compute_s() + slowest + *comm_s;
  // The window: backward after the head's part, from the first gradient
  // ready to the last.
  const double head_s =
      std::isfinite(s.head_backward_s) ? std::clamp(s.head_backward_s, 0.0, s.backward_s) : 0.0;
  return s.forward_s + s.other_s + head_s + slowest +
         overlapped_comm_end(s.backward_s - head_s, buckets, bucket_s);
}

}  // namespace

std::optional<LinkModel> fit_link(std::span<const results::AllReduceRow> rows,
                                  const std::string& name) {
  // Median time per size, so repeated sizes count once.
  std::map<int64_t, std::vector<double>> by_size;
  int world = 0;
  for (const auto& r : rows) {
    if (r.size_bytes <= 0 || !(r.time_us > 0)) continue;
    by_size[r.size_bytes].push_back(r.time_us * 1e-6);
    world = r.world_size;
  }
  if (by_size.size() < 2 || world < 2) return std::nullopt;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto& [size, times] : by_size) {
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    const double x = static_cast<double>(size), y = times[times.size() / 2];
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = static_cast<double>(by_size.size());
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  const double intercept = (sy - slope * sx) / n;
  if (!(slope > 0)) return std::nullopt;
  LinkModel link;
  link.name = name;
  link.bandwidth_Bps = 2.0 * (world - 1) / world / slope;
  link.latency_s = std::max(0.0, intercept / (2.0 * (world - 1)));
  return link;
}

double allreduce_seconds(const LinkModel& link, int hosts, double bytes) {
  if (hosts <= 1) return 0;
  const double steps = 2.0 * (hosts - 1);
  return steps / hosts * bytes / link.bandwidth_Bps + steps * link.latency_s;
}

Prediction predict(const StepModel& step, const LinkModel& link, int hosts, bool overlap,
                   Scaling scaling) {
  Prediction p;
  p.hosts = hosts;
  const StepModel s = scaled(step, hosts, scaling);
  p.step_s = step_seconds(s, link, hosts, overlap, &p.comm_s);
  p.tokens_per_s = hosts * s.tokens_per_rank / p.step_s;
  const double one_host = step.tokens_per_rank / step.compute_s();
  p.speedup = p.tokens_per_s / one_host;
  p.efficiency = p.speedup / hosts;
  return p;
}

double expected_slowest(std::span<const double> samples, int n) {
  if (samples.empty()) return NAN;
  std::vector<double> x(samples.begin(), samples.end());
  std::sort(x.begin(), x.end());
  const double m = static_cast<double>(x.size());
  double sum = 0;
  for (std::size_t i = 1; i <= x.size(); ++i) {
    sum += x[i - 1] * (std::pow(i / m, n) - std::pow((i - 1) / m, n));
  }
  return sum;
}

std::vector<int> host_counts(int max_hosts) {
  std::vector<int> out;
  for (int n = 1; n < max_hosts; n *= 2) out.push_back(n);
  out.push_back(max_hosts);
  return out;
}

std::optional<double> bandwidth_for_efficiency(const StepModel& step, double latency_s, int hosts,
                                               double efficiency, bool overlap) {
  auto efficiency_at = [&](double bandwidth) {
    return predict(step, {"", latency_s, bandwidth}, hosts, overlap, Scaling::kWeak).efficiency;
  };
  // Efficiency rises with bandwidth: bisect on a log scale, 1 kB/s .. 1 PB/s.
  double low = 1e3, high = 1e15;
  if (efficiency_at(high) < efficiency) return std::nullopt;
  if (efficiency_at(low) >= efficiency) return low;
  for (int i = 0; i < 100; ++i) {
    const double mid = std::sqrt(low * high);
    (efficiency_at(mid) >= efficiency ? high : low) = mid;
  }
  return high;
}

double best_bucket_bytes(const StepModel& step, const LinkModel& link, int hosts) {
  double best = step.grad_bytes, best_step = INFINITY;
  for (double bytes = 64 * 1024; bytes < 2 * step.grad_bytes; bytes *= 2) {
    StepModel s = step;
    s.bucket_bytes = std::min(bytes, step.grad_bytes);
    const double t = predict(s, link, hosts, /*overlap=*/true, Scaling::kWeak).step_s;
    if (t < best_step) {
      best_step = t;
      best = s.bucket_bytes;
    }
  }
  return best;
}

}  // namespace trainscope::analysis
