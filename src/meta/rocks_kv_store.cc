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
#include <sys/statvfs.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <shared_mutex>

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
// (librocksdb built with asserts); its manual DB::Resume does the same. So
// the DB stays stopped until RocksKvStore::Resume opens it again, which
// starts a fresh log. `stopped` tells Resume that it has to.
class StayStoppedAfterWriteErrors final : public rocksdb::EventListener {
 public:
  explicit StayStoppedAfterWriteErrors(std::shared_ptr<std::atomic<bool>> stopped)
      : stopped_(std::move(stopped)) {}

  void OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* error) override {
    if (!error->ok()) stopped_->store(true, std::memory_order_release);
  }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status error,
                            bool* auto_recovery) override {
    *auto_recovery = false;
    stopped_->store(true, std::memory_order_release);
    GetLogger("meta")->error(
        "the namespace store refuses writes after a failed write ({}); reads go on. It resumes "
        "by itself at the next change once its disk has room again.",
        error.ToString());
  }

 private:
  const std::shared_ptr<std::atomic<bool>> stopped_;
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

constexpr char kReopenFailed[] =
    "the namespace store could not be opened again after a failed write";

// Shares the DB with every other user for the holder's lifetime (an
// iterator's, a snapshot's, a call's); Resume takes it alone to reopen.
using DbLock = std::shared_lock<std::shared_timed_mutex>;

class RocksIterator : public KvIterator {
 public:
  // `db` null (a failed reopen): an iterator that fails at once.
  RocksIterator(DbLock lock, rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                std::string_view start, std::string_view limit)
      : lock_(std::move(lock)), start_(start), limit_(limit), lower_(start_), upper_(limit_) {
    if (db == nullptr) return;
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    ro.iterate_lower_bound = &lower_;
    if (!limit_.empty()) ro.iterate_upper_bound = &upper_;
    it_.reset(db->NewIterator(ro));
  }

  void Seek(std::string_view target) override {
    if (it_) it_->Seek(ToSlice(target < start_ ? std::string_view(start_) : target));
  }
  bool Valid() const override { return it_ && it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override { return it_->key().ToStringView(); }
  std::string_view value() const override { return it_->value().ToStringView(); }
  Status status() const override {
    return it_ ? FromRocks(it_->status()) : Status::Unavailable(kReopenFailed);
  }

 private:
  DbLock lock_;
  // The bounds' storage must outlive the rocksdb iterator that points at it.
  std::string start_;
  std::string limit_;
  rocksdb::Slice lower_;
  rocksdb::Slice upper_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

Result<std::optional<std::string>> GetFrom(rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                                           std::string_view key) {
  if (db == nullptr) return Status::Unavailable(kReopenFailed);
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
  RocksSnapshot(DbLock lock, rocksdb::DB* db)
      : lock_(std::move(lock)), db_(db), snapshot_(db != nullptr ? db->GetSnapshot() : nullptr) {}
  ~RocksSnapshot() override {
    if (db_ != nullptr) db_->ReleaseSnapshot(snapshot_);
  }

  Result<std::optional<std::string>> Get(std::string_view key) override {
    return GetFrom(db_, snapshot_, key);
  }
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override {
    // The snapshot's own lock covers the iterator (which must not outlive it).
    return std::make_unique<RocksIterator>(DbLock(), db_, snapshot_, start, limit);
  }

 private:
  DbLock lock_;
  rocksdb::DB* const db_;
  const rocksdb::Snapshot* const snapshot_;
};

}  // namespace

struct RocksKvStore::Impl {
  std::string dir;
  RocksKvStoreOptions options;
  rocksdb::Options db_options;
  // Set once a failed write has stopped the DB (the listener), cleared when
  // Resume has reopened it.
  std::shared_ptr<std::atomic<bool>> stopped = std::make_shared<std::atomic<bool>>(false);

  // Shared by every call, iterator and snapshot using `db`; exclusive while
  // Resume swaps it.
  std::shared_timed_mutex db_mu;
  std::unique_ptr<rocksdb::DB> db;  // null only after a reopen failed

