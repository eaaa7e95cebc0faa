// KvStore: the ordered key-value store the namespace lives in.
//
// Implementations: RocksKvStore (rocks_kv_store.h, the hub's store) and
// MemoryKvStore (memory_kv_store.h, for tests and embedding). Both pass the
// same conformance suite (tests/meta/kv_store_test.cc).
//
// Contract for every implementation:
//  - Thread-safe: any method may be called from many threads at once.
//  - Keys and values are arbitrary bytes; keys sort bytewise (memcmp order,
//    shorter first on a common prefix).
//  - Write applies a whole batch atomically: a reader (or a restart after a
//    crash) sees all of it or none of it. Operations in a batch apply in the
//    order they were added.
//  - A write is visible to readers created after Write returns. It is
//    durable (survives a crash of the process or the machine) once a later
//    Sync returns OK, or when Write(batch, /*sync=*/true) returns OK.
//  - Durability is in write order: if a write is durable, every write that
//    returned before it started is durable too.
//  - Readers (the store itself, snapshots, iterators) never block writers
//    for long and never see a torn batch.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"

namespace geofs::meta {

// An ordered list of puts and deletes, applied atomically by KvStore::Write.
// Not thread-safe; build it on one thread.
class WriteBatch {
 public:
  struct Op {
    enum class Kind : uint8_t { kPut, kDelete };
    Kind kind;
    std::string key;
    std::string value;  // empty for kDelete
  };

  void Put(std::string_view key, std::string_view value);
  void Delete(std::string_view key);
  void Clear();

  const std::vector<Op>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  // Bytes of keys and values held, a measure of the batch's cost.
  size_t ByteSize() const { return bytes_; }

 private:
  std::vector<Op> ops_;
  size_t bytes_ = 0;
};

// A forward cursor over the keys of a range [start, limit).
//
// Sees one consistent state: the store as of the iterator's creation (or its
// snapshot's). Not thread-safe: one thread uses an iterator at a time.
// REQUIRES: the store (and snapshot) it came from outlives it.
class KvIterator {
 public:
  virtual ~KvIterator() = default;

  // Positions at the first key >= max(target, start), if it is < limit.
  virtual void Seek(std::string_view target) = 0;
  virtual bool Valid() const = 0;
  // REQUIRES: Valid().
  virtual void Next() = 0;
  // REQUIRES: Valid(). Views stay valid until the next Seek/Next.
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Not OK if iteration stopped because of an error rather than the range's
  // end. Check it whenever Valid() turns false.
  virtual Status status() const = 0;
};

// The read side shared by a store and its snapshots.
class KvReader {
 public:
  virtual ~KvReader() = default;

  // The value of `key`, or nullopt if it is absent.
  virtual Result<std::optional<std::string>> Get(std::string_view key) = 0;
  // A cursor over [start, limit); an empty `limit` means "no upper bound".
  // The cursor starts unpositioned: call Seek first.
  virtual std::unique_ptr<KvIterator> NewIterator(std::string_view start,
                                                  std::string_view limit) = 0;
};

class KvStore : public KvReader {
 public:
  // Applies `batch` atomically; with `sync`, returns once it is durable.
  Status Write(const WriteBatch& batch, bool sync = true) { return DoWrite(batch, sync); }
  // Makes every write that returned before this call durable. Concurrent
  // callers may share one flush to stable storage (group commit).
  virtual Status Sync() = 0;
  // A read view frozen at the current state: later writes are not seen.
  // REQUIRES: the store outlives the snapshot.
  virtual std::unique_ptr<KvReader> NewSnapshot() = 0;
  // A store that stopped taking writes after one failed (a full disk)
  // starts again if it can: true once it has, with every durable write in
  // it (a write that failed, or whose Sync did, may or may not be); the
  // caller re-reads what it keeps of the store's contents. False if it had
  // not stopped or cannot start yet (no room; call again later). Cheap when
  // the store has not stopped. Default: a store that never stops.
  virtual Result<bool> Resume() { return false; }
  // True while the store refuses writes after a failed one (until Resume).
  virtual bool Stopped() const { return false; }

 protected:
  virtual Status DoWrite(const WriteBatch& batch, bool sync) = 0;
};

// Forwards every call to another store. Subclass it to observe or alter some
// calls (fault injection, counting) and leave the rest alone.
class KvStoreWrapper : public KvStore {
 public:
  // REQUIRES: `target` outlives the wrapper.
  explicit KvStoreWrapper(KvStore* target) : target_(target) {}

  Result<std::optional<std::string>> Get(std::string_view key) override {
    return target_->Get(key);
  }
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override {
    return target_->NewIterator(start, limit);
  }
  Status Sync() override { return target_->Sync(); }
  std::unique_ptr<KvReader> NewSnapshot() override { return target_->NewSnapshot(); }
  Result<bool> Resume() override { return target_->Resume(); }
  bool Stopped() const override { return target_->Stopped(); }

  KvStore* target() const { return target_; }

 protected:
  Status DoWrite(const WriteBatch& batch, bool sync) override {
    return target_->Write(batch, sync);
  }

 private:
  KvStore* const target_;
};

// The smallest key greater than every key that starts with `prefix`, or ""
// (no bound) if there is none (`prefix` is all 0xff bytes or empty).
std::string PrefixSuccessor(std::string_view prefix);

}  // namespace geofs::meta
