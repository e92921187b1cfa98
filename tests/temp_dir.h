// A fresh directory per test, removed afterwards: the fixture every test that
// writes files derives from (or holds a TempDir).
#ifndef TRAINSCOPE_TESTS_TEMP_DIR_H_
#define TRAINSCOPE_TESTS_TEMP_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace trainscope::testing {

// /tmp/trainscope-<tag>-<pid>-<test name>, created empty; removed by the
// destructor. The pid keeps parallel ctest runs of one test apart.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
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

 private:
  std::filesystem::path path_;
};

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_TEMP_DIR_H_
