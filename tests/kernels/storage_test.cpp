#include "kernels/storage.h"

#include <gtest/gtest.h>

#include <vector>

namespace trainscope::kernels {
namespace {

TEST(StorageTest, BufferCountsActiveAndPeakByCategory) {
  const MemorySnapshot before = memory_snapshot();
  {
    Buffer<float> a(1000, MemoryCategory::kActivations);
    Buffer<float> b(500, MemoryCategory::kGradients);
    const MemorySnapshot during = memory_snapshot();
    EXPECT_EQ(
        during[MemoryCategory::kActivations].active - before[MemoryCategory::kActivations].active,
        4000);
    EXPECT_EQ(during[MemoryCategory::kGradients].active - before[MemoryCategory::kGradients].active,
              2000);
    EXPECT_EQ(during.total.active - before.total.active, 6000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
    for (float x : a) ASSERT_EQ(x, 0.0f);
  }
  const MemorySnapshot after = memory_snapshot();
  EXPECT_EQ(after.total.active, before.total.active);
  EXPECT_GE(after[MemoryCategory::kActivations].peak,
            before[MemoryCategory::kActivations].active + 4000);
}

TEST(StorageTest, ResetPeakDropsToActive) {
  { Buffer<char> big(1 << 20, MemoryCategory::kWorkspace); }
  EXPECT_GE(memory_snapshot()[MemoryCategory::kWorkspace].peak, 1 << 20);
  reset_peak_memory();
  const MemorySnapshot s = memory_snapshot();
  EXPECT_EQ(s[MemoryCategory::kWorkspace].peak, s[MemoryCategory::kWorkspace].active);
  EXPECT_EQ(s.total.peak, s.total.active);
}

TEST(StorageTest, VectorWithTrackedAllocatorCountsAsData) {
  const int64_t before = memory_snapshot()[MemoryCategory::kData].active;
  std::vector<int, TrackedAllocator<int>> v{TrackedAllocator<int>(MemoryCategory::kData)};
  v.resize(1024);
  EXPECT_GE(memory_snapshot()[MemoryCategory::kData].active - before, 4096);
  v.clear();
  v.shrink_to_fit();
  EXPECT_EQ(memory_snapshot()[MemoryCategory::kData].active, before);
}

}  // namespace
}  // namespace trainscope::kernels
