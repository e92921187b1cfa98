// The Open MPI backend. The only file in trainscope that includes <mpi.h>.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "comm/communicator.h"
#include "kernels/check.h"

namespace trainscope::comm {
namespace {

// Collective failures are not recoverable here: report with the rank and end
// the job, so no other rank hangs waiting.
void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "trainscope: rank %d: %s failed: %.*s\n", rank, what, len, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define MPI_CHECK(call) mpi_check((call), #call)

class MpiRequest final : public Request {
 public:
  ~MpiRequest() override {
    if (request_ != MPI_REQUEST_NULL) wait();
  }
  MPI_Request* handle() { return &request_; }
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
    return done != 0;
  }
  void wait() override {
    if (request_ != MPI_REQUEST_NULL) MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
  }

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        throw Error("MPI_Init_thread failed", kExitFailure);
      }
      owns_mpi_ = true;
    }
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    serialized_ = level >= MPI_THREAD_SERIALIZED;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, len);
  }
  ~MpiCommunicator() override {
    if (owns_mpi_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  std::string host() const override { return host_; }
  bool serialized_threads() const override { return serialized_; }

  void barrier() override { MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }
  void all_reduce_sum(std::span<float> d) override { reduce(d.data(), d.size(), MPI_FLOAT, MPI_SUM); }
  void all_reduce_sum(std::span<double> d) override {
    reduce(d.data(), d.size(), MPI_DOUBLE, MPI_SUM);
  }
  void all_reduce_sum(std::span<int64_t> d) override {
    reduce(d.data(), d.size(), MPI_INT64_T, MPI_SUM);
  }
  void all_reduce_max(std::span<double> d) override {
    reduce(d.data(), d.size(), MPI_DOUBLE, MPI_MAX);
  }
  std::unique_ptr<Request> all_reduce_sum_async(std::span<float> d) override {
    auto req = std::make_unique<MpiRequest>();
    TS_CHECK(d.size() <= static_cast<std::size_t>(INT32_MAX));
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, d.data(), static_cast<int>(d.size()), MPI_FLOAT,
                             MPI_SUM, MPI_COMM_WORLD, req->handle()));
    return req;
  }
  void broadcast(std::span<std::byte> d, int root) override {
    // MPI counts are int: send large buffers in pieces.
    std::size_t done = 0;
    while (done < d.size()) {
      const int n = static_cast<int>(std::min<std::size_t>(d.size() - done, 1 << 30));
      MPI_CHECK(MPI_Bcast(d.data() + done, n, MPI_BYTE, root, MPI_COMM_WORLD));
      done += n;
    }
  }
  std::vector<std::string> all_gather(const std::string& record) override {
    int len = static_cast<int>(record.size());
    std::vector<int> lens(size_), offsets(size_);
    MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD));
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = total;
      total += lens[r];
    }
    std::string all(total, '\0');
    MPI_CHECK(MPI_Allgatherv(record.data(), len, MPI_CHAR, all.data(), lens.data(),
                             offsets.data(), MPI_CHAR, MPI_COMM_WORLD));
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) out[r] = all.substr(offsets[r], lens[r]);
    return out;
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  template <typename V>
  void reduce(V* data, std::size_t n, MPI_Datatype type, MPI_Op op) {
    if (size_ == 1) return;
    std::size_t done = 0;
    while (done < n) {
      const int count = static_cast<int>(std::min<std::size_t>(n - done, 1 << 30));
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, count, type, op, MPI_COMM_WORLD));
      done += count;
    }
  }

  int rank_ = 0, size_ = 1;
  std::string host_;
  bool owns_mpi_ = false;
  bool serialized_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

}  // namespace trainscope::comm
