#include "training/run/stall.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "base/check.h"
#include "comm/communicator.h"
#include "results/records.h"

namespace trainscope::training {

// The ranks `mine` waits for, as their status files (--status-dir) show
// them: a rank whose file has not changed for a while (stopped, or dead), or
// that is in no collective (computing, or hung in its own work), or behind in
// its steps. Ranks whose files this host cannot see are not named.
namespace {

std::string ranks_not_arrived(const std::filesystem::path& dir, int world,
                              const profiler::RankStatus& mine) {
  if (dir.empty()) return "unknown (no --status-dir to see the other ranks in)";
  namespace fs = std::filesystem;
  std::vector<std::string> missing;
  const auto now = fs::file_time_type::clock::now();
  for (int r = 0; r < world; ++r) {
    if (r == mine.rank) continue;
    const fs::path path = results::rank_status_path(dir, r);
    std::error_code ec;
    const auto written = fs::last_write_time(path, ec);
    if (ec) {
      missing.push_back(fmt::format("rank {} (no status file here)", r));
      continue;
    }
    const double age = std::chrono::duration<double>(now - written).count();
    const profiler::RankStatus other = results::load_rank_status(path);
    const bool stale = age > 3.0;  // files are rewritten about every second
    if (stale || other.collective.empty() || other.step < mine.step) {
      missing.push_back(fmt::format("rank {} ({}: {}{})", r, other.host, profiler::describe(other),
                                    stale ? fmt::format(", last seen {:.1f} s ago", age) : ""));
    }
  }
  return missing.empty() ? "none seen (every rank this host can see waits too)"
                         : fmt::format("{}", fmt::join(missing, "; "));
}

// Where the ranks keep their status files: --status-dir, else the job's
// own directory for a job of several ranks, else none ("").
std::filesystem::path status_dir(const options::TrainOptions& options, int world) {
  if (!options.status_dir.empty()) return options.status_dir;
  const std::filesystem::path job_dir = world > 1 ? comm::launcher_job_dir() : "";
  return job_dir.empty() ? job_dir : job_dir / "trainscope-status";
}

}  // namespace

profiler::StallWatchdogOptions watchdog_options(const options::TrainOptions& options,
                                                const WatchedRank& watched) {
  profiler::StallWatchdogOptions watch;
  watch.rank = watched.rank;
  watch.host = watched.host;
  watch.timeout_s = options.stall_timeout_s;
  const std::filesystem::path dir = status_dir(options, watched.world);
  if (options.stall_action == options::StallAction::kAbort) {
    watch.abort_after_s =
        options.stall_timeout_s +
        (options.stall_grace_s > 0 ? options.stall_grace_s : options.stall_timeout_s);
    watch.not_arrived = [dir, world = watched.world](const profiler::RankStatus& mine) {
      return ranks_not_arrived(dir, world, mine);
    };
  }
  if (dir.empty()) return watch;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw Error(fmt::format(
        "{} {}: {}", options.status_dir.empty() ? "the job's status directory" : "--status-dir",
        dir.string(), ec.message()));
  }
  watch.on_status =
      [path = results::rank_status_path(dir, watched.rank)](const profiler::RankStatus& status) {
        results::save_rank_status(status, path);
      };
  return watch;
}

}  // namespace trainscope::training
