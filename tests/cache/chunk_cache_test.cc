#include "cache/chunk_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_file.h"
#include "cache/chunk_cache_internal.h"
#include "cache/io_engine.h"

namespace geofs::cache {
namespace {

namespace fs = std::filesystem;
using chunk::ChunkId;

struct Chunk {
  ChunkId id;
  Buffer raw;
};

Chunk MakeChunk(int seed, size_t size = 4096) {
  std::vector<uint8_t> bytes(size);
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  return {ChunkId::Of(bytes), Buffer::CopyOf(std::span<const uint8_t>(bytes))};
}

Result<Buffer> GetSync(ChunkCache& cache, const ChunkId& id) {
  std::promise<Result<Buffer>> done;
  cache.Get(id, [&](Result<Buffer> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

Result<Buffer> GetRangeSync(ChunkCache& cache, const ChunkId& id, uint64_t offset,
                            uint64_t length) {
  std::promise<Result<Buffer>> done;
  cache.GetRange(id, offset, length, [&](Result<Buffer> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

// ReadRangeInto into a destination of `length` bytes followed by guard
// bytes; the bytes it copied, or its error. Fails the test if it wrote past
// what it reported.
Result<std::string> ReadIntoSync(ChunkCache& cache, const ChunkId& id, uint64_t offset,
                                 uint64_t length) {
  constexpr size_t kGuard = 64;
  std::vector<uint8_t> dest(length + kGuard, 0xAB);
  std::promise<Result<size_t>> done;
  cache.ReadRangeInto(id, offset, length, dest.data(),
                      [&](Result<size_t> r) { done.set_value(std::move(r)); });
  Result<size_t> copied = done.get_future().get();
  if (!copied.ok()) return copied.status();
  EXPECT_LE(*copied, length);
  EXPECT_TRUE(std::all_of(dest.begin() + length, dest.end(), [](uint8_t b) { return b == 0xAB; }))
      << "wrote past the destination";
  return std::string(reinterpret_cast<const char*>(dest.data()), *copied);
}

// The bytes GetRange must return: the range cut at the end of the chunk.
std::string_view Expected(const Chunk& c, uint64_t offset, uint64_t length) {
  uint64_t from = std::min<uint64_t>(offset, c.raw.size());
  return c.raw.view().substr(from, std::min<uint64_t>(length, c.raw.size() - from));
}

Status PutSync(ChunkCache& cache, const Chunk& c) {
  std::promise<Status> done;
  cache.Put(c.id, c.raw, [&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// The spoke's pattern: read from the cache, on a miss fetch and store.
bool Access(ChunkCache& cache, const Chunk& c) {
  Result<Buffer> r = GetSync(cache, c.id);
  if (r.ok()) {
    EXPECT_EQ(r->view(), c.raw.view());
    return true;
  }
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(PutSync(cache, c).ok());
  return false;
}

std::vector<fs::path> FilesUnder(const fs::path& dir) {
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  return files;
}

// kInline: io_uring, with page-cache hits read on the calling thread (the
// production setting); the others send every read through the engine.
enum class Engine { kInline, kIoUring, kThreadPool };

std::string EngineName(const testing::TestParamInfo<Engine>& info) {
  switch (info.param) {
    case Engine::kInline:
      return "Inline";
    case Engine::kIoUring:
      return "IoUring";
    case Engine::kThreadPool:
      return "ThreadPool";
  }
  return "";
}

class ChunkCacheTest : public testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    std::string name = testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ =
        fs::temp_directory_path() / ("geofs_cache_test_" + std::to_string(getpid()) + "_" + name);
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ChunkCacheOptions Options(uint64_t capacity, uint64_t memory = 0) const {
    ChunkCacheOptions o;
    o.dir = dir_;
    o.capacity_bytes = capacity;
    o.memory_bytes = memory;
    o.use_io_uring = GetParam() != Engine::kThreadPool;
    o.inline_reads = GetParam() == Engine::kInline;
    return o;
  }

  std::unique_ptr<ChunkCache> OpenOrDie(const ChunkCacheOptions& o) {
    auto cache = ChunkCache::Open(o);
    EXPECT_TRUE(cache.ok()) << cache.status().ToString();
    EXPECT_EQ((*cache)->Stats().io_uring, GetParam() != Engine::kThreadPool);
    return std::move(cache).value();
  }

  std::string dir_;
};

TEST_P(ChunkCacheTest, PutThenGetRoundTrips) {
  auto cache = OpenOrDie(Options(1 << 20));
  Chunk a = MakeChunk(1, 100000), b = MakeChunk(2, 1);
  EXPECT_EQ(GetSync(*cache, a.id).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(PutSync(*cache, a).ok());
  ASSERT_TRUE(PutSync(*cache, b).ok());
  ASSERT_TRUE(PutSync(*cache, a).ok());  // already cached: succeeds at once
  EXPECT_TRUE(cache->Contains(a.id));
  auto got = GetSync(*cache, a.id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->view(), a.raw.view());
  EXPECT_EQ(GetSync(*cache, b.id)->view(), b.raw.view());
  ChunkCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk_hits, 2u);
  EXPECT_EQ(s.memory_hits, 0u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.inserts, 2u);
  EXPECT_EQ(s.disk_chunks, 2u);
  EXPECT_EQ(s.disk_bytes, 100001u);
  EXPECT_EQ(s.capacity_bytes, 1u << 20);
  // The file under the chunk's name holds the header, two block checksums and
  // the bytes.
  EXPECT_EQ(fs::file_size(ChunkPath(dir_, a.id)), kFileHeaderSize + 2 * 4 + 100000);
  EXPECT_EQ(FileSize(100000), kFileHeaderSize + 2 * 4 + 100000);
}

TEST_P(ChunkCacheTest, MemoryTierServesHotChunksAndStaysBounded) {
  auto cache = OpenOrDie(Options(1 << 20, /*memory=*/3 * 4096));
  std::vector<Chunk> chunks;
  for (int i = 0; i < 5; ++i) {
    chunks.push_back(MakeChunk(i));
    ASSERT_TRUE(PutSync(*cache, chunks.back()).ok());
  }
  EXPECT_EQ(cache->Stats().memory_bytes, 3u * 4096);
  // The last three stored are in memory; the first two come from disk and
  // take a place only once they were requested more often than the coldest
  // chunk held (each of those was requested once).
  for (int i = 2; i < 5; ++i)
    EXPECT_EQ(GetSync(*cache, chunks[i].id)->view(), chunks[i].raw.view());
  EXPECT_EQ(cache->Stats().memory_hits, 3u);
  EXPECT_EQ(GetSync(*cache, chunks[0].id)->view(), chunks[0].raw.view());
  EXPECT_EQ(GetSync(*cache, chunks[0].id)->view(), chunks[0].raw.view());
  EXPECT_EQ(cache->Stats().disk_hits, 2u);
  EXPECT_EQ(GetSync(*cache, chunks[0].id)->view(), chunks[0].raw.view());
  EXPECT_EQ(cache->Stats().memory_hits, 4u);
  EXPECT_EQ(cache->Stats().disk_hits, 2u);
  EXPECT_EQ(cache->Stats().memory_bytes, 3u * 4096);
  // A chunk requested once does not push out one requested twice.
  EXPECT_EQ(GetSync(*cache, chunks[1].id)->view(), chunks[1].raw.view());
  EXPECT_EQ(GetSync(*cache, chunks[0].id)->view(), chunks[0].raw.view());
  EXPECT_EQ(cache->Stats().memory_hits, 5u);
}

TEST_P(ChunkCacheTest, RestartReusesEveryChunk) {
  std::vector<Chunk> chunks;
  for (int i = 0; i < 20; ++i) chunks.push_back(MakeChunk(i, 1000 + i));
  {
    auto cache = OpenOrDie(Options(1 << 20, 1 << 20));
    for (auto& c : chunks) ASSERT_TRUE(PutSync(*cache, c).ok());
  }
  auto cache = OpenOrDie(Options(1 << 20, 1 << 20));
  ChunkCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk_chunks, 20u);
  uint64_t bytes = 0;
  for (auto& c : chunks) bytes += c.raw.size();
  EXPECT_EQ(s.disk_bytes, bytes);
  for (auto& c : chunks) {
    auto got = GetSync(*cache, c.id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->view(), c.raw.view());
  }
  EXPECT_EQ(cache->Stats().disk_hits, 20u);
  EXPECT_EQ(cache->Stats().misses, 0u);
  // Ranged reads of the reused files, from memory or disk alike.
  for (auto& c : chunks) {
    auto got = GetRangeSync(*cache, c.id, 100, 333);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->view(), Expected(c, 100, 333));
  }
}

TEST_P(ChunkCacheTest, RestartWithSmallerCapacityEvictsDownToIt) {
  std::vector<Chunk> chunks;
  for (int i = 0; i < 10; ++i) chunks.push_back(MakeChunk(i));
  {
    auto cache = OpenOrDie(Options(1 << 20));
    for (auto& c : chunks) ASSERT_TRUE(PutSync(*cache, c).ok());
  }
  auto cache = OpenOrDie(Options(4 * 4096));
  EXPECT_EQ(cache->Stats().disk_chunks, 4u);
  EXPECT_EQ(FilesUnder(dir_).size(), 4u);
}

void FlipByte(const std::string& path, off_t offset) {
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t b;
  ASSERT_EQ(pread(fd, &b, 1, offset), 1);
  b ^= 0x40;
  ASSERT_EQ(pwrite(fd, &b, 1, offset), 1);
  close(fd);
}

TEST_P(ChunkCacheTest, CorruptFileIsDroppedAndReportedAsMiss) {
  Chunk payload = MakeChunk(1), header = MakeChunk(2), table = MakeChunk(3), torn = MakeChunk(4);
  {
    auto cache = OpenOrDie(Options(1 << 20));
    for (auto* c : {&payload, &header, &table, &torn}) ASSERT_TRUE(PutSync(*cache, *c).ok());
  }
  FlipByte(ChunkPath(dir_, payload.id), DataOffset(4096) + 1000);
  FlipByte(ChunkPath(dir_, header.id), 20);              // in the chunk id
  FlipByte(ChunkPath(dir_, table.id), kFileHeaderSize);  // the block checksum
  fs::resize_file(ChunkPath(dir_, torn.id), DataOffset(4096) + 100);

  auto cache = OpenOrDie(Options(1 << 20));
  // The length no longer matches the size: gone at open, before any read.
  EXPECT_FALSE(cache->Contains(torn.id));
  EXPECT_FALSE(fs::exists(ChunkPath(dir_, torn.id)));
  ASSERT_TRUE(cache->Contains(payload.id));
  for (auto* c : {&payload, &header, &table, &torn}) {
    auto got = GetSync(*cache, c->id);
    EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
    EXPECT_FALSE(cache->Contains(c->id));
    EXPECT_FALSE(fs::exists(ChunkPath(dir_, c->id)));
  }
  ChunkCacheStats s = cache->Stats();
  EXPECT_EQ(s.corrupt_dropped, 3u);
  EXPECT_EQ(s.misses, 4u);
  EXPECT_EQ(s.disk_chunks, 0u);
  EXPECT_EQ(s.disk_bytes, 0u);
  EXPECT_EQ(s.open_files, 0u);
  // The caller refetches and stores it again.
  ASSERT_TRUE(PutSync(*cache, payload).ok());
  EXPECT_EQ(GetSync(*cache, payload.id)->view(), payload.raw.view());
}

// A ranged read and the bytes the cache must read from disk to verify it.
struct RangeCase {
  uint64_t offset, length, read;
};

TEST_P(ChunkCacheTest, RangedReadsReadOnlyTheBlocksTheyCover) {
  auto o = Options(1 << 20);
  o.max_open_files = 2;
  auto cache = OpenOrDie(o);
  const uint64_t kB = kBlockSize;
  Chunk c = MakeChunk(1, 3 * kB + 1000);
  ASSERT_TRUE(PutSync(*cache, c).ok());
  const RangeCase cases[] = {
      {0, 1, kB},                           // first byte
      {kB - 1, 2, 2 * kB},                  // across one boundary
      {kB, kB, kB},                         // exactly one block
      {kB - 10, kB + 20, 3 * kB},           // touches three blocks
      {3 * kB, 1000, 1000},                 // the short last block
      {3 * kB + 999, 10, 1000},             // cut at the end of the chunk
      {2 * kB + 5, UINT64_MAX, kB + 1000},  // to the end
      {3 * kB + 1000, 5, 0},                // at the end: empty
      {10 * kB, 5, 0},                      // past the end: empty
      {0, UINT64_MAX, 3 * kB + 1000},       // the whole chunk
  };
  for (const RangeCase& k : cases) {
    uint64_t before = cache->Stats().disk_read_bytes;
    auto got = GetRangeSync(*cache, c.id, k.offset, k.length);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->view(), Expected(c, k.offset, k.length)) << k.offset << "+" << k.length;
    EXPECT_EQ(cache->Stats().disk_read_bytes - before, k.read) << k.offset << "+" << k.length;
  }
  ChunkCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk_hits, std::size(cases));
  EXPECT_EQ(s.memory_bytes, 0u);
  EXPECT_EQ(s.open_files, 1u);  // opened once, kept open
  // At most max_open_files stay open, and an evicted chunk's file is let go.
  Chunk d = MakeChunk(2), e = MakeChunk(3);
  for (auto* x : {&d, &e}) {
    ASSERT_TRUE(PutSync(*cache, *x).ok());
    EXPECT_EQ(GetRangeSync(*cache, x->id, 7, 9)->view(), Expected(*x, 7, 9));
  }
  EXPECT_EQ(cache->Stats().open_files, 2u);
  cache->Shrink(1 << 20);
  EXPECT_EQ(cache->Stats().open_files, 0u);
  EXPECT_EQ(GetRangeSync(*cache, c.id, 0, 1).status().code(), StatusCode::kNotFound);
}

TEST_P(ChunkCacheTest, ReadRangeIntoCopiesExactlyTheRange) {
  auto cache = OpenOrDie(Options(1 << 20));
  const uint64_t kB = kBlockSize;
  Chunk c = MakeChunk(1, 3 * kB + 1000);
  ASSERT_TRUE(PutSync(*cache, c).ok());
  const RangeCase cases[] = {
      {0, 1, kB},                  // inside one block: head and tail scratch
      {kB - 1, 2, 2 * kB},         // across one boundary
      {kB, kB, kB},                // exactly one block: no scratch
      {kB - 10, kB + 20, 3 * kB},  // edges around a whole block
      {100, 3 * kB, 3 * kB + 1000},
      {3 * kB + 999, 10, 1000},  // cut at the end of the chunk
      {10 * kB, 5, 0},           // past the end: nothing
  };
  for (const RangeCase& k : cases) {
    uint64_t before = cache->Stats().disk_read_bytes;
    auto got = ReadIntoSync(*cache, c.id, k.offset, k.length);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, Expected(c, k.offset, k.length)) << k.offset << "+" << k.length;
    EXPECT_EQ(cache->Stats().disk_read_bytes - before, k.read) << k.offset << "+" << k.length;
  }
  // The page cache holds the file just written: with inline reads, no read
  // went through the engine.
  ChunkCacheStats s = cache->Stats();
  if (GetParam() == Engine::kInline) {
    EXPECT_EQ(s.inline_reads, std::size(cases) - 1);
  } else {
    EXPECT_EQ(s.inline_reads, 0u);
  }
  EXPECT_EQ(ReadIntoSync(*cache, MakeChunk(2).id, 0, 10).status().code(), StatusCode::kNotFound);
}

TEST_P(ChunkCacheTest, ReadRangeIntoFromTheMemoryTierCopies) {
  auto cache = OpenOrDie(Options(1 << 20, /*memory=*/1 << 20));
  Chunk c = MakeChunk(1, 100000);
  ASSERT_TRUE(PutSync(*cache, c).ok());  // just stored: in memory
  uint64_t hits = cache->Stats().memory_hits;
  EXPECT_EQ(*ReadIntoSync(*cache, c.id, 70000, 50000), Expected(c, 70000, 50000));
  EXPECT_EQ(cache->Stats().memory_hits, hits + 1);
  EXPECT_EQ(cache->Stats().disk_read_bytes, 0u);
}

TEST_P(ChunkCacheTest, ReadRangeIntoChecksTheWholeEdgeBlocks) {
  auto cache = OpenOrDie(Options(1 << 20));
  Chunk c = MakeChunk(1, 4 * kBlockSize);
  ASSERT_TRUE(PutSync(*cache, c).ok());
  EXPECT_EQ(*ReadIntoSync(*cache, c.id, 0, 10), Expected(c, 0, 10));
  // Damage in a part of block 1 the range does not cover, which is read
  // into scratch beside the destination: still caught.
  FlipByte(ChunkPath(dir_, c.id), DataOffset(c.raw.size()) + kBlockSize + 3);
  EXPECT_EQ(*ReadIntoSync(*cache, c.id, 2 * kBlockSize, kBlockSize),
            Expected(c, 2 * kBlockSize, kBlockSize));
  EXPECT_EQ(ReadIntoSync(*cache, c.id, kBlockSize + 100, 2 * kBlockSize).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(cache->Stats().corrupt_dropped, 1u);
  EXPECT_FALSE(fs::exists(ChunkPath(dir_, c.id)));
}

TEST_P(ChunkCacheTest, CorruptBlockIsDetectedByTheRangedReadThatCoversIt) {
  auto cache = OpenOrDie(Options(1 << 20));
  Chunk c = MakeChunk(1, 4 * kBlockSize);
  ASSERT_TRUE(PutSync(*cache, c).ok());
  // Open the file first, so the damage happens under an open descriptor.
  EXPECT_EQ(GetRangeSync(*cache, c.id, 0, 10)->view(), Expected(c, 0, 10));
  FlipByte(ChunkPath(dir_, c.id), DataOffset(c.raw.size()) + 2 * kBlockSize + 7);
  // Blocks 0, 1 and 3 still check out.
  EXPECT_EQ(GetRangeSync(*cache, c.id, kBlockSize, 100)->view(), Expected(c, kBlockSize, 100));
  EXPECT_EQ(GetRangeSync(*cache, c.id, 3 * kBlockSize, kBlockSize)->view(),
            Expected(c, 3 * kBlockSize, kBlockSize));
  EXPECT_EQ(cache->Stats().corrupt_dropped, 0u);
  // A read of one byte of block 2 checks all of block 2.
  EXPECT_EQ(GetRangeSync(*cache, c.id, 2 * kBlockSize + 100, 1).status().code(),
            StatusCode::kNotFound);
  ChunkCacheStats s = cache->Stats();
  EXPECT_EQ(s.corrupt_dropped, 1u);
  EXPECT_EQ(s.disk_chunks, 0u);
  EXPECT_FALSE(fs::exists(ChunkPath(dir_, c.id)));
  EXPECT_EQ(GetRangeSync(*cache, c.id, 0, 10).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(PutSync(*cache, c).ok());
  EXPECT_EQ(GetRangeSync(*cache, c.id, 2 * kBlockSize + 100, 1)->view(),
            Expected(c, 2 * kBlockSize + 100, 1));
}

TEST_P(ChunkCacheTest, OldFormatFilesAreDroppedAtOpen) {
  Chunk good = MakeChunk(1), old = MakeChunk(2);
  {
    auto cache = OpenOrDie(Options(1 << 20));
    ASSERT_TRUE(PutSync(*cache, good).ok());
  }
  // A version 1 file: 64-byte header (magic, version 1, header size, length,
  // id, whole-payload CRC) and the bytes right after it.
  uint8_t header[kFileHeaderSize] = {'G', 'F', 'C', 'C', 1, 0, kFileHeaderSize, 0};
  for (int i = 0; i < 8; ++i) header[8 + i] = static_cast<uint8_t>(old.raw.size() >> (8 * i));
  std::memcpy(header + 16, old.id.bytes().data(), ChunkId::kSize);
  fs::create_directories(fs::path(ChunkPath(dir_, old.id)).parent_path());
  {
    std::ofstream f(ChunkPath(dir_, old.id), std::ios::binary);
    f.write(reinterpret_cast<const char*>(header), sizeof(header));
    f.write(reinterpret_cast<const char*>(old.raw.data()), old.raw.size());
  }
  auto cache = OpenOrDie(Options(1 << 20));
  EXPECT_FALSE(fs::exists(ChunkPath(dir_, old.id)));
  EXPECT_FALSE(cache->Contains(old.id));
  ChunkCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk_chunks, 1u);
  EXPECT_EQ(s.disk_bytes, good.raw.size());
  EXPECT_EQ(GetSync(*cache, good.id)->view(), good.raw.view());
  EXPECT_EQ(GetSync(*cache, old.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache->Stats().corrupt_dropped, 0u);
}

TEST_P(ChunkCacheTest, RangedReadsOfAHotChunkBringItWholeIntoMemory) {
  auto cache = OpenOrDie(Options(4 << 20, /*memory=*/400000));
  Chunk hot = MakeChunk(1, 2 * kBlockSize + 10), other = MakeChunk(2, 300000);
  ASSERT_TRUE(PutSync(*cache, hot).ok());
  ASSERT_TRUE(PutSync(*cache, other).ok());  // pushes `hot` out of memory
  EXPECT_EQ(cache->Stats().memory_bytes, other.raw.size());
  uint64_t offset = 0;
  while (cache->Stats().promotions == 0) {
    ASSERT_LT(offset, 10u);  // within a few requests
    auto got = GetRangeSync(*cache, hot.id, kBlockSize + offset, 5);
    EXPECT_EQ(got->view(), Expected(hot, kBlockSize + offset, 5));
    ++offset;
  }
  ChunkCacheStats s = cache->Stats();
  EXPECT_GE(offset, 2u);  // not on the first request
  // `other`, never requested, made way.
  EXPECT_EQ(s.memory_bytes, hot.raw.size());
  EXPECT_EQ(s.disk_read_bytes, (offset - 1) * kBlockSize + hot.raw.size());
  EXPECT_EQ(GetRangeSync(*cache, hot.id, 3, 1000)->view(), Expected(hot, 3, 1000));
  EXPECT_EQ(cache->Stats().memory_hits, 1u);
  EXPECT_EQ(cache->Stats().disk_hits, offset);
}

TEST_P(ChunkCacheTest, FileMissingBehindOurBackIsAMiss) {
  auto cache = OpenOrDie(Options(1 << 20));
  Chunk a = MakeChunk(1);
  ASSERT_TRUE(PutSync(*cache, a).ok());
  fs::remove(ChunkPath(dir_, a.id));
  EXPECT_EQ(GetSync(*cache, a.id).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(cache->Contains(a.id));
  EXPECT_EQ(cache->Stats().disk_bytes, 0u);
}

TEST_P(ChunkCacheTest, OpenRemovesTornAndTemporaryFiles) {
  Chunk good = MakeChunk(1), shortened = MakeChunk(2);
  {
    auto cache = OpenOrDie(Options(1 << 20));
    ASSERT_TRUE(PutSync(*cache, good).ok());
  }
  std::string temp = ChunkPath(dir_, shortened.id) + std::string(kTempMarker) + "999.1";
  std::ofstream(temp) << "half a chunk";
  std::ofstream(ChunkPath(dir_, shortened.id)) << "short";  // shorter than a header
  fs::create_directories(dir_ + "/00");
  std::ofstream(dir_ + "/00/not-a-chunk") << "left alone";

  auto cache = OpenOrDie(Options(1 << 20));
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(ChunkPath(dir_, shortened.id)));
  EXPECT_TRUE(fs::exists(dir_ + "/00/not-a-chunk"));
  EXPECT_FALSE(cache->Contains(shortened.id));
  EXPECT_EQ(cache->Stats().disk_chunks, 1u);
  EXPECT_EQ(GetSync(*cache, good.id)->view(), good.raw.view());
}

TEST_P(ChunkCacheTest, CyclicWorkingSetTwiceTheCacheKeepsHitting) {
  constexpr int kCapacity = 40;
  auto cache = OpenOrDie(Options(kCapacity * 4096));
  std::vector<Chunk> set;
  for (int i = 0; i < 2 * kCapacity; ++i) set.push_back(MakeChunk(i));
  for (int pass = 1; pass <= 3; ++pass) {
    int hits = 0;
    for (auto& c : set) hits += Access(*cache, c);
    double ratio = static_cast<double>(hits) / set.size();
    if (pass == 1) {
      EXPECT_EQ(hits, 0);
    }
    if (pass > 1) {
      EXPECT_GE(ratio, 0.30) << "pass " << pass;
    }
    ChunkCacheStats s = cache->Stats();
    EXPECT_LE(s.disk_bytes, s.capacity_bytes);
  }
  EXPECT_EQ(FilesUnder(dir_).size(), static_cast<size_t>(kCapacity));
}

TEST_P(ChunkCacheTest, HotSetSurvivesAOneTimeScan) {
  constexpr int kCapacity = 20;
  auto cache = OpenOrDie(Options(kCapacity * 4096));
  std::vector<Chunk> hot;
  for (int i = 0; i < 8; ++i) hot.push_back(MakeChunk(i));
  for (int round = 0; round < 3; ++round) {
    for (auto& c : hot) Access(*cache, c);
  }
  for (int i = 0; i < 3 * kCapacity; ++i) Access(*cache, MakeChunk(1000 + i));
  for (auto& c : hot) EXPECT_TRUE(Access(*cache, c));
  EXPECT_GT(cache->Stats().evictions, 0u);
}

TEST_P(ChunkCacheTest, PinnedChunksAreNeverEvicted) {
  auto cache = OpenOrDie(Options(4 * 4096));
  Chunk a = MakeChunk(1), b = MakeChunk(2);
  ASSERT_TRUE(PutSync(*cache, a).ok());
  cache->Pin(a.id);
  cache->Pin(a.id);
  cache->Pin(b.id);  // absent: pinned once stored
  ASSERT_TRUE(PutSync(*cache, b).ok());
  EXPECT_EQ(cache->Stats().pinned_bytes, 2u * 4096);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(PutSync(*cache, MakeChunk(100 + i)).ok());
  EXPECT_TRUE(cache->Contains(a.id));
  EXPECT_TRUE(cache->Contains(b.id));

  cache->Unpin(a.id);  // still pinned once
  std::vector<ChunkId> others;
  for (int i = 0; i < 20; ++i) {
    ChunkId id = MakeChunk(100 + i).id;
    if (cache->Contains(id)) others.push_back(id);
  }
  ASSERT_EQ(others.size(), 2u);
  for (auto& id : others) cache->Pin(id);
  EXPECT_EQ(cache->Stats().pinned_bytes, 4u * 4096);
  // Full, and everything pinned.
  EXPECT_EQ(PutSync(*cache, MakeChunk(500)).code(), StatusCode::kNoSpace);
  EXPECT_EQ(cache->Shrink(1 << 20), 0u);
  EXPECT_EQ(cache->Stats().disk_chunks, 4u);

  cache->Unpin(a.id);
  EXPECT_EQ(cache->Stats().pinned_bytes, 3u * 4096);
  ASSERT_TRUE(PutSync(*cache, MakeChunk(501)).ok());
  EXPECT_FALSE(cache->Contains(a.id));
  EXPECT_TRUE(cache->Contains(b.id));
  cache->Unpin(MakeChunk(999).id);  // never pinned: ignored
}

TEST_P(ChunkCacheTest, CapacityAccountingMatchesTheDisk) {
  auto cache = OpenOrDie(Options(100000));
  std::vector<Chunk> chunks;
  for (int i = 0; i < 60; ++i) {
    chunks.push_back(MakeChunk(i, 1000 + 97 * i));
    ASSERT_TRUE(PutSync(*cache, chunks.back()).ok());
    ASSERT_LE(cache->Stats().disk_bytes, 100000u);
  }
  ChunkCacheStats s = cache->Stats();
  uint64_t on_disk = 0, expected_on_disk = 0, cached_bytes = 0;
  auto files = FilesUnder(dir_);
  for (auto& f : files) on_disk += fs::file_size(f);
  for (auto& c : chunks) {
    if (!cache->Contains(c.id)) continue;
    expected_on_disk += FileSize(c.raw.size());
    cached_bytes += c.raw.size();
  }
  EXPECT_EQ(files.size(), s.disk_chunks);
  EXPECT_EQ(on_disk, expected_on_disk);
  EXPECT_EQ(cached_bytes, s.disk_bytes);
  EXPECT_EQ(s.inserts - s.evictions, s.disk_chunks);
  for (auto& c : chunks) {
    if (cache->Contains(c.id)) {
      EXPECT_EQ(GetSync(*cache, c.id)->view(), c.raw.view());
    }
  }
  EXPECT_EQ(PutSync(*cache, MakeChunk(1, 100001)).code(), StatusCode::kNoSpace);
  uint64_t freed = cache->Shrink(10000);
  EXPECT_GE(freed, 10000u);
  EXPECT_EQ(cache->Stats().disk_bytes, s.disk_bytes - freed);
}

TEST_P(ChunkCacheTest, WholeFileSystemCapacityLeavesTenPercent) {
  auto cache = OpenOrDie(Options(0));
  struct statvfs st;
  ASSERT_EQ(statvfs(dir_.c_str(), &st), 0);
  uint64_t total = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  uint64_t capacity = cache->Stats().capacity_bytes;
  EXPECT_LE(capacity, total * 9 / 10);
  uint64_t free = static_cast<uint64_t>(st.f_bfree) * st.f_frsize;
  // 90% of the total minus what others use: free space minus 10% of the total.
  if (free > total / 10) {
    EXPECT_NEAR(double(capacity), double(free - total / 10), total / 100.0);
  }
}

TEST_P(ChunkCacheTest, ConcurrentGetPutPinFromManyThreads) {
  constexpr int kIds = 64;
  std::vector<Chunk> chunks;
  for (int i = 0; i < kIds; ++i) chunks.push_back(MakeChunk(i, 2048 + i * 16));
  auto cache = OpenOrDie(Options(24 * 2048, 6 * 2048));
  std::atomic<int> ok_gets{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<int> pinned;
      for (int i = 0; i < 400; ++i) {
        const Chunk& c = chunks[rng() % kIds];
        switch (rng() % 8) {
          case 0:
            cache->Pin(c.id);
            pinned.push_back(&c - chunks.data());
            break;
          case 1:
            if (!pinned.empty()) {
              cache->Unpin(chunks[pinned.back()].id);
              pinned.pop_back();
            }
            break;
          case 2:
            cache->Shrink(4096);
            break;
          case 3: {
            // Asynchronous burst: the callbacks check the bytes.
            std::promise<void> done;
            std::atomic<int> left{2};
            uint64_t offset = rng() % c.raw.size(), length = rng() % c.raw.size();
            cache->Get(c.id, [&](Result<Buffer> r) {
              if (r.ok() && r->view() != c.raw.view()) ++bad;
              if (--left == 0) done.set_value();
            });
            cache->GetRange(c.id, offset, length, [&](Result<Buffer> r) {
              if (r.ok() && r->view() != Expected(c, offset, length)) ++bad;
              if (--left == 0) done.set_value();
            });
            done.get_future().wait();
            break;
          }
          default: {
            auto r = GetSync(*cache, c.id);
            if (r.ok()) {
              ++ok_gets;
              if (r->view() != c.raw.view()) ++bad;
            } else {
              Status s = PutSync(*cache, c);
              if (!s.ok() && s.code() != StatusCode::kNoSpace) ++bad;
            }
          }
        }
      }
      for (int p : pinned) cache->Unpin(chunks[p].id);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(ok_gets.load(), 0);
  ChunkCacheStats s = cache->Stats();
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_LE(s.disk_bytes, s.capacity_bytes);
  EXPECT_EQ(FilesUnder(dir_).size(), s.disk_chunks);
  for (auto& c : chunks) {
    if (cache->Contains(c.id)) {
      EXPECT_EQ(GetSync(*cache, c.id)->view(), c.raw.view());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, ChunkCacheTest,
                         testing::Values(Engine::kInline, Engine::kIoUring, Engine::kThreadPool),
                         EngineName);

// --- fault injection through the IoEngine seam ---

class FaultyEngine : public IoEngineWrapper {
 public:
  using IoEngineWrapper::IoEngineWrapper;
  std::atomic<int> enospc_writes{0};  // how many next writes fail with ENOSPC
  std::atomic<size_t> max_transfer{SIZE_MAX};

  void Read(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    iovec cut[kMaxIovecs];
    base().Read(fd, cut, Trim(iov, iovcnt, cut), offset, std::move(done));
  }
  int64_t ReadNow(int fd, const iovec* iov, int iovcnt, uint64_t offset) override {
    iovec cut[kMaxIovecs];
    return base().ReadNow(fd, cut, Trim(iov, iovcnt, cut), offset);
  }
  void Write(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    if (enospc_writes.load() > 0) {
      --enospc_writes;
      // Completes on an engine thread, as a real failure would.
      base().Read(fd, nullptr, 0, 0, [done = std::move(done)](int64_t) { done(-ENOSPC); });
      return;
    }
    iovec cut[kMaxIovecs];
    base().Write(fd, cut, Trim(iov, iovcnt, cut), offset, std::move(done));
  }

 private:
  // The first max_transfer bytes of `iov` into `out`; returns the count.
  int Trim(const iovec* iov, int iovcnt, iovec* out) const {
    size_t left = max_transfer.load();
    int n = 0;
    for (int i = 0; i < iovcnt && left > 0; ++i) {
      out[n] = iov[i];
      out[n].iov_len = std::min(out[n].iov_len, left);
      left -= out[n++].iov_len;
    }
    return n;
  }
};

class ChunkCacheFaultTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("geofs_cache_fault_" + std::to_string(getpid()) + "_" +
             testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    auto faulty = std::make_unique<FaultyEngine>(NewThreadPoolEngine(2));
    engine_ = faulty.get();
    ChunkCacheOptions o;
    o.dir = dir_;
    o.capacity_bytes = 1 << 20;
    o.memory_bytes = 0;
    auto cache = OpenChunkCacheWithEngine(o, std::move(faulty));
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    cache_ = std::move(cache).value();
  }
  void TearDown() override {
    cache_.reset();
    fs::remove_all(dir_);
  }

  std::string dir_;
  FaultyEngine* engine_ = nullptr;
  std::unique_ptr<ChunkCache> cache_;
};

TEST_F(ChunkCacheFaultTest, EnospcEvictsAndRetriesOnce) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(PutSync(*cache_, MakeChunk(i)).ok());
  engine_->enospc_writes = 1;
  Chunk c = MakeChunk(100);
  ASSERT_TRUE(PutSync(*cache_, c).ok());
  ChunkCacheStats s = cache_->Stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.disk_chunks, 4u);
  EXPECT_EQ(GetSync(*cache_, c.id)->view(), c.raw.view());
  EXPECT_EQ(FilesUnder(dir_).size(), 4u);  // no temporary file left
}

TEST_F(ChunkCacheFaultTest, EnospcTwiceFailsWithNoSpaceAndKeepsTheIndexSound) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(PutSync(*cache_, MakeChunk(i)).ok());
  engine_->enospc_writes = 2;
  Chunk c = MakeChunk(100);
  EXPECT_EQ(PutSync(*cache_, c).code(), StatusCode::kNoSpace);
  EXPECT_FALSE(cache_->Contains(c.id));
  ChunkCacheStats s = cache_->Stats();
  EXPECT_EQ(s.disk_chunks, 3u);
  EXPECT_EQ(s.disk_bytes, 3u * 4096);
  EXPECT_EQ(FilesUnder(dir_).size(), 3u);
  // Once space is back, the same chunk is stored.
  ASSERT_TRUE(PutSync(*cache_, c).ok());
  EXPECT_EQ(GetSync(*cache_, c.id)->view(), c.raw.view());
}

TEST_F(ChunkCacheFaultTest, ShortTransfersAreResumed) {
  engine_->max_transfer = 1000;
  Chunk c = MakeChunk(7, 10000);
  ASSERT_TRUE(PutSync(*cache_, c).ok());
  EXPECT_EQ(fs::file_size(ChunkPath(dir_, c.id)), FileSize(10000));
  auto got = GetSync(*cache_, c.id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->view(), c.raw.view());
  got = GetRangeSync(*cache_, c.id, 1234, 5678);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->view(), Expected(c, 1234, 5678));
  // Scattered over scratch and destination, 1000 bytes at a time.
  Chunk big = MakeChunk(8, 3 * kBlockSize + 5);
  ASSERT_TRUE(PutSync(*cache_, big).ok());
  auto into = ReadIntoSync(*cache_, big.id, 999, 2 * kBlockSize + 3);
  ASSERT_TRUE(into.ok()) << into.status().ToString();
  EXPECT_EQ(*into, Expected(big, 999, 2 * kBlockSize + 3));
}

TEST_F(ChunkCacheFaultTest, ConcurrentPutsOfOneChunkShareTheWrite) {
  Chunk c = MakeChunk(9, 50000);
  std::vector<std::promise<Status>> done(4);
  for (auto& p : done) cache_->Put(c.id, c.raw, [&p](Status s) { p.set_value(std::move(s)); });
  // A Get while the write may be in flight is served from the pending bytes.
  EXPECT_EQ(GetSync(*cache_, c.id)->view(), c.raw.view());
  for (auto& p : done) EXPECT_TRUE(p.get_future().get().ok());
  EXPECT_EQ(cache_->Stats().inserts, 1u);
  EXPECT_EQ(FilesUnder(dir_).size(), 1u);
}

// --- a real, tiny file system ---

class TinyFileSystem {
 public:
  explicit TinyFileSystem(const std::string& dir) : dir_(dir) {
    fs::create_directories(dir_);
    mounted_ = mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=1m") == 0;
    error_ = errno;
  }
  ~TinyFileSystem() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }
  bool mounted() const { return mounted_; }
  int error() const { return error_; }

 private:
  std::string dir_;
  bool mounted_;
  int error_;
};

class TinyFileSystemTest : public testing::TestWithParam<Engine> {};

TEST_P(TinyFileSystemTest, FullFileSystemEvictsThenReportsNoSpace) {
  std::string root = fs::temp_directory_path() / ("geofs_cache_tmpfs_" + std::to_string(getpid()));
  TinyFileSystem tiny(root);
  if (!tiny.mounted()) GTEST_SKIP() << "cannot mount tmpfs here: " << strerror(tiny.error());
  ChunkCacheOptions o;
  o.dir = root + "/cache";
  o.capacity_bytes = 64 << 20;  // far more than the 1 MiB file system holds
  o.memory_bytes = 0;
  o.use_io_uring = GetParam() == Engine::kIoUring;
  auto cache = std::move(ChunkCache::Open(o)).value();
  std::vector<Chunk> chunks;
  for (int i = 0; i < 40; ++i) {
    chunks.push_back(MakeChunk(i, 64 << 10));
    ASSERT_TRUE(PutSync(*cache, chunks.back()).ok()) << i;
  }
  ChunkCacheStats s = cache->Stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(FilesUnder(o.dir).size(), s.disk_chunks);
  std::vector<ChunkId> present;
  for (auto& c : chunks) {
    if (!cache->Contains(c.id)) continue;
    present.push_back(c.id);
    EXPECT_EQ(GetSync(*cache, c.id)->view(), c.raw.view());
  }
  // With everything pinned there is nothing to evict: kNoSpace, no crash.
  for (auto& id : present) cache->Pin(id);
  Status s2 = Status::Ok();
  for (int i = 0; i < 20 && s2.ok(); ++i) {
    Chunk c = MakeChunk(1000 + i, 64 << 10);
    s2 = PutSync(*cache, c);
    if (s2.ok()) {
      cache->Pin(c.id);
      present.push_back(c.id);
    }
  }
  EXPECT_EQ(s2.code(), StatusCode::kNoSpace);
  EXPECT_EQ(FilesUnder(o.dir).size(), cache->Stats().disk_chunks);
  for (auto& id : present) EXPECT_TRUE(cache->Contains(id));
  for (auto& id : present) cache->Unpin(id);
  cache.reset();

  // Capacity 0 on the same file system: stays under 90% and never hits ENOSPC.
  fs::remove_all(o.dir);
  o.capacity_bytes = 0;
  cache = std::move(ChunkCache::Open(o)).value();
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(PutSync(*cache, MakeChunk(i, 32 << 10)).ok());
  s = cache->Stats();
  EXPECT_LE(s.capacity_bytes, (1u << 20) * 9 / 10);
  EXPECT_LE(s.disk_bytes, s.capacity_bytes);
  EXPECT_GT(s.disk_chunks, 10u);
}

INSTANTIATE_TEST_SUITE_P(Engines, TinyFileSystemTest,
                         testing::Values(Engine::kIoUring, Engine::kThreadPool), EngineName);

}  // namespace
}  // namespace geofs::cache
