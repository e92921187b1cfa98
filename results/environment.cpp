#include "results/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cblas.h>
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/process.h"
#include "base/quote.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"

extern char** environ;

namespace trainscope::results {

using nlohmann::json;

namespace {

// First "key : value" line of a /proc file whose key is `key`.
std::optional<std::string> proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    if (name != key) continue;
    std::string value = line.substr(colon + 1);
    size_t start = value.find_first_not_of(" \t");
    return start == std::string::npos ? std::string() : value.substr(start);
  }
  return std::nullopt;
}

// What `argv` prints, through the one spawner (base/process.h: stdin from
// /dev/null, stopped after 10 s); nullopt if it is missing, failed or
// printed nothing.
std::optional<std::string> command_output(const std::vector<std::string>& argv) {
  try {
    SpawnOptions options;
    options.argv = argv;
    const profiler::CompletedRun run = profiler::run_to_completion(options, 10.0);
    if (run.exit_code != 0 || run.timed_out || run.out.empty()) return std::nullopt;
    return run.out;
  } catch (const Error&) {
    return std::nullopt;  // not installed
  }
}

json openmpi_version() {
  // ompi_info is cheaper than mpirun and prints "Open MPI v4.1.4" first.
  for (const char* program : {"ompi_info", "mpirun"}) {
    if (auto out = command_output({program, "--version"})) {
      std::smatch match;
      static const std::regex version(R"((\d+\.\d+(\.\d+)?\S*))");
      if (std::regex_search(*out, match, version)) return match[1].str();
    }
  }
  return nullptr;
}

}  // namespace

json capture_environment(const std::string& command_line) {
  json env = json::object();
  const std::string host = profiler::host_name();
  env["hostname"] = host.empty() ? json(nullptr) : json(host);
  struct utsname uts {};
  env["kernel"] = ::uname(&uts) == 0
                      ? json(std::string(uts.sysname) + " " + uts.release + " " + uts.machine)
                      : json(nullptr);
  auto cpu = proc_field("/proc/cpuinfo", "model name");
  env["cpu_model"] = cpu ? json(*cpu) : json(nullptr);
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  env["cores"] = cores > 0 ? json(cores) : json(nullptr);
  // MemTotal is in kB ("16384000 kB").
  auto mem = proc_field("/proc/meminfo", "MemTotal");
  env["memory_total_bytes"] = mem ? json(std::stoll(*mem) * 1024) : json(nullptr);
  env["openblas_config"] = std::string(openblas_get_config());
  env["openblas_threads"] = openblas_get_num_threads();
  env["openmpi_version"] = openmpi_version();
  json mca = json::object();
  constexpr std::string_view kPrefix = "OMPI_MCA_";
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    if (!entry.starts_with(kPrefix)) continue;
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    mca[std::string(entry.substr(kPrefix.size(), eq - kPrefix.size()))] =
        std::string(entry.substr(eq + 1));
  }
  env["mca"] = std::move(mca);
  env["command_line"] = command_line;
  if (const double slowdown = planted_slowdown_pct(); slowdown > 0) {
    env["test_hooks"][kSlowdownVariable] = slowdown;
  }
  if (const double work = planted_work_pct(); work > 0) env["test_hooks"][kPlantWorkVariable] = work;
  return env;
}

namespace {

// A test hook's percentage: 0 when unset or empty, else a number in [0, 1000].
double test_hook_pct(const char* variable, const char* meaning) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return 0;
  const std::string_view value(text);
  double pct = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), pct);
  if (ec != std::errc() || end != value.data() + value.size() || !(pct >= 0 && pct <= 1000)) {
    throw Error(fmt::format("{}={}: expected a percentage from 0 to 1000 ({})", variable,
                            quoted_for_terminal(value), meaning));
  }
  return pct;
}

}  // namespace

double planted_slowdown_pct() {
  return test_hook_pct(kSlowdownVariable, "the slowdown every rank plants in its compute each step");
}

double planted_work_pct() {
  return test_hook_pct(kPlantWorkVariable, "the work every rank adds to its optimizer step");
}

json host_facts(const json& environment) {
  json facts = json::object();
  for (const char* key : {"hostname", "kernel", "cpu_model", "cores", "memory_total_bytes"}) {
    facts[key] = environment.contains(key) ? environment.at(key) : json(nullptr);
  }
  return facts;
}

}  // namespace trainscope::results
