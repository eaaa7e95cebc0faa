// ObjectStoreWrapper: forwards every call to another store, so that a wrapper
// (fault injection, metrics, caching) overrides only what it changes.
#pragma once

#include "object/object_store.h"

namespace geofs::object {

class ObjectStoreWrapper : public ObjectStore {
 public:
  // REQUIRES: `target` outlives the wrapper.
  explicit ObjectStoreWrapper(ObjectStore* target) : target_(target) {}

  Status Put(std::string_view key, std::span<const uint8_t> data) override {
    return target_->Put(key, data);
  }
  Result<Buffer> Get(std::string_view key) override { return target_->Get(key); }
  Result<ObjectInfo> Head(std::string_view key) override { return target_->Head(key); }
  Status Delete(std::string_view key) override { return target_->Delete(key); }
  Result<ObjectListing> List(std::string_view prefix, std::string_view page_token,
                             size_t max_keys) override {
    return target_->List(prefix, page_token, max_keys);
  }
  std::string Describe() const override { return target_->Describe(); }

 private:
  ObjectStore* const target_;
};

}  // namespace geofs::object
