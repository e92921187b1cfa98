#include "results/records.h"

#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/atomic_file.h"
#include "base/check.h"

namespace trainscope::results {

using nlohmann::json;

std::string_view to_string(RunStatus status) { return enum_name(status); }

std::optional<RunStatus> parse_run_status(std::string_view text) {
  return parse_enum<RunStatus>(text);
}

void Fields<RunSummary>::validate(const RunSummary& s, const JsonReader& r) {
  if (s.schema != kRunSummarySchema) {
    r["schema"].fail(fmt::format("is '{}', expected '{}'", s.schema, kRunSummarySchema));
  }
  if (s.world_size < 1) r["world_size"].fail(fmt::format("must be >= 1, got {}", s.world_size));
  if (s.steps.size() > static_cast<size_t>(s.world_size)) {
    r["steps"].fail(
        fmt::format("has {} per-rank lists for world_size {}", s.steps.size(), s.world_size));
  }
  // The figures (results/figures.h) leave out this many steps.
  if (const int64_t warmup = r["options"].get_or<int64_t>("warmup_steps", 0); warmup < 0) {
    r["options"]["warmup_steps"].fail(fmt::format("must be >= 0, got {}", warmup));
  }
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    if (s.ranks[i].rank < 0 || s.ranks[i].rank >= s.world_size) {
      r["ranks"][i].fail(
          fmt::format("has rank {} outside world_size {}", s.ranks[i].rank, s.world_size));
    }
  }
}

void Fields<AllReduceRow>::validate(const AllReduceRow& row, const JsonReader& r) {
  if (!is_allreduce_algorithm(row.algorithm)) {
    r["algorithm"].fail(fmt::format("is '{}', expected one of: {}", row.algorithm,
                                    fmt::join(kAllReduceAlgorithms, ", ")));
  }
  if (row.mpi_algorithm < 0 || row.mpi_algorithm > kMaxOpenMpiAllReduceAlgorithm) {
    r["mpi_algorithm"].fail(fmt::format("is {}, expected an Open MPI all-reduce algorithm: {}",
                                        row.mpi_algorithm, open_mpi_algorithm_list()));
  }
  if (row.mpi_algorithm > 0 && row.algorithm != kDefaultAllReduceAlgorithm) {
    r["mpi_algorithm"].fail(
        fmt::format("is {} with algorithm '{}': Open MPI's algorithms "
                    "apply to 'mpi' only",
                    row.mpi_algorithm, row.algorithm));
  }
}

namespace {

// A whole file holding one record; `what` names it in errors.
template <Described T>
T load_record(const std::filesystem::path& path, std::string_view what) {
  const std::string where = fmt::format("{} {}", what, path.string());
  const json j = parse_json(read_file(path), where);
  T record;
  JsonReader::rethrow_in(where, [&] { from_json_value(JsonReader(j), record); });
  return record;
}

}  // namespace

RunSummary load_run_summary(const std::filesystem::path& path) {
  return load_record<RunSummary>(path, "run summary");
}

std::filesystem::path rank_status_path(const std::filesystem::path& status_dir, int rank) {
  return status_dir / fmt::format("rank-{}.json", rank);
}

void save_rank_status(const profiler::RankStatus& status, const std::filesystem::path& path) {
  // Rewritten every second on every rank while it trains: no fsync (a
  // reader after a crash of the machine has nothing to diagnose anyway).
  write_file_atomically(path, to_json_value(status).dump(2) + "\n", Durability::kRenameOnly);
}

profiler::RankStatus load_rank_status(const std::filesystem::path& path) {
  return load_record<profiler::RankStatus>(path, "rank status");
}

void save_run_summary(const RunSummary& summary, const std::filesystem::path& path) {
  write_file_atomically(path, to_json_value(summary).dump(2) + "\n");
}

std::vector<AllReduceRow> load_allreduce_rows(const std::filesystem::path& path) {
  std::istringstream in(read_file(path));
  std::vector<AllReduceRow> rows;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", path.string(), line_no);
    const json j = parse_json(line, where);
    JsonReader::rethrow_in(where, [&] { from_json_value(JsonReader(j), rows.emplace_back()); });
  }
  return rows;
}

}  // namespace trainscope::results
