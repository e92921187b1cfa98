#include "kernels/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "kernels/check.h"

namespace trainscope {
namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AtomicFileTest, ReplacesTheFileAndLeavesNoTemporary) {
  const fs::path dir = fs::temp_directory_path() / ("ts_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "out.txt";
  write_file_atomically(file, "old");
  write_file_atomically(file, {"ne", "", "w content"});
  EXPECT_EQ(slurp(file), "new content");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(entries, 1) << "a temporary was left behind";
  fs::remove_all(dir);
}

TEST(AtomicFileTest, UnwritableTargetNamesThePath) {
  try {
    write_file_atomically("/nonexistent-dir/x/out.json", "data");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/out.json"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(write_file_atomically("", "data"), Error);
}

}  // namespace
}  // namespace trainscope
