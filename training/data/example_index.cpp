#include "training/data/example_index.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <cstring>
#include <string_view>

#include <fmt/core.h>

#include "base/check.h"
#include "training/data/records.h"

namespace trainscope::training {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Offsets of the trimmed content of a line, relative to the line's start.
struct Trimmed {
  std::size_t begin;
  std::size_t end;
  bool empty() const { return begin >= end; }
};
Trimmed trim(std::string_view line) {
  std::size_t b = 0, e = line.size();
  while (b < e && is_space(line[b])) ++b;
  while (e > b && is_space(line[e - 1])) --e;
  return {b, e};
}

class FileCloser {
 public:
  explicit FileCloser(int fd) : fd_(fd) {}
  ~FileCloser() { ::close(fd_); }
  FileCloser(const FileCloser&) = delete;
  FileCloser& operator=(const FileCloser&) = delete;

 private:
  int fd_;
};

// Turns lines into index entries for one format.
class LineSink {
 public:
  LineSink(const std::string& path, const ScanOptions& options,
           std::vector<IndexEntry, kernels::TrackedAllocator<IndexEntry>>* entries,
           int64_t* bad_records)
      : path_(path), options_(options), entries_(entries), bad_records_(bad_records) {}

  void line(std::string_view text, int64_t offset, int64_t line_no) {
    const Trimmed t = trim(text);
    if (options_.format == FileFormat::kJsonl) {
      if (t.empty()) return;
      if (options_.skip_bad_records) {
        try {
          (void)parse_record_line(text.substr(t.begin, t.end - t.begin), options_.text_field,
                                  fmt::format("{}:{}", path_, line_no));
        } catch (const Error&) {
          ++*bad_records_;
          return;
        }
      }
      entries_->push_back(
          {offset + static_cast<int64_t>(t.begin), static_cast<int64_t>(t.end - t.begin), line_no});
      return;
    }
    if (options_.one_per_line) {
      if (!t.empty()) {
        entries_->push_back({offset + static_cast<int64_t>(t.begin),
                             static_cast<int64_t>(t.end - t.begin), line_no});
      }
      return;
    }
    if (text.substr(t.begin, t.end - t.begin) == options_.delimiter) {
      finish();
      return;
    }
    if (t.empty()) return;
    if (doc_line_ == 0) {
      doc_begin_ = offset + static_cast<int64_t>(t.begin);
      doc_line_ = line_no;
    }
    doc_end_ = offset + static_cast<int64_t>(t.end);
    if (doc_end_ - doc_begin_ > options_.max_record_bytes) {
      throw Error(fmt::format("{}:{}: the document starting here is longer than the {} byte limit",
                              path_, doc_line_, options_.max_record_bytes));
    }
  }

  // End of a delimited document (or of the file).
  void finish() {
    if (doc_line_ != 0) entries_->push_back({doc_begin_, doc_end_ - doc_begin_, doc_line_});
    doc_line_ = 0;
  }

 private:
  const std::string& path_;
  const ScanOptions& options_;
  std::vector<IndexEntry, kernels::TrackedAllocator<IndexEntry>>* entries_;
  int64_t* bad_records_;
  int64_t doc_begin_ = 0, doc_end_ = 0, doc_line_ = 0;
};

}  // namespace

void require_seekable_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  const char* kind = fs::is_fifo(status)             ? "a FIFO (named pipe)"
                     : fs::is_character_file(status) ? "a character device"
                     : fs::is_socket(status)         ? "a socket"
                     : fs::is_block_file(status)     ? "a block device"
                     : fs::is_directory(status)      ? "a directory"
                                                     : nullptr;
  if (kind != nullptr) {
    throw Error(
        fmt::format("data file '{}' is {}: data is indexed, then read by offset, so it "
                    "must be a regular file (save the stream to one first)",
                    path, kind));
  }
}

ExampleIndex ExampleIndex::scan(const std::string& path, const ScanOptions& options) {
  if (options.format == FileFormat::kText && !options.one_per_line && options.delimiter.empty()) {
    throw Error(
        fmt::format("{}: the document delimiter is empty (set one, or one per line)", path));
  }
  // Opening a FIFO would wait, silently, for a writer.
  require_seekable_file(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(fmt::format("cannot open data file '{}': {}", path, std::strerror(errno)));
  }
  FileCloser closer(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

  ExampleIndex index;
  LineSink sink(path, options, &index.entries_, &index.bad_records_);
  kernels::Buffer<char> chunk(kChunkBytes, kernels::MemoryCategory::kData);
  // A line that spans chunks is gathered here (bounded by max_record_bytes).
  std::vector<char, kernels::TrackedAllocator<char>> pending{
      kernels::TrackedAllocator<char>(kernels::MemoryCategory::kData)};
  int64_t file_offset = 0;  // offset of chunk[0]
  int64_t line_start = 0;   // offset of the current line's first byte
  int64_t line_no = 1;
  const auto too_long = [&](int64_t bytes) {
    return Error(fmt::format("{}:{}: line is {} bytes or more, over the {} byte limit", path,
                             line_no, bytes, options.max_record_bytes));
  };
  while (true) {
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("cannot read data file '{}': {}", path, std::strerror(errno)));
    }
    if (got == 0) break;
    const char* data = chunk.data();
    std::size_t pos = 0;
    const std::size_t n = static_cast<std::size_t>(got);
    while (pos < n) {
      const void* nl = std::memchr(data + pos, '\n', n - pos);
      if (nl == nullptr) {
        if (static_cast<int64_t>(pending.size() + (n - pos)) > options.max_record_bytes) {
          throw too_long(static_cast<int64_t>(pending.size() + (n - pos)));
        }
        pending.insert(pending.end(), data + pos, data + n);
        break;
      }
      const std::size_t end = static_cast<const char*>(nl) - data;
      std::string_view line;
      if (pending.empty()) {
        line = std::string_view(data + pos, end - pos);
      } else {
        pending.insert(pending.end(), data + pos, data + end);
        line = std::string_view(pending.data(), pending.size());
      }
      if (static_cast<int64_t>(line.size()) > options.max_record_bytes) {
        throw too_long(static_cast<int64_t>(line.size()));
      }
      sink.line(line, line_start, line_no);
      pending.clear();
      pos = end + 1;
      line_start = file_offset + static_cast<int64_t>(pos);
      ++line_no;
    }
    file_offset += got;
  }
  if (!pending.empty())
    sink.line(std::string_view(pending.data(), pending.size()), line_start, line_no);
  sink.finish();
  index.bytes_scanned_ = file_offset;
  index.entries_.shrink_to_fit();
  return index;
}

void ExampleIndex::keep_range(int64_t begin, int64_t end) {
  TS_CHECK(0 <= begin && begin <= end && end <= size()) << begin << ".." << end;
  std::vector<IndexEntry, kernels::TrackedAllocator<IndexEntry>> kept(
      entries_.begin() + begin, entries_.begin() + end,
      kernels::TrackedAllocator<IndexEntry>(kernels::MemoryCategory::kData));
  entries_.swap(kept);
}

}  // namespace trainscope::training
