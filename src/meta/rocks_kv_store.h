// RocksKvStore: the KvStore of the hub, on RocksDB.
//
// Choices, and why:
//  - Durability by group commit: Write appends the batch to RocksDB's
//    write-ahead log unsynced (visible at once), and Sync fsyncs the log for
//    every write that returned before it. Concurrent Sync callers share one
//    fsync, so N writers committing at once cost one fsync, not N; a single
//    writer pays the same as a synced Write.
//  - Bloom filters on whole keys (10 bits/key): most namespace reads are
//    point lookups of keys that may be absent (LOOKUP of a missing name,
//    refcount of a new chunk), which the filter answers without a read.
//    Filters and indexes are partitioned and live in the block cache with
//    their top level pinned, so memory stays bounded by the cache and a
//    read loads one small partition, however large the database grows.
//  - No prefix extractor: every scan is bounded above (iterate_upper_bound),
//    and it lands inside a populated range (a directory's entries, a file's
//    extents); a prefix extractor would only speed up seeks into empty
//    prefixes, at the cost of prefix-mode iterator pitfalls (a scan across
//    prefixes, as fsck does, would need total_order_seek).
//  - Deletion-triggered compaction: removing most of a large directory
//    leaves runs of tombstones that every later listing would step over; SST
//    files dense in deletions are compacted early.
//  - A failed write (a full disk) stops the store: reads go on, writes are
//    refused (kNoSpace) until Resume finds room on the disk and reopens the
//    DB, which starts a fresh log. RocksDB's own recovery is off: in 7.8 it
//    could reuse the failed log file, and the next write would abort.
//
// Thread-safe. One process opens a directory at a time (RocksDB's LOCK).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "meta/kv_store.h"

namespace geofs::meta {

struct RocksKvStoreOptions {
  // Create an empty store if `dir` holds none.
  bool create_if_missing = true;
  // LRU cache of uncompressed blocks (and, inside it, index and filter
  // blocks), shared by all reads.
  size_t block_cache_bytes = size_t{64} << 20;
  // Bits per key of the bloom filters; 0 disables them.
  int bloom_bits_per_key = 10;
  // Memtable size before a flush to an SST file.
  size_t write_buffer_bytes = size_t{64} << 20;
  // Flush and compaction threads.
  int background_jobs = 2;
  // Once a failed write (a full disk) has stopped the store, Resume reopens
  // it when the disk has this much room, trying at most once per
  // `resume_interval` and waiting up to `resume_wait` for readers to finish.
  uint64_t resume_min_free_bytes = uint64_t{16} << 20;
  std::chrono::milliseconds resume_interval{1000};
  std::chrono::milliseconds resume_wait{500};
};

class RocksKvStore : public KvStore {
 public:
  // Opens (or creates) the store in directory `dir`.
  static Result<std::unique_ptr<RocksKvStore>> Open(const std::string& dir,
                                                    const RocksKvStoreOptions& options = {});
  // Closes the database; writes not yet Sync'ed may be lost.
  ~RocksKvStore() override;
  RocksKvStore(const RocksKvStore&) = delete;
  RocksKvStore& operator=(const RocksKvStore&) = delete;

  Result<std::optional<std::string>> Get(std::string_view key) override;
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override;
  Status Sync() override;
  std::unique_ptr<KvReader> NewSnapshot() override;
  Result<bool> Resume() override;
  bool Stopped() const override;

 protected:
  Status DoWrite(const WriteBatch& batch, bool sync) override;

 private:
  struct Impl;
  explicit RocksKvStore(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace geofs::meta