  std::mutex resume_mu;                               // one Resume at a time
  std::chrono::steady_clock::time_point last_resume;  // guarded by resume_mu

  DbLock Share() { return DbLock(db_mu); }

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
  auto impl = std::make_unique<Impl>();
  db_options.listeners.push_back(std::make_shared<StayStoppedAfterWriteErrors>(impl->stopped));
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
  impl->dir = dir;
  impl->options = options;
  impl->db_options = std::move(db_options);
  impl->db.reset(raw);
  return std::unique_ptr<RocksKvStore>(new RocksKvStore(std::move(impl)));
}

RocksKvStore::RocksKvStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RocksKvStore::~RocksKvStore() {
  // Close reports errors we cannot act on here; the DB is freed regardless.
  if (impl_->db) impl_->db->Close().PermitUncheckedError();
}

Result<std::optional<std::string>> RocksKvStore::Get(std::string_view key) {
  DbLock lock = impl_->Share();
  return GetFrom(impl_->db.get(), nullptr, key);
}

std::unique_ptr<KvIterator> RocksKvStore::NewIterator(std::string_view start,
                                                      std::string_view limit) {
  DbLock lock = impl_->Share();
  rocksdb::DB* db = impl_->db.get();
  return std::make_unique<RocksIterator>(std::move(lock), db, nullptr, start, limit);
}

std::unique_ptr<KvReader> RocksKvStore::NewSnapshot() {
  DbLock lock = impl_->Share();
  rocksdb::DB* db = impl_->db.get();
  return std::make_unique<RocksSnapshot>(std::move(lock), db);
}

Result<bool> RocksKvStore::Resume() {
  Impl& m = *impl_;
  if (!m.stopped->load(std::memory_order_acquire)) return false;
  std::lock_guard resume_lock(m.resume_mu);
  const auto now = std::chrono::steady_clock::now();
  if (m.last_resume.time_since_epoch().count() != 0 &&
      now - m.last_resume < m.options.resume_interval) {
    return false;
  }
  m.last_resume = now;
  struct statvfs st;
  if (::statvfs(m.dir.c_str(), &st) != 0 ||
      static_cast<uint64_t>(st.f_bavail) * st.f_frsize < m.options.resume_min_free_bytes) {
    return false;
  }
  // Every user of the DB must be done with it. An iterator or snapshot held
  // meanwhile (a long scan) makes this attempt give up; a later one retries.
  std::unique_lock db_lock(m.db_mu, std::defer_lock);
  if (!db_lock.try_lock_for(m.options.resume_wait)) return false;
  auto log = GetLogger("meta");
  if (m.db) {
    // The failed log file is closed with an error: expected, nothing to act on.
    m.db->Close().PermitUncheckedError();
    m.db.reset();
  }
  // A fresh log, with everything the old one acknowledged replayed.
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(m.db_options, m.dir, &raw);
  if (!s.ok()) {
    log->error("{}: {}; trying again at the next change", kReopenFailed, s.ToString());
    return FromRocks(s);
  }
  m.db.reset(raw);
  m.stopped->store(false, std::memory_order_release);
  log->warn("the namespace store has room again and takes writes");
  return true;
}

bool RocksKvStore::Stopped() const { return impl_->stopped->load(std::memory_order_acquire); }

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
  {
    DbLock lock = impl_->Share();
    if (!impl_->db) return Status::Unavailable(kReopenFailed);
    GEOFS_RETURN_IF_ERROR(FromRocks(impl_->db->Write(wo, &rb)));
    impl_->returned.fetch_add(1, std::memory_order_acq_rel);
  }
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
    Status synced = Status::Unavailable(kReopenFailed);
    {
      DbLock db_lock = m.Share();
      if (m.db) synced = FromRocks(m.db->Write(wo, &empty));
    }
    lock.lock();
    m.syncing = false;
    if (synced.ok()) m.synced = std::max(m.synced, covering);
    m.sync_cv.notify_all();
    GEOFS_RETURN_IF_ERROR(synced);
  }
  return Status::Ok();
}

}  // namespace geofs::meta
