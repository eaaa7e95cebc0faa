// MemoryChunkCache: LRU within capacity, pins, and the byte-size parser the
// daemon's --cache-size uses.
#include "memory_chunk_cache.h"

#include <gtest/gtest.h>

namespace geofs::spoke {
namespace {

struct Chunk {
  chunk::ChunkId id;
  Buffer raw;
};

Chunk MakeChunk(char fill, size_t size) {
  Buffer raw = Buffer::CopyOf(std::string(size, fill));
  return {chunk::ChunkId::Of(raw.span()), raw};
}

bool Has(MemoryChunkCache& cache, const Chunk& c) {
  bool found = false;
  cache.Get(c.id, [&](Result<Buffer> r) { found = r.ok() && r->view() == c.raw.view(); });
  return found;
}

void Put(MemoryChunkCache& cache, const Chunk& c, StatusCode expect = StatusCode::kOk) {
  cache.Put(c.id, c.raw, [&](Status s) { EXPECT_EQ(s.code(), expect) << s.ToString(); });
}

TEST(MemoryChunkCacheTest, EvictsLeastRecentlyUsedWithinCapacity) {
  MemoryChunkCache cache(300);
  Chunk a = MakeChunk('a', 100), b = MakeChunk('b', 100), c = MakeChunk('c', 100),
        d = MakeChunk('d', 100);
  Put(cache, a);
  Put(cache, b);
  Put(cache, c);
  EXPECT_TRUE(Has(cache, a));  // a is now the most recent; b the oldest
  Put(cache, d);
  EXPECT_TRUE(Has(cache, a));
  EXPECT_FALSE(Has(cache, b));
  EXPECT_TRUE(Has(cache, c));
  EXPECT_TRUE(Has(cache, d));
  EXPECT_EQ(cache.Stats().memory_bytes, 300u);
  EXPECT_EQ(cache.Stats().evictions, 1u);
}

TEST(MemoryChunkCacheTest, PinnedChunksStay) {
  MemoryChunkCache cache(200);
  Chunk a = MakeChunk('a', 100), b = MakeChunk('b', 100), c = MakeChunk('c', 100);
  cache.Pin(a.id);
  cache.Pin(b.id);
  Put(cache, a);
  Put(cache, b);
  Put(cache, c, StatusCode::kNoSpace);
  EXPECT_TRUE(Has(cache, a));
  EXPECT_TRUE(Has(cache, b));
  cache.Unpin(b.id);
  Put(cache, c);
  EXPECT_FALSE(Has(cache, b));
  EXPECT_EQ(cache.Shrink(1000), 100u);  // only c is unpinned
  EXPECT_TRUE(Has(cache, a));
}

}  // namespace
}  // namespace geofs::spoke
