// Helpers for the data tests: a scratch directory removed at the end of the
// test, and small file writers. Not thread-safe; one per test.
#ifndef TRAINSCOPE_TESTS_DATA_TEST_UTIL_H_
#define TRAINSCOPE_TESTS_DATA_TEST_UTIL_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace trainscope::training::testing {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string("trainscope_data_") + info->test_suite_name() + "_" + info->name() +
             "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(std::string_view name) const { return (path_ / name).string(); }
  std::string write(std::string_view name, std::string_view contents) const {
    const std::string p = file(name);
    std::ofstream out(p, std::ios::binary);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    return p;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace trainscope::training::testing

#endif  // TRAINSCOPE_TESTS_DATA_TEST_UTIL_H_
