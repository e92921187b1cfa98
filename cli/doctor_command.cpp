// `trainscope doctor`: what a user runs first and pastes into a bug report
// (as torch.utils.collect_env and DeepSpeed's ds_report): the machine, the
// GEMM kernels and what they reach, memory bandwidth, MPI and which
// transports carry a 2-rank job, whether virtual hosts can be made, and the
// report's tools. A table, or --json; exit 1, with the fix, when something
// the main command needs is missing.
//
//   trainscope doctor
//   trainscope doctor --json > doctor.json
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/validators.h"
#include "kernels/blas_core.h"
#include "kernels/gemm_backend.h"
#include "base/atomic_file.h"
#include "base/check.h"
#include "kernels/matmul_bf16.h"
#include "kernels/simd.h"
#include "kernels/storage.h"
#include "profiler/supervise.h"
#include "report/gnuplot.h"
#include "results/environment.h"
#include "results/results_db.h"
#include "suites/cpus.h"
#include "suites/limit_probes.h"
#include "suites/pytorch_peer.h"
#include "training/model_config.h"
#include "training/precision.h"

namespace trainscope::cli {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

enum class Status { kOk, kInfo, kWarning, kMissing };
constexpr const char* kStatusNames[] = {"ok", "info", "warning", "MISSING"};

struct Finding {
  Finding(std::string area_, std::string item_, std::string value_, Status status_ = Status::kInfo,
          std::string fix_ = "", bool needed_ = false)
      : area(std::move(area_)),
        item(std::move(item_)),
        value(std::move(value_)),
        status(status_),
        fix(std::move(fix_)),
        needed(needed_) {}
  std::string area, item, value;
  Status status;
  std::string fix;  // what to do when not ok
  bool needed;      // the main command cannot run without it
};

struct DoctorFlags {
  bool json_out = false;
  std::string db;           // store the measured limits here (results/machine_limits.h)
  bool sgemm_only = false;  // internal: one measurement, for a child on another core
  bool skip_mpi = false;
};

// sgemm GFLOP/s at the seed model's forward GEMM shapes, on 512 rows
// (suites/limit_probes.h: the suites measure the same at their cases').
std::vector<suites::GemmShape> seed_shapes() {
  return suites::model_gemm_shapes(training::model_preset("seed"), suites::kMaxProbeRows);
}

// The same measurement on another OpenBLAS core: a child with
// OPENBLAS_CORETYPE set (the library reads it once, when it loads).
std::optional<double> sgemm_gflops_on(const std::string& core) {
  SpawnOptions o;
  o.argv = {"/proc/self/exe", "doctor", "--sgemm-only"};
  o.env = {"OPENBLAS_CORETYPE=" + core};
  const profiler::CompletedRun r = profiler::run_to_completion(o, 60);
  if (r.exit_code != 0) return std::nullopt;
  return std::stod(r.out);
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

void machine_findings(const json& env, std::vector<Finding>& out) {
  const kernels::CpuIsa isa = kernels::detect_cpu_isa();
  int numa = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("node") && name.size() > 4 && std::isdigit(name[4])) ++numa;
  }
  out.push_back({"machine", "CPU", env.value("cpu_model", "?")});
  out.push_back({"machine", "vector ISA", isa.summary()});
  out.push_back({"machine", "element-wise kernels", kernels::simd_summary()});
  out.push_back({"machine", "cores online", env.value("cores", json()).dump()});
  out.push_back({"machine", "memory",
                 kernels::format_bytes(env.value("memory_total_bytes", json(0)).get<double>())});
  out.push_back({"machine", "NUMA nodes", numa > 0 ? std::to_string(numa) : "unknown"});
}

// --precision bf16's GEMMs at the same shapes, when this CPU has bf16
// instructions; else why --precision bf16 is refused here.
void bf16_finding(std::vector<Finding>& out, std::vector<results::MachineLimit>& limits,
                  double fp32_gflops, int threads) {
  try {
    training::check_precision_supported(options::Precision::kBf16, kernels::detect_cpu_isa());
  } catch (const Error& e) {
    out.push_back({"GEMM", "--precision bf16", e.what(), Status::kInfo});
    return;
  }
  limits.push_back(suites::sgemm_limit("seed", training::model_preset("seed"),
                                       suites::kMaxProbeRows, threads, results::kLimitsByDoctor,
                                       options::Precision::kBf16));
  const double bf16 = limits.back().value;
  out.push_back({"GEMM",
                 fmt::format("bf16 GEMM GFLOP/s, seed shapes, {}, {} threads",
                             kernels::onednn_description(), threads),
                 fmt::format("{:.1f} ({:.2f}x sgemm)", bf16, bf16 / fp32_gflops), Status::kOk});
}

