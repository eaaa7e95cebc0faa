// ChunkFetcher: chunk bytes for reads, from the ChunkCache or else from the
// hub (ReadChunks accepting ZSTD; decoded and verified against the id
// before use, then stored in the cache).
//
// A ranged request reads only its range from the cache; on a miss the chunk
// is fetched whole (its SHA-256 covers all of it), stored, and the range is
// cut from it. Concurrent requests for a chunk that is being fetched share
// that fetch.
// Prefetch starts fetches nobody waits for yet (readahead), batched into one
// ReadChunks call.
//
// Thread-safe. Callbacks run on a gRPC thread or the caller's; they must not
// block. REQUIRES: every fetch has completed before destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cache/chunk_cache.h"
#include "chunk/chunk_id.h"
#include "geofs/buffer.h"
#include "geofs/status.h"

namespace geofs::spoke {

class HubLink;

struct FetchStats {
  uint64_t hits = 0;              // served by the ChunkCache
  uint64_t misses = 0;            // fetched from the hub
  uint64_t bytes_from_cache = 0;  // raw bytes
  uint64_t bytes_from_hub = 0;    // stored-form (wire) bytes
  uint64_t shared_fetches = 0;    // requests that joined a fetch in flight
  uint64_t prefetched = 0;        // chunks fetched ahead of any request
  uint64_t corrupt = 0;           // hub chunks that failed verification
};

class ChunkFetcher {
 public:
  using Callback = std::function<void(Result<Buffer>)>;
  using IntoCallback = std::function<void(Result<size_t>)>;

  // REQUIRES: `link` and `cache` outlive the fetcher.
  ChunkFetcher(HubLink* link, cache::ChunkCache* cache) : link_(link), cache_(cache) {}

  // Bytes [offset, offset + length) of chunk `id`, cut at the chunk's end
  // (the caller checks the size it got).
  void GetRange(const chunk::ChunkId& id, uint64_t offset, uint64_t length, Callback cb);
  // The same bytes copied into `dest`, answering how many: a disk hit reads
  // them straight from the cache file into `dest`. REQUIRES: `dest` holds
  // `length` bytes and stays valid until `cb` has run.
  void ReadRangeInto(const chunk::ChunkId& id, uint64_t offset, uint64_t length, uint8_t* dest,
                     IntoCallback cb);
  // Starts fetching those of `ids` that are neither cached nor in flight.
  void Prefetch(const std::vector<chunk::ChunkId>& ids);

  FetchStats Stats() const;

 private:
  // A cache miss: fetches `id` from the hub (or joins the fetch in flight)
  // and hands the whole chunk to `cb`.
  void FetchMissing(const chunk::ChunkId& id, Callback cb);
  // Fetches `ids` (all registered in inflight_ by the caller) in one call.
  void FetchFromHub(std::vector<chunk::ChunkId> ids);
  // Completes the waiters of `id`. A chunk that arrived stays known (as
  // landed) until its write to the cache has finished.
  void Complete(const chunk::ChunkId& id, const Result<Buffer>& result);

  // A chunk being fetched, and then, once it arrived, being written to the
  // cache: a miss in that window is answered from `landed` instead of
  // fetching the chunk again.
  struct Inflight {
    std::vector<Callback> waiters;
    std::optional<Buffer> landed;
  };
  // Shared with the cache writes' callbacks, which may finish after the
  // fetcher is gone.
  struct InflightTable {
    std::mutex mu;
    std::unordered_map<chunk::ChunkId, Inflight, chunk::ChunkIdHash> chunks;  // guarded by mu
  };

  HubLink* const link_;
  cache::ChunkCache* const cache_;
  const std::shared_ptr<InflightTable> inflight_ = std::make_shared<InflightTable>();
  std::atomic<uint64_t> hits_{0}, misses_{0}, bytes_from_cache_{0}, bytes_from_hub_{0}, shared_{0},
      prefetched_{0}, corrupt_{0};
};

}  // namespace geofs::spoke
