// The N-host performance model on synthetic figures: the ring formula, the
// link fit, overlap, strong vs weak scaling, the bandwidth for a target
// efficiency and the best bucket size.
#include "analysis/prediction.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace trainscope::analysis {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

StepModel seed_like() {
  StepModel s;
  s.forward_s = 0.2;
  s.backward_s = 0.4;
  s.other_s = 0.05;
  s.grad_bytes = 108.0 * 1024 * 1024;
  s.tokens_per_rank = 2044;
  return s;
}

TEST(PredictionTest, RingAllReduceMovesAboutTwiceTheBytesWhateverTheHostCount) {
  const LinkModel link{"test", 50e-6, 1e9};
  EXPECT_EQ(allreduce_seconds(link, 1, 1e9), 0);
  EXPECT_NEAR(allreduce_seconds(link, 2, 1e9), 1.0 + 2 * 50e-6, 1e-12);
  EXPECT_NEAR(allreduce_seconds(link, 4, 1e9), 1.5 + 6 * 50e-6, 1e-12);
  // Bandwidth term -> 2 S / B as N grows; latency term grows with N.
  EXPECT_NEAR(allreduce_seconds({"", 0, 1e9}, 1000, 1e9), 2 * 999.0 / 1000, 1e-9);
}

TEST(PredictionTest, FitRecoversLatencyAndBandwidthFromSweepRows) {
  const LinkModel truth{"gige", 40e-6, 117e6};
  std::vector<results::AllReduceRow> rows;
  for (int64_t size = 1024; size <= (64 << 20); size *= 4) {
    results::AllReduceRow r;
    r.world_size = 2;
    r.size_bytes = size;
    r.time_us = allreduce_seconds(truth, 2, static_cast<double>(size)) * 1e6;
    rows.push_back(r);
  }
  const auto link = fit_link(rows, "gige");
  ASSERT_TRUE(link.has_value());
  EXPECT_NEAR(link->bandwidth_Bps, truth.bandwidth_Bps, truth.bandwidth_Bps * 1e-6);
  EXPECT_NEAR(link->latency_s, truth.latency_s, 1e-9);
  EXPECT_FALSE(fit_link(std::vector<results::AllReduceRow>(rows.begin(), rows.begin() + 1), "x"));
}

TEST(PredictionTest, OneHostIsItsComputeAndMoreHostsPayForTheLink) {
  const StepModel s = seed_like();
  const LinkModel gige{"gige", 50e-6, 117e6};
  const Prediction one = predict(s, gige, 1, false, Scaling::kWeak);
  EXPECT_DOUBLE_EQ(one.step_s, s.compute_s());
  EXPECT_DOUBLE_EQ(one.speedup, 1);
  const Prediction two = predict(s, gige, 2, false, Scaling::kWeak);
  EXPECT_NEAR(two.step_s, s.compute_s() + allreduce_seconds(gige, 2, s.grad_bytes), 1e-12);
  EXPECT_NEAR(two.speedup, 2 * s.compute_s() / two.step_s, 1e-12);
  EXPECT_LT(two.efficiency, 1);
  // On a link with no cost, weak scaling is perfect.
  EXPECT_NEAR(predict(s, {"ideal", 0, 1e18}, 8, false, Scaling::kWeak).speedup, 8, 1e-6);
}

TEST(PredictionTest, OverlapHidesTheAllReduceBehindBackwardUpToItsLastBucket) {
  StepModel s = seed_like();
  s.bucket_bytes = s.grad_bytes / 8;
  const LinkModel fast{"fast", 0, 10 * kGiB};  // 8 buckets of ~1.3 ms, backward 400 ms
  const double bucket = allreduce_seconds(fast, 2, s.grad_bytes / 8);
  const Prediction hidden = predict(s, fast, 2, true, Scaling::kWeak);
  EXPECT_NEAR(hidden.step_s, s.compute_s() + bucket, 1e-12);  // only the last bucket shows
  const LinkModel slow{"slow", 0,
                       0.05 * kGiB};  // ~2.1 s of all-reduce: backward hides 0.4 s at most
  const Prediction partly = predict(s, slow, 2, true, Scaling::kWeak);
  const double total = allreduce_seconds(slow, 2, s.grad_bytes);
  EXPECT_NEAR(partly.step_s, s.forward_s + s.other_s + s.backward_s / 8 + total, 1e-9);
  EXPECT_LT(partly.step_s, predict(s, slow, 2, false, Scaling::kWeak).step_s);
}

// The fused LM head's gradient GEMMs are backward's work but end before any
// gradient is ready to reduce: nothing hides behind them, so the window is
// backward after them (it was the whole of backward, once they were booked to
// it; before that, forward held them and backward looked 8x short).
TEST(PredictionTest, OverlapHidesNothingBehindTheHeadsShareOfBackward) {
  StepModel s = seed_like();
  s.head_backward_s = 0.3;  // of backward's 0.4 s
  const LinkModel slow{"slow", 0, 0.05 * kGiB};
  const double total = allreduce_seconds(slow, 2, s.grad_bytes);
  const Prediction p = predict(s, slow, 2, true, Scaling::kWeak);
  // One bucket: it is ready at the end of backward whatever the head's share.
  EXPECT_NEAR(p.step_s, s.compute_s() + total, 1e-9);
  s.bucket_bytes = s.grad_bytes / 8;
  const Prediction bucketed = predict(s, slow, 2, true, Scaling::kWeak);
  // The first bucket is ready 0.1 s / 8 after the head's part, not 0.4 s / 8
  // into backward.
  EXPECT_NEAR(bucketed.step_s, s.forward_s + s.other_s + 0.3 + 0.1 / 8 + total, 1e-9);
  // No overlap: the split changes nothing.
  EXPECT_NEAR(predict(s, slow, 2, false, Scaling::kWeak).step_s, s.compute_s() + total, 1e-9);
  // Strong scaling shrinks the head's part with the rest.
  EXPECT_NEAR(predict(s, slow, 2, true, Scaling::kStrong).step_s,
              (s.forward_s + s.other_s + 0.3) / 2 + 0.1 / 2 / 8 + total, 1e-9);
}

