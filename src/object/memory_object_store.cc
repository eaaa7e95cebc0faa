#include "object/memory_object_store.h"

namespace geofs::object {

MemoryObjectStore::MemoryObjectStore(Clock* clock) : clock_(clock) {}

Status MemoryObjectStore::Put(std::string_view key, std::span<const uint8_t> data) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  auto bytes = std::make_shared<const std::vector<uint8_t>>(data.begin(), data.end());
  WallTime now = clock_->WallNow();
  std::lock_guard lock(mu_);
  objects_.insert_or_assign(std::string(key), Object{std::move(bytes), now});
  return Status::Ok();
}

Result<Buffer> MemoryObjectStore::Get(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  {
    std::lock_guard lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return Status::NotFound("object " + std::string(key));
    bytes = it->second.bytes;
  }
  const uint8_t* data = bytes->data();
  size_t size = bytes->size();
  return Buffer(std::shared_ptr<const void>(std::move(bytes)), data, size);
}

Result<ObjectInfo> MemoryObjectStore::Head(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return Status::NotFound("object " + std::string(key));
  return ObjectInfo{it->first, it->second.bytes->size(), it->second.modified};
}

Status MemoryObjectStore::Delete(std::string_view key) {
  GEOFS_RETURN_IF_ERROR(ValidateObjectKey(key));
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it != objects_.end()) objects_.erase(it);
  return Status::Ok();
}

Result<ObjectListing> MemoryObjectStore::List(std::string_view prefix, std::string_view page_token,
                                              size_t max_keys) {
  if (max_keys == 0 || max_keys > kMaxListPage) {
    return Status::InvalidArgument("list " + std::string(prefix) + ": max_keys out of range");
  }
  ObjectListing out;
  std::lock_guard lock(mu_);
  // The page token is the last key of the previous page.
  auto it = page_token.empty() || page_token < prefix ? objects_.lower_bound(prefix)
                                                      : objects_.upper_bound(page_token);
  for (; it != objects_.end() && it->first.starts_with(prefix); ++it) {
    if (out.objects.size() == max_keys) {
      out.next_page_token = out.objects.back().key;
      break;
    }
    out.objects.push_back({it->first, it->second.bytes->size(), it->second.modified});
  }
  return out;
}

Status MemoryObjectStore::CorruptForTesting(std::string_view key, size_t offset, uint8_t value) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return Status::NotFound("object " + std::string(key));
  if (offset >= it->second.bytes->size()) {
    return Status::InvalidArgument("offset past the end of " + std::string(key));
  }
  // Copy-on-write keeps Buffers already handed out unchanged.
  auto copy = std::make_shared<std::vector<uint8_t>>(*it->second.bytes);
  (*copy)[offset] = value;
  it->second.bytes = std::move(copy);
  return Status::Ok();
}

size_t MemoryObjectStore::object_count() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

}  // namespace geofs::object
