#include "report/findings.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/algorithms.h"
#include "report/case_options.h"
#include "report/dilation.h"
#include "report/comparison.h"
#include "report/finetune.h"
#include "base/format.h"
#include "kernels/storage.h"
#include "report/limits.h"

namespace trainscope::report {
namespace {

// Cases are comparable when they train the same weights of the same model
// on the same data at the same block size: the key of that. What trains is
// case_fine_tune's reading (the suite's record, else the trainer's own), so
// a LoRA case is never compared with a full one; nor a bf16 case with an
// fp32 one (precision is recorded only when it is not fp32).
std::string workload_key(const analysis::CaseData& c) {
  const CaseOptions o = case_options(c);
  if (!o.trains) return "sweep";
  // A replayed case is a workload of its own: never the same as a measured one.
  return fmt::format("{}|{}|{}|{}|{}{}", o.train.model, o.train.data.source, o.train.block,
                     case_fine_tune(c).label(), enum_name(o.train.precision),
                     o.replay_from.empty() ? "" : "|replayed from " + o.replay_from);
}

std::string model_label(const analysis::CaseData& c) {
  const CaseOptions o = case_options(c);
  return o.trains ? std::filesystem::path(o.train.model).filename().string() : "the model";
}

// Mean over ranks of the bytes of the dataset each held.
std::optional<double> data_bytes_per_rank(const analysis::CaseData& c) {
  const analysis::RunData* run = c.first_usable();
  if (!run || run->summary->ranks.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& r : run->summary->ranks) sum += static_cast<double>(r.data.bytes_held);
  return sum / static_cast<double>(run->summary->ranks.size());
}

std::optional<Finding> data_finding(const analysis::SuiteData& suite) {
  // The largest world size that has both a duplicated and a sharded case.
  const analysis::CaseData *dup = nullptr, *shard = nullptr;
  for (const auto& d : suite.cases) {
    if (d.run_case.mode != "duplicated" || !data_bytes_per_rank(d)) continue;
    for (const auto& s : suite.cases) {
      if (s.run_case.mode != "sharded" || s.run_case.world_size != d.run_case.world_size ||
          workload_key(s) != workload_key(d) || !data_bytes_per_rank(s)) {
        continue;
      }
      if (!dup || d.run_case.world_size > dup->run_case.world_size) dup = &d, shard = &s;
    }
  }
  if (!dup) return std::nullopt;
  const double d = *data_bytes_per_rank(*dup), s = *data_bytes_per_rank(*shard);
  const int n = dup->run_case.world_size;
  std::string one;
  for (const auto& c : suite.cases) {
    if (c.run_case.mode == "naive" && workload_key(c) == workload_key(*dup)) {
      if (auto b = data_bytes_per_rank(c)) {
        one =
            fmt::format(" (one process holds {})", kernels::format_bytes(static_cast<int64_t>(*b)));
        break;
      }
    }
  }
  return Finding{
      "data", "Duplicated vs sharded data",
      fmt::format("At {} ranks a duplicated rank holds {} of the dataset{}, a sharded rank {}: "
                  "{:.1f}x less per rank, {} vs {} over the job; duplicated data costs every "
                  "rank the whole dataset however many ranks share the work.",
                  n, kernels::format_bytes(static_cast<int64_t>(d)), one,
                  kernels::format_bytes(static_cast<int64_t>(s)), s > 0 ? d / s : NAN,
                  kernels::format_bytes(static_cast<int64_t>(d * n)),
                  kernels::format_bytes(static_cast<int64_t>(s * n)))};
}

// Rank 0's training loss by step.
std::map<int64_t, double> loss_curve(const analysis::CaseData& c) {
  std::map<int64_t, double> out;
  const analysis::RunData* run = c.first_usable();
  if (!run || run->summary->steps.empty()) return out;
  for (const auto& s : run->summary->steps.front()) out[s.step] = s.loss;
  return out;
}

// A data-parallel case's reference: the first one-process case with a loss
// curve of the same workload (the same weights training) at the same global
// batch; nullptr when the suite has none.
const analysis::CaseData* one_process_reference(const analysis::SuiteData& suite,
                                                const analysis::CaseData& c) {
  const int batch = case_options(c).train.batch;
  for (const auto& n : suite.cases) {
    if (n.run_case.mode == "naive" && full_speed(n.run_case) &&
        workload_key(n) == workload_key(c) && case_options(n).train.batch == batch &&
        !loss_curve(n).empty()) {
      return &n;
    }
  }
  return nullptr;
}

// Tokens a step of one rank: the rows its GEMMs run at; 0 without steps.
int64_t rank_tokens(const analysis::CaseData& c) {
  const analysis::RunData* run = c.first_usable();
  if (!run || run->summary->steps.empty() || run->summary->steps.front().empty()) return 0;
  return run->summary->steps.front().front().tokens;
}

// One process doing one of a multi-rank case's ranks' work: naive, at full
// speed, the same workload and tokens a step as a rank, on as many threads
// (what the sgemm limits compare: the same rows, alone and side by side).
const analysis::CaseData* one_rank_reference(const analysis::SuiteData& suite,
                                             const analysis::CaseData& c) {
  const analysis::RunData* run = c.first_usable();
  if (!run || rank_tokens(c) == 0) return nullptr;
  for (const auto& n : suite.cases) {
    const analysis::RunData* one = n.first_usable();
    if (n.run_case.mode == "naive" && full_speed(n.run_case) && one &&
        workload_key(n) == workload_key(c) && rank_tokens(n) == rank_tokens(c) &&
        one->summary->threads_per_rank == run->summary->threads_per_rank) {
      return &n;
    }
  }
  return nullptr;
}

// Why a data-parallel case's loss differs from one process's by `rel`.
std::string loss_difference_reason(const analysis::CaseData& c, double rel) {
  if (const std::string wire = case_reduction(c).comm_dtype; wire != "fp32") {
    return fmt::format(
        "the ranks train on the same global batch, but {}'s gradients were rounded "
        "to {} for the all-reduce (--comm-dtype), besides the order of "
        "floating-point sums.",
        c.name, wire);
  }
  return rel < 1e-3 ? "the ranks train on the same global batch, so only the order of "
                      "floating-point sums differs."
                    : "more than summation order: the ranks do not see the same global batch as "
                      "one process (duplicated or sharded sampling differs).";
}

std::optional<Finding> loss_finding(const analysis::SuiteData& suite) {
  struct Worst {
    const analysis::CaseData* c = nullptr;
    int64_t step = 0;
    double diff = -1, loss = 0;
  } worst;
  int compared = 0;
  std::vector<std::string> references;  // in the order first used
  for (const auto& c : suite.cases) {
    if (c.run_case.mode == "naive") continue;
    const analysis::CaseData* naive = one_process_reference(suite, c);
    if (!naive) continue;
    const auto reference = loss_curve(*naive);
    size_t common = 0;
    for (const auto& [step, loss] : loss_curve(c)) {
      auto it = reference.find(step);
      if (it == reference.end()) continue;
      ++common;
      const double diff = std::abs(loss - it->second);
      if (diff > worst.diff) worst = {&c, step, diff, it->second};
    }
    if (common == 0) continue;
    ++compared;
    if (std::find(references.begin(), references.end(), naive->name) == references.end()) {
      references.push_back(naive->name);
    }
  }
  if (!worst.c) return std::nullopt;
  const double rel = worst.loss != 0 ? worst.diff / std::abs(worst.loss) : NAN;
  // One reference reads as before; several (full and LoRA) are each
  // compared with the one process that trains as they do.
  const std::string against = references.size() == 1
                                  ? references.front()
                                  : fmt::format("the one process that trains as each does ({})",
                                                fmt::join(references, ", "));
  return Finding{
      "loss", "Data-parallel loss vs one process",
      fmt::format("Over {} data-parallel case(s) at the same global batch as {}, the largest "
                  "difference from one process's loss is {:.2g} ({:.3f}% of {:.4f}), in {} at "
                  "step {}; {}",
                  compared, against, worst.diff, rel * 100, worst.loss, worst.c->name, worst.step,
                  loss_difference_reason(*worst.c, rel))};
}

// Per step (rank 0, measured steps): median collective calls and bytes.
struct CallFigures {
  double calls = NAN, bytes = NAN, time_s = NAN;
};
CallFigures call_figures(const analysis::CaseData& c) {
  CallFigures f;
  const analysis::RunData* run = c.first_usable();
  if (!run || run->summary->steps.empty()) return f;
  f.calls = results::median_step_figure(*run->summary, &results::StepRecord::comm_calls);
  f.bytes = results::median_step_figure(*run->summary, &results::StepRecord::comm_bytes);
  f.time_s = analysis::case_figures(c).comm_exposed_s;
  return f;
}

// Each usable repetition's exposed gradient-sync time per step.
std::vector<double> repetition_exposed_s(const analysis::CaseData& c) {
  std::vector<double> out;
  for (const results::RunFigures& f : analysis::repetition_figures(c)) {
    if (f.comm_exposed_s > 0) out.push_back(f.comm_exposed_s);
  }
  return out;
}

// "-40% [-52%, -31%]": fused over per-tensor exposed time, over the
// repetitions of each (the ratio of medians, bootstrapped).
std::string exposed_change(const analysis::CaseData& per_tensor, const analysis::CaseData& fused) {
  const std::vector<double> a = repetition_exposed_s(per_tensor), b = repetition_exposed_s(fused);
  return analysis::format_change(analysis::bootstrap_ratio_of_medians(b, a), 0);
}

std::optional<Finding> reduction_finding(const analysis::SuiteData& suite) {
  std::vector<std::string> parts;
  double best_gain = -1;
  std::string best_model;
  std::set<std::string> seen;
  for (const auto& pt : suite.cases) {
    if (pt.run_case.reduction != "per-tensor" || pt.run_case.world_size < 2) continue;
    const std::string key = workload_key(pt) + std::to_string(pt.run_case.world_size);
    if (!seen.insert(key).second) continue;
    const CallFigures a = call_figures(pt);
    // The fused case with the fewest calls: the whole gradient at once.
    const analysis::CaseData* fused = nullptr;
    CallFigures b;
    for (const auto& f : suite.cases) {
      if (f.run_case.reduction != "fused" || f.run_case.mode != pt.run_case.mode ||
          f.run_case.world_size != pt.run_case.world_size || workload_key(f) != workload_key(pt) ||
          f.run_case.links != pt.run_case.links) {
        continue;
      }
      const CallFigures cf = call_figures(f);
      if (!std::isnan(cf.calls) && (!fused || cf.calls < b.calls)) fused = &f, b = cf;
    }
    if (!fused || std::isnan(a.calls) || !(a.time_s > 0) || !(b.time_s > 0)) continue;
    const double gain = 1 - b.time_s / a.time_s;
    std::string part = fmt::format(
        "{}: per-tensor makes {:.0f} calls a step (tensors of {} on average) in {:.2f} ms "
        "exposed, fused {:.0f} in {:.2f} ms, a change of {}",
        model_label(pt), a.calls, kernels::format_bytes(static_cast<int64_t>(a.bytes / a.calls)),
        a.time_s * 1e3, b.calls, b.time_s * 1e3, exposed_change(pt, *fused));
    if (a.calls > b.calls) {
      part += fmt::format(", {:.0f} us per call saved",
                          (a.time_s - b.time_s) / (a.calls - b.calls) * 1e6);
    } else {
      part +=
          ": the fused case's buckets are smaller than the tensors, so it makes more calls, "
          "not fewer";
    }
    parts.push_back(part);
    if (gain > best_gain) best_gain = gain, best_model = model_label(pt);
  }
  if (parts.empty()) return std::nullopt;
  std::string answer = fmt::format("{}. ", fmt::join(parts, "; "));
  answer += parts.size() > 1
                ? fmt::format(
                      "Fusing matters most for {}: every call pays a fixed cost, so many "
                      "small tensors pay it many times.",
                      best_model)
                : (best_gain > 0.1 ? "Fusing saves the fixed cost each call pays."
                                   : "Fusing changes little here: the tensors are few or large "
                                     "enough that bandwidth, not per-call cost, sets the time.");
  return Finding{"reduction", "Per-tensor vs fused all-reduce", answer};
}

// What the link count changes: a training case's all-reduce time per step
// (lower is better) or a sweep's peak busbw (higher is better).
struct LinkFigure {
  double value = NAN;
  bool sweep = false;
};
LinkFigure link_figure(const analysis::CaseData& c) {
  const analysis::RunData* run = c.first_usable();
  if (!run) return {};
  if (!run->allreduce.empty()) {
    double peak = 0;
    for (const auto& r : run->allreduce) peak = std::max(peak, r.busbw_gbps);
    return {peak, true};
  }
  return {analysis::case_figures(c).comm_exposed_s, false};
}

std::optional<Finding> links_finding(const analysis::SuiteData& suite) {
  std::map<int, std::pair<const analysis::CaseData*, LinkFigure>> by_links;
  const analysis::CaseData* shm = nullptr;
  for (const auto& c : suite.cases) {
    const int links = analysis::tcp_links(c.run_case.links);
    const LinkFigure f = link_figure(c);
    if (std::isnan(f.value)) continue;
    if (links > 0 && !by_links.contains(links)) by_links[links] = {&c, f};
    if (c.run_case.links == "shm" && !shm) shm = &c;
  }
  if (by_links.size() < 2) return std::nullopt;
  const auto& [few, a] = *by_links.begin();
  const auto& [many, b] = *by_links.rbegin();
  const bool sweep = a.second.sweep;
  const double change = sweep ? b.second.value / a.second.value - 1
                              : 1 - b.second.value / a.second.value;  // > 0: more links better
  const auto show = [&](double v) {
    return sweep ? fmt::format("{:.2f} GB/s peak busbw", v)
                 : fmt::format("{:.2f} ms of all-reduce a step", v * 1e3);
  };
  const analysis::CaseData& c = *a.first;
  const bool loopback = c.run_case.host_count <= 1;
  std::string where =
      loopback ? "TCP over loopback on one machine"
               : fmt::format("TCP between {} hosts over a {} link", c.run_case.host_count,
                             c.run_case.link.empty() ? "unshaped" : c.run_case.link);
  std::string answer = fmt::format(
      "On {}, {} links give {}, {} link(s) {}: {}", where, many, show(b.second.value), few,
      show(a.second.value),
      std::abs(change) < 0.1
          ? fmt::format("no measurable change ({:+.0f}%)", change * 100)
          : fmt::format("{:.0f}% {}", std::abs(change) * 100, change > 0 ? "better" : "worse"));
  if (shm) answer += fmt::format(" (shared memory: {})", show(link_figure(*shm).value));
  answer += loopback ? ". Loopback moves bytes with memory copies on the CPU, and one socket "
                       "already keeps a core busy; more links help when one TCP stream cannot "
                       "fill a network link (per-flow limits, a large bandwidth x delay)."
                     : ". A shaped link limits the host's device, not each flow, so more sockets "
                       "cannot pass the rate; links help when one stream cannot fill the link.";
  return Finding{"links", "TCP link count (btl_tcp_links)", answer};
}

std::optional<Finding> machines_finding(const analysis::SuiteData& suite) {
  const auto rows = machine_rows(suite);
  std::map<std::string, std::vector<std::string>> by_link;
  for (const auto& r : rows) {
    if (r.hosts < 2 || std::isnan(r.time_saved)) continue;
    const analysis::Interval& iv = r.time_saved_interval;
    by_link[r.link].push_back(fmt::format(
        "{} hosts {} {} save {:.1f}%{}", r.hosts, r.reduction, r.scaling, r.time_saved * 100,
        iv.has_interval() ? fmt::format(" [{:.1f}%, {:.1f}%]", iv.low * 100, iv.high * 100)
                          : std::string(" (one repetition: no interval)")));
  }
  if (by_link.empty()) return std::nullopt;
  std::vector<std::string> parts;
  for (const auto& [link, saves] : by_link) {
    std::string measured;
    for (const auto& r : rows) {
      if (r.link == link && r.link_gbps > 0) {
        measured = fmt::format(" (measured {:.2f} Gbit/s)", r.link_gbps);
        break;
      }
    }
    parts.push_back(fmt::format("{}{}: {}", link.empty() ? "unshaped" : link, measured,
                                fmt::join(saves, ", ")));
  }
  return Finding{"machines", "Time saved by each added machine",
                 fmt::format("Against one machine on the same data: {}. The walkthrough's two "
                             "Macs over Thunderbolt saved {:.1f}% (2611 s vs 4259 s).",
                             fmt::join(parts, "; "), time_saved(1 / 4259.0, 1 / 2611.0) * 100)};
}

}  // namespace

bool same_workload(const analysis::CaseData& a, const analysis::CaseData& b) {
  return workload_key(a) == workload_key(b);
}

double time_saved(double one_machine_tokens_per_s, double tokens_per_s) {
  if (!(one_machine_tokens_per_s > 0) || !(tokens_per_s > 0)) return NAN;
  return 1 - one_machine_tokens_per_s / tokens_per_s;
}

namespace {
// The usable one-host, one-rank cases of c's workload, in suite order.
std::vector<const analysis::CaseData*> one_machine_cases(const analysis::SuiteData& suite,
                                                         const analysis::CaseData& c) {
  std::vector<const analysis::CaseData*> out;
  for (const auto& b : suite.cases) {
    if (b.run_case.host_count <= 1 && b.run_case.world_size == 1 && b.first_usable() &&
        full_speed(b.run_case) && workload_key(b) == workload_key(c)) {
      out.push_back(&b);
    }
  }
  return out;
}
}  // namespace

const analysis::CaseData* one_machine_case_at(const analysis::SuiteData& suite,
                                              const analysis::CaseData& c, int batch) {
  for (const analysis::CaseData* b : one_machine_cases(suite, c)) {
    if (case_options(*b).train.batch == batch) return b;
  }
  return nullptr;
}

const analysis::CaseData* one_machine_case(const analysis::SuiteData& suite,
                                           const analysis::CaseData& c) {
  const CaseOptions o = case_options(c);
  const int want = o.placement.batch_per_rank > 0 ? o.placement.batch_per_rank : o.train.batch;
  if (const analysis::CaseData* b = one_machine_case_at(suite, c, want)) return b;
  const auto all = one_machine_cases(suite, c);
  return all.empty() ? nullptr : all.front();
}

std::vector<MachineRow> machine_rows(const analysis::SuiteData& suite) {
  bool any = false;
  for (const auto& c : suite.cases) any = any || c.run_case.host_count > 1;
  if (!any) return {};
  std::vector<MachineRow> out;
  for (const auto& c : suite.cases) {
    const analysis::CaseFigures f = analysis::case_figures(c);
    MachineRow r;
    r.case_name = c.name;
    r.hosts = c.run_case.host_count;
    r.cores_per_host = c.run_case.cores_per_host;
    r.link = c.run_case.link;
    r.cpu_share = dilation_share(c.run_case);
    r.link_gbps = c.run_case.link_gbps.value_or(NAN) / r.cpu_share;
    r.reduction = c.run_case.reduction.empty() ? c.run_case.mode : c.run_case.reduction;
    if (const CaseReduction how = case_reduction(c); !how.is_default()) {
      r.reduction += ", " + how.label();
    }
    const CaseOptions o = case_options(c);
    r.scaling = o.placement.batch_per_rank > 0 ? "weak" : "strong";
    r.steps = o.trains ? o.train.steps : 0;
    r.wall_s = f.step_median_s * r.steps * r.cpu_share;
    r.tokens_per_s = f.tokens_per_s / r.cpu_share;
    r.status = f.status;
    if (r.hosts > 1) {
      if (const analysis::CaseData* one = one_machine_case(suite, c)) {
        r.baseline = one->name;
        r.time_saved = time_saved(analysis::case_figures(*one).tokens_per_s, r.tokens_per_s);
        // The repetitions' tokens/s, like r.tokens_per_s, are scaled back by the share.
        const analysis::Interval ratio = analysis::bootstrap_ratio_of_medians(
            repetition_tokens_per_s(c), repetition_tokens_per_s(*one));
        if (ratio.has_interval()) {
          r.time_saved_interval = {r.time_saved, 1 - r.cpu_share / ratio.low,
                                   1 - r.cpu_share / ratio.high};
        }
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// Whether this machine's CPUs add up for data parallelism: the model's GEMMs
// on as many CPUs at once as a case has ranks, against one alone
// (limits.h cores_ceiling), beside that case's speed over one process doing
// one rank's work on one rank's threads (one_rank_reference: the ceiling is
// of one-thread copies against one CPU at a rank's rows, so a process on
// every CPU, or one running the whole global batch, is not the reference).
std::optional<Finding> cores_finding(const analysis::SuiteData& suite) {
  std::vector<std::string> parts;
  for (const LimitShare& s : limit_shares(suite)) {
    if (std::isnan(s.cores_ceiling)) continue;
    const analysis::CaseData* c = suite.find_case(s.case_name);
    const analysis::CaseData* naive = c ? one_rank_reference(suite, *c) : nullptr;
    if (!naive) continue;
    const analysis::Interval speedup = analysis::bootstrap_ratio_of_medians(
        repetition_tokens_per_s(*c), repetition_tokens_per_s(*naive));
    if (!std::isfinite(speedup.estimate)) continue;
    // Each case against its own ceiling: ranks and rows differ between cases.
    parts.push_back(fmt::format(
        "{} ran {} the tokens/s of {}, where its {} CPUs side by side ran its GEMMs {}x one "
        "CPU ({} GFLOP/s a copy against {} alone): {}x of that ceiling",
        s.case_name, analysis::format_interval(speedup, 2, "x"), naive->name,
        s.sgemm_at_once->ranks, format_number(s.cores_ceiling, 2),
        format_number(s.sgemm_at_once->value, 1), format_number(s.sgemm->value, 1),
        format_number(speedup.estimate / s.cores_ceiling, 2)));
  }
  if (parts.empty()) return std::nullopt;
  return Finding{"cores", "Do this machine's CPUs add up?",
                 fmt::format("{}. A ceiling under the ranks' count is the machine's (CPUs that "
                             "share a core or a memory bus), not the engine's; work the ranks "
                             "split, such as ZeRO-1's optimizer, can go past it.",
                             fmt::join(parts, "; "))};
}

std::vector<Finding> suite_findings(const analysis::SuiteData& suite) {
  std::vector<Finding> out;
  for (auto make : {data_finding, loss_finding, reduction_finding, links_finding, machines_finding,
                    cores_finding}) {
    if (auto f = make(suite)) out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace trainscope::report
