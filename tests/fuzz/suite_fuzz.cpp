// Fuzzes a suite file: suites::parse_suite (toml++, then the suite's own
// checks: keys, types, ranges, the grid's cartesian product, [[case]] tables,
// the trainer's mode / reduction / shard parsers). Relative model paths
// resolve against suites/, as for a built-in suite (narrow24.json is there).
//
// A suite that parses must give every case a JSON form (stored as
// runs.config in the results database).
#include "suites/suite_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  const auto suite = fuzz::parse_or_reject([&] {
    return suites::parse_suite(fuzz::as_text(data, size), "fuzz.toml",
                               TRAINSCOPE_SOURCE_DIR "/suites");
  });
  if (suite) {
    for (const suites::SuiteCase& c : suite->cases) (void)c.to_json().dump();
  }
  return 0;
}