TEST(PredictionTest, StrongScalingShrinksComputeWeakScalingAddsData) {
  const StepModel s = seed_like();
  const LinkModel ideal{"ideal", 0, 1e18};
  const Prediction strong = predict(s, ideal, 4, false, Scaling::kStrong);
  EXPECT_NEAR(strong.step_s, s.compute_s() / 4, 1e-9);
  EXPECT_NEAR(strong.speedup, 4, 1e-6);  // same global tokens, a quarter of the time
  const Prediction weak = predict(s, ideal, 4, false, Scaling::kWeak);
  EXPECT_NEAR(weak.step_s, s.compute_s(), 1e-9);
  EXPECT_NEAR(weak.tokens_per_s, 4 * s.tokens_per_rank / s.compute_s(), 1e-3);
}

TEST(PredictionTest, BandwidthForATargetEfficiency) {
  const StepModel s = seed_like();
  for (int hosts : {2, 4, 8}) {
    const auto bw = bandwidth_for_efficiency(s, 50e-6, hosts, 0.9, false);
    ASSERT_TRUE(bw.has_value()) << hosts;
    EXPECT_NEAR(predict(s, {"", 50e-6, *bw}, hosts, false, Scaling::kWeak).efficiency, 0.9, 1e-6);
    // Analytically: T = compute / 9.
    const double t = s.compute_s() / 9 - 2 * (hosts - 1) * 50e-6;
    EXPECT_NEAR(*bw, 2.0 * (hosts - 1) / hosts * s.grad_bytes / t, *bw * 1e-6);
  }
  // A latency larger than the whole budget: no bandwidth is enough.
  EXPECT_FALSE(bandwidth_for_efficiency(s, 1.0, 8, 0.9, false).has_value());
}

TEST(PredictionTest, BestBucketBalancesLatencyAgainstWhatOverlapHides) {
  StepModel s = seed_like();
  // High latency: few large buckets win; no latency: the smallest bucket
  // (only it is left exposed) wins.
  const double high_latency = best_bucket_bytes(s, {"", 20e-3, 1e9}, 2);
  const double no_latency = best_bucket_bytes(s, {"", 0, 1e9}, 2);
  EXPECT_GT(high_latency, no_latency);
  EXPECT_EQ(no_latency, 64 * 1024);
  // The best is no worse than the extremes: the smallest bucket and one
  // bucket of the whole gradient.
  const LinkModel slow{"", 20e-3, 1e9};
  auto step_at = [&](double bucket) {
    StepModel b = s;
    b.bucket_bytes = bucket;
    return predict(b, slow, 2, true, Scaling::kWeak).step_s;
  };
  EXPECT_LE(step_at(high_latency), step_at(64 * 1024));
  EXPECT_LE(step_at(high_latency), step_at(s.grad_bytes));
}

// Every rank waits for the slowest: the expected largest of N draws from
// the one-host case's steps, added over one draw, grows with N.
TEST(PredictionTest, TheSlowestOfNRanksSetsTheStep) {
  const std::vector<double> two = {1.0, 2.0};
  EXPECT_DOUBLE_EQ(expected_slowest(two, 1), 1.5);   // the mean
  EXPECT_DOUBLE_EQ(expected_slowest(two, 2), 1.75);  // 2 unless both draw 1
  EXPECT_TRUE(std::isnan(expected_slowest({}, 2)));
  StepModel s = seed_like();
  const LinkModel gige{"gige", 50e-6, 117e6};
  const double alike = predict(s, gige, 8, false, Scaling::kWeak).step_s;
  s.compute_samples = {0.6, 0.62, 0.64, 0.66, 0.7, 0.9};  // one slow step in six
  const double mean = expected_slowest(s.compute_samples, 1);
  EXPECT_DOUBLE_EQ(predict(s, gige, 1, false, Scaling::kWeak).step_s, s.compute_s());
  EXPECT_NEAR(predict(s, gige, 8, false, Scaling::kWeak).step_s - alike,
              expected_slowest(s.compute_samples, 8) - mean, 1e-12);
  EXPECT_GT(predict(s, gige, 8, true, Scaling::kWeak).step_s,
            predict(s, gige, 2, true, Scaling::kWeak).step_s);
  // Strong scaling: each rank's compute, and its noise, are 1/N.
  const double strong = predict(s, gige, 4, false, Scaling::kStrong).step_s;
  StepModel quiet = s;
  quiet.compute_samples.clear();
  EXPECT_NEAR(strong - predict(quiet, gige, 4, false, Scaling::kStrong).step_s,
              (expected_slowest(s.compute_samples, 4) - mean) / 4, 1e-12);
}

TEST(PredictionTest, HostCountsAreDoublingsUpToTheMaximum) {
  EXPECT_EQ(host_counts(64), (std::vector<int>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(host_counts(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(host_counts(1), (std::vector<int>{1}));
}

}  // namespace
}  // namespace trainscope::analysis
