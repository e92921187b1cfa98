// Reduction strategies on the one-process communicator: how many collectives
// each makes and over which ranges (as MLX's test checks fused = 1 call).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>

#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "comm/all_reducer.h"
#include "comm/communicator.h"
#include "comm/grad_sync.h"
#include "comm/watched_communicator.h"
#include "kernels/float16.h"

namespace trainscope::comm {
namespace {

std::vector<TensorRange> tensors_of(const std::vector<int64_t>& sizes) {
  std::vector<TensorRange> out;
  int64_t off = 0;
  for (int64_t n : sizes) {
    out.push_back({off, n});
    off += n;
  }
  return out;
}

TEST(GradSyncTest, PerTensorMakesOneCallPerTensor) {
  auto comm = make_communicator("local");
  auto reducer = make_all_reducer(*comm, {.numel = 100});
  auto sync = make_grad_sync(ReduceStrategy::kPerTensor, *reducer, tensors_of({10, 30, 60}), 0);
  sync->begin_step(0);
  sync->finish();
  EXPECT_EQ(sync->stats().calls, 3);
  EXPECT_EQ(sync->stats().bytes, 400);
}

TEST(GradSyncTest, FusedBucketsAreContiguousFromTheEnd) {
  auto comm = make_communicator("local");
  auto reducer = make_all_reducer(*comm, {.numel = 100});
  // 160-byte buckets = 40 floats: [60,100), [20,60), [0,20).
  auto sync = make_grad_sync(ReduceStrategy::kFused, *reducer, tensors_of({50, 50}), 160);
  const auto b = sync->buckets();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].offset, 60);
  EXPECT_EQ(b[1].offset, 20);
  EXPECT_EQ(b[2].offset, 0);
  EXPECT_EQ(b[2].numel, 20);
  sync->begin_step(0);
  sync->finish();
  EXPECT_EQ(sync->stats().calls, 3);
  EXPECT_EQ(sync->stats().bytes, 400);
  auto whole = make_grad_sync(ReduceStrategy::kFused, *reducer, tensors_of({50, 50}), 0);
  whole->begin_step(0);
  whole->finish();
  EXPECT_EQ(whole->stats().calls, 1);
}

// A two-rank stand-in whose float all-reduce adds 1 to every element (as if
// the other rank held ones) and records which thread reduced which range.
class RecordingCommunicator final : public Communicator {
 public:
  // The reducer's buffer, whose offsets calls record.
  std::span<float> attach(AllReducer& reducer) {
    base_ = reducer.buffer().data();
    return reducer.buffer();
  }
  void set_base(const float* base) { base_ = base; }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "recording"; }
  std::string host() const override { return "here"; }
  void barrier() override {
    if (during_call) during_call();
  }
  void all_reduce_sum(std::span<float> d) override {
    if (during_call) during_call();
    if (fail_at_offset >= 0 && d.data() - base_ == fail_at_offset) {
      fail_at_offset = -1;
      throw Error("link down");
    }
    for (float& x : d) x += 1;
    std::lock_guard lock(mu);
    calls.push_back({d.data() - base_, std::this_thread::get_id()});
  }
  void all_reduce_sum(std::span<double>) override {}
  void all_reduce_sum(std::span<int64_t>) override {}
  void all_reduce_max(std::span<double>) override {}
  // Reduced at once; the request is already complete.
  std::unique_ptr<Request> all_reduce_sum_async(std::span<float> d) override {
    all_reduce_sum(d);
    return completed_request();
  }
  // The bf16 staging is not the reducer's buffer: these record no offset.
  void all_reduce_sum_bf16(std::span<uint16_t> d) override {
    for (uint16_t& x : d) x = kernels::float_to_bf16(kernels::bf16_to_float(x) + 1);
    bf16_calls += 1;
  }
  std::unique_ptr<Request> all_reduce_sum_bf16_async(std::span<uint16_t> d) override {
    all_reduce_sum_bf16(d);
    return completed_request();
  }
  void broadcast(std::span<std::byte>, int) override {}
  void reduce_scatter_sum(std::span<float> d) override { all_reduce_sum(d); }
  void reduce_scatter_sum_bf16(std::span<uint16_t> d) override { all_reduce_sum_bf16(d); }
  void all_gather(std::span<float>) override {}
  std::vector<std::string> all_gather(const std::string& r) override { return {r, r}; }
  std::unique_ptr<HostGroup> host_group(int64_t, int) override {
    throw Error("no shared memory in the recording stand-in");
  }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

  struct Call {
    std::ptrdiff_t offset;
    std::thread::id thread;
  };
  std::size_t call_count() {
    std::lock_guard lock(mu);
    return calls.size();
  }
  std::mutex mu;
  std::vector<Call> calls;
  std::atomic<std::ptrdiff_t> fail_at_offset{-1};
  std::atomic<int> bf16_calls{0};
  std::function<void()> during_call;  // runs inside barrier() and the float all-reduce

 private:
  const float* base_ = nullptr;
};

