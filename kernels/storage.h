// The one allocator that every tensor and dataset byte passes through.
//
// Each allocation carries a MemoryCategory. The allocator keeps, per category
// and in total, the bytes currently allocated ("active") and the most ever
// allocated at once since the last reset ("peak"), so the profiler can report
// memory by category without the kernels knowing about it. Kernels themselves
// never allocate: callers hand them spans of Buffers.
//
// Thread-safety: all functions may be called from any thread; the counters are
// atomics (relaxed), so a snapshot taken while other threads allocate is
// per-counter exact but not a single instant across counters.
#ifndef TRAINSCOPE_KERNELS_STORAGE_H_
#define TRAINSCOPE_KERNELS_STORAGE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace trainscope::kernels {

enum class MemoryCategory : int {
  kParameters = 0,
  kGradients,
  kOptimizerState,
  kActivations,
  kData,
  kComm,       // communication buffers
  kWorkspace,  // scratch space of kernels
  kOther,
};
inline constexpr int kNumMemoryCategories = 8;

// The categories' names in MemoryCategory order: how summaries, the results
// database, reports and tables call them.
inline constexpr std::array<std::string_view, kNumMemoryCategories> kMemoryCategoryNames = {
    "parameters", "gradients", "optimizer_state", "activations",
    "data",       "comm",      "workspace",       "other"};

// Short labels for table headers, in the same order.
inline constexpr std::array<std::string_view, kNumMemoryCategories> kMemoryCategoryLabels = {
    "params", "grads", "optimizer", "activations", "data", "comm", "workspace", "other"};

std::string_view category_name(MemoryCategory category);

struct MemoryCounters {
  int64_t active = 0;  // bytes allocated now
  int64_t peak = 0;    // max of active since the last reset_peak()
};

struct MemorySnapshot {
  MemoryCounters total;
  std::array<MemoryCounters, kNumMemoryCategories> by_category;
  const MemoryCounters& operator[](MemoryCategory c) const {
    return by_category[static_cast<int>(c)];
  }
};

// 64-byte aligned; large blocks are backed by transparent huge pages where the
// kernel allows. Throws std::bad_alloc on failure. bytes == 0 returns nullptr.
void* tracked_alloc(std::size_t bytes, MemoryCategory category);
// `bytes` and `category` must be those given to tracked_alloc.
void tracked_free(void* ptr, std::size_t bytes, MemoryCategory category);

// Counts `bytes` in `category` as tracked_alloc would, for memory another
// allocator owns (MPI's shared windows), so the tracker still sees every
// byte a rank holds. Undo with release_tracked(bytes, category).
void adopt_tracked(std::size_t bytes, MemoryCategory category);
void release_tracked(std::size_t bytes, MemoryCategory category);

MemorySnapshot memory_snapshot();
// Sets every peak (total and per category) to the current active bytes.
void reset_peak_memory();

// An owning, fixed-size, 64-byte-aligned array of T (trivially copyable) in
// one category. Contents start zeroed. Move-only.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::size_t count, MemoryCategory category) : count_(count), category_(category) {
    data_ = static_cast<T*>(tracked_alloc(count * sizeof(T), category));
  }
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      swap(other);
    }
    return *this;
  }
  void reset() {
    if (data_ != nullptr) tracked_free(data_, count_ * sizeof(T), category_);
    data_ = nullptr;
    count_ = 0;
  }
  void swap(Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(category_, other.category_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }
  MemoryCategory category() const { return category_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, count_}; }
  std::span<const T> span() const { return {data_, count_}; }
  T* begin() { return data_; }
  T* end() { return data_ + count_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + count_; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
  MemoryCategory category_ = MemoryCategory::kOther;
};

// A standard allocator that routes through tracked_alloc, for growable
// containers: std::vector<int32_t, TrackedAllocator<int32_t>>
// v{TrackedAllocator<int32_t>(MemoryCategory::kData)}.
template <typename T>
class TrackedAllocator {
 public:
  using value_type = T;
  explicit TrackedAllocator(MemoryCategory category = MemoryCategory::kOther) noexcept
      : category_(category) {}
  template <typename U>
  TrackedAllocator(const TrackedAllocator<U>& other) noexcept  // NOLINT
      : category_(other.category()) {}
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(tracked_alloc(n * sizeof(T), category_));
  }
  void deallocate(T* p, std::size_t n) noexcept { tracked_free(p, n * sizeof(T), category_); }
  MemoryCategory category() const { return category_; }
  template <typename U>
  bool operator==(const TrackedAllocator<U>& o) const noexcept {
    return category_ == o.category();
  }

 private:
  MemoryCategory category_;
};

// A byte count for people: "512 B", "12.3 KiB", "1.5 MiB", "2.25 GiB"; "-"
// when negative (unknown). The one formatter of train's, monitor's and the
// report's tables.
std::string format_bytes(double bytes);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_STORAGE_H_
