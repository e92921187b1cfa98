// The one-process communicator: size 1, every collective a no-op (as MLX's
// EmptyGroup), so single-process code paths need no special cases.
#include <cstdlib>
#include <cstring>
#include <new>

#include "comm/communicator.h"
#include "comm/host_group.h"
#include "profiler/proc_fs.h"

namespace trainscope::comm {
namespace {

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
    return completed_request();
  }
  void all_reduce_sum_bf16(std::span<uint16_t>) override {}
  std::unique_ptr<Request> all_reduce_sum_bf16_async(std::span<uint16_t>) override {
    return completed_request();
  }
  void broadcast(std::span<std::byte>, int) override {}
  void reduce_scatter_sum(std::span<float>) override {}
  void reduce_scatter_sum_bf16(std::span<uint16_t>) override {}
  void all_gather(std::span<float>) override {}
  std::vector<std::string> all_gather(const std::string& record) override { return {record}; }
  std::unique_ptr<HostGroup> host_group(int64_t floats_per_rank, int) override;
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

// One local rank on one host: its region is ordinary memory.
class LocalHostGroup final : public HostGroup {
 public:
  explicit LocalHostGroup(int64_t floats) : floats_(floats) {
    const std::size_t bytes = (static_cast<std::size_t>(floats) * sizeof(float) + 63) / 64 * 64;
    data_ = static_cast<float*>(bytes == 0 ? nullptr : std::aligned_alloc(64, bytes));
    if (bytes != 0 && data_ == nullptr) throw std::bad_alloc();
    if (bytes != 0) std::memset(data_, 0, bytes);
  }
  ~LocalHostGroup() override { std::free(data_); }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  int hosts() const override { return 1; }
  int host_index() const override { return 0; }
  std::span<float> region(int) override { return {data_, static_cast<std::size_t>(floats_)}; }
  void barrier() override {}
  Communicator& across() override { return across_; }

 private:
  int64_t floats_;
  float* data_ = nullptr;
  LocalCommunicator across_;
};

std::unique_ptr<HostGroup> LocalCommunicator::host_group(int64_t floats_per_rank, int) {
  return std::make_unique<LocalHostGroup>(floats_per_rank);
}

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace trainscope::comm
