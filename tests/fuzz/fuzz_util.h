// What every fuzz target of tests/fuzz shares: the rule for what counts as a
// finding, and scratch files for parsers that read a path rather than bytes.
//
// A reader of outside files must reject bad input with trainscope::Error (the
// CLI's exit code 2). So a target catches that and nothing else: any other
// exception escapes to libFuzzer ("deadly signal"), as do crashes, aborts
// (TS_CHECK), hangs, leaks and sanitizer reports.
//
// Thread-safety: none; libFuzzer runs one input at a time.
#ifndef TRAINSCOPE_TESTS_FUZZ_FUZZ_UTIL_H_
#define TRAINSCOPE_TESTS_FUZZ_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "base/check.h"

namespace trainscope::fuzz {

inline std::string_view as_text(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// What `parse` returns, or nothing when it rejects the input with
// trainscope::Error. Checks that follow a successful parse run outside this,
// so an Error from them is a finding too.
template <typename F>
auto parse_or_reject(F&& parse) -> std::optional<decltype(parse())> {
  try {
    return parse();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// $TMPDIR/trainscope-fuzz-<pid>, made on first use and removed at exit (a
// crash leaves it behind, with the input that crashed in it).
class ScratchDir {
 public:
  static const ScratchDir& get() {
    static const ScratchDir dir;
    return dir;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

  // Replaces the file `name` with the concatenated `parts`; returns its path.
  std::string write(const std::string& name, std::initializer_list<std::string_view> parts) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    for (std::string_view part : parts)
      out.write(part.data(), static_cast<std::streamsize>(part.size()));
    out.close();
    TS_CHECK(out.good()) << "cannot write the fuzz input to " << file;
    return file.string();
  }

 private:
  ScratchDir()
      : path_(std::filesystem::temp_directory_path() /
              ("trainscope-fuzz-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  std::filesystem::path path_;
};

}  // namespace trainscope::fuzz

#endif  // TRAINSCOPE_TESTS_FUZZ_FUZZ_UTIL_H_