bool eventually(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(GradSyncTest, OverlapPollLaunchesBucketsAsBackwardReachesThem) {
  RecordingCommunicator comm;
  auto reducer = make_all_reducer(comm, {.numel = 100});
  std::span<float> g = comm.attach(*reducer);
  auto sync = make_grad_sync(ReduceStrategy::kOverlapPoll, *reducer, tensors_of({100}), 160);
  ASSERT_TRUE(sync->overlaps());
  sync->begin_step(0);
  sync->on_ready(70);  // [70, 100) final: no bucket complete yet (first is [60, 100))
  EXPECT_EQ(sync->stats().calls, 0);
  sync->on_ready(60);
  EXPECT_EQ(sync->stats().calls, 1);
  sync->on_ready(0);
  EXPECT_EQ(sync->stats().calls, 3);
  sync->finish();
  EXPECT_EQ(sync->stats().calls, 3);
  EXPECT_EQ(sync->stats().bytes, 400);
  ASSERT_EQ(comm.calls.size(), 3u);
  for (const auto& c : comm.calls) EXPECT_EQ(c.thread, std::this_thread::get_id());
  for (float x : g) ASSERT_EQ(x, 1.0f);
}

TEST(GradSyncTest, OverlapReducesHandedBucketsOnItsOwnThreadBeforeFinish) {
  RecordingCommunicator comm;
  auto reducer = make_all_reducer(comm, {.numel = 100});
  std::span<float> g = comm.attach(*reducer);
  // 160-byte buckets: [60,100), [20,60), [0,20).
  auto sync = make_grad_sync(ReduceStrategy::kOverlap, *reducer, tensors_of({100}), 160);
  ASSERT_TRUE(sync->overlaps());
  for (int step = 0; step < 2; ++step) {
    comm.calls.clear();
    sync->begin_step(step);
    sync->on_ready(70);  // no bucket complete yet
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(comm.call_count(), 0u);
    sync->on_ready(60);
    // The first bucket is reduced while "backward" goes on, not in finish().
    EXPECT_TRUE(eventually([&] { return comm.call_count() == 1; }));
    EXPECT_EQ(g[60], static_cast<float>(step + 1));
    EXPECT_EQ(g[59], static_cast<float>(step));
    sync->finish();
    ASSERT_EQ(comm.calls.size(), 3u);
    EXPECT_EQ(comm.calls[0].offset, 60);
    EXPECT_EQ(comm.calls[1].offset, 20);
    EXPECT_EQ(comm.calls[2].offset, 0);
    for (const auto& c : comm.calls) EXPECT_NE(c.thread, std::this_thread::get_id());
    for (float x : g) ASSERT_EQ(x, static_cast<float>(step + 1));  // each element once
    EXPECT_EQ(sync->stats().calls, 3);
    EXPECT_EQ(sync->stats().bytes, 400);
  }
}

TEST(GradSyncTest, OverlapRethrowsACommunicationErrorFromFinish) {
  RecordingCommunicator comm;
  auto reducer = make_all_reducer(comm, {.numel = 100});
  std::span<float> g = comm.attach(*reducer);
  auto sync = make_grad_sync(ReduceStrategy::kOverlap, *reducer, tensors_of({100}), 160);
  comm.fail_at_offset = 20;
  sync->begin_step(0);
  sync->on_ready(0);
  EXPECT_THROW(sync->finish(), Error);
  // The next step starts clean.
  sync->begin_step(1);
  sync->on_ready(0);
  EXPECT_NO_THROW(sync->finish());
}

// What a stall watchdog sees while each collective runs.
class WatchdogView {
 public:
  explicit WatchdogView(RecordingCommunicator& inner) {
    inner.during_call = [this] {
      const profiler::RankStatus s = watchdog.status();
      std::lock_guard lock(mu_);
      seen_.push_back(s.collective + " " + std::to_string(s.bucket));
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  profiler::StallWatchdog watchdog{profiler::StallWatchdogOptions{}};

 private:
  std::mutex mu_;
  std::vector<std::string> seen_;
};

TEST(GradSyncTest, TheWatchdogSeesEachReductionWaitByStrategyAndBucket) {
  for (auto strategy :
       {ReduceStrategy::kPerTensor, ReduceStrategy::kFused, ReduceStrategy::kOverlap}) {
    RecordingCommunicator inner;
    WatchdogView view(inner);
    WatchedCommunicator comm(inner, view.watchdog);  // its own label stays inside
    auto reducer = make_all_reducer(comm, {.numel = 100});
    inner.attach(*reducer);
    auto sync = make_grad_sync(strategy, *reducer, tensors_of({40, 60}), 160);
    sync->set_watchdog(&view.watchdog);
    sync->begin_step(0);
    if (sync->overlaps()) {
      sync->on_ready(0);
      // Only the communication thread waits while it reduces.
      ASSERT_TRUE(eventually([&] { return inner.call_count() == 3; }));
    }
    sync->finish();
    const std::string name = "all_reduce " + std::string(enum_name(strategy));
    std::vector<std::string> expected = {name + " 0", name + " 1"};
    if (strategy != ReduceStrategy::kPerTensor) expected.push_back(name + " 2");
    EXPECT_EQ(view.seen(), expected) << name;
    EXPECT_EQ(view.watchdog.status().collective, "") << name;  // all closed
  }
}

TEST(WatchedCommunicatorTest, EveryCollectiveIsAWaitWhileItRuns) {
  std::vector<float> g(4, 0.0f);
  RecordingCommunicator inner;
  inner.set_base(g.data());
  WatchdogView view(inner);
  WatchedCommunicator comm(inner, view.watchdog);
  EXPECT_EQ(comm.size(), 2);
  comm.barrier();
  comm.all_reduce_sum(std::span<float>(g));
  comm.all_reduce_sum_async(std::span<float>(g))->wait();  // reduced at launch here
  EXPECT_EQ(view.seen(), (std::vector<std::string>{"barrier -1", "all_reduce -1", " -1"}));
}

TEST(GradSyncTest, OverlapOnOneRankIsBlocking) {
  auto comm = make_communicator("local");
  auto reducer = make_all_reducer(*comm, {.numel = 100});
  for (auto s : {ReduceStrategy::kOverlap, ReduceStrategy::kOverlapPoll}) {
    auto sync = make_grad_sync(s, *reducer, tensors_of({100}), 160);
    EXPECT_FALSE(sync->overlaps()) << enum_name(s);
    EXPECT_EQ(sync->strategy(), s);
    sync->begin_step(0);
    sync->finish();
    EXPECT_EQ(sync->stats().calls, 3);
  }
}

TEST(GradSyncTest, StrategyNamesRoundTripAndUnknownIsAnError) {
  for (auto s : {ReduceStrategy::kPerTensor, ReduceStrategy::kFused, ReduceStrategy::kOverlap,
                 ReduceStrategy::kOverlapPoll}) {
    EXPECT_EQ(parse_choice<ReduceStrategy>(enum_name(s), "--reduce"), s);
  }
  EXPECT_THROW(parse_choice<ReduceStrategy>("ring", "--reduce"), Error);
}

TEST(CommDtypeTest, NamesRoundTripAndUnknownIsAnErrorNamingTheFlag) {
  for (auto d : {CommDtype::kFp32, CommDtype::kBf16}) {
    EXPECT_EQ(parse_choice<CommDtype>(enum_name(d), "--comm-dtype"), d);
  }
  EXPECT_EQ(comm_dtype_bytes(CommDtype::kFp32), 4);
  EXPECT_EQ(comm_dtype_bytes(CommDtype::kBf16), 2);
  try {
    parse_choice<CommDtype>("fp8", "--comm-dtype");
    FAIL() << "fp8 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("--comm-dtype: unknown communication dtype 'fp8'"),
              std::string::npos)
        << e.what();
  }
}

// What a bf16 reduction must leave: x rounded to bf16, plus `other` (another
// rank's bf16 value) in fp32, rounded once more.
float bf16_sum_of(float x, float other) {
  const float mine = kernels::bf16_to_float(kernels::float_to_bf16(x));
  return kernels::bf16_to_float(kernels::float_to_bf16(mine + other));
}

// Values bf16 cannot hold (8 significant bits): 1 + i/512 + 1/4096.
void fill_unrepresentable(std::span<float> g) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    g[i] = 1.0f + static_cast<float>(i) * 0x1p-9f + 0x1p-12f;
  }
}

