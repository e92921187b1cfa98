// Writing a file so that a reader sees either its old content or the whole
// new content, never a part: the bytes go to a temporary file in the same
// directory, are flushed to disk, and the temporary is renamed over the
// target (then the directory is synced so the rename survives a crash). On any
// failure the temporary is removed and trainscope::Error names the target.
// Only regular files are replaced: a device, FIFO or socket (`--summary
// /dev/null`, a pipe) is written in place, a symlink's target is replaced and
// the link kept, and a directory is an error.
//
// Every summary, checkpoint, trace, report, baseline and CSV trainscope writes
// goes through here, and the files it reads whole come in through read_file
// (JSON files through read_json_file, base/json_reader.h), so every such
// error names the file the same way.
// Thread-safe: concurrent writers use distinct temporaries.
#ifndef TRAINSCOPE_BASE_ATOMIC_FILE_H_
#define TRAINSCOPE_BASE_ATOMIC_FILE_H_

#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainscope {

// Whether a write is flushed to disk before (file) and after (directory) the
// rename. Readers see the old or the new file either way; only a machine
// that crashes can lose an unsynced one. kRenameOnly is for files rewritten
// often that need not outlive a crash (a rank's status each second).
enum class Durability { kSynced, kRenameOnly };

void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           Durability durability = Durability::kSynced);
// The concatenation of `pieces`, streamed without joining them first (a
// checkpoint's header and its hundreds of MiB of tensor data).
void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::string_view> pieces);
void write_file_atomically(const std::filesystem::path& path,
                           std::span<const std::string_view> pieces);

// Several files that must change together (prepare-data's train and valid
// splits): every file is written to its temporary first, and only when all
// are complete are they renamed into place; a failure (a full disk) leaves
// every target as it was. Targets must be regular files or absent.
void write_files_atomically(
    const std::vector<std::pair<std::filesystem::path, std::string>>& files);

// Error (bad input, naming `what` — e.g. "--summary" — and the path) unless
// a file can be written at `path`: its directory exists and takes new files,
// or it is a special file open to writing. For outputs checked before the
// work whose results they will hold.
void check_writable(const std::filesystem::path& path, std::string_view what);

// The whole file; Error "cannot read PATH: reason" when it cannot be read.
std::string read_file(const std::filesystem::path& path);

// A fresh private directory ROOT/PREFIX-XXXXXX (ROOT: $TMPDIR or /tmp when
// empty), removed with everything in it when destroyed, however the scope
// is left. Error (exit code 1) naming ROOT when it cannot be made.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(std::string_view prefix, const std::filesystem::path& root = {});
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace trainscope

#endif  // TRAINSCOPE_BASE_ATOMIC_FILE_H_
