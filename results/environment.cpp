#include "results/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cblas.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <string>

#include "profiler/proc_fs.h"

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

// Output of a shell command, or nullopt if it failed or printed nothing.
std::optional<std::string> command_output(const char* command) {
  FILE* pipe = ::popen(command, "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[256];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  int status = ::pclose(pipe);
  if (status != 0 || out.empty()) return std::nullopt;
  return out;
}

json openmpi_version() {
  // ompi_info is cheaper than mpirun and prints "Open MPI v4.1.4" first.
  for (const char* command : {"ompi_info --version 2>/dev/null", "mpirun --version 2>/dev/null"}) {
    if (auto out = command_output(command)) {
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
  return env;
}

json host_facts(const json& environment) {
  json facts = json::object();
  for (const char* key : {"hostname", "kernel", "cpu_model", "cores", "memory_total_bytes"}) {
    facts[key] = environment.contains(key) ? environment.at(key) : json(nullptr);
  }
  return facts;
}

}  // namespace trainscope::results
