// Runs under mpirun -np 4 over TCP only with two links a peer pair
// (--mca btl self,tcp --mca btl_tcp_links 2, loopback): the job's
// communicator opens every pair's connection when it is made, before any
// collective. Open MPI opens a connection on a pair's first message, and one
// first opened inside a collective with two links could hang it (issue 38:
// the end-of-run all_gather of eight virtual hosts, whose pairs the ring
// all-reduces never used). Counted from this process's own sockets: its file
// descriptors' socket inodes that /proc/self/net/tcp lists as established.
// (Open MPI 4.1.4 keeps one connection a pair with btl_tcp_links 2, on
// loopback and between virtual hosts alike, whatever the traffic: ss shows
// it. Before any message a rank holds only its launcher's connection.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "comm/communicator.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;

std::set<std::string> socket_inodes() {
  std::set<std::string> out;
  for (const auto& fd : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(fd.path(), ec).string();
    if (!ec && target.starts_with("socket:[")) out.insert(target.substr(8, target.size() - 9));
  }
  return out;
}

// Established TCP connections (state 01) among this process's sockets.
int established_connections() {
  const std::set<std::string> mine = socket_inodes();
  int count = 0;
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      count += state == "01" && mine.contains(inode) ? 1 : 0;
    }
  }
  return count;
}

std::unique_ptr<comm::Communicator> g_world;

TEST(MpiLinksTest, EveryPairIsConnectedBeforeAnyCollective) {
  const int peers = g_world->size() - 1;
  ASSERT_GE(peers, 3) << "run with -np 4 or more";
  // A connection to each peer; the launcher's own comes on top.
  EXPECT_GE(established_connections(), peers) << "rank " << g_world->rank();
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  trainscope::g_world = trainscope::comm::make_communicator("mpi");
  const int result = RUN_ALL_TESTS();
  trainscope::g_world->barrier();
  trainscope::g_world.reset();
  return result;
}
