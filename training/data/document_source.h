// DocumentSource: random access to the documents (training texts) of one split
// of a SOURCE, before tokenizing.
//
// File sources keep an ExampleIndex and pread only the documents asked for;
// the built-in stories generate document i on demand. Slices ("train[10:20]",
// "train[0%:50%]") are applied here, so nothing outside the slice is read or
// held (a file's index is trimmed to the slice).
//
// Thread-safety: after opening, text() and the counters may be called from
// several threads at once (pread, atomic counters).
#ifndef TRAINSCOPE_TRAINING_DATA_DOCUMENT_SOURCE_H_
#define TRAINSCOPE_TRAINING_DATA_DOCUMENT_SOURCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "options/data_options.h"

namespace trainscope::training {

class DocumentSource {
 public:
  virtual ~DocumentSource() = default;
  // Documents in the split (after slicing and skipped bad records).
  virtual int64_t size() const = 0;
  // Replaces *out with the training text of document i in [0, size()).
  // Throws trainscope::Error naming file and line for a bad record.
  virtual void text(int64_t i, std::string* out) const = 0;
  // What the source is, for messages: a path or "builtin:stories (train)".
  virtual std::string name() const = 0;
  // Bytes of document text read (files) or generated (builtin) so far.
  virtual int64_t bytes_read() const = 0;
  // Bytes read while indexing (the whole file, once).
  virtual int64_t bytes_scanned() const { return 0; }
  // Records skipped as bad (skip_bad_records).
  virtual int64_t bad_records() const { return 0; }
  // Tracked bytes this source holds (its index).
  virtual int64_t bytes_held() const { return 0; }
  // Keeps only documents [begin, end) (renumbered from 0) and releases what
  // the rest held. REQUIRES: 0 <= begin <= end <= size(); no concurrent text().
  virtual void keep_range(int64_t begin, int64_t end) = 0;
};

// A split name with an optional slice: "train", "valid[:100]", "train[0%:50%]".
// Bounds are example counts or percentages of the split's size; either may
// be left out; negative counts are not allowed. Percentages map to
// floor(M * p / 100); bounds past the end are clamped to M.
struct SplitSpec {
  std::string name;
  struct Bound {
    double value = 0;
    bool percent = false;
  };
  std::optional<Bound> begin, end;

  // Throws trainscope::Error naming the split string.
  static SplitSpec parse(std::string_view split);
  // [begin, end) over a split of `size` examples.
  std::pair<int64_t, int64_t> resolve(int64_t size) const;
  bool sliced() const { return begin.has_value() || end.has_value(); }
};

// Opens `split` (sliced or not) of options.source. Throws trainscope::Error
// for a missing file or directory, an unknown split, or an empty result.
// With missing_split_ok, a source that lacks the split gives nullptr instead.
std::unique_ptr<DocumentSource> open_document_source(const options::DataOptions& options,
                                                     std::string_view split,
                                                     bool missing_split_ok = false);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_DOCUMENT_SOURCE_H_
