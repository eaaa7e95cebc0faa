#include "meta/rocks_kv_store.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/table_properties_collectors.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "common/logging.h"

namespace geofs::meta {
namespace {

// Compact an SST early when a window of this many entries holds at least
// kDeletionTrigger tombstones.
constexpr size_t kDeletionWindow = 64 * 1024;
constexpr size_t kDeletionTrigger = 16 * 1024;

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status::Ok();
  const std::string message = "rocksdb: " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(message);
  if (s.IsCorruption()) return Status::Corruption(message);
  if (s.IsNoSpace()) return Status::NoSpace(message);
  if (s.IsIOError()) return Status::IoError(message);
  if (s.IsBusy() || s.IsTryAgain() || s.IsTimedOut()) return Status::Unavailable(message);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(message);
  return Status::Internal(message);
}

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

// A failed log or table write (a full disk) stops the DB: every later
// write is refused with that error, reads go on. RocksDB 7.8 would clear
// the error by itself once space returns, but if the memtable is empty then
// it keeps the failed log file, and the next write to it aborts the process
// (librocksdb built with asserts). So the DB stays stopped until the store
// is opened again (the hub restarted), which starts a fresh log.
class StayStoppedAfterWriteErrors final : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status error,
                            bool* auto_recovery) override {
    *auto_recovery = false;
    GetLogger("meta")->error(
        "the namespace store refuses writes after a failed write ({}); reads go on. "
        "Make room (or fix the disk) and restart the process.",
        error.ToString());
  }
};

// RocksDB's warnings and errors, in the process's log. Its default LOG file
// lives in the DB directory: on a full disk a failed write to it leaves the
// file in an error state, and RocksDB's next message (the one reporting the
// full disk) then trips an assertion in librocksdb builds with asserts.
class RocksLogger final : public rocksdb::Logger {
 public:
  RocksLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), log_(GetLogger("rocksdb")) {}

  void Logv(rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    log_->log(level >= rocksdb::InfoLogLevel::ERROR_LEVEL  ? spdlog::level::err
              : level == rocksdb::InfoLogLevel::WARN_LEVEL ? spdlog::level::warn
                                                           : spdlog::level::info,
              "{}", line);
  }
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }

 private:
  std::shared_ptr<spdlog::logger> log_;
};

class RocksIterator : public KvIterator {
 public:
  RocksIterator(rocksdb::DB* db, const rocksdb::Snapshot* snapshot, std::string_view start,
                std::string_view limit)
      : start_(start), limit_(limit), lower_(start_), upper_(limit_) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    ro.iterate_lower_bound = &lower_;
    if (!limit_.empty()) ro.iterate_upper_bound = &upper_;
    it_.reset(db->NewIterator(ro));
  }

  void Seek(std::string_view target) override {
    it_->Seek(ToSlice(target < start_ ? std::string_view(start_) : target));
  }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override { return it_->key().ToStringView(); }
  std::string_view value() const override { return it_->value().ToStringView(); }
  Status status() const override { return FromRocks(it_->status()); }

 private:
  // The bounds' storage must outlive the rocksdb iterator that points at it.
  std::string start_;
  std::string limit_;
  rocksdb::Slice lower_;
  rocksdb::Slice upper_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

Result<std::optional<std::string>> GetFrom(rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                                           std::string_view key) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::string value;
  rocksdb::Status s = db->Get(ro, ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s);
  return std::optional<std::string>(std::move(value));
}

class RocksSnapshot : public KvReader {
 public:
  explicit RocksSnapshot(rocksdb::DB* db) : db_(db), snapshot_(db->GetSnapshot()) {}
  ~RocksSnapshot() override { db_->ReleaseSnapshot(snapshot_); }

  Result<std::optional<std::string>> Get(std::string_view key) override {
    return GetFrom(db_, snapshot_, key);
  }
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override {
    return std::make_unique<RocksIterator>(db_, snapshot_, start, limit);
  }

 private:
  rocksdb::DB* const db_;
  const rocksdb::Snapshot* const snapshot_;
};

}  // namespace

struct RocksKvStore::Impl {
  std::unique_ptr<rocksdb::DB> db;

  // Group commit. `returned` counts writes that have returned from
  // DB::Write; `synced` is the largest such count known durable.
  std::atomic<uint64_t> returned{0};
  std::mutex sync_mu;
  std::condition_variable sync_cv;
  bool syncing = false;  // guarded by sync_mu
  uint64_t synced = 0;   // guarded by sync_mu
};