// Whether the CPUs add up: the seed GEMMs on one thread alone, then a copy
// on every CPU at once (what one-thread ranks side by side can reach).
// `here` is the sgemm on `threads` threads, the one alone when that is 1.
void cores_finding(std::vector<Finding>& out, std::vector<results::MachineLimit>& limits,
                   double here, int threads) {
  const std::vector<int> cpus = suites::allowed_cpus();
  if (cpus.size() < 2) return;
  const auto seed = training::model_preset("seed");
  if (threads != 1) {
    limits.push_back(
        suites::sgemm_limit("seed", seed, suites::kMaxProbeRows, 1, results::kLimitsByDoctor));
  }
  const double alone = threads == 1 ? here : limits.back().value;
  limits.push_back(suites::sgemm_at_once_limit("seed", seed, suites::kMaxProbeRows, cpus,
                                               results::kLimitsByDoctor));
  const double each = limits.back().value;
  const double together = static_cast<double>(cpus.size()) * each / alone;
  // Below 80% of the CPUs' count, data parallelism over them cannot scale.
  const bool short_of = together < 0.8 * static_cast<double>(cpus.size());
  out.push_back(
      {"GEMM",
       fmt::format("sgemm GFLOP/s, seed shapes, 1 thread, on each of {} CPUs at once", cpus.size()),
       fmt::format("{:.1f} each, {:.1f} alone: together {:.2f}x one CPU", each, alone, together),
       short_of ? Status::kWarning : Status::kOk,
       short_of ? fmt::format("these CPUs share cores or memory: {} one-thread ranks can run "
                              "the GEMMs at most {:.2f}x as fast as one here",
                              cpus.size(), together)
                : ""});
}

void blas_findings(std::vector<Finding>& out, std::vector<results::MachineLimit>& limits) {
  const kernels::BlasInfo b = kernels::blas_info();
  const bool weak = b.fallback();
  out.push_back({"GEMM", "library", b.library});
  out.push_back(
      {"GEMM", "kernels (core)",
       fmt::format(
           "{} ({}{})", b.core, kernels::blas_choice_name(b.choice),
           b.choice == kernels::BlasChoice::kSelected ? "; OpenBLAS had picked " + b.detected : ""),
       weak ? Status::kWarning : Status::kOk,
       weak ? fmt::format("unset OPENBLAS_CORETYPE: this CPU runs {}", b.best) : ""});
  out.push_back({"GEMM", "best core for this CPU", b.best});
  const int threads = openblas_get_num_threads();
  limits.push_back(suites::sgemm_limit("seed", training::model_preset("seed"),
                                       suites::kMaxProbeRows, threads, results::kLimitsByDoctor));
  const double here = limits.back().value;
  out.push_back({"GEMM", fmt::format("sgemm GFLOP/s, seed shapes, {}, {} threads", b.core, threads),
                 fmt::format("{:.1f}", here), Status::kOk});
  if (b.best != b.core) {
    const auto best = sgemm_gflops_on(b.best);
    out.push_back(
        {"GEMM", fmt::format("sgemm GFLOP/s, seed shapes, {}, {} threads", b.best, threads),
         best ? fmt::format("{:.1f} ({:.2f}x)", *best, *best / here) : "failed", Status::kInfo});
  }
  out.push_back(
      {"GEMM", "--gemm auto's choices (fp32, per shape)",
       fmt::format("{} ({})", kernels::gemm_cache_summary(), kernels::gemm_cache_path().string()),
       Status::kInfo});
  try {
    cores_finding(out, limits, here, threads);
  } catch (const Error& e) {
    out.push_back({"GEMM", "sgemm GFLOP/s, seed shapes, 1 thread, on each CPU at once",
                   fmt::format("failed: {}", e.what()), Status::kInfo});
  }
  bf16_finding(out, limits, here, threads);
  limits.push_back(suites::memcpy_limit(results::kLimitsByDoctor));
  out.push_back({"memory", "memcpy GB/s (copied, 1 thread, 256 MiB)",
                 fmt::format("{:.1f}", limits.back().value), Status::kOk});
}

