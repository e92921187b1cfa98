// Where a suite's case runs, declared once: the placement keys (ranks,
// hosts, transport, links, cores_per_host, cpu_share, link, tcp_interface,
// batch_per_rank, mpi_algorithm) as plain values, and a table of them from
// which the suite parser takes the keys it reads (suites/suite_config.cpp),
// a case takes its name parts and its recorded config (suites/suite_case.cpp),
// and the report reads a recorded config back (report/case_options.h).
// Adding a placement key is one row here, its field in Placement and its use;
// a value that needs more than a range or a list of choices (a link profile,
// "C/hosts") also has its reader in the suite parser.
//
// Thread-safety: the table is built once, then read-only.
#ifndef TRAINSCOPE_OPTIONS_PLACEMENT_H_
#define TRAINSCOPE_OPTIONS_PLACEMENT_H_

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "options/choices.h"

namespace trainscope::options {

struct Placement {
  int ranks = 1;
  Transport transport = Transport::kAuto;
  int links = 0;  // tcp only: btl_tcp_links (0 = Open MPI default)
  // For allreduce = "mpi": the Open MPI algorithm forced through mpirun's
  // MCA settings (0: Open MPI's own choice).
  int mpi_algorithm = 0;
  // > 1: a virtual cluster of that many hosts (scripts/netns-cluster.sh),
  // ranks spread evenly over them.
  int hosts = 1;
  int cores_per_host = 0;  // CPUs each host's processes may use; 0: not pinned
  // < 1: each virtual host gets this share of its cores (a cgroup quota) and
  // its link F x the rate: time dilated by 1/F (docs/CLUSTERS.md).
  double cpu_share = 1;
  // hosts > 1: a link profile (gige, 10gbe, tb-bridge, unlimited) or a tc
  // rate (500mbit); "": unlimited.
  std::string link;
  std::string tcp_interface;  // "": the suite's
  int batch_per_rank = 0;     // > 0: the global batch is this x ranks (weak scaling)
};

using PlacementField = std::variant<int Placement::*, double Placement::*, std::string Placement::*,
                                    Transport Placement::*>;

// One placement key.
struct PlacementKey {
  std::string_view key;  // in a suite, a case's config and the report
  PlacementField field;
  // A suite's reading of an int: its range; of a text: its choices, if any
  // (an enumeration's are its names).
  int64_t min = std::numeric_limits<int>::min();
  int64_t max = std::numeric_limits<int>::max();
  std::span<const std::string_view> choices = {};
  bool axis = true;       // may be a [grid] axis
  bool in_sweeps = true;  // an all-reduce sweep has it too
  // In every recorded config; else only when other than the default, so
  // that configs recorded before the key existed (baselines) still match.
  bool always_recorded = false;
  // Its part of a generated case name, "" for none; `varying`: the suite
  // varies the key.
  std::string (*name_part)(const Placement&, bool varying) = nullptr;
};

const std::vector<PlacementKey>& placement_table();
// The row of a key, or nullptr.
const PlacementKey* find_placement_key(std::string_view key);

bool placement_is_default(const PlacementKey& row, const Placement& p);
// The value as JSON (a number or a string).
nlohmann::json placement_json(const PlacementKey& row, const Placement& p);

// Writes the recorded keys of `p` into a case's config (a JSON object).
void record_placement(const Placement& p, nlohmann::json& config);
// A recorded config's placement, defaults where it says nothing (or holds a
// value of another type: a config written by an older version).
Placement placement_from_config(const nlohmann::json& config);

}  // namespace trainscope::options

#endif  // TRAINSCOPE_OPTIONS_PLACEMENT_H_
