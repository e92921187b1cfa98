// Fuzzes an Open MPI hostfile: suites::parse_hostfile (comments, blank lines,
// `[user@]host slots=N max_slots=N`, hosts on several lines).
#include "suites/suite_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  const auto hosts = fuzz::parse_or_reject(
      [&] { return suites::parse_hostfile(fuzz::as_text(data, size), "hostfile"); });
  if (hosts) {
    for (const suites::HostEntry& h : *hosts) {
      TS_CHECK(!h.host.empty() && h.slots >= 1 && (h.max_slots == 0 || h.max_slots >= h.slots))
          << h.host;
    }
  }
  return 0;
}
