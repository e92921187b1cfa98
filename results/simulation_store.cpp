// ResultsDb's simulated steps (results/simulation_records.h): the table
// simulations.
#include <fmt/format.h>

#include "base/check.h"
#include "base/json_reader.h"
#include "results/results_db.h"
#include "results/sql_fields.h"
#include "results/sql_statements.h"
#include "results/sqlite.h"

namespace trainscope::results {

using sqlite::Statement;
using sqlite::Transaction;

void ResultsDb::replace_simulations(int64_t suite_id, std::string_view simulator,
                                    std::span<const SimulatedStep> rows) {
  require_writable();
  Transaction t(*db_);
  if (!suite(suite_id)) {
    throw Error(fmt::format("results database {} has no suite {}", path().string(), suite_id));
  }
  Statement drop(*db_, "DELETE FROM simulations WHERE suite_id = ?1 AND simulator = ?2");
  drop.bind(1, suite_id).bind(2, std::string(simulator)).run("replacing simulated steps");
  Statement s(*db_, insert_sql("simulations", keys({"suite_id"}), columns_of<SimulatedStep>()));
  for (const SimulatedStep& row : rows) {
    bind_record(s.bind(1, suite_id), 2, row);
    s.run(fmt::format("storing the simulated step of {} hosts on {}", row.hosts, row.link));
  }
  t.commit();
}

std::vector<SimulatedStep> ResultsDb::simulations(int64_t suite_id) {
  const auto table = existing_columns_.find("simulations");
  if (table == existing_columns_.end() || table->second.empty()) return {};  // made before them
  Statement s(*db_, fmt::format("SELECT {} FROM simulations WHERE suite_id = ?1 "
                                "ORDER BY simulator, link, overlap, hosts",
                                select_list("simulations", columns_of<SimulatedStep>())));
  s.bind(1, suite_id);
  std::vector<SimulatedStep> rows;
  while (s.step("reading simulated steps")) {
    JsonReader::rethrow_in(fmt::format("results database {}, simulations", path().string()),
                           [&] { read_record(s, 0, rows.emplace_back()); });
  }
  return rows;
}

}  // namespace trainscope::results