// Every strategy with --comm-dtype bf16, the stand-in playing a second rank
// of ones: each element ends bf16(bf16(x) + 1), no float collective runs,
// and the bytes recorded are half those of fp32.
TEST(GradSyncTest, Bf16SumsTheRoundedValuesAndRecordsHalfTheBytes) {
  for (auto s : {ReduceStrategy::kPerTensor, ReduceStrategy::kFused, ReduceStrategy::kOverlap,
                 ReduceStrategy::kOverlapPoll}) {
    RecordingCommunicator comm;
    auto reducer = make_all_reducer(comm, {.dtype = CommDtype::kBf16, .numel = 100});
    std::span<float> g = comm.attach(*reducer);
    fill_unrepresentable(g);
    const std::vector<float> x(g.begin(), g.end());
    auto sync = make_grad_sync(s, *reducer, tensors_of({30, 70}), 160);
    sync->begin_step(0);
    sync->on_ready(60);
    sync->on_ready(0);
    sync->finish();
    const std::string what(enum_name(s));
    for (std::size_t i = 0; i < g.size(); ++i) {
      ASSERT_EQ(g[i], bf16_sum_of(x[i], 1.0f)) << what << " element " << i;
    }
    EXPECT_EQ(g[0], 2.0f) << what;  // 1 + 2^-12 rounds to 1 before it travels
    EXPECT_EQ(sync->stats().bytes, 100 * 2) << what;
    EXPECT_EQ(comm.bf16_calls, sync->stats().calls) << what;
    EXPECT_TRUE(comm.calls.empty()) << what << ": a float all-reduce ran";
  }
}

