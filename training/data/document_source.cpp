#include "training/data/document_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "training/data/example_index.h"
#include "training/data/records.h"
#include "training/data/instruct.h"
#include "training/data/stories.h"

namespace trainscope::training {
namespace {

namespace fs = std::filesystem;

class FileDocumentSource final : public DocumentSource {
 public:
  FileDocumentSource(std::string path, const ScanOptions& scan)
      : path_(std::move(path)), scan_(scan), index_(ExampleIndex::scan(path_, scan)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      throw Error(fmt::format("cannot open data file '{}': {}", path_, std::strerror(errno)));
    }
  }
  ~FileDocumentSource() override { ::close(fd_); }

  void keep_range(int64_t begin, int64_t end) override { index_.keep_range(begin, end); }

  int64_t size() const override { return index_.size(); }
  std::string name() const override { return path_; }
  int64_t bytes_read() const override { return bytes_read_.load(std::memory_order_relaxed); }
  int64_t bytes_scanned() const override { return index_.bytes_scanned(); }
  int64_t bad_records() const override { return index_.bad_records(); }
  int64_t bytes_held() const override { return index_.bytes_held(); }

  void text(int64_t i, std::string* out) const override {
    const IndexEntry& e = index_[i];
    // Scratch per thread: reused across documents, not held between loads.
    thread_local std::string raw;
    raw.resize(static_cast<std::size_t>(e.length));
    int64_t done = 0;
    while (done < e.length) {
      const ssize_t got = ::pread(fd_, raw.data() + done, e.length - done, e.offset + done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw Error(fmt::format("{}:{}: cannot read the record ({})", path_, e.line,
                                got < 0 ? std::strerror(errno) : "file shrank since indexing"));
      }
      done += got;
    }
    bytes_read_.fetch_add(e.length, std::memory_order_relaxed);
    if (scan_.format == FileFormat::kJsonl) {
      const Record record =
          parse_record_line(raw, scan_.text_field, fmt::format("{}:{}", path_, e.line));
      out->clear();
      render_record(record, out);
      return;
    }
    if (const int64_t bad = find_invalid_utf8(raw); bad >= 0) {
      const int64_t line = e.line + std::count(raw.begin(), raw.begin() + bad, '\n');
      throw Error(fmt::format("{}:{}: invalid UTF-8 (byte offset {} in the file)", path_, line,
                              e.offset + bad));
    }
    out->assign(raw);
  }

 private:
  std::string path_;
  ScanOptions scan_;
  ExampleIndex index_;
  int fd_ = -1;
  mutable std::atomic<int64_t> bytes_read_{0};
};

// A built-in corpus: document i is a pure function of (seed, i).
using Generator = void (*)(uint64_t seed, int64_t index, std::string* out);

// The built-in corpora, declared once: "builtin:<name>".
constexpr std::array<std::pair<std::string_view, Generator>, 2> kBuiltinCorpora = {{
    {"stories", &generate_story},
    {"instruct", &generate_instruction},
}};

class StorySource final : public DocumentSource {
 public:
  StorySource(Generator generate, uint64_t seed, int64_t first, int64_t count, std::string name)
      : generate_(generate), seed_(seed), first_(first), count_(count), name_(std::move(name)) {}
  void keep_range(int64_t begin, int64_t end) override {
    TS_CHECK(0 <= begin && begin <= end && end <= count_) << begin << ".." << end;
    first_ += begin;
    count_ = end - begin;
  }
  int64_t size() const override { return count_; }
  std::string name() const override { return name_; }
  int64_t bytes_read() const override { return bytes_read_.load(std::memory_order_relaxed); }
  void text(int64_t i, std::string* out) const override {
    TS_CHECK(i >= 0 && i < count_) << i;
    generate_(seed_, first_ + i, out);
    bytes_read_.fetch_add(static_cast<int64_t>(out->size()), std::memory_order_relaxed);
  }

 private:
  Generator generate_;
  uint64_t seed_;
  int64_t first_;
  int64_t count_;
  std::string name_;
  mutable std::atomic<int64_t> bytes_read_{0};
};

int64_t parse_count(std::string_view text, std::string_view what) {
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    throw Error(fmt::format("{}: '{}' is not a non-negative integer", what, text));
  }
  return value;
}

std::unique_ptr<DocumentSource> open_builtin(const options::DataOptions& options,
                                             std::string_view spec, const SplitSpec& split,
                                             bool missing_split_ok) {
  std::string_view rest = spec.substr(std::string_view("builtin:").size());
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  Generator generate = nullptr;
  for (const auto& [name, generator] : kBuiltinCorpora) {
    if (name == rest) generate = generator;
  }
  if (generate == nullptr) {
    std::vector<std::string_view> names;
    for (const auto& corpus : kBuiltinCorpora) names.push_back(corpus.first);
    throw Error(fmt::format("data source '{}': unknown built-in corpus '{}' (expected {})", spec,
                            rest, fmt::join(names, " or ")));
  }
  int64_t docs = options.builtin_docs;
  int64_t valid_docs = options.builtin_valid_docs;
  uint64_t seed = options.builtin_seed;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    const std::string what = fmt::format("data source '{}': option '{}'", spec, key);
    if (key == "docs") {
      docs = parse_count(value, what);
      // Train stories are numbered from 0, validation stories from here.
      if (docs >= kValidationStoryBase) {
        throw Error(
            fmt::format("{}: {} stories would run into the validation stories (at most "
                        "{})",
                        what, docs, kValidationStoryBase - 1));
      }
    } else if (key == "valid_docs") {
      valid_docs = parse_count(value, what);
    } else if (key == "seed") {
      seed = static_cast<uint64_t>(parse_count(value, what));
    } else {
      throw Error(fmt::format(
          "data source '{}': unknown option '{}' (expected docs, valid_docs, seed)", spec, key));
    }
  }
  const std::string label = fmt::format("builtin:{} (seed {}, {})", rest, seed, split.name);
  if (split.name == "train") return std::make_unique<StorySource>(generate, seed, 0, docs, label);
  if (split.name == "valid" || split.name == "validation") {
    if (valid_docs == 0 && missing_split_ok) return nullptr;
    return std::make_unique<StorySource>(generate, seed, kValidationStoryBase, valid_docs, label);
  }
  if (missing_split_ok) return nullptr;
  throw Error(
      fmt::format("data source '{}' has no split '{}' (it has train and valid)", spec, split.name));
}

