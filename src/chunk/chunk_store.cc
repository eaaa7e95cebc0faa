#include "chunk/chunk_store.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "common/logging.h"

namespace geofs::chunk {

Status ChunkStoreOptions::Validate() const {
  GEOFS_RETURN_IF_ERROR(codec.Validate());
  if (max_chunk_size == 0 || max_chunk_size > kMaxChunkSizeLimit) {
    return Status::InvalidArgument("chunk store: max_chunk_size must be in (0, 64 MiB]");
  }
  if (missing_parallelism < 1) {
    return Status::InvalidArgument("chunk store: missing_parallelism must be at least 1");
  }
  return Status::Ok();
}

ChunkStore::ChunkStore(object::ObjectStore* store, ChunkStoreOptions options)
    : store_(store), options_(std::move(options)) {}

Result<PutChunkResult> ChunkStore::Put(std::span<const uint8_t> raw) {
  if (raw.size() > options_.max_chunk_size) {
    return Status::InvalidArgument("chunk of " + std::to_string(raw.size()) +
                                   " bytes exceeds the limit of " +
                                   std::to_string(options_.max_chunk_size));
  }
  PutChunkResult result;
  result.id = ChunkId::Of(raw);
  result.raw_size = raw.size();
  std::string key = result.id.ObjectKey();
  // Hash and look before compressing: a duplicate costs one HEAD.
  auto head = store_->Head(key);
  if (head.ok()) {
    result.stored_size = head->size;
    return result;
  }
  if (head.status() != StatusCode::kNotFound) return head.status();
  EncodedChunk encoded = EncodeChunk(raw, options_.codec);
  GEOFS_RETURN_IF_ERROR(store_->Put(key, encoded.bytes.span()));
  result.uploaded = true;
  result.stored_size = encoded.bytes.size();
  return result;
}

Result<PutChunkResult> ChunkStore::PutEncoded(const ChunkId& id, const Buffer& stored) {
  std::string key = id.ObjectKey();
  auto head = store_->Head(key);
  if (!head.ok() && head.status() != StatusCode::kNotFound) return head.status();
  GEOFS_ASSIGN_OR_RETURN(Buffer raw, DecodeChunk(stored, id, options_.max_chunk_size));
  PutChunkResult result;
  result.id = id;
  result.raw_size = raw.size();
  if (head.ok()) {
    result.stored_size = head->size;
    return result;
  }
  GEOFS_RETURN_IF_ERROR(store_->Put(key, stored.span()));
  result.uploaded = true;
  result.stored_size = stored.size();
  return result;
}

Result<Buffer> ChunkStore::GetEncoded(const ChunkId& id) { return store_->Get(id.ObjectKey()); }

Result<Buffer> ChunkStore::Get(const ChunkId& id) {
  GEOFS_ASSIGN_OR_RETURN(Buffer stored, GetEncoded(id));
  auto raw = DecodeChunk(stored, id, options_.max_chunk_size);
  if (!raw.ok()) {
    return Status(raw.status().code(), std::string(raw.status().message()) + " (object " +
                                           store_->Describe() + " " + id.ObjectKey() + ")");
  }
  return raw;
}

Result<bool> ChunkStore::Has(const ChunkId& id) { return store_->Exists(id.ObjectKey()); }

Result<std::vector<ChunkId>> ChunkStore::Missing(std::span<const ChunkId> ids) {
  std::vector<ChunkId> unique;
  {
    std::unordered_set<ChunkId, ChunkIdHash> seen;
    for (const ChunkId& id : ids) {
      if (seen.insert(id).second) unique.push_back(id);
    }
  }
  // missing[i] is set by whichever worker checks unique[i].
  std::vector<uint8_t> missing(unique.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status error;
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      size_t i = next.fetch_add(1);
      if (i >= unique.size()) return;
      auto exists = store_->Exists(unique[i].ObjectKey());
      if (!exists.ok()) {
        std::lock_guard lock(error_mu);
        if (!failed.exchange(true)) error = exists.status();
        return;
      }
      missing[i] = !*exists;
    }
  };
  size_t workers = std::min(unique.size(), static_cast<size_t>(options_.missing_parallelism));
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::jthread> threads;
    threads.reserve(workers - 1);
    for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
    work();
  }  // jthreads join here
  if (failed) return error;
  std::vector<ChunkId> out;
  for (size_t i = 0; i < unique.size(); ++i) {
    if (missing[i]) out.push_back(unique[i]);
  }
  return out;
}

Status ChunkStore::Delete(const ChunkId& id) { return store_->Delete(id.ObjectKey()); }

Status ChunkStore::ForEachChunk(const std::function<Status(const ChunkInfo&)>& fn) {
  return store_->ForEach(kChunkKeyPrefix, [&](const object::ObjectInfo& info) -> Status {
    auto id = ChunkId::FromObjectKey(info.key);
    if (!id.ok()) {
      GetLogger("chunk")->warn("{}: skipping '{}': not a chunk key", store_->Describe(), info.key);
      return Status::Ok();
    }
    return fn(ChunkInfo{*id, info.size, info.modified});
  });
}

}  // namespace geofs::chunk