// One process rounds too (each algorithm's one-rank path), so a one-rank run
// sees the precision of many.
TEST(GradSyncTest, Bf16OnOneRankRoundsTheGradients) {
  auto comm = make_communicator("local");
  for (auto a : {AllReduceAlgorithm::kMpi, AllReduceAlgorithm::kShm, AllReduceAlgorithm::kHier}) {
    auto reducer =
        make_all_reducer(*comm, {.algorithm = a, .dtype = CommDtype::kBf16, .numel = 100});
    std::span<float> g = reducer->buffer();
    fill_unrepresentable(g);
    const std::vector<float> x(g.begin(), g.end());
    reducer->sum(10, 80);
    const std::string what(enum_name(a));
    for (int i = 0; i < 100; ++i) {
      const bool in = i >= 10 && i < 90;
      ASSERT_EQ(g[i], in ? bf16_sum_of(x[i], 0.0f) : x[i]) << what << " element " << i;
    }
    EXPECT_EQ(reducer->wire_bytes(80), 160) << what;
  }
}

TEST(CommunicatorTest, LocalIsSizeOneAndCollectivesAreNoOps) {
  auto comm = make_communicator("local");
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->rank(), 0);
  std::vector<float> x = {1, 2, 3};
  comm->all_reduce_sum(std::span<float>(x));
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(comm->all_gather("a"), std::vector<std::string>{"a"});
  EXPECT_THROW(make_communicator("carrier-pigeon"), Error);
  EXPECT_THROW(run_collectively(*comm, [] { throw Error("boom"); }), CollectiveError);
  try {
    run_collectively(*comm, [] { throw std::bad_alloc(); });
    FAIL() << "not collective";
  } catch (const CollectiveError& e) {
    EXPECT_EQ(e.exit_code(), kExitFailure);
  }
}

TEST(CommunicatorTest, TransportSettingsKeepTransportsAndDropLauncherBookkeeping) {
  const std::vector<std::pair<const char*, const char*>> vars = {
      {"OMPI_MCA_btl_tcp_links", "4"}, {"OMPI_MCA_btl", "tcp,self"},
      {"OMPI_MCA_plm", "rsh"},         {"OMPI_MCA_routed", "radix"},
      {"OMPI_MCA_orte_hnp_uri", "x"},  {"OMPI_MCA_ess_base_jobid", "7"}};
  for (const auto& [k, v] : vars) ::setenv(k, v, 1);
  const auto settings = transport_settings();
  for (const auto& [k, v] : vars) ::unsetenv(k);
  std::map<std::string, std::string> got(settings.begin(), settings.end());
  EXPECT_EQ(got["btl_tcp_links"], "4");
  EXPECT_EQ(got["btl"], "tcp,self");
  EXPECT_EQ(got.count("plm"), 0u);
  EXPECT_EQ(got.count("routed"), 0u);
  EXPECT_EQ(got.count("orte_hnp_uri"), 0u);
  EXPECT_EQ(got.count("ess_base_jobid"), 0u);
}

}  // namespace
}  // namespace trainscope::comm
