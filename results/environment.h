// Facts about the machine and software a suite ran on, captured once per
// suite and stored with it (suites.environment) so that two result sets can
// be told apart later: CPU, cores, memory, kernel, hostname, the OpenBLAS
// build and thread count, the Open MPI version, every OMPI_MCA_* variable in
// effect and the exact command line.
//
// Thread-safety: reads /proc and the environment and runs `ompi_info`; call it
// from one thread (it uses popen and getenv).
#ifndef TRAINSCOPE_RESULTS_ENVIRONMENT_H_
#define TRAINSCOPE_RESULTS_ENVIRONMENT_H_

#include <string>

#include <nlohmann/json.hpp>

namespace trainscope::results {

// Returns an object with the keys hostname, kernel, cpu_model, cores
// (logical CPUs online), memory_total_bytes, openblas_config,
// openblas_threads, openmpi_version (null when Open MPI is not installed),
// mca (object of OMPI_MCA_* variables, prefix stripped) and command_line.
// Facts that cannot be read are null rather than guessed.
nlohmann::json capture_environment(const std::string& command_line);

// The subset of capture_environment() that describes the hardware
// (hostname, kernel, cpu_model, cores, memory_total_bytes): suites.host_facts.
nlohmann::json host_facts(const nlohmann::json& environment);

// The test hook TRAINSCOPE_SLOWDOWN=PCT: every rank busy-waits, at the end
// of each step, PCT percent of the time that step took to train (data
// through optimizer, not an eval or checkpoint: training/run/step.cpp), so
// that every case's step time grows by PCT%: a planted slowdown whose
// detection measures a regression gate's power. It belongs to the
// environment, not the configuration: capture_environment records it under
// "test_hooks" (the report shows it), and a check against a baseline
// measured without it still compares the same cases. 0 when unset or empty;
// an Error naming the variable when it is not a number in [0, 1000].
inline constexpr const char* kSlowdownVariable = "TRAINSCOPE_SLOWDOWN";
double planted_slowdown_pct();

// The test hook TRAINSCOPE_PLANT_WORK=PCT: the optimizer phase does PCT
// percent more work (AdamW and the gradient norm over PCT% of the
// parameters again, into scratch: training/run/step.cpp), a planted work
// regression whose detection measures the work lane's power (suites/
// work_lane.h). Recorded under "test_hooks" as the slowdown is; the same
// errors.
inline constexpr const char* kPlantWorkVariable = "TRAINSCOPE_PLANT_WORK";
double planted_work_pct();

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_ENVIRONMENT_H_
