#include "base/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "base/check.h"
#include "tests/temp_dir.h"

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
  // Unsynced (a status file rewritten each second): still whole, still renamed.
  write_file_atomically(file, "newer", Durability::kRenameOnly);
  EXPECT_EQ(slurp(file), "newer");
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

// `--summary /dev/null` as root must not replace the machine's /dev/null
// with a regular file: special files are written in place. Tested on a
// device node and a FIFO of the test's own, never on /dev/null itself.
TEST(AtomicFileTest, SpecialFilesAreWrittenInPlaceNotReplaced) {
  testing::TempDir dir("atomic-special");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto received = std::async(std::launch::async, [&] { return slurp(fifo); });
  write_file_atomically(fifo, {"through ", "the pipe"});
  EXPECT_TRUE(fs::is_fifo(fifo));
  if (received.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    // The reader waits on a FIFO nobody wrote to: let the process end it.
    std::thread([f = std::move(received)]() mutable { f.wait(); }).detach();
    FAIL() << "nothing was written to the FIFO";
  }
  EXPECT_EQ(received.get(), "through the pipe");
  if (::geteuid() == 0) {  // mknod needs root: a null device of our own
    const fs::path null = dir / "null";
    ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0600, ::makedev(1, 3)), 0);
    write_file_atomically(null, "discarded");
    EXPECT_TRUE(fs::is_character_file(null));
  }
  int temporaries = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) temporaries += e.is_regular_file();
  EXPECT_EQ(temporaries, 0);
}

// A symlink's target is replaced; the link stays a link.
TEST(AtomicFileTest, ASymlinkKeepsPointingAtTheReplacedFile) {
  testing::TempDir dir("atomic-link");
  write_file_atomically(dir / "real.json", "old");
  fs::create_symlink("real.json", dir / "link.json");
  write_file_atomically(dir / "link.json", "new");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(slurp(dir / "real.json"), "new");
}

TEST(AtomicFileTest, ADirectoryIsNotAFileToWrite) {
  testing::TempDir dir("atomic-dir");
  try {
    write_file_atomically(dir.path(), "x");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainscope
