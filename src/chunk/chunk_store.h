// ChunkStore: content-addressed chunks in an ObjectStore.
//
// A chunk is stored once, under ChunkId::ObjectKey(), in the codec's stored
// form (compressed when that pays). Reads are always verified against the id:
// corrupt bytes are kCorruption, never returned.
//
// What is not here: reference counts and garbage collection live with the
// namespace (RocksDB), which decides what is unreferenced; this class only
// offers what GC needs (List with modification times, and Delete). Ordering
// for crash safety is the caller's: Put returns after the chunk is durable, so
// commit the namespace change that references it afterwards. Put skips the
// upload when the object exists; a GC running concurrently must therefore
// spare chunks younger than its grace period (ChunkInfo::modified).
//
// Thread-safe when the ObjectStore is (all of ours are); calls block, so run
// them on worker threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "chunk/chunk_codec.h"
#include "chunk/chunk_id.h"
#include "object/object_store.h"

namespace geofs::chunk {

struct ChunkStoreOptions {
  ChunkCodecOptions codec;
  // Largest raw chunk accepted by Put and by decoding (a guard against
  // corrupt length fields).
  size_t max_chunk_size = kMaxChunkSizeLimit;
  // Object-store calls Missing() keeps in flight at once (S3 latency hides
  // behind parallelism; local stores barely care).
  int missing_parallelism = 16;

  Status Validate() const;
};

struct PutChunkResult {
  ChunkId id;
  // False when the chunk was already stored (deduplicated).
  bool uploaded = false;
  uint64_t raw_size = 0;
  // Size of the stored form: what the object store holds for this chunk.
  uint64_t stored_size = 0;
};

// A chunk's raw bytes and the id its writer computed, for PutNamedMany.
struct NamedChunk {
  ChunkId id;
  std::span<const uint8_t> raw;
};

// A chunk received in stored form, for PutEncodedMany.
struct EncodedUpload {
  ChunkId id;
  Buffer stored;
};

struct ChunkInfo {
  ChunkId id;
  uint64_t stored_size = 0;
  WallTime modified;
};

class ChunkStore {
 public:
  // REQUIRES: `store` outlives this object; options.Validate().ok().
  explicit ChunkStore(object::ObjectStore* store, ChunkStoreOptions options = {});

  // Stores `raw` unless a chunk with its id exists; durable on return.
  // kInvalidArgument if raw is larger than max_chunk_size.
  Result<PutChunkResult> Put(std::span<const uint8_t> raw);
  // Put of several chunks the caller has hashed already (so they are not
  // hashed again): those not stored yet are compressed on up to
  // `parallelism` threads and stored together (ObjectStore::PutMany). One
  // result per chunk, in order. REQUIRES: each id is ChunkId::Of(raw).
  std::vector<Result<PutChunkResult>> PutNamedMany(std::span<const NamedChunk> chunks,
                                                   int parallelism);
  // Stores a chunk received in stored form (a writer that compressed it
  // already) after checking it decodes to bytes that hash to `id`:
  // kCorruption otherwise, and nothing is stored.
  Result<PutChunkResult> PutEncoded(const ChunkId& id, const Buffer& stored);
  // PutEncoded of several chunks: each is checked (on up to `parallelism`
  // threads), then those not stored yet are stored together
  // (ObjectStore::PutMany: the local store makes them durable at once).
  // One result per chunk, in order.
  std::vector<Result<PutChunkResult>> PutEncodedMany(std::span<const EncodedUpload> chunks,
                                                     int parallelism);

  // The raw bytes, verified. kNotFound, kCorruption, or the store's error.
  Result<Buffer> Get(const ChunkId& id);
  // The stored form as is, unverified: for sending on to a reader that
  // decodes (and so verifies) it itself.
  Result<Buffer> GetEncoded(const ChunkId& id);

  Result<bool> Has(const ChunkId& id);
  // The ids in `ids` that are not stored, in first-seen order without
  // duplicates. Any error other than "not found" fails the whole call.
  Result<std::vector<ChunkId>> Missing(std::span<const ChunkId> ids);

  // Removes a chunk; OK if it was not there.
  Status Delete(const ChunkId& id);
  // Calls `fn` for every stored chunk, in id order; stops at and returns its
  // first error. Objects under the chunk prefix whose keys are not chunk keys
  // are skipped (and logged).
  Status ForEachChunk(const std::function<Status(const ChunkInfo&)>& fn);

 private:
  Status TooLarge(size_t size) const;  // kInvalidArgument naming the limit
  // Stores puts[j] (chunk put_index[j] of *out) with one PutMany, marking
  // each stored chunk uploaded or replacing its result by the failure.
  void StoreTogether(std::span<const object::ObjectPut> puts, std::span<const size_t> put_index,
                     int parallelism, std::vector<Result<PutChunkResult>>* out);
  object::ObjectStore* const store_;
  const ChunkStoreOptions options_;
};

}  // namespace geofs::chunk
