// Writing an output file so that readers never see it half-written.
//
// The content goes to "<path>.tmp.<pid>" in the same directory, is flushed and
// closed, then renamed over `path` (rename is atomic within a file system). On
// any failure the temporary file is removed and trainscope::Error names the
// path and the reason; an existing file at `path` is left untouched.
//
// Thread-safety: safe to call concurrently for different paths.
#ifndef TRAINSCOPE_PROFILER_ATOMIC_FILE_H_
#define TRAINSCOPE_PROFILER_ATOMIC_FILE_H_

#include <string>
#include <string_view>

namespace trainscope::profiler {

void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_ATOMIC_FILE_H_