// A 2-rank all-reduce over one transport, as the suites launch it.
Finding transport_finding(const std::string& name, const std::vector<std::string>& mca) {
  SpawnOptions o;
  o.argv = {"mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none"};
  o.argv.insert(o.argv.end(), mca.begin(), mca.end());
  // mpirun would read /proc/self/exe as its own: the path itself.
  o.argv.push_back(fs::read_symlink("/proc/self/exe").string());
  for (const char* a : {"allreduce-bench", "--min-bytes", "1024", "--max-bytes", "65536", "--iters",
                        "3", "--warmup", "1", "--no-copy-probe"}) {
    o.argv.push_back(a);
  }
  if (::geteuid() == 0) o.env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  const profiler::CompletedRun r = profiler::run_to_completion(o, 60);
  const bool ok = r.exit_code == 0 && !r.timed_out;
  return {"MPI",
          "2 ranks over " + name,
          ok ? "works"
             : (r.timed_out ? "timed out"
                            : "exit " + std::to_string(r.exit_code) + ": " + first_line(r.err)),
          ok ? Status::kOk : Status::kMissing,
          ok ? ""
             : "check `mpirun -np 2 --oversubscribe " + fmt::format("{}", fmt::join(mca, " ")) +
                   " trainscope allreduce-bench` by hand",
          name == "shared memory"};
}

void mpi_findings(const json& env, std::vector<Finding>& out) {
  try {
    find_program("mpirun");
  } catch (const Error&) {
    out.push_back({"MPI", "mpirun", "not found", Status::kMissing,
                   "run scripts/install-deps.sh (apt-get install openmpi-bin libopenmpi-dev)",
                   true});
    return;
  }
  out.push_back({"MPI", "Open MPI",
                 env.value("openmpi_version", json("?")).is_string()
                     ? env.value("openmpi_version", "?")
                     : "unknown",
                 Status::kOk});
  out.push_back(transport_finding(
      "shared memory", {"--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include", "lo"}));
  out.push_back(transport_finding(
      "TCP on loopback", {"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca",
                          "oob_tcp_if_include", "lo"}));
}

// Virtual hosts (scripts/netns-cluster.sh) need root, `ip` and `tc`.
void virtual_host_findings(std::vector<Finding>& out) {
  if (::geteuid() != 0) {
    out.push_back({"virtual hosts", "network namespaces", "not root: unavailable", Status::kInfo,
                   "run as root for the virtual-cluster suites"});
    return;
  }
  const std::string ns = fmt::format("trainscope-doctor-{}", ::getpid());
  SpawnOptions add, del;
  add.argv = {"ip", "netns", "add", ns};
  del.argv = {"ip", "netns", "delete", ns};
  bool ok = false;
  std::string why;
  try {
    const auto r = profiler::run_to_completion(add, 10);
    ok = r.exit_code == 0;
    why = first_line(r.err);
    if (ok) profiler::run_to_completion(del, 10);
    find_program("tc");
  } catch (const Error& e) {
    ok = false;
    why = e.what();
  }
  out.push_back({"virtual hosts", "network namespaces and tc", ok ? "permitted" : "no: " + why,
                 ok ? Status::kOk : Status::kWarning,
                 ok ? "" : "apt-get install iproute2; namespaces need root and CAP_SYS_ADMIN"});
}

// The suites' PyTorch peer (engine = "pytorch"): which PyTorch, on which BLAS.
void pytorch_findings(std::vector<Finding>& out) {
  const std::string& python = suites::pytorch_python();
  std::string value = suites::pytorch_problem();
  if (!python.empty()) {
    SpawnOptions describe;
    describe.argv = {python, suites::pytorch_peer_script().string(), "--describe"};
    try {
      const auto r = profiler::run_to_completion(describe, 60);
      value = r.exit_code == 0 ? first_line(r.out) + " via " + python
                               : "found, but --describe failed: " + first_line(r.err);
    } catch (const Error& e) {
      value = e.what();
    }
  }
  const bool found = !python.empty();
  out.push_back({"suites", "PyTorch (vs-pytorch suite)", value, found ? Status::kOk : Status::kInfo,
                 found ? ""
                       : "apt-get install python3-torch (scripts/install-deps.sh): without it "
                         "the suites' PyTorch cases are skipped"});
}

