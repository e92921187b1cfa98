// `trainscope doctor` end to end: the findings as JSON, the kernels judged
// against this CPU, and exit 1 with the fix when mpirun is missing.
#include <gtest/gtest.h>

#include "kernels/blas_core.h"

#include <nlohmann/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "results/results_db.h"
#include "suites/cpus.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace trainscope {
namespace {
using nlohmann::json;
using testing::run_shell;
using testing::run_trainscope;
using testing::shell_quote;
using testing::trainscope_binary;

// The JSON document in the doctor's output (progress lines may precede it).
json doctor_json(const std::string& output) {
  const std::string text = output.substr(output.find('{'));
  return json::parse(text.substr(0, text.rfind('}') + 1));
}

const json* find(const json& findings, const std::string& prefix) {
  for (const json& f : findings["findings"]) {
    if (f["item"].get<std::string>().rfind(prefix, 0) == 0) return &f;
  }
  return nullptr;
}

TEST(DoctorCommandTest, FindingsAsJsonAndTheMpiTransportsWork) {
  const auto r = run_trainscope("doctor --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_TRUE(j["ok"].get<bool>());
  ASSERT_NE(find(j, "kernels (core)"), nullptr) << r.output;
  ASSERT_NE(find(j, "sgemm GFLOP/s"), nullptr) << r.output;
  EXPECT_GT(std::stod(find(j, "sgemm GFLOP/s")->at("value").get<std::string>()), 0.5);
  EXPECT_EQ(find(j, "2 ranks over shared memory")->at("status"), "ok") << r.output;
  EXPECT_EQ(find(j, "2 ranks over TCP on loopback")->at("status"), "ok") << r.output;
}

// The table's columns line up whatever the longest item (the bf16 GEMM's row
// once pushed its status and value right): every status under "status".
TEST(DoctorCommandTest, EveryStatusIsUnderTheStatusHeading) {
  const auto r = run_shell(shell_quote(trainscope_binary()) + " doctor --skip-mpi 2>/dev/null");
  ASSERT_NE(r.exit_code, 2) << r.output;
  std::istringstream lines(r.output);
  std::string header, line;
  std::getline(lines, header);
  const size_t at = header.find(" status ");
  ASSERT_NE(at, std::string::npos) << header;
  int rows = 0;
  while (std::getline(lines, line) && !line.empty()) {
    const std::string status = line.substr(at + 1, line.find(' ', at + 1) - at - 1);
    EXPECT_TRUE(status == "ok" || status == "info" || status == "warning" || status == "MISSING")
        << "'" << status << "' under the heading in: " << line << "\n"
        << r.output;
    ++rows;
  }
  EXPECT_GT(rows, 8) << r.output;
}

// Forced onto weaker kernels than this CPU runs (Prescott: SSE3, which every
// x86-64 CPU trainscope builds for runs, and weaker than any of them): a
// warning with the fix, and the best core measured in a child for comparison.
TEST(DoctorCommandTest, AForcedWeakCoreIsFlaggedAndTheBestMeasured) {
  const auto r = run_shell("OPENBLAS_CORETYPE=Prescott " + shell_quote(trainscope_binary()) +
                           " doctor --json --skip-mpi 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  const json* core = find(j, "kernels (core)");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->at("status"), "warning");
  EXPECT_EQ(core->at("value"), "Prescott (environment)");
  EXPECT_NE(core->at("fix").get<std::string>().find("unset OPENBLAS_CORETYPE"), std::string::npos);
  int measured = 0;  // rows with a figure (a child that failed says "failed")
  for (const json& f : j["findings"]) {
    if (f["item"].get<std::string>().rfind("sgemm GFLOP/s", 0) != 0) continue;
    EXPECT_GT(std::atof(f["value"].get<std::string>().c_str()), 0.5) << f.dump();
    ++measured;
  }
  // The weak core and the best; and on two CPUs or more the GEMMs on each at once.
  EXPECT_EQ(measured, suites::cores_available() >= 2 ? 3 : 2) << r.output;
}

// The threads of the main sgemm finding: "sgemm GFLOP/s, seed shapes, CORE, N threads".
int sgemm_threads(const json& j) {
  const json* f = find(j, "sgemm GFLOP/s");
  if (f == nullptr) return 0;
  const std::string item = f->at("item");
  const std::size_t comma = item.rfind(", ");
  return comma == std::string::npos ? 0 : std::atoi(item.c_str() + comma + 2);
}

TEST(DoctorCommandTest, MissingMpirunIsExitOneWithTheFix) {
  const auto r = run_shell("PATH=/nonexistent " + shell_quote(trainscope_binary()) + " doctor");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("mpirun (needed): run scripts/install-deps.sh"), std::string::npos)
      << r.output;
}

// --db: the limits the doctor measured, stored without a suite for the
// reports of suites run with --no-limits on this host.
TEST(DoctorCommandTest, DbStoresTheMeasuredLimits) {
  testing::TempDir dir("doctor");
  const std::string db = dir.file("limits.db");
  const auto r = run_trainscope("doctor --skip-mpi --json --db " + shell_quote(db));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto results = results::ResultsDb::open_for_reading(db);
  const auto limits = results.machine_limits(std::nullopt);
  // sgemm and memcpy; the bf16 GEMM where this CPU has bf16 instructions;
  // on two CPUs or more the sgemm at once on all of them, and on one thread
  // alone unless the first was.
  const kernels::CpuIsa isa = kernels::detect_cpu_isa();
  const json j = doctor_json(r.output);
  const int threads = sgemm_threads(j);
  std::size_t expected = isa.avx512_bf16 || isa.amx_bf16 ? 3u : 2u;
  if (suites::cores_available() >= 2) expected += threads == 1 ? 1 : 2;
  ASSERT_EQ(limits.size(), expected) << r.output;
  bool sgemm = false, memcpy = false;
  for (const auto& l : limits) {
    EXPECT_EQ(l.source, "trainscope doctor");
    EXPECT_GT(l.value, 0.5) << results::describe_key(l);
    sgemm = sgemm || (l.kind == results::LimitKind::kSgemm && l.model == "seed" && l.rows == 512);
    memcpy = memcpy || l.kind == results::LimitKind::kMemcpy;
  }
  EXPECT_TRUE(sgemm && memcpy);
  // The stored sgemm figure is the one the doctor printed.
  for (const auto& l : limits) {
    if (l.kind != results::LimitKind::kSgemm || l.precision == "bf16" || l.ranks > 1 ||
        l.threads != threads) {
      continue;
    }
    char printed[32];
    std::snprintf(printed, sizeof printed, "%.1f", l.value);
    EXPECT_EQ(find(j, "sgemm GFLOP/s")->at("value"), printed);
  }
}

TEST(DoctorCommandTest, AnUnwritableDbIsExitTwo) {
  const auto r = run_trainscope("doctor --skip-mpi --db /nonexistent-dir/limits.db");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent-dir/limits.db"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trainscope
