// ExampleIndex: where each example of a text or JSONL file starts and ends.
//
// The file is scanned once, in 1 MiB chunks, recording byte offsets only: no
// JSON parsing and no tokenizing (except with skip_bad_records, see below), so
// a rank can then pread and tokenize just the examples it needs. The index
// itself (24 bytes per example) lives in MemoryCategory::kData.
//
// Formats:
//  * JSONL: every non-blank line is one record. With skip_bad_records, each
//    record is also parsed while scanning; bad ones (malformed JSON, missing
//    field, invalid UTF-8) are counted and left out of the index, so every
//    rank agrees on the example list.
//  * Text, one_per_line: every non-blank line is one document.
//  * Text, delimited: a line whose trimmed content equals the delimiter ends
//    a document; documents are trimmed, and empty ones dropped.
// A line longer than max_record_bytes is an error naming file and line.
//
// Thread-safety: scan() is a constructor; afterwards the index is read-only
// and safe to share; keep_range() must not race with readers.
#ifndef TRAINSCOPE_TRAINING_DATA_EXAMPLE_INDEX_H_
#define TRAINSCOPE_TRAINING_DATA_EXAMPLE_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/storage.h"

namespace trainscope::training {

enum class FileFormat { kJsonl, kText };

struct ScanOptions {
  FileFormat format = FileFormat::kJsonl;
  std::string delimiter = "<|endoftext|>";  // text only
  bool one_per_line = false;                // text only
  int64_t max_record_bytes = int64_t{64} << 20;
  bool skip_bad_records = false;    // JSONL only
  std::string text_field = "text";  // JSONL only, for skip_bad_records checks
};

struct IndexEntry {
  int64_t offset = 0;  // first byte of the example
  int64_t length = 0;  // bytes
  int64_t line = 0;    // 1-based line of its first byte
};

// Error naming `path` and what it is unless it is a regular file (or a
// missing one, which opening reports): the index is made in one pass and the
// records are read by offset after.
void require_seekable_file(const std::string& path);

class ExampleIndex {
 public:
  // Scans `path`; throws trainscope::Error naming the file (and line) when it
  // cannot be read or a line is too long.
  static ExampleIndex scan(const std::string& path, const ScanOptions& options);

  int64_t size() const { return static_cast<int64_t>(entries_.size()); }
  const IndexEntry& operator[](int64_t i) const { return entries_[i]; }
  int64_t bytes_scanned() const { return bytes_scanned_; }
  int64_t bad_records() const { return bad_records_; }
  int64_t bytes_held() const {
    return static_cast<int64_t>(entries_.capacity() * sizeof(IndexEntry));
  }
  // Keeps only entries [begin, end) and releases the rest.
  void keep_range(int64_t begin, int64_t end);

 private:
  ExampleIndex() = default;
  std::vector<IndexEntry, kernels::TrackedAllocator<IndexEntry>> entries_{
      kernels::TrackedAllocator<IndexEntry>(kernels::MemoryCategory::kData)};
  int64_t bytes_scanned_ = 0;
  int64_t bad_records_ = 0;
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_EXAMPLE_INDEX_H_
