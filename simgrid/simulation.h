// Runs SimGrid's SMPI on a step profile: writes the profile, the platform
// and the hostfile to a private directory, runs `smpirun` with the
// trainscope-smpi-step program (simgrid/smpi_step.cpp, built with smpicxx
// when CMake finds SimGrid) and reads the simulated step times back.
//
// SMPI is told to simulate no computation of its own (the program's compute
// is the profile's durations) and, for the `mpi` collective, which all-reduce
// algorithm to run (SimGrid's names: lr is a logical ring, rdb recursive
// doubling, rab1 Rabenseifner, ompi_ring_segmented Open MPI's segmented ring;
// its default selector is not a ring, so a name is always given).
//
// Thread-safety: a simulation is a child process and a directory of its
// own; several may run at once.
#ifndef TRAINSCOPE_SIMGRID_SIMULATION_H_
#define TRAINSCOPE_SIMGRID_SIMULATION_H_

#include <filesystem>
#include <string>
#include <vector>

#include "simgrid/platform.h"
#include "simgrid/step_profile.h"

namespace trainscope::simgrid {

struct SimulationOptions {
  std::filesystem::path program;  // empty: smpi_step_program()
  std::string smpirun = "smpirun";
  std::string allreduce = "lr";  // SMPI's all-reduce algorithm (collective mpi)
  std::vector<std::string> cfg;  // more SimGrid settings, KEY:VALUE each
  double timeout_s = 900;
};

struct SimulatedRun {
  int hosts = 0;
  std::vector<double> step_s;  // rank 0's, one per simulated step
  std::vector<double> comm_s;  // its seconds in the buckets' all-reduces
  double median_step_s() const;
  double median_comm_s() const;
};

// The replay program: $TRAINSCOPE_SMPI_STEP when set, else the one this
// build made ("" when CMake did not find SimGrid).
std::filesystem::path smpi_step_program();

// Why simulations cannot run here ("" when they can): no program built, or
// no smpirun on PATH. For a test's skip and a command's error.
std::string simgrid_unavailable_reason(const SimulationOptions& options = {});

// Simulates `profile` on `platform`. Throws Error naming smpirun's exit
// code and the tail of its output when it fails or prints no steps.
SimulatedRun simulate(const StepProfile& profile, const Platform& platform,
                      const SimulationOptions& options = {});

}  // namespace trainscope::simgrid

#endif  // TRAINSCOPE_SIMGRID_SIMULATION_H_
