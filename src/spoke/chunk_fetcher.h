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
// At most `max_calls` ReadChunks calls are open at once, so a burst of cold
// READs cannot occupy every hub thread (or a WAN link's worth of streams);
// fetches beyond that wait in a queue and leave in batches as calls finish,
// those a READ waits for ahead of prefetches.
//
// Thread-safe. Callbacks run on a gRPC thread or the caller's; they must not
// block. Destruction waits until every ReadChunks call has ended (calls
// have deadlines, so this is bounded).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cache/chunk_cache.h"
#include "chunk/chunk_id.h"
#include "geofs/buffer.h"
#include "geofs/status.h"
#include "prefetch/access_event.h"

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
  uint64_t queued = 0;            // chunks that waited for a free call
};

// Where a read's chunks came from, the worst of them (kHit < kJoined <
// kMiss): filled in by the fetcher for the access stream.
struct ReadNote {
  std::atomic<prefetch::AccessOutcome> worst{prefetch::AccessOutcome::kHit};
  void Saw(prefetch::AccessOutcome source) {
    prefetch::AccessOutcome cur = worst.load(std::memory_order_relaxed);
    while (cur < source && !worst.compare_exchange_weak(cur, source, std::memory_order_relaxed)) {
    }
  }
};

class ChunkFetcher {
 public:
  using Callback = std::function<void(Result<Buffer>)>;
  using IntoCallback = std::function<void(Result<size_t>)>;

  static constexpr size_t kDefaultMaxCalls = 32;

  // REQUIRES: `link` and `cache` outlive the fetcher; max_calls >= 1.
  ChunkFetcher(HubLink* link, cache::ChunkCache* cache, size_t max_calls = kDefaultMaxCalls)
      : link_(link), cache_(cache), max_calls_(max_calls) {}
  ~ChunkFetcher();
  ChunkFetcher(const ChunkFetcher&) = delete;
  ChunkFetcher& operator=(const ChunkFetcher&) = delete;

  // Bytes [offset, offset + length) of chunk `id`, cut at the chunk's end
  // (the caller checks the size it got).
  void GetRange(const chunk::ChunkId& id, uint64_t offset, uint64_t length, Callback cb,
                ReadNote* note = nullptr);
  // The same bytes copied into `dest`, answering how many: a disk hit reads
  // them straight from the cache file into `dest`. REQUIRES: `dest` holds
  // `length` bytes and stays valid until `cb` has run.
  // `note` (optional, valid until `cb` has run) learns where they came from.
  void ReadRangeInto(const chunk::ChunkId& id, uint64_t offset, uint64_t length, uint8_t* dest,
                     IntoCallback cb, ReadNote* note = nullptr);
  // Runs once per prefetched chunk when it is in the cache (ok) or its
  // fetch or cache write failed; on a gRPC or cache thread.
  using PrefetchDone = std::function<void(const chunk::ChunkId&, Status)>;
  // Starts fetching those of `ids` that are neither cached nor in flight,
  // and answers which: `done` (optional) runs for each of those.
  std::vector<chunk::ChunkId> Prefetch(const std::vector<chunk::ChunkId>& ids,
                                       PrefetchDone done = nullptr);

  FetchStats Stats() const;

 private:
  // A cache miss: fetches `id` from the hub (or joins the fetch in flight)
  // and hands the whole chunk to `cb`. With `recheck_cache`, a chunk that
  // reached the cache since the miss is read from there instead.
  void FetchMissing(const chunk::ChunkId& id, Callback cb, ReadNote* note,
                    bool recheck_cache = true);
  // Fetches `ids` (all registered in inflight_ by the caller) in one call,
  // or queues them while max_calls_ calls are open.
  enum class Priority { kDemand, kPrefetch };
  void FetchFromHub(std::vector<chunk::ChunkId> ids, Priority priority);
  // One ReadChunks call for `ids`; when it ends, its slot goes to the
  // queue's next batch.
  void SendToHub(std::vector<chunk::ChunkId> ids);
  // A READ now waits for `id`: if it is queued as a prefetch, it moves to
  // the READs' queue.
  void PromoteQueuedPrefetch(const chunk::ChunkId& id);
  // The next batch to send, taken from the queues, or empty (and the slot
  // freed) when none waits.
  std::vector<chunk::ChunkId> NextQueuedOrRelease();
  // A chunk of a call arrived (decoded and verified, or failed): completes
  // its waiters and stores it in the cache.
  void Landed(const chunk::ChunkId& id, Result<Buffer> raw);
  // Completes the waiters of `id` and hands back its prefetch callback. A
  // chunk that arrived stays known (as landed) until its write to the cache
  // has finished.
  PrefetchDone Complete(const chunk::ChunkId& id, const Result<Buffer>& result);

  // A chunk being fetched, and then, once it arrived, being written to the
  // cache: a miss in that window is answered from `landed` instead of
  // fetching the chunk again.
  struct Inflight {
    std::vector<Callback> waiters;
    std::optional<Buffer> landed;
    PrefetchDone prefetch_done;  // a prefetch's, told when it is cached
  };
  // Shared with the cache writes' callbacks, which may finish after the
  // fetcher is gone.
  struct InflightTable {
    std::mutex mu;
    std::unordered_map<chunk::ChunkId, Inflight, chunk::ChunkIdHash> chunks;  // guarded by mu
  };

  HubLink* const link_;
  cache::ChunkCache* const cache_;
  const size_t max_calls_;
  const std::shared_ptr<InflightTable> inflight_ = std::make_shared<InflightTable>();

  std::mutex calls_mu_;
  std::condition_variable calls_ended_;         // calls_open_ reached 0
  size_t calls_open_ = 0;                       // guarded by calls_mu_
  std::deque<chunk::ChunkId> queued_demand_;    // guarded by calls_mu_
  std::deque<chunk::ChunkId> queued_prefetch_;  // guarded by calls_mu_

  std::atomic<uint64_t> hits_{0}, misses_{0}, bytes_from_cache_{0}, bytes_from_hub_{0}, shared_{0},
      prefetched_{0}, corrupt_{0}, queued_{0};
};

}  // namespace geofs::spoke
