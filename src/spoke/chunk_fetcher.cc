#include "spoke/chunk_fetcher.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "chunk/chunk_codec.h"
#include "common/logging.h"
#include "spoke/hub_link.h"

namespace geofs::spoke {
namespace {

// ReadChunks takes at most this many ids.
constexpr size_t kMaxIdsPerCall = 1024;
// Batches drained from the queue: chunks arrive one by one, but a call's
// chunks are sent in order, so a READ queued behind a large batch would
// wait for the chunks ahead of it.
constexpr size_t kMaxIdsPerQueuedCall = 8;

}  // namespace

ChunkFetcher::~ChunkFetcher() {
  std::unique_lock lock(calls_mu_);
  calls_ended_.wait(lock, [&] { return calls_open_ == 0; });
}

void ChunkFetcher::GetRange(const chunk::ChunkId& id, uint64_t offset, uint64_t length,
                            Callback cb, ReadNote* note) {
  cache_->GetRange(id, offset, length,
                   [this, id, offset, length, note, cb = std::move(cb)](Result<Buffer> cached) mutable {
                     if (cached.ok()) {
                       ++hits_;
                       bytes_from_cache_ += cached->size();
                       return cb(std::move(cached));
                     }
                     FetchMissing(
                         id,
                         [offset, length, cb = std::move(cb)](Result<Buffer> raw) {
                           if (!raw.ok()) return cb(std::move(raw));
                           uint64_t from = std::min<uint64_t>(offset, raw->size());
                           cb(raw->Slice(from, std::min<uint64_t>(length, raw->size() - from)));
                         },
                         note);
                   });
}

void ChunkFetcher::ReadRangeInto(const chunk::ChunkId& id, uint64_t offset, uint64_t length,
                                 uint8_t* dest, IntoCallback cb, ReadNote* note) {
  cache_->ReadRangeInto(
      id, offset, length, dest,
      [this, id, offset, length, dest, note, cb = std::move(cb)](Result<size_t> copied) mutable {
        if (copied.ok()) {
          ++hits_;
          bytes_from_cache_ += *copied;
          return cb(copied);
        }
        FetchMissing(
            id,
            [offset, length, dest, cb = std::move(cb)](Result<Buffer> raw) {
              if (!raw.ok()) return cb(raw.status());
              uint64_t from = std::min<uint64_t>(offset, raw->size());
              uint64_t n = std::min<uint64_t>(length, raw->size() - from);
              if (n > 0) std::memcpy(dest, raw->data() + from, n);
              cb(n);
            },
            note);
      });
}

void ChunkFetcher::FetchMissing(const chunk::ChunkId& id, Callback cb, ReadNote* note,
                                bool recheck_cache) {
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
      if (note) note->Saw(fresh ? prefetch::AccessOutcome::kMiss : prefetch::AccessOutcome::kJoined);
      if (!fresh) {
        ++shared_;
        PromoteQueuedPrefetch(id);
        return;
      }
    }
  }
  if (landed) {
    ++shared_;
    if (note) note->Saw(prefetch::AccessOutcome::kJoined);
    return cb(*std::move(landed));
  }
  if (cached_meanwhile) {
    cache_->Get(id, [this, id, note, cb = std::move(cb)](Result<Buffer> raw) mutable {
      if (!raw.ok()) return FetchMissing(id, std::move(cb), note, /*recheck_cache=*/false);
      ++hits_;
      bytes_from_cache_ += raw->size();
      cb(std::move(raw));
    });
    return;
  }
  ++misses_;
  FetchFromHub({id}, Priority::kDemand);
}

