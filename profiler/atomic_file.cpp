#include "profiler/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "kernels/check.h"

namespace trainscope::profiler {

void write_file_atomically(const std::string& path, std::string_view content) {
  if (path.empty()) throw Error("output file name is empty");
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    throw Error("cannot write " + path + ": " + std::strerror(errno));
  }
  const bool written = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    throw Error("cannot write " + path + ": " + std::strerror(written ? errno : write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    throw Error("cannot write " + path + ": " + std::strerror(rename_errno));
  }
}

}  // namespace trainscope::profiler
