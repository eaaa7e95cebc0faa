#include "chunk/chunk_store.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "common/logging.h"
#include "common/parallel.h"

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

Status ChunkStore::TooLarge(size_t size) const {
  return Status::InvalidArgument("chunk of " + std::to_string(size) +
                                 " bytes exceeds the limit of " +
                                 std::to_string(options_.max_chunk_size));
}

ChunkStore::ChunkStore(object::ObjectStore* store, ChunkStoreOptions options)
    : store_(store), options_(std::move(options)) {}

Result<PutChunkResult> ChunkStore::Put(std::span<const uint8_t> raw) {
  if (raw.size() > options_.max_chunk_size) return TooLarge(raw.size());
  const NamedChunk one{ChunkId::Of(raw), raw};
  return std::move(PutNamedMany(std::span(&one, 1), 1)[0]);
}

std::vector<Result<PutChunkResult>> ChunkStore::PutNamedMany(std::span<const NamedChunk> chunks,
                                                             int parallelism) {
  std::vector<Result<PutChunkResult>> out(chunks.size(), Status::Internal("not checked"));
  std::vector<std::string> keys(chunks.size());
  std::vector<EncodedChunk> encoded(chunks.size());  // set where the chunk is to be stored
  // Items never fail the loop: each keeps its own result.
  (void)ParallelFor(chunks.size(), parallelism, [&](size_t i) {
    const NamedChunk& chunk = chunks[i];
    if (chunk.raw.size() > options_.max_chunk_size) {
      out[i] = TooLarge(chunk.raw.size());
      return Status::Ok();
    }
    keys[i] = chunk.id.ObjectKey();
    PutChunkResult result;
    result.id = chunk.id;
    result.raw_size = chunk.raw.size();
    // Look before compressing: a duplicate costs one HEAD.
    auto head = store_->Head(keys[i]);
    if (head.ok()) {
      result.stored_size = head->size;
    } else if (head.status() == StatusCode::kNotFound) {
      encoded[i] = EncodeChunk(chunk.raw, options_.codec);
      result.stored_size = encoded[i].bytes.size();
    } else {
      out[i] = head.status();
      return Status::Ok();
    }
    out[i] = result;
    return Status::Ok();
  });
  std::vector<object::ObjectPut> puts;
  std::vector<size_t> put_index;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (!out[i].ok() || encoded[i].bytes.empty()) continue;
    puts.push_back({keys[i], encoded[i].bytes.span()});
    put_index.push_back(i);
  }
  StoreTogether(puts, put_index, parallelism, &out);
  return out;
}

Result<PutChunkResult> ChunkStore::PutEncoded(const ChunkId& id, const Buffer& stored) {
  const EncodedUpload one{id, stored};
  return std::move(PutEncodedMany(std::span(&one, 1), 1)[0]);
}

std::vector<Result<PutChunkResult>> ChunkStore::PutEncodedMany(
    std::span<const EncodedUpload> chunks, int parallelism) {
  std::vector<Result<PutChunkResult>> out(chunks.size(), Status::Internal("not checked"));
  std::vector<std::string> keys(chunks.size());
  std::vector<uint8_t> absent(chunks.size(), 0);
  // Items never fail the loop: each keeps its own result.
  (void)ParallelFor(chunks.size(), parallelism, [&](size_t i) {
    const EncodedUpload& chunk = chunks[i];
    keys[i] = chunk.id.ObjectKey();
    auto head = store_->Head(keys[i]);
    if (!head.ok() && head.status() != StatusCode::kNotFound) {
      out[i] = head.status();
      return Status::Ok();
    }
    auto raw = DecodeChunk(chunk.stored, chunk.id, options_.max_chunk_size);
    if (!raw.ok()) {
      out[i] = raw.status();
      return Status::Ok();
    }
    PutChunkResult result;
    result.id = chunk.id;
    result.raw_size = raw->size();
    result.stored_size = head.ok() ? head->size : chunk.stored.size();
    absent[i] = !head.ok();
    out[i] = result;
    return Status::Ok();
  });
  std::vector<object::ObjectPut> puts;
  std::vector<size_t> put_index;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (!out[i].ok() || !absent[i]) continue;
    puts.push_back({keys[i], chunks[i].stored.span()});
    put_index.push_back(i);
  }
  StoreTogether(puts, put_index, parallelism, &out);
  return out;
}

void ChunkStore::StoreTogether(std::span<const object::ObjectPut> puts,
                               std::span<const size_t> put_index, int parallelism,
                               std::vector<Result<PutChunkResult>>* out) {
  if (puts.empty()) return;
  std::vector<Status> stored = store_->PutMany(puts, parallelism);
  for (size_t j = 0; j < puts.size(); ++j) {
    Result<PutChunkResult>& r = (*out)[put_index[j]];
    if (stored[j].ok()) {
      r->uploaded = true;
    } else {
      r = stored[j];
    }
  }
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
  // missing[i] is set by whichever thread checks unique[i].
  std::vector<uint8_t> missing(unique.size(), 0);
  GEOFS_RETURN_IF_ERROR(ParallelFor(unique.size(), options_.missing_parallelism, [&](size_t i) {
    GEOFS_ASSIGN_OR_RETURN(bool exists, store_->Exists(unique[i].ObjectKey()));
    missing[i] = !exists;
    return Status::Ok();
  }));
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
