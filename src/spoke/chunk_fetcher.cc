#include "spoke/chunk_fetcher.h"

#include <algorithm>
#include <cstring>

#include "chunk/chunk_codec.h"
#include "common/logging.h"
#include "spoke/hub_link.h"

namespace geofs::spoke {
namespace {

// ReadChunks takes at most this many ids.
constexpr size_t kMaxIdsPerCall = 1024;
// A queued batch answers its READs only once all of it arrived (HubLink
// collects a call's chunks), so batches drained from the queue stay small.
constexpr size_t kMaxIdsPerQueuedCall = 8;

}  // namespace

ChunkFetcher::~ChunkFetcher() {
  std::unique_lock lock(calls_mu_);
  calls_ended_.wait(lock, [&] { return calls_open_ == 0; });
}

void ChunkFetcher::GetRange(const chunk::ChunkId& id, uint64_t offset, uint64_t length,
                            Callback cb) {
  cache_->GetRange(id, offset, length,
                   [this, id, offset, length, cb = std::move(cb)](Result<Buffer> cached) mutable {
                     if (cached.ok()) {
                       ++hits_;
                       bytes_from_cache_ += cached->size();
                       return cb(std::move(cached));
                     }
                     FetchMissing(id, [offset, length, cb = std::move(cb)](Result<Buffer> raw) {
                       if (!raw.ok()) return cb(std::move(raw));
                       uint64_t from = std::min<uint64_t>(offset, raw->size());
                       cb(raw->Slice(from, std::min<uint64_t>(length, raw->size() - from)));
                     });
                   });
}

void ChunkFetcher::ReadRangeInto(const chunk::ChunkId& id, uint64_t offset, uint64_t length,
                                 uint8_t* dest, IntoCallback cb) {
  cache_->ReadRangeInto(
      id, offset, length, dest,
      [this, id, offset, length, dest, cb = std::move(cb)](Result<size_t> copied) mutable {
        if (copied.ok()) {
          ++hits_;
          bytes_from_cache_ += *copied;
          return cb(copied);
        }
        FetchMissing(id, [offset, length, dest, cb = std::move(cb)](Result<Buffer> raw) {
          if (!raw.ok()) return cb(raw.status());
          uint64_t from = std::min<uint64_t>(offset, raw->size());
          uint64_t n = std::min<uint64_t>(length, raw->size() - from);
          if (n > 0) std::memcpy(dest, raw->data() + from, n);
          cb(n);
        });
      });
}

void ChunkFetcher::FetchMissing(const chunk::ChunkId& id, Callback cb, bool recheck_cache) {
  std::optional<Buffer> landed;
  bool cached_meanwhile = false;
  {
    std::lock_guard lock(inflight_->mu);
    auto [it, fresh] = inflight_->chunks.try_emplace(id);
    if (it->second.landed) {
      landed = it->second.landed;
    } else if (fresh && recheck_cache && cache_->Contains(id)) {
      // Another fetch of the chunk ended (cache write done, entry gone)
      // between this read's cache miss and now: read it from the cache.
      inflight_->chunks.erase(it);
      cached_meanwhile = true;
    } else {
      it->second.waiters.push_back(std::move(cb));
      if (!fresh) {
        ++shared_;
        PromoteQueuedPrefetch(id);
        return;
      }
    }
  }
  if (landed) {
    ++shared_;
    return cb(*std::move(landed));
  }
  if (cached_meanwhile) {
    cache_->Get(id, [this, id, cb = std::move(cb)](Result<Buffer> raw) mutable {
      if (!raw.ok()) return FetchMissing(id, std::move(cb), /*recheck_cache=*/false);
      ++hits_;
      bytes_from_cache_ += raw->size();
      cb(std::move(raw));
    });
    return;
  }
  ++misses_;
  FetchFromHub({id}, Priority::kDemand);
}

void ChunkFetcher::Prefetch(const std::vector<chunk::ChunkId>& ids) {
  std::vector<chunk::ChunkId> wanted;
  {
    std::lock_guard lock(inflight_->mu);
    for (const chunk::ChunkId& id : ids) {
      if (inflight_->chunks.contains(id) || cache_->Contains(id)) continue;
      inflight_->chunks.try_emplace(id);
      wanted.push_back(id);
    }
  }
  if (wanted.empty()) return;
  prefetched_ += wanted.size();
  misses_ += wanted.size();
  for (size_t i = 0; i < wanted.size(); i += kMaxIdsPerCall) {
    FetchFromHub(
        std::vector<chunk::ChunkId>(wanted.begin() + i,
                                    wanted.begin() + std::min(wanted.size(), i + kMaxIdsPerCall)),
        Priority::kPrefetch);
  }
}

void ChunkFetcher::FetchFromHub(std::vector<chunk::ChunkId> ids, Priority priority) {
  {
    std::lock_guard lock(calls_mu_);
    if (calls_open_ >= max_calls_) {
      auto& queue = priority == Priority::kDemand ? queued_demand_ : queued_prefetch_;
      queue.insert(queue.end(), ids.begin(), ids.end());
      queued_ += ids.size();
      return;
    }
    ++calls_open_;
  }
  SendToHub(std::move(ids));
}

void ChunkFetcher::PromoteQueuedPrefetch(const chunk::ChunkId& id) {
  std::lock_guard lock(calls_mu_);
  auto it = std::find(queued_prefetch_.begin(), queued_prefetch_.end(), id);
  if (it == queued_prefetch_.end()) return;
  queued_prefetch_.erase(it);
  queued_demand_.push_back(id);
}

std::vector<chunk::ChunkId> ChunkFetcher::NextQueuedOrRelease() {
  std::lock_guard lock(calls_mu_);
  auto& queue = queued_demand_.empty() ? queued_prefetch_ : queued_demand_;
  if (queue.empty()) {
    // Notified under the lock: the destructor cannot finish before this
    // thread is done with the fetcher.
    if (--calls_open_ == 0) calls_ended_.notify_all();
    return {};
  }
  size_t n = std::min(queue.size(), kMaxIdsPerQueuedCall);
  std::vector<chunk::ChunkId> next(queue.begin(), queue.begin() + n);
  queue.erase(queue.begin(), queue.begin() + n);
  return next;
}

void ChunkFetcher::SendToHub(std::vector<chunk::ChunkId> ids) {
  std::vector<std::string> wire;
  wire.reserve(ids.size());
  for (const chunk::ChunkId& id : ids) {
    wire.emplace_back(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
  }
  link_->ReadChunks(
      std::move(wire), [this, ids = std::move(ids)](Result<std::vector<v1::ChunkData>> got) {
        std::unordered_map<chunk::ChunkId, Result<Buffer>, chunk::ChunkIdHash> results;
        if (got.ok()) {
          for (v1::ChunkData& data : *got) {
            auto id = chunk::ChunkId::FromBytes(std::span(
                reinterpret_cast<const uint8_t*>(data.chunk_id().data()), data.chunk_id().size()));
            if (!id.ok()) continue;
            bytes_from_hub_ += data.data().size();
            // Keep the message's bytes alive as the Buffer's owner: no copy for
            // uncompressed chunks.
            auto owner = std::make_shared<std::string>(std::move(*data.mutable_data()));
            Buffer stored(owner, reinterpret_cast<const uint8_t*>(owner->data()), owner->size());
            Result<Buffer> raw = chunk::DecodeChunk(stored, *id);
            if (!raw.ok()) {
              ++corrupt_;
              GetLogger("spoke")->warn("chunk {} from the hub: {}", id->ToHex(),
                                       raw.status().ToString());
            }
            results.insert_or_assign(*id, std::move(raw));
          }
        }
        for (const chunk::ChunkId& id : ids) {
          auto it = results.find(id);
          if (it == results.end()) {
            Status failed =
                got.ok() ? Status::IoError("hub did not send chunk " + id.ToHex()) : got.status();
            Complete(id, failed);
            continue;
          }
          Complete(id, it->second);
          if (it->second.ok()) {
            // A full cache only costs a refetch later; the read goes on.
            cache_->Put(id, *it->second, [inflight = inflight_, id](Status) {
              std::lock_guard lock(inflight->mu);
              inflight->chunks.erase(id);
            });
          }
        }
        // The slot passes to the next queued batch (not a recursion: the
        // call completes on a later gRPC callback).
        if (std::vector<chunk::ChunkId> next = NextQueuedOrRelease(); !next.empty()) {
          SendToHub(std::move(next));
        }
      });
}

void ChunkFetcher::Complete(const chunk::ChunkId& id, const Result<Buffer>& result) {
  std::vector<Callback> waiters;
  {
    std::lock_guard lock(inflight_->mu);
    auto it = inflight_->chunks.find(id);
    if (it == inflight_->chunks.end()) return;
    waiters = std::move(it->second.waiters);
    if (result.ok()) {
      it->second.landed = *result;
    } else {
      inflight_->chunks.erase(it);
    }
  }
  for (Callback& cb : waiters) cb(result);
}

FetchStats ChunkFetcher::Stats() const {
  return FetchStats{hits_.load(),           misses_.load(), bytes_from_cache_.load(),
                    bytes_from_hub_.load(), shared_.load(), prefetched_.load(),
                    corrupt_.load(),        queued_.load()};
}

}  // namespace geofs::spoke
