#include "hub/chunk_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace geofs::hub {
namespace {

chunk::ChunkId IdOf(const std::string& s) {
  return chunk::ChunkId::Of({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

TEST(ChunkCacheTest, EvictsLeastRecentlyUsedBeyondCapacity) {
  ChunkCache cache(10);
  int fetches = 0;
  auto fetch = [&](const chunk::ChunkId&) -> Result<Buffer> {
    ++fetches;
    return Buffer::CopyOf("xxxx");
  };
  ASSERT_TRUE(cache.Get(IdOf("a"), fetch).ok());
  ASSERT_TRUE(cache.Get(IdOf("b"), fetch).ok());
  ASSERT_TRUE(cache.Get(IdOf("a"), fetch).ok());  // a is now the most recent
  ASSERT_TRUE(cache.Get(IdOf("c"), fetch).ok());  // 12 bytes: b goes
  EXPECT_EQ(fetches, 3);
  EXPECT_EQ(cache.bytes(), 8u);
  ASSERT_TRUE(cache.Get(IdOf("a"), fetch).ok());
  EXPECT_EQ(fetches, 3);
  ASSERT_TRUE(cache.Get(IdOf("b"), fetch).ok());
  EXPECT_EQ(fetches, 4);
  EXPECT_EQ(cache.misses(), 4u);
  EXPECT_EQ(cache.hits(), 2u);
}

TEST(ChunkCacheTest, ErrorsAreReturnedNotCached) {
  ChunkCache cache(100);
  int fetches = 0;
  auto failing = [&](const chunk::ChunkId&) -> Result<Buffer> {
    ++fetches;
    return Status::IoError("store down");
  };
  EXPECT_EQ(cache.Get(IdOf("a"), failing).status().code(), StatusCode::kIoError);
  EXPECT_EQ(cache.Get(IdOf("a"), failing).status().code(), StatusCode::kIoError);
  EXPECT_EQ(fetches, 2);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(ChunkCacheTest, ConcurrentReadersOfOneChunkShareOneFetch) {
  ChunkCache cache(1 << 20);
  std::atomic<int> fetches{0};
  std::atomic<bool> release{false};
  auto slow = [&](const chunk::ChunkId&) -> Result<Buffer> {
    ++fetches;
    while (!release) std::this_thread::yield();
    return Buffer::CopyOf("payload");
  };
  std::vector<std::jthread> readers;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&] {
      auto r = cache.Get(IdOf("x"), slow);
      if (r.ok() && r->view() == "payload") ++ok;
    });
  }
  // Let every reader reach the cache before the fetch completes.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  release = true;
  readers.clear();
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(fetches, 1);
}

}  // namespace
}  // namespace geofs::hub
