#include "report/dilation.h"

#include <cmath>

#include <fmt/format.h>

#include "base/format.h"
#include "options/placement.h"

namespace trainscope::report {
namespace {

// What the emulation check allows between a dilated step (scaled) and the
// undilated one: the target.
constexpr double kDilationTolerance = 0.10;

// A rank's compute per step (its training thread outside collectives: a
// fused reduction's buckets may be reduced inside the backward phase, so
// phase times would count the all-reduce too), the mean over the ranks.
double dilation_compute(const analysis::CaseFigures& f) {
  double sum = 0;
  int n = 0;
  for (const auto& r : f.rank_times) {
    if (std::isfinite(r.compute_s)) {
      sum += r.compute_s;
      ++n;
    }
  }
  return n > 0 ? sum / n : NAN;
}

// Why a dilated step and a real one differ, from where the difference is.
std::string dilation_reason(const DilationCheck& c) {
  const double compute = c.dilated_compute_s / c.real_compute_s - 1;
  const double step_gap = c.dilated_step_s - c.real_step_s;
  const double compute_gap = c.dilated_compute_s - c.real_compute_s;
  const double exposed_gap = c.dilated_exposed_s - c.real_exposed_s;
  if (c.alone) {
    return fmt::format(
        "compute {:+.1f}% after scaling, one host alone under the quota (no MPI, no links): "
        "this machine does not give a quota of F as F of a core, so every case dilated on it "
        "reads {} by about this much (scripts/dilation-check.sh measures it)",
        compute * 100, compute > 0 ? "slow" : "fast");
  }
  if (std::abs(compute_gap) >= std::abs(exposed_gap)) {
    return fmt::format(
        "compute {:+.1f}% after scaling: the quota dilates CPU time, not memory bandwidth or "
        "caches, which the hosts sharing a core also share (and, under other load, a quota is a "
        "ceiling, not a guarantee)",
        compute * 100);
  }
  return fmt::format(
      "the all-reduce backward did not hide differs by {:.1f} of the {:.1f} ms: the copies and "
      "TCP work of a rank are dilated, the veth's latency and the kernel's softirq work are not",
      std::abs(exposed_gap) * 1e3, std::abs(step_gap) * 1e3);
}

}  // namespace

double dilation_share(const results::RunCase& rc) {
  const double f = options::placement_from_config(rc.config).cpu_share;
  return f > 0 && f < 1 ? f : 1;
}

std::string dilation_label(double share) {
  return share < 1 ? fmt::format("dilated x{:g}", std::round(100 / share) / 100) : "";
}

std::vector<DilationCheck> dilation_checks(const analysis::SuiteData& suite) {
  std::vector<DilationCheck> out;
  for (const auto& d : suite.cases) {
    const double f = dilation_share(d.run_case);
    if (!(f < 1) || !d.first_usable()) continue;
    for (const auto& r : suite.cases) {
      if (&r == &d || !full_speed(r.run_case) || !r.first_usable() ||
          !analysis::alike_but(d, r, {"cpu_share"})) {
        continue;
      }
      const analysis::CaseFigures fd = analysis::case_figures(d), fr = analysis::case_figures(r);
      if (!(fd.step_median_s > 0) || !(fr.step_median_s > 0)) continue;
      DilationCheck c;
      c.dilated_case = d.name;
      c.real_case = r.name;
      c.alone = d.run_case.host_count <= 1;
      c.share = f;
      c.dilated_step_s = fd.step_median_s * f;
      c.real_step_s = fr.step_median_s;
      c.dilated_compute_s = dilation_compute(fd) * f;
      c.real_compute_s = dilation_compute(fr);
      c.dilated_exposed_s = fd.comm_exposed_s * f;
      c.real_exposed_s = fr.comm_exposed_s;
      if (fd.loaded > 0 || fr.loaded > 0) {
        c.loaded = fmt::format("{}: {}", fd.loaded > 0 ? d.name : r.name,
                               fd.loaded > 0 ? fd.load.loaded : fr.load.loaded);
      }
      out.push_back(std::move(c));
      break;
    }
  }
  return out;
}

Table dilation_table(const analysis::SuiteData& suite) {
  Table t{"Time dilation check: dilated hosts against hosts of a whole core",
          {"dilated case", "share", "step ms x share", "real case", "step ms", "difference",
           "compute ms (x share / real)", "exposed all-reduce ms (x share / real)", "verdict"},
          {},
          fmt::format("A host at a CPU share F behind a link of F x the rate should take 1/F "
                      "as long for everything; its times x F should match hosts of a whole "
                      "core within {:.0f}%.",
                      kDilationTolerance * 100),
          {0, 3, 8}};
  for (const auto& c : dilation_checks(suite)) {
    const bool ok = std::abs(c.difference()) <= kDilationTolerance;
    t.rows.push_back(
        {c.dilated_case, format_number(c.share, 3), format_number(c.dilated_step_s * 1e3, 1),
         c.real_case, format_number(c.real_step_s * 1e3, 1),
         fmt::format("{:+.1f}%", c.difference() * 100),
         fmt::format("{} / {}", format_number(c.dilated_compute_s * 1e3, 1),
                     format_number(c.real_compute_s * 1e3, 1)),
         fmt::format("{} / {}", format_number(c.dilated_exposed_s * 1e3, 1),
                     format_number(c.real_exposed_s * 1e3, 1)),
         (ok ? "within " + format_number(kDilationTolerance * 100, 0) + "%" : dilation_reason(c)) +
             (c.loaded.empty() ? ""
                               : "; measured on a loaded machine (" + c.loaded +
                                     "): a quota is a ceiling, and other "
                                     "load takes from the hosts unevenly")});
  }
  return t;
}

}  // namespace trainscope::report
