// MemoryKvStore: a KvStore held in memory, for tests and for running the
// hub's namespace inside one process.
//
// Snapshots and iterators share the current version of the map; a write
// copies the map first if any of them still holds it (copy-on-write), so
// reads never block on writers and always see whole batches. Writes are
// therefore O(size of the store) while a snapshot or iterator is alive and
// O(log n) per key otherwise: fine for tests, not meant for large stores.
// Nothing is durable: Sync and Write(sync) only order, never persist.
//
// Thread-safe: one mutex guards the current version.
#pragma once

#include <memory>
#include <mutex>

#include "meta/kv_store.h"

namespace geofs::meta {

class MemoryKvStore : public KvStore {
 public:
  MemoryKvStore();
  ~MemoryKvStore() override;
  MemoryKvStore(const MemoryKvStore&) = delete;
  MemoryKvStore& operator=(const MemoryKvStore&) = delete;

  Result<std::optional<std::string>> Get(std::string_view key) override;
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override;
  Status Sync() override;
  std::unique_ptr<KvReader> NewSnapshot() override;

 protected:
  Status DoWrite(const WriteBatch& batch, bool sync) override;

 private:
  struct Data;
  std::shared_ptr<const Data> Current() const;

  mutable std::mutex mu_;
  std::shared_ptr<Data> data_;  // guarded by mu_
};

}  // namespace geofs::meta
