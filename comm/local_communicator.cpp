// The one-process communicator: size 1, every collective a no-op (as MLX's
// EmptyGroup), so single-process code paths need no special cases.
#include <cstdlib>

#include "comm/communicator.h"
#include "profiler/proc_fs.h"

namespace trainscope::comm {
namespace {

class DoneRequest final : public Request {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "local"; }
  std::string host() const override { return profiler::host_name(); }
  void barrier() override {}
  void all_reduce_sum(std::span<float>) override {}
  void all_reduce_sum(std::span<double>) override {}
  void all_reduce_sum(std::span<int64_t>) override {}
  void all_reduce_max(std::span<double>) override {}
  std::unique_ptr<Request> all_reduce_sum_async(std::span<float>) override {
    return std::make_unique<DoneRequest>();
  }
  void broadcast(std::span<std::byte>, int) override {}
  std::vector<std::string> all_gather(const std::string& record) override { return {record}; }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace trainscope::comm
