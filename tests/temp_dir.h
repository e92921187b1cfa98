// A fresh directory per test, removed afterwards: the fixture every test that
// writes files derives from (or holds a TempDir).
#ifndef TRAINSCOPE_TESTS_TEMP_DIR_H_
#define TRAINSCOPE_TESTS_TEMP_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace trainscope::testing {

// /tmp/trainscope-<tag>-<pid>-<test name>, created empty; removed by the
// destructor. The pid keeps parallel ctest runs of one test apart.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("trainscope-" + tag + "-" + std::to_string(::getpid()) + "-" +
             (test ? std::string(test->name()) : std::string("none")));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // The path of `name` in the directory, as a string.
  std::string file(std::string_view name) const { return (path_ / name).string(); }
  // Writes `contents` to `name`; returns its path.
  std::string write(std::string_view name, std::string_view contents) const {
    const std::string p = file(name);
    std::ofstream out(p, std::ios::binary);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    return p;
  }
  // The contents of `name` ("" when it cannot be read).
  std::string read(std::string_view name) const {
    std::ifstream in(path_ / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

 private:
  std::filesystem::path path_;
};

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_TEMP_DIR_H_
