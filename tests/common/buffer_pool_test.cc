#include "common/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstring>

namespace geofs {
namespace {

TEST(BufferPoolTest, ReleasedStorageIsReusedForTheSameSizeClass) {
  BufferPool pool;
  uint8_t* first;
  {
    Buffer b = pool.Allocate(100 << 10, &first);
    EXPECT_EQ(b.size(), size_t{100} << 10);
    EXPECT_EQ(b.data(), first);
    std::memset(first, 1, b.size());
    Buffer slice = b.Slice(10, 10);  // shares the storage
    b = Buffer();
    EXPECT_EQ(pool.idle_bytes(), 0u);  // the slice still holds it
  }
  EXPECT_EQ(pool.idle_bytes(), size_t{128} << 10);
  uint8_t* again;
  Buffer c = pool.Allocate(120 << 10, &again);  // same 128 KiB class
  EXPECT_EQ(again, first);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  uint8_t* other;
  Buffer d = pool.Allocate(1, &other);  // 64 KiB class: fresh
  EXPECT_NE(other, first);
}

TEST(BufferPoolTest, KeepsAtMostTheIdleLimitAndPoolsNothingHuge) {
  BufferPool pool(/*max_idle_bytes=*/128 << 10);
  uint8_t* p;
  {
    Buffer a = pool.Allocate(64 << 10, &p);
    Buffer b = pool.Allocate(64 << 10, &p);
    Buffer c = pool.Allocate(64 << 10, &p);
  }
  EXPECT_EQ(pool.idle_bytes(), size_t{128} << 10);  // the third was freed
  { Buffer big = pool.Allocate(5 << 20, &p); }
  EXPECT_EQ(pool.idle_bytes(), size_t{128} << 10);
}

TEST(BufferPoolTest, PoolsUpToItsLargestSizeClass) {
  BufferPool pool(/*max_idle_bytes=*/64 << 20, /*max_pooled_bytes=*/16 << 20);
  uint8_t* first;
  { Buffer block = pool.Allocate(16 << 20, &first); }
  EXPECT_EQ(pool.idle_bytes(), size_t{16} << 20);
  uint8_t* again;
  Buffer block = pool.Allocate(9 << 20, &again);  // the same 16 MiB class
  EXPECT_EQ(again, first);
  { Buffer huge = pool.Allocate(17 << 20, &again); }
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

TEST(BufferPoolTest, BuffersMayOutliveThePool) {
  Buffer kept;
  {
    BufferPool pool;
    uint8_t* p;
    kept = pool.Allocate(200 << 10, &p);
    std::memset(p, 7, kept.size());
  }
  EXPECT_EQ(kept.data()[kept.size() - 1], 7);
}

}  // namespace
}  // namespace geofs