ScanOptions scan_options(const options::DataOptions& options, FileFormat format) {
  ScanOptions scan;
  scan.format = format;
  scan.delimiter = options.delimiter;
  scan.one_per_line = options.one_per_line;
  scan.max_record_bytes = options.max_record_bytes;
  scan.skip_bad_records = options.skip_bad_records;
  scan.text_field = options.text_field;
  return scan;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

SplitSpec SplitSpec::parse(std::string_view split) {
  SplitSpec spec;
  const auto open = split.find('[');
  spec.name = std::string(split.substr(0, open));
  if (spec.name.empty()) throw Error(fmt::format("split '{}': no split name", split));
  if (open == std::string_view::npos) return spec;
  const auto bad = [&](std::string_view why) {
    return Error(
        fmt::format("split '{}': {} (expected e.g. train[100:200] or train[0%:50%])", split, why));
  };
  if (split.back() != ']') throw bad("missing closing ']'");
  const std::string_view inside = split.substr(open + 1, split.size() - open - 2);
  const auto colon = inside.find(':');
  if (colon == std::string_view::npos) throw bad("missing ':'");
  const auto parse_bound = [&](std::string_view text) -> std::optional<Bound> {
    if (text.empty()) return std::nullopt;
    Bound bound;
    if (text.back() == '%') {
      bound.percent = true;
      text.remove_suffix(1);
    }
    double value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0 ||
        (!bound.percent && value != std::floor(value)) || (bound.percent && value > 100)) {
      throw bad(fmt::format("bad bound '{}'", text));
    }
    bound.value = value;
    return bound;
  };
  spec.begin = parse_bound(inside.substr(0, colon));
  spec.end = parse_bound(inside.substr(colon + 1));
  return spec;
}

std::pair<int64_t, int64_t> SplitSpec::resolve(int64_t size) const {
  const auto at = [size](const std::optional<Bound>& b, int64_t fallback) {
    if (!b) return fallback;
    const double v =
        b->percent ? std::floor(static_cast<double>(size) * b->value / 100.0) : b->value;
    return std::min<int64_t>(size, static_cast<int64_t>(v));
  };
  const int64_t b = at(begin, 0);
  const int64_t e = at(end, size);
  return {b, std::max(b, e)};
}

std::unique_ptr<DocumentSource> open_document_source(const options::DataOptions& options,
                                                     std::string_view split_text,
                                                     bool missing_split_ok) {
  const SplitSpec split = SplitSpec::parse(split_text);
  std::string_view spec = options.source;
  std::unique_ptr<DocumentSource> source;
  if (spec.starts_with("builtin:")) {
    auto stories = open_builtin(options, spec, split, missing_split_ok);
    if (!stories) return nullptr;
    const auto [b, e] = split.resolve(stories->size());
    stories->keep_range(b, e);
    source = std::move(stories);
  } else {
    std::optional<FileFormat> forced;
    if (spec.starts_with("jsonl:")) {
      forced = FileFormat::kJsonl;
      spec.remove_prefix(6);
    } else if (spec.starts_with("text:")) {
      forced = FileFormat::kText;
      spec.remove_prefix(5);
    }
    const fs::path path{std::string(spec)};
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) {
      throw Error(fmt::format("data source '{}' does not exist", options.source));
    }
    fs::path file;
    FileFormat format = FileFormat::kJsonl;
    if (fs::is_directory(status)) {
      file = path / (split.name + ".jsonl");
      if (!fs::exists(file)) {
        if (missing_split_ok) return nullptr;
        throw Error(fmt::format("data directory '{}' has no {} (for split '{}')", options.source,
                                file.filename().string(), split.name));
      }
      format = forced.value_or(FileFormat::kJsonl);
    } else {
      if (split.name != "train") {
        if (missing_split_ok) return nullptr;
        throw Error(fmt::format(
            "data source '{}' is one file, so it has only the split 'train' (asked for '{}')",
            options.source, split.name));
      }
      file = path;
      const bool jsonl = ends_with(spec, ".jsonl") || ends_with(spec, ".json");
      format = forced.value_or(jsonl ? FileFormat::kJsonl : FileFormat::kText);
    }
    auto file_source =
        std::make_unique<FileDocumentSource>(file.string(), scan_options(options, format));
    if (split.sliced()) {
      const auto [b, e] = split.resolve(file_source->size());
      file_source->keep_range(b, e);
    }
    source = std::move(file_source);
  }
  if (source->size() == 0) {
    throw Error(fmt::format(
        "data source '{}', split '{}': no examples (empty dataset{})", options.source, split_text,
        source->bad_records() > 0 ? fmt::format(", {} bad records skipped", source->bad_records())
                                  : ""));
  }
  return source;
}

}  // namespace trainscope::training
