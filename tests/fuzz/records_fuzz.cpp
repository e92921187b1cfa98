// Fuzzes one JSONL line of training data: training::parse_record_line (UTF-8
// check, the JSON reader, the chat / instruction / text record kinds).
//
// A record that parses must also survive what prepare-data does with it:
// record_to_json, written out and read back, renders the same training text.
#include <string>

#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_util.h"
#include "training/data/records.h"

namespace trainscope::training {
namespace {

std::string rendered(const Record& record) {
  std::string text;
  render_record(record, &text);
  return text;
}

void check_written_record_reads_back(const Record& record) {
  const std::string written = record_to_json(record).dump();
  const Record reread = parse_record_line(written, "text", "written.jsonl:1");
  TS_CHECK(rendered(reread) == rendered(record)) << "record_to_json changed the text: " << written;
}

}  // namespace
}  // namespace trainscope::training

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  const auto record = fuzz::parse_or_reject([&] {
    return training::parse_record_line(fuzz::as_text(data, size), "text", "fuzz.jsonl:1");
  });
  if (record) training::check_written_record_reads_back(*record);
  return 0;
}
