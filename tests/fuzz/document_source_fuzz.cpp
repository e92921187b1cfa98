// Fuzzes a training data file read through training::open_document_source:
// the line index (ExampleIndex: chunks, long lines, blank lines, delimited
// text documents) and each document's record, as the trainer reads them.
//
// Input: one byte of options, then the file.
//   bit 0: text instead of JSONL         bit 1: skip_bad_records
//   bit 2: text, one document per line   bit 3: split "train[10%:90%]"
//   bit 4: max_record_bytes 64 instead of the default
// With skip_bad_records, every document left in the index must read without
// an Error: the index and the reader must agree on what a good record is.
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "training/data/document_source.h"

namespace trainscope::training {
namespace {

void read_every_document(const DocumentSource& source, bool bad_records_skipped) {
  std::string text;
  for (int64_t i = 0; i < source.size(); ++i) {
    if (bad_records_skipped) {
      source.text(i, &text);
    } else {
      (void)fuzz::parse_or_reject([&] {
        source.text(i, &text);
        return true;
      });
    }
  }
}

}  // namespace
}  // namespace trainscope::training

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const std::string path =
      fuzz::ScratchDir::get().write("data", {fuzz::as_text(data + 1, size - 1)});
  options::DataOptions options;
  options.source = (flags & 1 ? "text:" : "jsonl:") + path;
  options.skip_bad_records = flags & 2;
  options.one_per_line = flags & 4;
  if (flags & 16) options.max_record_bytes = 64;
  const auto source = fuzz::parse_or_reject([&] {
    return training::open_document_source(options, flags & 8 ? "train[10%:90%]" : "train");
  });
  const bool jsonl = !(flags & 1);
  if (source) training::read_every_document(**source, jsonl && options.skip_bad_records);
  return 0;
}
