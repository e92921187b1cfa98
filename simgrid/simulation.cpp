#include "simgrid/simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/process.h"

namespace trainscope::simgrid {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The last `lines` lines of a file, for an error message.
std::string tail_of(const std::filesystem::path& path, int lines) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return "";
  }
  std::size_t at = text.size();
  for (int n = 0; n <= lines && at != std::string::npos && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
  }
  return at == std::string::npos ? text : text.substr(at + 1);
}

std::vector<std::string> smpirun_argv(const SimulationOptions& o, const std::filesystem::path& dir,
                                      int hosts, const std::filesystem::path& program) {
  std::vector<std::string> argv = {
      // -no-privatize: the program keeps no per-rank globals, so SMPI need
      // not load a copy of it for each rank.
      o.smpirun, "-np", std::to_string(hosts), "-no-privatize", "-platform",
      (dir / "platform.xml").string(), "-hostfile", (dir / "hostfile").string(),
      // The profile's durations are the compute; SMPI times none of its own.
      "--cfg=smpi/simulate-computation:no", "--cfg=smpi/host-speed:1Gf",
      "--cfg=smpi/allreduce:" + o.allreduce, "--log=root.thres:warning"};
  for (const auto& c : o.cfg) argv.push_back("--cfg=" + c);
  argv.push_back(program.string());
  argv.push_back((dir / "profile.txt").string());
  return argv;
}

}  // namespace

double SimulatedRun::median_step_s() const { return median(step_s); }
double SimulatedRun::median_comm_s() const { return median(comm_s); }

std::filesystem::path smpi_step_program() {
  if (const char* env = std::getenv("TRAINSCOPE_SMPI_STEP"); env && *env) return env;
  return TRAINSCOPE_SMPI_STEP_PROGRAM;
}

std::string simgrid_unavailable_reason(const SimulationOptions& options) {
  const auto program = options.program.empty() ? smpi_step_program() : options.program;
  if (program.empty()) {
    return "trainscope-smpi-step was not built: CMake did not find SimGrid's smpicxx "
           "(scripts/install-deps.sh installs libsimgrid-dev)";
  }
  if (!std::filesystem::exists(program)) return program.string() + " does not exist";
  try {
    find_program(options.smpirun);
  } catch (const Error& e) {
    return std::string(e.what()) + " (SimGrid's smpirun, from libsimgrid-dev)";
  }
  return "";
}

SimulatedRun simulate(const StepProfile& profile, const Platform& platform,
                      const SimulationOptions& options) {
  if (const std::string why = simgrid_unavailable_reason(options); !why.empty()) throw Error(why);
  const auto program = options.program.empty() ? smpi_step_program() : options.program;
  ScopedTempDir dir("trainscope-simgrid");
  write_file_atomically(dir.path() / "profile.txt", format_step_profile(profile));
  write_file_atomically(dir.path() / "platform.xml", platform_xml(platform));
  write_file_atomically(dir.path() / "hostfile", hostfile_text(platform.hosts));
  SpawnOptions spawn_options;
  spawn_options.argv = smpirun_argv(options, dir.path(), platform.hosts, program);
  spawn_options.stdout_file = dir.path() / "stdout";
  spawn_options.stderr_file = dir.path() / "stderr";
  spawn_options.own_process_group = true;
  ChildProcess child = spawn(spawn_options);
  std::optional<int> code = child.wait_for(options.timeout_s);
  const bool timed_out = !code;
  if (timed_out) code = child.kill_tree({});
  SimulatedRun run;
  run.hosts = platform.hosts;
  std::istringstream out(read_file(dir.path() / "stdout"));
  for (std::string line; std::getline(out, line);) {
    int step = 0;
    double step_s = 0, comm_s = 0;
    if (std::sscanf(line.c_str(), "trainscope-smpi-step step=%d step_s=%lf comm_s=%lf", &step,
                    &step_s, &comm_s) == 3) {
      run.step_s.push_back(step_s);
      run.comm_s.push_back(comm_s);
    }
  }
  if (*code != 0 || static_cast<int>(run.step_s.size()) != profile.steps) {
    throw Error(fmt::format("smpirun ({} hosts) {}, {} of {} steps printed:\n{}{}", platform.hosts,
                            timed_out ? fmt::format("timed out after {:.0f} s", options.timeout_s)
                                      : fmt::format("exited with {}", *code),
                            run.step_s.size(), profile.steps, tail_of(dir.path() / "stdout", 5),
                            tail_of(dir.path() / "stderr", 10)),
                kExitFailure);
  }
  return run;
}

}  // namespace trainscope::simgrid
