// MemoryObjectStore: objects in a map, for unit tests of the layers above and
// for running a whole hub in one process.
//
// Thread-safe (one mutex). Get shares the stored bytes (no copy); stored
// objects are never modified in place, so a Buffer stays valid and unchanged
// after the key is replaced or deleted.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "object/object_store.h"

namespace geofs::object {

class MemoryObjectStore : public ObjectStore {
 public:
  // REQUIRES: `clock` outlives the store. It stamps ObjectInfo::modified.
  explicit MemoryObjectStore(Clock* clock = Clock::Real());

  Status Put(std::string_view key, std::span<const uint8_t> data) override;
  Result<Buffer> Get(std::string_view key) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<ObjectListing> List(std::string_view prefix, std::string_view page_token,
                             size_t max_keys) override;
  std::string Describe() const override { return "memory:"; }

  // Test hook: overwrites byte `offset` of a stored object with `value`,
  // without changing its modification time (simulates bit rot).
  // kNotFound if the key is missing, kInvalidArgument if offset is past the end.
  Status CorruptForTesting(std::string_view key, size_t offset, uint8_t value);

  size_t object_count() const;

 private:
  struct Object {
    std::shared_ptr<const std::vector<uint8_t>> bytes;
    WallTime modified;
  };

  Clock* const clock_;
  mutable std::mutex mu_;
  std::map<std::string, Object, std::less<>> objects_;  // GUARDED_BY(mu_)
};

}  // namespace geofs::object
