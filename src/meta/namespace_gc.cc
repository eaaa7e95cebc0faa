// Namespace: chunk registration and garbage collection.
#include <algorithm>
#include <map>

#include "meta/namespace.h"
#include "meta/schema.h"
#include "meta/txn.h"

namespace geofs::meta {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

WallTime Minus(WallTime t, std::chrono::nanoseconds d) {
  const int64_t total = t.sec * kNanosPerSecond + t.nsec - d.count();
  int64_t sec = total / kNanosPerSecond;
  int64_t nsec = total % kNanosPerSecond;
  if (nsec < 0) {
    nsec += kNanosPerSecond;
    --sec;
  }
  return {sec, static_cast<uint32_t>(nsec)};
}

// Counts a chunk record's stored size into (`in`) or out of the statistics:
// its bytes, or the record among the unsized ones (stored_size 0).
void CountStoredSize(NamespaceStats& stats, uint64_t stored_size, bool in) {
  uint64_t& counter = stored_size == 0 ? stats.unsized_chunks : stats.stored_bytes;
  const uint64_t amount = stored_size == 0 ? 1 : stored_size;
  counter = in ? counter + amount : counter - amount;
}

Result<std::optional<ChunkInfo>> ReadChunk(KvReader& reader, const ChunkId& id) {
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value, reader.Get(schema::ChunkKey(id)));
  if (!value) return std::optional<ChunkInfo>();
  GEOFS_ASSIGN_OR_RETURN(ChunkInfo c, schema::DecodeChunk(id, *value));
  return std::optional<ChunkInfo>(c);
}

}  // namespace

Status Namespace::RegisterChunks(std::span<const ChunkRef> chunks, bool sync) {
  std::map<ChunkId, uint64_t> sizes;
  for (const ChunkRef& ref : chunks) {
    if (ref.size == 0) return Status::InvalidArgument("empty chunk " + ChunkIdHex(ref.id));
    auto [it, inserted] = sizes.emplace(ref.id, ref.size);
    if (!inserted && it->second != ref.size) {
      return Status::InvalidArgument("chunk " + ChunkIdHex(ref.id) + " given two sizes");
    }
  }
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  NamespaceStats& stats = txn.stats();
  for (const auto& [id, size] : sizes) {
    GEOFS_ASSIGN_OR_RETURN(std::optional<ChunkInfo> known, ReadChunk(*store_, id));
    ChunkInfo c;
    if (known) {
      c = *known;
      if (c.size != size) {
        return Status::InvalidArgument("chunk " + ChunkIdHex(id) + " has size " +
                                       std::to_string(c.size));
      }
      if (c.collecting) {
        return Status::Unavailable("chunk " + ChunkIdHex(id) + " is being garbage-collected");
      }
      if (c.refs > 0) continue;
      txn.batch().Delete(schema::GcKey(c.unreferenced_since, id));
    } else {
      c.id = id;
      c.size = size;
      ++stats.unreferenced_chunks;
      stats.unreferenced_bytes += size;
      CountStoredSize(stats, 0, /*in=*/true);  // until RecordStoredSizes, once stored
    }
    c.unreferenced_since = txn.now();
    txn.batch().Put(schema::ChunkKey(id), schema::EncodeChunk(c));
    txn.batch().Put(schema::GcKey(c.unreferenced_since, id), {});
  }
  return Commit(txn, lock, sync);
}

Status Namespace::RecordStoredSizes(std::span<const StoredChunkSize> sizes, bool sync) {
  std::map<ChunkId, uint64_t> latest;
  for (const StoredChunkSize& s : sizes) {
    if (s.stored_size != 0) latest[s.id] = s.stored_size;  // 0: nothing learnt
  }
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  NamespaceStats& stats = txn.stats();
  for (const auto& [id, stored_size] : latest) {
    GEOFS_ASSIGN_OR_RETURN(std::optional<ChunkInfo> c, ReadChunk(*store_, id));
    // Unknown: collected meanwhile, its object is gone too.
    if (!c || c->stored_size == stored_size) continue;
    CountStoredSize(stats, c->stored_size, /*in=*/false);
    CountStoredSize(stats, stored_size, /*in=*/true);
    c->stored_size = stored_size;
    txn.batch().Put(schema::ChunkKey(id), schema::EncodeChunk(*c));
  }
  return Commit(txn, lock, sync);
}

Result<std::optional<ChunkInfo>> Namespace::GetChunk(const ChunkId& id) {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  return ReadChunk(*snap, id);
}

Result<std::vector<ChunkInfo>> Namespace::ListUnreferenced(WallTime before, size_t max) {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  std::vector<ChunkInfo> out;
  std::unique_ptr<KvIterator> it =
      snap->NewIterator(schema::TagStart(schema::kGcTag), schema::GcLimit(before));
  for (it->Seek(""); it->Valid() && out.size() < max; it->Next()) {
    WallTime since;
    ChunkId id;
    if (!schema::ParseGcKey(it->key(), &since, &id)) {
      return Status::Corruption("malformed GC index key");
    }
    GEOFS_ASSIGN_OR_RETURN(std::optional<ChunkInfo> c, ReadChunk(*snap, id));
    if (!c || c->refs != 0 || c->unreferenced_since != since) {
      return Status::Corruption("GC index disagrees with chunk " + ChunkIdHex(id));
    }
    out.push_back(*c);
  }
  GEOFS_RETURN_IF_ERROR(it->status());
  return out;
}

