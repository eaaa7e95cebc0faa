// Disk-tier read throughput of ChunkCache with a warm page cache: 1 MiB
// chunks read through io_uring, through the thread-pool (pread) fallback, and
// with a bare open/pread/close loop as the ceiling (no checksum, no cache);
// then random aligned 4 KiB and 128 KiB ranges, as GetRange and as the whole
// chunk read to answer them (what each READ cost before ranged reads).
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
#include <ctime>
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

struct Rate {
  double gbs;
  double ops;  // per second
};

// Keeps `depth` reads in flight over `ids` for `seconds`: whole Gets when
// `range` is 0, else GetRange of `range` bytes at a random multiple of it.
Rate ReadThroughCache(ChunkCache& cache, const std::vector<ChunkId>& ids, int depth, double seconds,
                      uint64_t range = 0) {
  std::mt19937_64 rng(7);
  std::mutex mu;
  std::condition_variable cv;
  int inflight = 0;
  uint64_t bytes = 0, errors = 0, ops = 0;
  size_t next = 0;
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration<double>(seconds);
  std::unique_lock lock(mu);
  while (Clock::now() < deadline) {
    cv.wait(lock, [&] { return inflight < depth; });
    ++inflight;
    const ChunkId& id = range == 0 ? ids[next++ % ids.size()] : ids[rng() % ids.size()];
    uint64_t offset = range == 0 ? 0 : rng() % (kChunkSize / range) * range;
    ++ops;
    lock.unlock();
    auto done = [&](geofs::Result<Buffer> r) {
      std::lock_guard l(mu);
      if (r.ok()) {
        bytes += r->size();
      } else {
        ++errors;
      }
      --inflight;
      cv.notify_one();
    };
    if (range == 0) {
      cache.Get(id, done);
    } else {
      cache.GetRange(id, offset, range, done);
    }
    lock.lock();
  }
  cv.wait(lock, [&] { return inflight == 0; });
  if (errors > 0) std::fprintf(stderr, "%llu failed reads\n", (unsigned long long)errors);
  double elapsed = Seconds(Clock::now() - start);
  return {bytes / elapsed / 1e9, ops / elapsed};
}

double ReadWithPread(const std::string& dir, const std::vector<ChunkId>& ids, double seconds) {
  std::vector<uint8_t> buf(geofs::cache::FileSize(kChunkSize));
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
              chunks, depth, seconds, geofs::Crc32cIsHardware() ? "sse4.2" : "portable", crc_gbs,
              crc);
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
    double gbs = ReadThroughCache(*cache, ids, depth, seconds).gbs;
    std::printf("%-36s %8.2f\n",
                uring ? "ChunkCache disk tier, io_uring" : "ChunkCache disk tier, pread pool", gbs);
  }
  std::printf("\n%-44s %10s %10s\n", "random ranges, io_uring, memory tier off", "reads/s",
              "cpu us/op");
  ChunkCacheOptions o;
  o.dir = dir;
  o.capacity_bytes = 0;
  o.memory_bytes = 0;
  auto cache = std::move(ChunkCache::Open(o)).value();
  for (uint64_t range : {4096u, 131072u}) {
    for (bool ranged : {false, true}) {
      std::clock_t cpu = std::clock();
      Rate r = ReadThroughCache(*cache, ids, depth, seconds, ranged ? range : kChunkSize);
      double cpu_us = double(std::clock() - cpu) / CLOCKS_PER_SEC * 1e6 / (r.ops * seconds);
      std::printf("%3llu KiB %-36s %10.0f %10.1f\n", (unsigned long long)(range >> 10),
                  ranged ? "GetRange" : "whole chunk per read (before)", r.ops, cpu_us);
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}
