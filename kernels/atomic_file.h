// Writing a file so that a reader sees either its old content or the whole
// new content, never a part: the bytes go to a temporary file in the same
// directory, are flushed to disk, and the temporary is renamed over the
// target (then the directory is synced so the rename survives a crash). On any
// failure the temporary is removed and trainscope::Error names the target.
//
// Every summary, checkpoint, trace, report, baseline and CSV trainscope writes
// goes through here. Thread-safe: concurrent writers use distinct temporaries.
#ifndef TRAINSCOPE_KERNELS_ATOMIC_FILE_H_
#define TRAINSCOPE_KERNELS_ATOMIC_FILE_H_

#include <filesystem>
#include <initializer_list>
#include <string_view>

namespace trainscope {

void write_file_atomically(const std::filesystem::path& path, std::string_view content);
// The concatenation of `pieces`, streamed without joining them first (a
// checkpoint's header and its hundreds of MiB of tensor data).
void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::string_view> pieces);

}  // namespace trainscope

#endif  // TRAINSCOPE_KERNELS_ATOMIC_FILE_H_