void tool_findings(std::vector<Finding>& out) {
  const auto gnuplot = report::find_gnuplot();
  out.push_back({"report", "gnuplot (charts)", gnuplot ? *gnuplot : "not found",
                 gnuplot ? Status::kOk : Status::kWarning,
                 gnuplot ? "" : "apt-get install gnuplot-nox: reports are tables only without it"});
  std::string chromium;
  for (const char* name : {"chromium", "chromium-browser"}) {
    try {
      chromium = find_program(name);
      break;
    } catch (const Error&) {}
  }
  out.push_back({"report", "Chromium (trace viewing, optional)",
                 chromium.empty() ? "not found" : chromium, Status::kInfo});
}

// The item column is as wide as the longest item, so every status and value lines up.
void print_table(const std::vector<Finding>& findings) {
  int width = 4;
  for (const Finding& f : findings) width = std::max(width, static_cast<int>(f.item.size()));
  std::printf("%-14s %-*s %-10s %s\n", "area", width, "item", "status", "value");
  for (const Finding& f : findings) {
    std::printf("%-14s %-*s %-10s %s\n", f.area.c_str(), width, f.item.c_str(),
                kStatusNames[static_cast<int>(f.status)], f.value.c_str());
  }
  bool header = false;
  for (const Finding& f : findings) {
    if (f.fix.empty() || f.status == Status::kOk) continue;
    if (!header) std::printf("\nto fix:\n");
    header = true;
    std::printf("  %s%s: %s\n", f.item.c_str(), f.needed ? " (needed)" : "", f.fix.c_str());
  }
}

// --db before the probes (about 10 s of them): a place no database can be
// written, or a file that is not a results database this trainscope can
// write, is refused at once; a new database is made only at the end.
void check_db_target(const std::string& db) {
  check_writable(db, "--db");
  if (std::filesystem::exists(db)) results::ResultsDb::open_for_writing(db);
}

void run(const DoctorFlags& flags) {
  if (flags.sgemm_only) {
    std::printf("%.3f\n", suites::sgemm_gflops(seed_shapes(), openblas_get_num_threads()));
    return;
  }
  if (!flags.db.empty()) check_db_target(flags.db);
  const json env = results::capture_environment("trainscope doctor");
  std::vector<Finding> findings;
  std::vector<results::MachineLimit> limits;
  machine_findings(env, findings);
  blas_findings(findings, limits);
  if (!flags.skip_mpi) mpi_findings(env, findings);
  virtual_host_findings(findings);
  tool_findings(findings);
  pytorch_findings(findings);
  bool usable = true;
  for (const Finding& f : findings) usable = usable && !(f.needed && f.status == Status::kMissing);
  if (flags.json_out) {
    json j = {{"ok", usable}, {"findings", json::array()}};
    for (const Finding& f : findings) {
      j["findings"].push_back({{"area", f.area},
                               {"item", f.item},
                               {"value", f.value},
                               {"status", kStatusNames[static_cast<int>(f.status)]},
                               {"fix", f.fix},
                               {"needed", f.needed}});
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(findings);
  }
  // Written last, in one transaction: a doctor that failed earlier stores nothing.
  if (!flags.db.empty()) {
    results::ResultsDb::open_for_writing(flags.db).add_machine_limits(std::nullopt, limits);
    std::fprintf(flags.json_out ? stderr : stdout, "%slimits stored in %s\n",
                 flags.json_out ? "" : "\n", flags.db.c_str());
  }
  if (!usable) throw SilentExit{kExitFailure};
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto f = std::make_shared<DoctorFlags>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check this machine for trainscope and describe it, for bug reports: CPU and vector ISA, "
      "cores, memory, NUMA; the OpenBLAS kernels in use, the best for this CPU and their "
      "measured sgemm GFLOP/s; memcpy GB/s; Open MPI and whether 2 ranks work over shared "
      "memory and TCP on loopback; virtual hosts; gnuplot. Exit 1, with the fix, when something "
      "the suites need is missing.");
  cmd->add_flag("--json", f->json_out, "Print the findings as JSON");
  cmd->add_flag("--skip-mpi", f->skip_mpi, "Do not launch the 2-rank MPI checks");
  cmd->add_option("--db", f->db,
                  "Also store the measured limits (sgemm GFLOP/s at the seed shapes, memcpy "
                  "GB/s) in this results database, created if missing: reports of suites run "
                  "with --no-limits on this host fall back on them")
      ->check(kDbFile);
  cmd->add_flag("--sgemm-only", f->sgemm_only, "Internal: print one sgemm GFLOP/s figure")
      ->group("");
  cmd->callback([f] { run(*f); });
}

}  // namespace trainscope::cli