Result<std::unique_ptr<RocksKvStore>> RocksKvStore::Open(const std::string& dir,
                                                         const RocksKvStoreOptions& options) {
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  // Partitioned index and filters, with only their small top level pinned:
  // a point read then loads one 4 KiB partition of a file's filter, not the
  // whole filter (megabytes for a big file), which an unpartitioned filter
  // evicted from the cache would cost on every read.
  table.index_type = rocksdb::BlockBasedTableOptions::IndexType::kTwoLevelIndexSearch;
  table.partition_filters = true;
  table.metadata_block_size = 4096;
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_top_level_index_and_filter = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  if (options.bloom_bits_per_key > 0) {
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(options.bloom_bits_per_key));
  }

  rocksdb::Options db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.write_buffer_size = options.write_buffer_bytes;
  db_options.max_background_jobs = options.background_jobs;
  db_options.level_compaction_dynamic_level_bytes = true;
  db_options.info_log = std::make_shared<RocksLogger>();
  db_options.listeners.push_back(std::make_shared<StayStoppedAfterWriteErrors>());
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  db_options.table_properties_collector_factories.push_back(
      rocksdb::NewCompactOnDeletionCollectorFactory(kDeletionWindow, kDeletionTrigger));

  if (options.create_if_missing) {
    // RocksDB would create it too, but logs an error first.
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot create " + dir + ": " + ec.message());
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, dir, &raw);
  if (!s.ok()) return FromRocks(s);
  auto impl = std::make_unique<Impl>();
  impl->db.reset(raw);
  return std::unique_ptr<RocksKvStore>(new RocksKvStore(std::move(impl)));
}

RocksKvStore::RocksKvStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RocksKvStore::~RocksKvStore() {
  // Close reports errors we cannot act on here; the DB is freed regardless.
  impl_->db->Close().PermitUncheckedError();
}

Result<std::optional<std::string>> RocksKvStore::Get(std::string_view key) {
  return GetFrom(impl_->db.get(), nullptr, key);
}

std::unique_ptr<KvIterator> RocksKvStore::NewIterator(std::string_view start,
                                                      std::string_view limit) {
  return std::make_unique<RocksIterator>(impl_->db.get(), nullptr, start, limit);
}

std::unique_ptr<KvReader> RocksKvStore::NewSnapshot() {
  return std::make_unique<RocksSnapshot>(impl_->db.get());
}

Status RocksKvStore::DoWrite(const WriteBatch& batch, bool sync) {
  rocksdb::WriteBatch rb;
  for (const WriteBatch::Op& op : batch.ops()) {
    rocksdb::Status s = op.kind == WriteBatch::Op::Kind::kPut
                            ? rb.Put(ToSlice(op.key), ToSlice(op.value))
                            : rb.Delete(ToSlice(op.key));
    if (!s.ok()) return FromRocks(s);
  }
  // Never sync here: Sync() is the one place that fsyncs, so that
  // concurrent writers share it.
  rocksdb::WriteOptions wo;
  wo.sync = false;
  GEOFS_RETURN_IF_ERROR(FromRocks(impl_->db->Write(wo, &rb)));
  impl_->returned.fetch_add(1, std::memory_order_acq_rel);
  return sync ? Sync() : Status::Ok();
}

Status RocksKvStore::Sync() {
  Impl& m = *impl_;
  const uint64_t target = m.returned.load(std::memory_order_acquire);
  std::unique_lock lock(m.sync_mu);
  while (m.synced < target) {
    if (m.syncing) {
      m.sync_cv.wait(lock);
      continue;
    }
    // Every write counted in `covering` has reached the log file, so one
    // SyncWAL makes all of them durable.
    m.syncing = true;
    const uint64_t covering = m.returned.load(std::memory_order_acquire);
    lock.unlock();
    // A synced empty write rather than SyncWAL: it goes through the write
    // queue, which refuses it once a failed write (a full disk) has stopped
    // the DB, where SyncWAL would touch the failed log file (an assertion
    // failure in librocksdb builds with asserts).
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::WriteBatch empty;
    rocksdb::Status s = m.db->Write(wo, &empty);
    lock.lock();
    m.syncing = false;
    if (s.ok()) m.synced = std::max(m.synced, covering);
    m.sync_cv.notify_all();
    if (!s.ok()) return FromRocks(s);
  }
  return Status::Ok();
}

}  // namespace geofs::meta