std::vector<chunk::ChunkId> ChunkFetcher::Prefetch(const std::vector<chunk::ChunkId>& ids,
                                                   PrefetchDone done) {
  std::vector<chunk::ChunkId> wanted;
  {
    std::lock_guard lock(inflight_->mu);
    for (const chunk::ChunkId& id : ids) {
      if (inflight_->chunks.contains(id) || cache_->Contains(id)) continue;
      inflight_->chunks.try_emplace(id).first->second.prefetch_done = done;
      wanted.push_back(id);
    }
  }
  if (wanted.empty()) return wanted;
  prefetched_ += wanted.size();
  misses_ += wanted.size();
  for (size_t i = 0; i < wanted.size(); i += kMaxIdsPerCall) {
    FetchFromHub(
        std::vector<chunk::ChunkId>(wanted.begin() + i,
                                    wanted.begin() + std::min(wanted.size(), i + kMaxIdsPerCall)),
        Priority::kPrefetch);
  }
  return wanted;
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
  // The ids not answered yet; both callbacks run on the call's reactor,
  // one after the other, so it needs no lock.
  auto pending = std::make_shared<std::unordered_set<chunk::ChunkId, chunk::ChunkIdHash>>(
      ids.begin(), ids.end());
  link_->ReadChunks(
      std::move(wire),
      [this, pending](v1::ChunkData&& data) {
        auto id = chunk::ChunkId::FromBytes(std::span(
            reinterpret_cast<const uint8_t*>(data.chunk_id().data()), data.chunk_id().size()));
        if (!id.ok() || pending->erase(*id) == 0) return;  // not asked for, or twice
        bytes_from_hub_ += data.data().size();
        // The message's bytes stay alive as the Buffer's owner: no copy for
        // uncompressed chunks.
        auto owner = std::make_shared<std::string>(std::move(*data.mutable_data()));
        Buffer stored(owner, reinterpret_cast<const uint8_t*>(owner->data()), owner->size());
        Result<Buffer> raw = chunk::DecodeChunk(stored, *id);
        if (!raw.ok()) {
          ++corrupt_;
          GetLogger("spoke")->warn("chunk {} from the hub: {}", id->ToHex(),
                                   raw.status().ToString());
        }
        Landed(*id, std::move(raw));
      },
      [this, pending](Status status) {
        for (const chunk::ChunkId& id : *pending) {
          Landed(id, status.ok() ? Status::IoError("hub did not send chunk " + id.ToHex())
                                 : status);
        }
        // The slot passes to the next queued batch (not a recursion: the
        // call completes on a later gRPC callback).
        if (std::vector<chunk::ChunkId> next = NextQueuedOrRelease(); !next.empty()) {
          SendToHub(std::move(next));
        }
      });
}

void ChunkFetcher::Landed(const chunk::ChunkId& id, Result<Buffer> raw) {
  PrefetchDone done = Complete(id, raw);
  if (!raw.ok()) {
    if (done) done(id, raw.status());
    return;
  }
  // A full cache only costs a refetch later; the read goes on.
  cache_->Put(id, *raw, [inflight = inflight_, id, done = std::move(done)](Status s) {
    {
      std::lock_guard lock(inflight->mu);
      inflight->chunks.erase(id);
    }
    if (done) done(id, s);
  });
}

ChunkFetcher::PrefetchDone ChunkFetcher::Complete(const chunk::ChunkId& id,
                                                  const Result<Buffer>& result) {
  std::vector<Callback> waiters;
  PrefetchDone done;
  {
    std::lock_guard lock(inflight_->mu);
    auto it = inflight_->chunks.find(id);
    if (it == inflight_->chunks.end()) return nullptr;
    waiters = std::move(it->second.waiters);
    done = std::move(it->second.prefetch_done);
    if (result.ok()) {
      it->second.landed = *result;
    } else {
      inflight_->chunks.erase(it);
    }
  }
  for (Callback& cb : waiters) cb(result);
  return done;
}

FetchStats ChunkFetcher::Stats() const {
  return FetchStats{hits_.load(),           misses_.load(), bytes_from_cache_.load(),
                    bytes_from_hub_.load(), shared_.load(), prefetched_.load(),
                    corrupt_.load(),        queued_.load()};
}

}  // namespace geofs::spoke
