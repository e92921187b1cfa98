// trainscope simgrid: SimGrid's step time for 2 to 64 hosts, beside the
// prediction, from a measured suite's step profile: the one-host case's
// forward, backward and the rest per step (and each step's compute, for the
// slowest of N ranks), the gradient bytes in the engine's buckets, and each
// link the prediction uses (report/suite_prediction.h). Each point is one
// smpirun of trainscope-smpi-step (simgrid/simulation.h), on a platform of N
// hosts behind a switch with that link's bandwidth and latency.
//
//   trainscope simgrid --db results.db --suite latest
//   trainscope simgrid --db results.db --link gige --max-hosts 16 --allreduce rdb
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "analysis/prediction.h"
#include "analysis/suite_data.h"
#include "report/suite_prediction.h"
#include "results/results_db.h"
#include "simgrid/simulation.h"

namespace trainscope::cli {
namespace {

struct Flags {
  std::string db;
  std::string suite = "latest";
  std::vector<std::string> links;
  int max_hosts = 64;
  int steps = 12;
  std::string allreduce = "lr";
  double switch_gbps = 0;
  std::vector<std::string> cfg;
  bool smpi_factors = false;
  bool save = false;
};

// The prediction's step as SimGrid replays it (weak scaling: the per-rank
// batch stays, so each rank's compute is the one-host case's).
simgrid::StepProfile step_profile(const analysis::StepModel& s, bool overlap, const Flags& f) {
  simgrid::StepProfile p;
  // The head's gradient GEMMs run in forward's pass, before any gradient is
  // ready: the window overlap has is backward after them.
  const double head =
      std::isfinite(s.head_backward_s) ? std::clamp(s.head_backward_s, 0.0, s.backward_s) : 0.0;
  p.forward_s = s.forward_s + head;
  p.backward_s = s.backward_s - head;
  p.other_s = s.other_s;
  p.bucket_bytes = simgrid::split_into_buckets(static_cast<int64_t>(s.grad_bytes),
                                               static_cast<int64_t>(s.bucket_bytes));
  p.overlap = overlap;
  p.collective = f.allreduce == "lr" ? simgrid::Collective::kRing : simgrid::Collective::kMpi;
  p.steps = f.steps;
  p.compute_samples = s.compute_samples;
  return p;
}

void run(const Flags& f) {
  simgrid::SimulationOptions options;
  options.allreduce = f.allreduce;
  // The suite's links are measured all-reduce rates and fitted intercepts,
  // which already hold TCP's and Open MPI's costs: SMPI's calibration (a
  // large message at 94% of the rate, its latency x 11.6) would count them
  // twice, unless asked for (links given as wire figures).
  if (!f.smpi_factors) options.cfg = {"smpi/bw-factor:0:1", "smpi/lat-factor:0:1"};
  options.cfg.insert(options.cfg.end(), f.cfg.begin(), f.cfg.end());
  if (const std::string why = simgrid::simgrid_unavailable_reason(options); !why.empty()) {
    throw Error("simgrid: " + why);
  }
  auto db = f.save ? results::ResultsDb::open_for_writing(f.db)
                   : results::ResultsDb::open_for_reading(f.db);
  const auto ids = analysis::resolve_suites(db, f.suite);
  if (ids.size() != 1) throw Error("--suite: give one suite (latest or an id), not all");
  const analysis::SuiteData suite = analysis::load_suite(db, ids.front());
  const auto prediction = report::suite_prediction(suite);
  if (!prediction) {
    throw Error(
        fmt::format("{}: suite {} has no one-process case with phase times and "
                    "gradient bytes to replay",
                    f.db, ids.front()));
  }
  const analysis::StepModel& s = prediction->step;
  const std::string simulator =
      "SimGrid SMPI, " + f.allreduce + (f.smpi_factors ? ", SMPI's TCP factors" : "");
  std::printf("# %s (%s), %d steps each, from %s (%s)\n", simulator.c_str(),
              f.allreduce == "lr" ? "its ring on SimGrid's messages" : "MPI_Allreduce", f.steps,
              prediction->compute_case.c_str(), prediction->grad_source.c_str());
  std::printf("%-10s %6s %-15s %12s %12s %8s %12s\n", "link", "hosts", "all-reduce", "predicted ms",
              "simgrid ms", "diff", "sim comm ms");
  std::vector<results::SimulatedStep> rows;
  bool any = false;
  for (const auto& l : prediction->links) {
    if (!f.links.empty() &&
        std::find(f.links.begin(), f.links.end(), l.model.name) == f.links.end()) {
      continue;
    }
    if (!(l.model.bandwidth_Bps > 0)) continue;
    any = true;
    for (bool overlap : {false, true}) {
      if (overlap && f.allreduce != "lr") continue;  // MPI_Allreduce blocks: no overlap
      for (int n : analysis::host_counts(f.max_hosts)) {
        if (n < 2) continue;
        const simgrid::Platform platform{n, l.model.bandwidth_Bps, l.model.latency_s,
                                         f.switch_gbps * 1e9 / 8};
        const auto sim = simgrid::simulate(step_profile(s, overlap, f), platform, options);
        const double predicted =
            analysis::predict(s, l.model, n, overlap, analysis::Scaling::kWeak).step_s;
        std::printf("%-10s %6d %-15s %12.1f %12.1f %+7.1f%% %12.1f\n", l.model.name.c_str(), n,
                    overlap ? "overlap" : "after backward", predicted * 1e3,
                    sim.median_step_s() * 1e3, (sim.median_step_s() / predicted - 1) * 100,
                    sim.median_comm_s() * 1e3);
        std::fflush(stdout);
        rows.push_back({.simulator = simulator,
                        .link = l.model.name,
                        .bandwidth_Bps = l.model.bandwidth_Bps,
                        .latency_s = l.model.latency_s,
                        .hosts = n,
                        .overlap = overlap,
                        .scaling = "weak",
                        .steps = f.steps,
                        .step_s = sim.median_step_s(),
                        .comm_s = sim.median_comm_s(),
                        .predicted_step_s = predicted,
                        .compute_case = prediction->compute_case,
                        .simulated_at = results::utc_timestamp()});
      }
    }
  }
  if (!any) throw Error("--link: no such link with a rate in the suite's prediction");
  if (!f.save) return;
  db.replace_simulations(ids.front(), simulator, rows);
  std::printf("stored %zu simulated steps with suite %lld in %s\n", rows.size(),
              static_cast<long long>(ids.front()), f.db.c_str());
}

}  // namespace

void add_simgrid_command(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "simgrid",
      "SimGrid's SMPI as a second opinion on the N-host prediction: replays the suite's\n"
      "measured step (the one-host case's forward, backward and the rest, each step's\n"
      "compute for the slowest of N ranks, the gradient in the engine's buckets) on 2 to\n"
      "--max-hosts simulated hosts behind a switch, for each link the prediction uses, and\n"
      "prints SimGrid's median step beside the prediction's (weak scaling). Needs SimGrid\n"
      "(libsimgrid-dev: smpirun, and trainscope-smpi-step built with smpicxx).");
  sub->add_option("--db", f->db, "Results database to read")->required()->check(kDbFile);
  sub->add_option("--suite", f->suite, "Suite whose step to replay: latest or a suite id")
      ->capture_default_str();
  sub->add_option("--link", f->links,
                  "Only these links (as the prediction names them); repeatable");
  sub->add_option("--max-hosts", f->max_hosts, "Hosts up to this (2, 4, 8, ... and it)")
      ->capture_default_str()
      ->check(whole_number<int>(2, 1024));
  sub->add_option("--steps", f->steps, "Simulated steps per point (the median is shown)")
      ->capture_default_str()
      ->check(whole_number<int>(1, 1000));
  sub->add_option("--allreduce", f->allreduce,
                  "SMPI's all-reduce algorithm: lr (a ring, as the prediction's and Open MPI's\n"
                  "ring; replayed on SimGrid's own messages, with overlap too), or any other of\n"
                  "SMPI's names (rdb, rab1, ompi_ring_segmented, ...) through MPI_Allreduce,\n"
                  "after backward only")
      ->capture_default_str();
  sub->add_option("--switch-gbps", f->switch_gbps,
                  "The switch's total capacity, shared by all flows (0: non-blocking)")
      ->capture_default_str()
      ->check(kNonNegative);
  sub->add_flag("--smpi-factors", f->smpi_factors,
                "Keep SMPI's TCP calibration (bandwidth and latency factors by message size, from "
                "real Ethernet clusters). Off: the links are the suite's measured rates and "
                "intercepts, which hold those costs already");
  sub->add_option("--cfg", f->cfg,
                  "More SimGrid settings, KEY:VALUE (e.g. smpi/bw-factor:0:1 for no TCP factors); "
                  "repeatable");
  sub->add_flag("--save", f->save,
                "Store the step times with the suite in --db (table simulations, replacing this "
                "algorithm's earlier ones), where the report's prediction section shows them");
  sub->callback([f] { run(*f); });
}

}  // namespace trainscope::cli
