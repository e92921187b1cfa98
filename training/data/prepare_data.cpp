#include "training/data/prepare_data.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/check.h"
#include "kernels/storage.h"
#include "training/data/example_index.h"
#include "training/data/records.h"
#include "training/data/shuffle.h"

namespace trainscope::training {
namespace {

namespace fs = std::filesystem;
using kernels::MemoryCategory;

constexpr std::size_t kBadSamples = 5;

// Kept records as serialized JSON lines, one arena plus offsets.
struct LineArena {
  std::vector<char, kernels::TrackedAllocator<char>> bytes{
      kernels::TrackedAllocator<char>(MemoryCategory::kData)};
  std::vector<int64_t, kernels::TrackedAllocator<int64_t>> offsets{
      1, 0, kernels::TrackedAllocator<int64_t>(MemoryCategory::kData)};
  void add(std::string_view line) {
    bytes.insert(bytes.end(), line.begin(), line.end());
    offsets.push_back(static_cast<int64_t>(bytes.size()));
  }
  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  std::string_view operator[](int64_t i) const {
    return {bytes.data() + offsets[i], static_cast<std::size_t>(offsets[i + 1] - offsets[i])};
  }
};

// The lines in `order`, one per line, as a JSONL file's content.
std::string join_lines(const LineArena& lines, std::span<const int64_t> order) {
  std::string out;
  for (int64_t i : order) {
    out += lines[i];
    out += '\n';
  }
  return out;
}

}  // namespace

PrepareResult prepare_data(const PrepareOptions& options, const Tokenizer& tokenizer) {
  if (options.input.empty()) throw Error("prepare-data: no input file given");
  if (options.out_dir.empty()) throw Error("--out: no output directory given");
  if (!(options.valid_fraction >= 0.0 && options.valid_fraction < 1.0)) {
    throw Error(fmt::format("--valid-fraction: {} is outside [0, 1)", options.valid_fraction));
  }
  if (options.max_seq_length < 0) {
    throw Error(fmt::format("--max-seq-length: {} must not be negative", options.max_seq_length));
  }
  std::error_code ec;
  if (!fs::exists(options.input, ec)) {
    throw Error(fmt::format("input file '{}' does not exist", options.input));
  }
  require_seekable_file(options.input);

  ScanOptions scan;
  scan.format = FileFormat::kJsonl;
  scan.max_record_bytes = options.max_record_bytes;
  const ExampleIndex index = ExampleIndex::scan(options.input, scan);
  std::ifstream in(options.input, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open input file '{}'", options.input));

  PrepareResult result;
  LineArena kept;
  std::string line, text;
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < index.size(); ++i) {
    const IndexEntry& e = index[i];
    ++result.read;
    line.resize(static_cast<std::size_t>(e.length));
    in.seekg(e.offset);
    in.read(line.data(), e.length);
    if (!in) throw Error(fmt::format("{}:{}: cannot read the line", options.input, e.line));
    Record record;
    try {
      record =
          parse_record_line(line, options.text_field, fmt::format("{}:{}", options.input, e.line));
    } catch (const Error& error) {
      ++result.dropped_bad;
      if (result.bad_samples.size() < kBadSamples) result.bad_samples.push_back(error.what());
      continue;
    }
    text.clear();
    render_record(record, &text);
    ids.clear();
    tokenizer.encode(text, &ids);
    const int64_t tokens = static_cast<int64_t>(ids.size()) + 1;  // + the end-of-text
    if (options.max_seq_length > 0 && tokens > options.max_seq_length) {
      ++result.dropped_too_long;
      continue;
    }
    result.max_tokens_kept = std::max(result.max_tokens_kept, tokens);
    kept.add(record_to_json(record).dump());
  }
  result.kept = kept.size();
  if (result.kept == 0) {
    throw Error(
        fmt::format("{}: no example kept (read {}, {} over --max-seq-length {}, {} bad records{}); "
                    "nothing written",
                    options.input, result.read, result.dropped_too_long, options.max_seq_length,
                    result.dropped_bad,
                    result.bad_samples.empty() ? "" : "; first: " + result.bad_samples.front()));
  }

  std::vector<int64_t, kernels::TrackedAllocator<int64_t>> order(
      result.kept, 0, kernels::TrackedAllocator<int64_t>(MemoryCategory::kData));
  epoch_permutation(options.seed, 0, order);
  result.valid = std::llround(static_cast<double>(result.kept) * options.valid_fraction);
  if (options.valid_fraction > 0 && result.valid == 0 && result.kept >= 2) result.valid = 1;
  result.valid = std::min(result.valid, result.kept - 1);  // train never empty
  result.train = result.kept - result.valid;

  const fs::path dir(options.out_dir);
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) {
    throw Error(fmt::format("--out: cannot create directory '{}'{}", options.out_dir,
                            ec ? ": " + ec.message() : ""));
  }
  const std::span<const int64_t> all(order.data(), order.size());
  const fs::path train_path = dir / "train.jsonl";
  const fs::path valid_path = dir / "valid.jsonl";
  // Both or neither: a new train split beside an old valid split would mix runs.
  write_files_atomically({{train_path, join_lines(kept, all.first(result.train))},
                          {valid_path, join_lines(kept, all.subspan(result.train))}});
  result.train_path = train_path.string();
  result.valid_path = valid_path.string();
  return result;
}

}  // namespace trainscope::training
