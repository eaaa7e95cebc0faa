// Disk-tier read throughput of ChunkCache with a warm page cache: 1 MiB
// chunks read through io_uring, through the thread-pool (pread) fallback, and
// with a bare open/pread/close loop as the ceiling (no checksum, no cache).
//
// Usage: cache_bench [DIR] [CHUNKS] [QUEUE_DEPTH] [SECONDS]
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_file.h"
#include "cache/chunk_cache.h"
#include "common/crc32c.h"

namespace {

using geofs::Buffer;
using geofs::cache::ChunkCache;
using geofs::cache::ChunkCacheOptions;
using geofs::chunk::ChunkId;
using Clock = std::chrono::steady_clock;

constexpr size_t kChunkSize = 1 << 20;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Keeps `depth` Gets in flight over `ids` for `seconds`; returns GB/s.
double ReadThroughCache(ChunkCache& cache, const std::vector<ChunkId>& ids, int depth,
                        double seconds) {
  std::mutex mu;
  std::condition_variable cv;
  int inflight = 0;
  uint64_t bytes = 0, errors = 0;
  size_t next = 0;
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration<double>(seconds);
  std::unique_lock lock(mu);
  while (Clock::now() < deadline) {
    cv.wait(lock, [&] { return inflight < depth; });
    ++inflight;
    const ChunkId& id = ids[next++ % ids.size()];
    lock.unlock();
    cache.Get(id, [&](geofs::Result<Buffer> r) {
      std::lock_guard l(mu);
      if (r.ok()) {
        bytes += r->size();
      } else {
        ++errors;
      }
      --inflight;
      cv.notify_one();
    });
    lock.lock();
  }
  cv.wait(lock, [&] { return inflight == 0; });
  if (errors > 0) std::fprintf(stderr, "%llu failed reads\n", (unsigned long long)errors);
  return bytes / Seconds(Clock::now() - start) / 1e9;
}

double ReadWithPread(const std::string& dir, const std::vector<ChunkId>& ids, double seconds) {
  std::vector<uint8_t> buf(kChunkSize + geofs::cache::kFileHeaderSize);
  uint64_t bytes = 0;
  size_t next = 0;
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    int fd = open(geofs::cache::ChunkPath(dir, ids[next++ % ids.size()]).c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    ssize_t n = pread(fd, buf.data(), buf.size(), 0);
    close(fd);
    if (n > 0) bytes += n;
  }
  return bytes / Seconds(Clock::now() - start) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp/geofs_cache_bench";
  int chunks = argc > 2 ? std::atoi(argv[2]) : 256;
  int depth = argc > 3 ? std::atoi(argv[3]) : 8;
  double seconds = argc > 4 ? std::atof(argv[4]) : 3;
  std::filesystem::remove_all(dir);

  std::vector<ChunkId> ids;
  {
    ChunkCacheOptions o;
    o.dir = dir;
    o.capacity_bytes = 0;
    o.memory_bytes = 0;
    auto cache = std::move(ChunkCache::Open(o)).value();
    std::mt19937_64 rng(1);
    for (int i = 0; i < chunks; ++i) {
      uint8_t* p;
      Buffer raw = Buffer::Allocate(kChunkSize, &p);
      for (size_t j = 0; j < kChunkSize; j += 8) {
        uint64_t v = rng();
        std::memcpy(p + j, &v, 8);
      }
      ChunkId id = ChunkId::Of(raw.span());
      ids.push_back(id);
      std::atomic<bool> done{false};
      cache->Put(id, raw, [&](geofs::Status s) {
        if (!s.ok()) std::abort();
        done = true;
      });
      while (!done) std::this_thread::yield();
    }
  }

  std::vector<uint8_t> data(kChunkSize, 7);
  auto t0 = Clock::now();
  uint32_t crc = 0;
  for (int i = 0; i < 1000; ++i) crc = geofs::Crc32c(crc, data);
  double crc_gbs = 1000.0 * kChunkSize / Seconds(Clock::now() - t0) / 1e9;

  std::printf("chunks: %d x 1 MiB, queue depth %d, %.0f s per run, crc32c %s %.1f GB/s (%08x)\n",
              chunks, depth, seconds, geofs::Crc32cIsHardware() ? "sse4.2" : "portable",
              crc_gbs, crc);
  std::printf("%-36s %8s\n", "path", "GB/s");
  ReadWithPread(dir, ids, 0.5);  // warm the page cache
  std::printf("%-36s %8.2f\n", "open+pread+close, 1 thread, no crc",
              ReadWithPread(dir, ids, seconds));
  for (bool uring : {true, false}) {
    ChunkCacheOptions o;
    o.dir = dir;
    o.capacity_bytes = 0;
    o.memory_bytes = 0;  // every Get reads its file and checks its CRC
    o.use_io_uring = uring;
    auto cache = std::move(ChunkCache::Open(o)).value();
    double gbs = ReadThroughCache(*cache, ids, depth, seconds);
    std::printf("%-36s %8.2f\n",
                uring ? "ChunkCache disk tier, io_uring" : "ChunkCache disk tier, pread pool", gbs);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
