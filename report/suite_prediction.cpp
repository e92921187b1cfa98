#include "report/suite_prediction.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/case_options.h"
#include "report/dilation.h"
#include "report/comparison.h"
#include "report/findings.h"
#include "results/figures.h"
#include "results/link_profiles.h"

namespace trainscope::report {
namespace {

constexpr double kMebibyte = 1024.0 * 1024.0;

bool is_overlap(const analysis::CaseData& c) { return c.run_case.reduction.starts_with("overlap"); }

// Median bytes rank 0 all-reduced per measured step.
double reduced_bytes_per_step(const analysis::CaseData& c) {
  const analysis::RunData* run = c.first_usable();
  return run ? results::median_step_figure(*run->summary, &results::StepRecord::comm_bytes) : NAN;
}

double grad_bytes(const analysis::SuiteData& suite, const analysis::CaseData& one,
                  std::string* source) {
  for (const auto& c : suite.cases) {
    if (c.run_case.world_size < 2 || !same_workload(c, one)) continue;
    const double b = reduced_bytes_per_step(c);
    if (b > 0) {
      *source = fmt::format("all-reduced per step by {}", c.name);
      return b;
    }
  }
  const analysis::RunData* run = one.first_usable();
  if (!run || run->summary->ranks.empty()) return NAN;
  *source = "the parameter arena (one gradient per parameter)";
  return static_cast<double>(
      run->summary->ranks.front().tracked_peak_by_category[kernels::MemoryCategory::kParameters]);
}

double bucket_bytes_of(const analysis::CaseData& c) {
  return c.run_case.bucket_mb ? *c.run_case.bucket_mb * kMebibyte : 0;
}

// A real case (computing, at full speed, not a replay) on `link` across
// hosts that reduced its gradients after backward: the all-reduces as
// training makes them. Fused first (its buckets are the largest calls).
const analysis::CaseData* training_link_case(const analysis::SuiteData& suite,
                                             const std::string& link) {
  const analysis::CaseData* found = nullptr;
  if (link.empty()) return found;
  for (const auto& c : suite.cases) {
    const auto& rc = c.run_case;
    if (rc.host_count < 2 || rc.world_size < 2 || rc.link != link || !full_speed(rc) ||
        is_overlap(c) || !case_options(c).replay_from.empty() ||
        !(analysis::case_figures(c).grad_busbw_gbps > 0)) {
      continue;
    }
    if (!found || (rc.reduction == "fused" && found->run_case.reduction != "fused")) found = &c;
  }
  return found;
}

// The link as a suite measured it: from a real multi-host case's own
// gradient all-reduces when there is one (their bus bandwidth, each call's
// fixed cost inside it: latency 0), else its link probe. The probe's
// back-to-back calls of 64 KiB..16 MiB and training's calls, which follow
// compute, see different links on the virtual cluster: two-way TCP through
// its token buckets runs at the rate or at half of it from one call to the
// next (docs/RESULTS.md, 2026-11-28), and the probe's fit caught the slow
// one (0.51 Gbit/s on gige) where the real 2-host case's all-reduces ran at
// 0.8.
PredictedLink measured_link(const analysis::SuiteData& suite, const analysis::CaseData& probed) {
  const auto& rc = probed.run_case;
  PredictedLink l;
  l.measured = true;
  const std::string name = rc.link.empty() ? "unshaped" : rc.link;
  if (const analysis::CaseData* t = training_link_case(suite, rc.link)) {
    const double busbw = analysis::case_figures(*t).grad_busbw_gbps;  // GB/s
    l.model = {name, 0, busbw * 1e9};
    const auto& probe = t->run_case;
    l.source =
        fmt::format("the gradient all-reduces of {}: {:.2f} Gbit/s bus bandwidth, latency in it",
                    t->name, busbw * 8);
    if (probe.link_gbps) {
      l.source += fmt::format(" (its link probe: {:.2f} Gbit/s, {:.0f} us)", *probe.link_gbps,
                              probe.link_latency_us.value_or(0));
    }
    return l;
  }
  // A dilated cluster's link, in undilated time: F x the rate was measured
  // at 1/F the speed.
  const double share = dilation_share(rc);
  const double gbps = *rc.link_gbps / share, latency_us = rc.link_latency_us.value_or(0) * share;
  l.model = {name, latency_us * 1e-6, gbps * 1e9 / 8};
  l.source = fmt::format("measured with {}: {:.2f} Gbit/s, {:.0f} us{}", probed.name, gbps,
                         latency_us, share < 1 ? " (" + dilation_label(share) + ", scaled)" : "");
  return l;
}

std::vector<PredictedLink> suite_links(const analysis::SuiteData& suite,
                                       std::string* latency_note) {
  std::vector<PredictedLink> out;
  std::vector<double> latencies;
  for (const auto& c : suite.cases) {
    const auto& rc = c.run_case;
    if (rc.host_count < 2 || !rc.link_gbps || !(*rc.link_gbps > 0)) continue;
    latencies.push_back(rc.link_latency_us.value_or(0) * dilation_share(rc) * 1e-6);
    const bool known = std::any_of(out.begin(), out.end(),
                                   [&](const PredictedLink& l) { return l.model.name == rc.link; });
    if (!known) out.push_back(measured_link(suite, c));
  }
  const double latency = latencies.empty() ? 0 : results::median_of(latencies);
  if (latencies.empty()) {
    *latency_note =
        "No link was measured in this suite (it ran on one host): the profiles' nominal rates "
        "with no latency, so the speedups are upper bounds. The machines suite measures each "
        "link on the virtual cluster.";
  }
  for (const auto& p : results::kLinkProfiles) {
    if (!(p.bits_per_second > 0)) continue;
    const bool known = std::any_of(out.begin(), out.end(),
                                   [&](const PredictedLink& l) { return l.model.name == p.name; });
    if (known) continue;
    out.push_back(
        {{std::string(p.name), latency, p.bits_per_second / 8},
         false,
         fmt::format("nominal {} ({}), latency {:.0f} us{}", p.tc_rate, p.what, latency * 1e6,
                     latencies.empty() ? " (not measured)" : " (measured)")});
  }
  return out;
}

std::optional<ValidationRow> validate(const analysis::SuiteData& suite,
                                      const analysis::CaseData& c) {
  const auto& rc = c.run_case;
  if (rc.host_count < 2 || rc.world_size < 2 || !rc.link_gbps || !(*rc.link_gbps > 0)) {
    return std::nullopt;
  }
  const analysis::CaseData* one = one_machine_case(suite, c);
  if (!one) return std::nullopt;
  std::string source;
  auto step = step_model(suite, *one, &source);
  const analysis::CaseFigures f = analysis::case_figures(c);
  if (!step || !(f.step_median_s > 0)) return std::nullopt;
  step->bucket_bytes = bucket_bytes_of(c);
  ValidationRow v;
  v.case_name = c.name;
  v.link = rc.link;
  v.hosts = rc.host_count;
  v.cores_per_host = rc.cores_per_host;
  v.overlap = is_overlap(c);
  const CaseOptions options = case_options(c);
  v.scaling =
      options.placement.batch_per_rank > 0 ? analysis::Scaling::kWeak : analysis::Scaling::kStrong;
  v.compute_from = one->name;
  // Dilated (report/dilation.h): every time x F, the link's bandwidth / F.
  v.cpu_share = dilation_share(rc);
  const double f_share = v.cpu_share;
  const analysis::LinkModel link{rc.link, rc.link_latency_us.value_or(0) * 1e-6 * f_share,
                                 *rc.link_gbps * 1e9 / 8 / f_share};
  analysis::Prediction p = analysis::predict(*step, link, rc.world_size, v.overlap, v.scaling);
  // Strong scaling shrinks each rank's batch, and a smaller batch runs its
  // GEMMs less efficiently than the proportional share the model assumes:
  // where one machine was measured at the per-rank batch, start from that.
  const int per_rank = options.train.batch / rc.world_size;
  const analysis::CaseData* at = v.scaling == analysis::Scaling::kStrong && per_rank > 0
                                     ? one_machine_case_at(suite, c, per_rank)
                                     : nullptr;
  if (at && at != one) {
    if (auto own =
            predict_at_rank_batch(suite, *at, step->bucket_bytes, link, rc.world_size, v.overlap)) {
      p = *own;
      p.speedup = p.tokens_per_s / (step->tokens_per_rank / step->compute_s());
      v.compute_from = at->name;
    }
  }
  v.measured_step_s = f.step_median_s * f_share;
  for (const results::RunFigures& r : analysis::repetition_figures(c)) {
    const double s = r.step_median_s * f_share;
    v.measured_min_s = v.repetitions == 0 ? s : std::min(v.measured_min_s, s);
    v.measured_max_s = v.repetitions == 0 ? s : std::max(v.measured_max_s, s);
    ++v.repetitions;
  }
  v.loaded = f.loaded > 0 || analysis::case_figures(*one).loaded > 0;
  v.predicted_step_s = p.step_s;
  v.predicted_speedup = p.speedup;
  v.measured_speedup = f.tokens_per_s / f_share / analysis::case_figures(*one).tokens_per_s;
  v.measured_speedup_interval = analysis::bootstrap_ratio_of_medians(repetition_tokens_per_s(c),
                                                                     repetition_tokens_per_s(*one));
  v.measured_speedup_interval.estimate /= f_share;
  v.measured_speedup_interval.low /= f_share;
  v.measured_speedup_interval.high /= f_share;
  return v;
}

}  // namespace

std::optional<analysis::StepModel> step_model(const analysis::SuiteData& suite,
                                              const analysis::CaseData& one,
                                              std::string* grad_source) {
  // Medians over the measured steps, like the measured step time the
  // predictions are set beside.
  const analysis::RunData* run = one.first_usable();
  if (!run || run->summary->steps.empty()) return std::nullopt;
  std::vector<double> forward, backward, head, other, tokens, s_samples;
  using profiler::Phase;
  for (const auto& st : results::measured_steps(*run->summary, run->summary->steps.front())) {
    forward.push_back(st.phases[Phase::kForward]);
    backward.push_back(st.phases[Phase::kBackward]);
    // NaN: a step recorded before the head's part was (NULL in the database).
    head.push_back(std::isfinite(st.head_backward_s) ? st.head_backward_s : 0.0);
    other.push_back(st.phases[Phase::kData] + st.phases[Phase::kOptimizer]);
    tokens.push_back(static_cast<double>(st.tokens));
    s_samples.push_back(forward.back() + backward.back() + other.back());
  }
  analysis::StepModel s;
  s.forward_s = results::median_of(forward);
  s.backward_s = results::median_of(backward);
  s.head_backward_s = results::median_of(head);
  s.other_s = results::median_of(other);
  s.tokens_per_rank = results::median_of(tokens);
  s.compute_samples = std::move(s_samples);
  if (!(s.forward_s > 0) || !(s.backward_s > 0) || !std::isfinite(s.other_s) ||
      !(s.tokens_per_rank > 0)) {
    return std::nullopt;
  }
  s.grad_bytes = grad_bytes(suite, one, grad_source);
  if (!(s.grad_bytes > 0)) return std::nullopt;
  return s;
}

std::optional<SuitePrediction> suite_prediction(const analysis::SuiteData& suite) {
  const analysis::CaseData* one = nullptr;
  for (const auto& c : suite.cases) {
    if (c.run_case.world_size == 1 && c.run_case.mode == "naive" && full_speed(c.run_case) &&
        c.first_usable()) {
      one = &c;
      break;
    }
  }
  if (!one) return std::nullopt;
  SuitePrediction out;
  auto step = step_model(suite, *one, &out.grad_source);
  if (!step) return std::nullopt;
  out.compute_case = one->name;
  out.step = *step;
  for (const auto& c : suite.cases) {
    if (is_overlap(c) && same_workload(c, *one)) {
      out.step.bucket_bytes = bucket_bytes_of(c);
      break;
    }
  }
  out.links = suite_links(suite, &out.latency_note);
  for (const auto& c : suite.cases) {
    if (auto v = validate(suite, c)) out.validation.push_back(std::move(*v));
  }
  return out;
}

std::optional<analysis::Prediction> predict_at_rank_batch(const analysis::SuiteData& suite,
                                                          const analysis::CaseData& at,
                                                          double bucket_bytes,
                                                          const analysis::LinkModel& link,
                                                          int hosts, bool overlap) {
  std::string source;
  auto step = step_model(suite, at, &source);
  if (!step) return std::nullopt;
  step->bucket_bytes = bucket_bytes;
  return analysis::predict(*step, link, hosts, overlap, analysis::Scaling::kWeak);
}

}  // namespace trainscope::report