Result<bool> Namespace::MarkCollecting(const ChunkInfo& candidate) {
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(std::optional<ChunkInfo> c, ReadChunk(*store_, candidate.id));
  // Referenced again, or re-registered (a writer is about to use it).
  if (!c || c->refs != 0 || c->collecting ||
      c->unreferenced_since != candidate.unreferenced_since) {
    return false;
  }
  c->collecting = true;
  txn.batch().Put(schema::ChunkKey(c->id), schema::EncodeChunk(*c));
  GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  return true;
}

Status Namespace::ForgetChunk(const ChunkId& id) {
  std::unique_lock lock(write_mu_);
  Txn txn(store_, Now(), stats_);
  GEOFS_ASSIGN_OR_RETURN(std::optional<ChunkInfo> c, ReadChunk(*store_, id));
  if (!c || !c->collecting || c->refs != 0) {
    return Status::Internal("chunk " + ChunkIdHex(id) + " is not being collected");
  }
  txn.batch().Delete(schema::ChunkKey(id));
  txn.batch().Delete(schema::GcKey(c->unreferenced_since, id));
  NamespaceStats& stats = txn.stats();
  --stats.unreferenced_chunks;
  stats.unreferenced_bytes -= c->size;
  CountStoredSize(stats, c->stored_size, /*in=*/false);
  return Commit(txn, lock);
}

Result<bool> Namespace::CollectOrphan(const ChunkId& id, uint64_t stored_size, WallTime stored_at,
                                      const std::function<Status(const ChunkId&)>& delete_fn) {
  {
    std::unique_lock lock(write_mu_);
    Txn txn(store_, Now(), stats_);
    GEOFS_ASSIGN_OR_RETURN(std::optional<ChunkInfo> known, ReadChunk(*store_, id));
    if (known) return false;
    // Recorded as CollectGarbage would leave a chunk it started deleting,
    // so that a crash or a failed delete is retried by its next pass.
    ChunkInfo c;
    c.id = id;
    // The raw size would take reading the object back (from S3, only to
    // delete it); a record needs a nonzero one, and this one leaves the
    // statistics when the record does.
    c.size = std::max<uint64_t>(stored_size, 1);
    c.stored_size = stored_size;
    c.unreferenced_since = stored_at;
    c.collecting = true;
    txn.batch().Put(schema::ChunkKey(id), schema::EncodeChunk(c));
    txn.batch().Put(schema::GcKey(c.unreferenced_since, id), {});
    NamespaceStats& stats = txn.stats();
    ++stats.unreferenced_chunks;
    stats.unreferenced_bytes += c.size;
    CountStoredSize(stats, stored_size, /*in=*/true);
    GEOFS_RETURN_IF_ERROR(Commit(txn, lock));
  }
  GEOFS_RETURN_IF_ERROR(delete_fn(id));
  GEOFS_RETURN_IF_ERROR(ForgetChunk(id));
  return true;
}

Result<GcResult> Namespace::CollectGarbage(WallTime now, std::chrono::nanoseconds grace,
                                           const std::function<Status(const ChunkId&)>& delete_fn,
                                           size_t max) {
  // A strict bound: a chunk unreferenced exactly `grace` ago qualifies.
  WallTime before = Minus(now, grace);
  before = Minus(before, std::chrono::nanoseconds(-1));
  GEOFS_ASSIGN_OR_RETURN(std::vector<ChunkInfo> candidates, ListUnreferenced(before, max));
  GcResult result;
  for (const ChunkInfo& c : candidates) {
    if (!c.collecting) {
      GEOFS_ASSIGN_OR_RETURN(bool marked, MarkCollecting(c));
      if (!marked) continue;
    }
    if (!delete_fn(c.id).ok()) {
      ++result.failed;
      continue;
    }
    GEOFS_RETURN_IF_ERROR(ForgetChunk(c.id));
    ++result.deleted;
  }
  return result;
}

Result<bool> Namespace::MarkRunning(WallTime now) {
  std::unique_lock lock(write_mu_);
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> clean, store_->Get(schema::CleanStopKey()));
  WriteBatch batch;
  if (clean) batch.Delete(schema::CleanStopKey());
  // The sweep also records the stored sizes the namespace lacks (a store
  // from before they were recorded). A later time covers every object an
  // earlier due sweep would have.
  if (!clean || stats_.unsized_chunks > 0) {
    batch.Put(schema::OrphanSweepKey(), schema::EncodeTime(now));
  }
  GEOFS_RETURN_IF_ERROR(store_->Write(batch, /*sync=*/true));
  return clean.has_value();
}

Status Namespace::MarkCleanStop() {
  std::unique_lock lock(write_mu_);
  WriteBatch batch;
  batch.Put(schema::CleanStopKey(), {});
  return store_->Write(batch, /*sync=*/true);
}

Result<std::optional<WallTime>> Namespace::OrphanSweepDue() {
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value, store_->Get(schema::OrphanSweepKey()));
  if (!value) return std::optional<WallTime>();
  GEOFS_ASSIGN_OR_RETURN(WallTime due, schema::DecodeTime(*value));
  return std::optional<WallTime>(due);
}

Status Namespace::OrphanSweepDone(WallTime due) {
  std::unique_lock lock(write_mu_);
  GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> value, store_->Get(schema::OrphanSweepKey()));
  if (!value || *value != schema::EncodeTime(due)) return Status::Ok();
  WriteBatch batch;
  batch.Delete(schema::OrphanSweepKey());
  return store_->Write(batch, /*sync=*/true);
}

}  // namespace geofs::meta
