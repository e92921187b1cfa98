#include "report/model_check.h"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "report/case_options.h"
#include "report/dilation.h"
#include "report/findings.h"
#include "base/format.h"

namespace trainscope::report {
namespace {

using analysis::CaseData;
using analysis::CaseFigures;
using analysis::LinkModel;
using analysis::Scaling;
using analysis::SuiteData;

// "123.4 (+5.6%)": a step beside its difference from `against`.
std::string step_beside(double s, double against) {
  if (!std::isfinite(s)) return "-";
  const std::string ms = format_number(s * 1e3, 1);
  return std::isfinite(against) && against > 0
             ? fmt::format("{} ({:+.1f}%)", ms, (s / against - 1) * 100)
             : ms;
}

const LinkModel* link_named(const SuitePrediction& p, const std::string& name) {
  for (const auto& l : p.links) {
    if (l.model.name == name && l.model.bandwidth_Bps > 0) return &l.model;
  }
  return nullptr;
}

// A multi-host, full-speed case's point and median step.
struct CasePoint {
  Scaling scaling = Scaling::kWeak;
  int batch = 0;  // the global batch
  std::string link;
  bool overlap = false;
  int hosts = 0;
  double step_s = NAN;
  enum class Kind { kReal, kReplay, kRealReplayed } kind = Kind::kReal;
  bool loaded = false;
  double busbw_GBps = NAN;  // its gradient all-reduces' bus bandwidth
  double link_GBps = NAN;   // its link profile's nominal rate
  double cpu_busy = NAN;    // CaseFigures::host_cpu_busy
  double time_scale = 1;    // a replay's replay_time_scale
};

// A replay of one host's compute, or of a multi-host case's.
CasePoint::Kind kind_of(const SuiteData& suite, const CaseOptions& o) {
  if (o.replay_from.empty()) return CasePoint::Kind::kReal;
  const CaseData* source = suite.find_case(o.replay_from);
  return source && source->run_case.world_size > 1 ? CasePoint::Kind::kRealReplayed
                                                   : CasePoint::Kind::kReplay;
}

std::optional<CasePoint> case_point(const SuiteData& suite, const CaseData& c) {
  const auto& rc = c.run_case;
  if (rc.host_count < 2 || rc.world_size < 2 || rc.link.empty() || !full_speed(rc)) {
    return std::nullopt;
  }
  const CaseOptions o = case_options(c);
  const CaseFigures f = analysis::case_figures(c);
  if (!(f.step_median_s > 0)) return std::nullopt;
  // A replay slowed down (replay_time_scale) ran its compute and its links
  // that many times slower: its step in the cluster's own time, its bus
  // bandwidth at the link's rate.
  const double scale = o.train.replay_time_scale;
  const double link_GBps = rc.link_gbps.value_or(NAN) / 8 * scale;
  return CasePoint{o.placement.batch_per_rank > 0 ? Scaling::kWeak : Scaling::kStrong,
                   o.train.batch,
                   rc.link,
                   rc.reduction.starts_with("overlap"),
                   rc.host_count,
                   f.step_median_s / scale,
                   kind_of(suite, o),
                   f.loaded > 0,
                   f.grad_busbw_gbps * scale,
                   link_GBps,
                   f.host_cpu_busy,
                   scale};
}

// The one-host case measured at `per_rank` that `c` stands for: a replay's
// own source when it is one (a replay is a workload of its own, so the
// one-machine lookup never pairs it), the real case's for a replay of one,
// else the one-machine case of c's workload at that batch.
const CaseData* one_host_at(const SuiteData& suite, const CaseData& c, int per_rank) {
  const CaseOptions o = case_options(c);
  if (o.replay_from.empty()) return one_machine_case_at(suite, c, per_rank);
  const CaseData* source = suite.find_case(o.replay_from);
  if (!source) return nullptr;
  if (source->run_case.world_size > 1) return one_machine_case_at(suite, *source, per_rank);
  return case_options(*source).train.batch == per_rank ? source : nullptr;
}

// Strong scaling's prediction for `c` on `hosts` hosts: each rank computes
// what one host measured at batch / hosts (the replay sleeps that very
// run), the all-reduce as under weak scaling. NaN without such a case.
double strong_prediction(const SuiteData& suite, const SuitePrediction& p, const LinkModel& link,
                         const CaseData& c, int batch, int hosts, bool overlap) {
  const int per_rank = batch / hosts;
  const CaseData* at = per_rank > 0 ? one_host_at(suite, c, per_rank) : nullptr;
  if (!at) return NAN;
  const auto step = predict_at_rank_batch(suite, *at, p.step.bucket_bytes, link, hosts, overlap);
  return step ? step->step_s : NAN;
}

}  // namespace

std::vector<ModelCheckRow> model_check_rows(const analysis::SuiteData& suite,
                                            const SuitePrediction& p) {
  std::map<std::tuple<Scaling, std::string, bool, int>, ModelCheckRow> rows;
  auto row = [&](Scaling scaling, const std::string& link, bool overlap,
                 int hosts) -> ModelCheckRow& {
    ModelCheckRow& r = rows[{scaling, link, overlap, hosts}];
    if (r.hosts == 0) {
      r.scaling = scaling;
      r.link = link;
      r.overlap = overlap;
      r.hosts = hosts;
      const LinkModel* m = link_named(p, link);
      if (m && scaling == Scaling::kWeak) {
        r.predicted_s = analysis::predict(p.step, *m, hosts, overlap, Scaling::kWeak).step_s;
      }
    }
    return r;
  };
  // SimGrid's strong-scaling steps divide the compute case's batch, not a
  // case's global batch: only its weak ones have a row to join.
  for (const auto& s : suite.simulations) {
    if (s.scaling != "weak") continue;
    ModelCheckRow& r = row(Scaling::kWeak, s.link, s.overlap, s.hosts);
    if (!std::isfinite(r.simgrid_s)) r.simgrid_s = s.step_s;
  }
  for (const auto& c : suite.cases) {
    const auto point = case_point(suite, c);
    if (!point) continue;
    ModelCheckRow& r = row(point->scaling, point->link, point->overlap, point->hosts);
    const LinkModel* m = link_named(p, point->link);
    if (m && point->scaling == Scaling::kStrong && !std::isfinite(r.predicted_s)) {
      r.predicted_s =
          strong_prediction(suite, p, *m, c, point->batch, point->hosts, point->overlap);
    }
    switch (point->kind) {
      case CasePoint::Kind::kReal:
        std::tie(r.real_s, r.real_case) = std::tie(point->step_s, c.name);
        break;
      case CasePoint::Kind::kReplay:
        std::tie(r.replay_s, r.replay_case) = std::tie(point->step_s, c.name);
        // Against the rate the prediction itself uses (measured between two
        // hosts; 2.5gbe's ran at 2.8 Gbit/s), the profile's only without one.
        r.replay_link_share = point->busbw_GBps / (m ? m->bandwidth_Bps / 1e9 : point->link_GBps);
        r.replay_cpu_busy = point->cpu_busy;
        r.replay_time_scale = point->time_scale;
        break;
      case CasePoint::Kind::kRealReplayed:
        std::tie(r.real_replayed_s, r.real_replayed_case) = std::tie(point->step_s, c.name);
        break;
    }
    r.loaded = r.loaded || point->loaded;
  }
  std::vector<ModelCheckRow> out;
  for (auto& [key, r] : rows) out.push_back(std::move(r));
  return out;
}

std::optional<Table> model_check_table(const analysis::SuiteData& suite, const SuitePrediction& p,
                                       Scaling scaling) {
  auto rows = model_check_rows(suite, p);
  std::erase_if(rows, [&](const ModelCheckRow& r) { return r.scaling != scaling; });
  bool replays = false, simulated = false;
  for (const auto& r : rows) {
    replays = replays || std::isfinite(r.replay_s);
    simulated = simulated || std::isfinite(r.simgrid_s);
  }
  if (rows.empty() || (!simulated && !replays)) return std::nullopt;
  const bool weak = scaling == Scaling::kWeak;
  Table t{fmt::format("The prediction checked: SimGrid, replayed compute and real runs ({})",
                      weak ? "weak scaling" : "strong scaling: the global batch fixed"),
          {"link", "all-reduce", "hosts", "predicted ms", "SimGrid ms", "replay ms", "real ms",
           "real replayed ms"},
          {},
          "",
          {0, 1}};
  bool loaded = false, slow_links = false, busy_cpus = false, slowed = false;
  for (const auto& r : rows) {
    loaded = loaded || r.loaded;
    slowed = slowed || r.replay_time_scale > 1;
    const bool slow = r.replay_link_share < kLinkShareFloor;
    const bool busy = r.replay_cpu_busy >= kCpuBusyCeiling;
    slow_links = slow_links || slow;
    busy_cpus = busy_cpus || busy;
    t.rows.push_back(
        {r.link, r.overlap ? "overlap" : "after backward", std::to_string(r.hosts),
         std::isfinite(r.predicted_s) ? format_number(r.predicted_s * 1e3, 1) : "-",
         step_beside(r.simgrid_s, r.predicted_s),
         step_beside(r.replay_s, r.predicted_s) + (r.loaded ? " (loaded)" : "") +
             (slow ? fmt::format(" (links at {:.0f}%)", r.replay_link_share * 100) : "") +
             (busy ? fmt::format(" (CPUs {:.0f}% busy)", r.replay_cpu_busy * 100) : "") +
             (r.replay_time_scale > 1 ? fmt::format(" (x{:g} slower)", r.replay_time_scale) : ""),
         step_beside(r.real_s, r.predicted_s), step_beside(r.real_replayed_s, r.real_s)});
  }
  t.note = fmt::format(
      "Median step times; in brackets each one's difference from the prediction (for the real "
      "case replayed, from the real case: the replay's own check, each rank sleeping what its "
      "namesake computed). SimGrid: {} "
      "replaying the step of {} (its forward, backward and the rest, each rank drawing its "
      "compute from the measured steps, the gradient in the engine's buckets and order) on N "
      "hosts behind a non-blocking switch with the link's measured bandwidth and latency "
      "(SMPI's own TCP factors only where the simulator's name says so: the measured figures "
      "hold those costs already), so it parts from the prediction only by what it simulates "
      "and the formula does not: each message as a flow, the buckets' timing, each rank's "
      "draws. Replay: every rank sleeps the measured compute of {} and does the real "
      "all-reduce over the virtual cluster; real: the same case computing, at 2 hosts (a core "
      "each) where this machine can. Where they part: latency (the prediction's 2(N-1) x latency "
      "term, SimGrid's per-message latency factors, the replay's real per-message costs), "
      "contention (the virtual cluster's bridge and 2 cores carry every host's traffic, which a "
      "real switch would not), and an algorithm that changes with N (Open MPI may leave the "
      "ring at some sizes; the prediction and SimGrid's lr stay a ring).{}",
      suite.simulations.empty() ? "not run for this suite (trainscope simgrid --save)"
                                : suite.simulations.front().simulator,
      p.compute_case, p.compute_case,
      loaded ? " A step marked (loaded) was measured on a loaded machine (see Machine load)." : "");
  if (!weak) {
    t.note +=
        " Strong scaling: each row's prediction and replay start from the one-host case "
        "measured at the global batch / N, its GEMMs as efficient as that batch makes them "
        "(none without such a case: -); SimGrid's strong-scaling steps divide the compute "
        "case's batch instead and are not set beside them.";
  }
  if (slowed) {
    t.note +=
        " A replay marked (xS slower) ran S times slower than the cluster it stands for: "
        "every measured compute time S times over and its links at 1/S of their rate, so "
        "that this machine carries N hosts' traffic (replay_time_scale); its step is shown "
        "divided by S.";
  }
  if (slow_links) {
    t.note += fmt::format(
        " A replay marked (links at X%) moved its gradients at X% of the rate its link measured "
        "between two hosts (all-reduce bus bandwidth, below {:.0f}%): this machine's cores and "
        "bridge did not carry N hosts' traffic at the link's rate, so that step measures the "
        "machine more than the link.",
        kLinkShareFloor * 100);
  }
  if (busy_cpus) {
    t.note += fmt::format(
        " A replay marked (CPUs X% busy) kept X% of this machine's CPUs busy over its steps "
        "(its ranks' CPU time over their wall time, or the machine's whole busy time where "
        "higher, which holds the kernel's work for the virtual cluster's traffic; the ranks sleep "
        "their compute, so that is the communication's own work, at or above {:.0f}%): the "
        "traffic waited for CPU, and the step measures the machine more than the link.",
        kCpuBusyCeiling * 100);
  }
  return t;
}

}  // namespace trainscope::report
