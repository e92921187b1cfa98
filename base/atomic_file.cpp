#include "base/atomic_file.h"

#include <span>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/check.h"

namespace trainscope {

namespace {

// Writes every piece to fd; false with errno set on failure.
bool write_all(int fd, std::span<const std::string_view> pieces) {
  for (std::string_view piece : pieces) {
    const char* data = piece.data();
    std::size_t left = piece.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      data += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  return true;
}

// A device, FIFO or socket: it cannot be replaced, and what the user meant
// (/dev/null, a pipe to another program) is to write into it.
void write_in_place(const std::filesystem::path& path, std::span<const std::string_view> pieces) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  const bool written = fd >= 0 && write_all(fd, pieces);
  const int err_write = errno;
  // close() even when it fails releases the descriptor: never twice.
  if (fd < 0 || !written || ::close(fd) != 0) {
    const int err = fd >= 0 && !written ? err_write : errno;
    if (fd >= 0 && !written) ::close(fd);
    throw Error(fmt::format("cannot write {}: {}", path.string(), std::strerror(err)),
                kExitFailure);
  }
}

// Writes the bytes to a new temporary beside `path`, flushed to disk;
// returns its name. Error naming `path` (the temporary removed) on failure.
std::filesystem::path write_temporary(const std::filesystem::path& path,
                                      std::span<const std::string_view> pieces,
                                      Durability durability = Durability::kSynced) {
  // Next to the target, so rename() stays within one file system; pid and a
  // counter keep concurrent writers apart.
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}.{}", ::getpid(), counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(fmt::format("cannot write {}: creating {}: {}", path.string(), tmp.string(),
                            std::strerror(errno)));
  }
  auto fail = [&](std::string_view what, bool close_fd) {
    const int err = errno;
    if (close_fd) ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot write {}: {}: {}", path.string(), what, std::strerror(err)),
                kExitFailure);
  };
  if (!write_all(fd, pieces)) fail("write", true);
  if (durability == Durability::kSynced && ::fsync(fd) != 0) fail("fsync", true);
  if (::close(fd) != 0) fail("close", false);
  return tmp;
}

// Renames the temporary over `path` and makes the rename durable.
void put_in_place(const std::filesystem::path& tmp, const std::filesystem::path& path,
                  Durability durability = Durability::kSynced) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot write {}: rename: {}", path.string(), std::strerror(err)),
                kExitFailure);
  }
  if (durability == Durability::kRenameOnly) return;
  // Failing here does not undo the write.
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

// Where the bytes for `path` go: nullopt for a special file, written in
// place; a symlink's target, not the link; else `path` itself.
std::optional<std::filesystem::path> replaceable_target(const std::filesystem::path& path) {
  if (path.empty()) throw Error("output file name is empty");
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);  // follows symlinks
  if (std::filesystem::is_directory(status)) {
    throw Error(fmt::format("cannot write {}: it is a directory", path.string()));
  }
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return std::nullopt;
  }
  const bool link = std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec));
  return link && std::filesystem::exists(status) ? std::filesystem::canonical(path, ec) : path;
}

}  // namespace

namespace {
void write_pieces(const std::filesystem::path& path, std::span<const std::string_view> pieces,
                  Durability durability) {
  const auto target = replaceable_target(path);
  if (!target) {
    write_in_place(path, pieces);
    return;
  }
  put_in_place(write_temporary(*target, pieces, durability), *target, durability);
}
}  // namespace

void write_file_atomically(const std::filesystem::path& path,
                           std::span<const std::string_view> pieces) {
  write_pieces(path, pieces, Durability::kSynced);
}

void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::string_view> pieces) {
  write_pieces(path, std::span<const std::string_view>(pieces.begin(), pieces.size()),
               Durability::kSynced);
}

void write_files_atomically(
    const std::vector<std::pair<std::filesystem::path, std::string>>& files) {
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> written;  // tmp, target
  try {
    for (const auto& [path, content] : files) {
      const auto target = replaceable_target(path);
      if (!target) throw Error(fmt::format("cannot write {}: not a regular file", path.string()));
      const std::string_view piece = content;
      written.emplace_back(write_temporary(*target, {&piece, 1}), *target);
    }
  } catch (const Error&) {
    for (const auto& [tmp, target] : written) ::unlink(tmp.c_str());
    throw;
  }
  for (std::size_t i = 0; i < written.size(); ++i) {
    try {
      put_in_place(written[i].first, written[i].second);
    } catch (const Error&) {  // the ones not yet in place go too
      for (std::size_t j = i + 1; j < written.size(); ++j) ::unlink(written[j].first.c_str());
      throw;
    }
  }
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           Durability durability) {
  write_pieces(path, {&content, 1}, durability);
}

std::string read_file(const std::filesystem::path& path) {
  // A directory opens, then reads as nothing: say what it is.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("cannot read {}: it is a directory", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("cannot read {}: read error", path.string()));
  return std::move(contents).str();
}

void check_writable(const std::filesystem::path& path, std::string_view what) {
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("{} {}: {}", what, path.string(), why));
  };
  if (path.empty()) fail("no file name");
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) fail("it is a directory");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    if (::access(path.c_str(), W_OK) != 0) fail(std::strerror(errno));
    return;
  }
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  if (!std::filesystem::is_directory(dir, ec)) fail(fmt::format("no directory {}", dir.string()));
  // The one honest test: make a file there (root passes access(), a
  // read-only file system or a full quota does not pass this).
  const std::filesystem::path probe = dir / fmt::format(".trainscope-probe.{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    fail(fmt::format("cannot create files in {}: {}", dir.string(), std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

ScopedTempDir::ScopedTempDir(std::string_view prefix, const std::filesystem::path& root) {
  std::error_code ec;
  const std::filesystem::path base = root.empty() ? std::filesystem::temp_directory_path(ec) : root;
  std::string templ = (base / fmt::format("{}-XXXXXX", prefix)).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    throw Error(fmt::format("cannot create a temporary directory in {}: {}", base.string(),
                            std::strerror(errno)),
                kExitFailure);
  }
  path_ = templ;
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace trainscope
