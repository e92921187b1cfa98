#include "profiler/copy_probe.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "profiler/clock.h"
#include "profiler/stats.h"

namespace trainscope::profiler {
namespace {

// Thread t of n copies its contiguous share, cut at 4 KiB so that no two
// threads write the same cache line or page.
void copy_share(std::byte* dst, const std::byte* src, int64_t bytes, int t, int n) {
  constexpr int64_t kGrain = 4096;
  const int64_t grains = (bytes + kGrain - 1) / kGrain;
  const int64_t begin = std::min(bytes, grains * t / n * kGrain);
  const int64_t end = std::min(bytes, grains * (t + 1) / n * kGrain);
  if (end > begin) std::memcpy(dst + begin, src + begin, static_cast<std::size_t>(end - begin));
}

}  // namespace

std::vector<double> time_copies(const CopyProbeOptions& o,
                                const std::function<void()>& before_each) {
  TS_CHECK(o.bytes >= 1 && o.reps >= 1 && o.threads >= 1);
  const auto n = static_cast<std::size_t>(o.bytes);
  kernels::Buffer<std::byte> src(n, o.category);
  kernels::Buffer<std::byte> dst(n, o.category);
  std::fill(src.begin(), src.end(), std::byte{1});
  std::vector<double> times;
  for (int i = 0; i < o.reps; ++i) {
    if (before_each) before_each();
    const auto t0 = Clock::now();
    if (o.threads == 1) {
      std::memcpy(dst.data(), src.data(), n);  // no OpenMP team for one thread
    } else {
#pragma omp parallel num_threads(o.threads)
      copy_share(dst.data(), src.data(), o.bytes, omp_get_thread_num(), omp_get_num_threads());
    }
    times.push_back(seconds_since(t0));
  }
  return times;
}

double copy_gbps(int64_t bytes, std::span<const double> seconds) {
  if (seconds.empty()) return 0.0;
  const double median = summarize(seconds).median;
  return median > 0 ? static_cast<double>(bytes) / median / 1e9 : 0.0;
}

}  // namespace trainscope::profiler
