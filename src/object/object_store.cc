#include "object/object_store.h"

#include "common/parallel.h"
#include "object/local_object_store.h"
#include "object/memory_object_store.h"
#include "object/s3_object_store.h"

namespace geofs::object {

constexpr size_t kMaxKeyLength = 1024;

Status ValidateObjectKey(std::string_view key) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("object key '" + std::string(key.substr(0, 200)) +
                                   "': " + std::string(why));
  };
  if (key.empty()) return bad("empty");
  if (key.size() > kMaxKeyLength) return bad("longer than 1024 bytes");
  if (key.find('\0') != std::string_view::npos) return bad("contains NUL");
  size_t start = 0;
  for (;;) {
    size_t end = key.find('/', start);
    std::string_view part = key.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty()) return bad("empty path component");
    if (part == "." || part == "..") return bad("'.' or '..' component");
    if (end == std::string_view::npos) return Status::Ok();
    start = end + 1;
  }
}

std::vector<Status> ObjectStore::PutMany(std::span<const ObjectPut> puts, int parallelism) {
  std::vector<Status> out(puts.size());
  // Items never fail the loop: each keeps its own status.
  (void)ParallelFor(puts.size(), parallelism, [&](size_t i) {
    out[i] = Put(puts[i].key, puts[i].data);
    return Status::Ok();
  });
  return out;
}

Result<bool> ObjectStore::Exists(std::string_view key) {
  auto info = Head(key);
  if (info.ok()) return true;
  if (info.status() == StatusCode::kNotFound) return false;
  return info.status();
}

Status ObjectStore::ForEach(std::string_view prefix,
                            const std::function<Status(const ObjectInfo&)>& fn, size_t page_size) {
  std::string token;
  do {
    GEOFS_ASSIGN_OR_RETURN(ObjectListing page, List(prefix, token, page_size));
    for (const ObjectInfo& info : page.objects) GEOFS_RETURN_IF_ERROR(fn(info));
    token = std::move(page.next_page_token);
  } while (!token.empty());
  return Status::Ok();
}

Result<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url,
                                                     uint64_t local_keep_free_bytes) {
  if (url == "memory:") return std::unique_ptr<ObjectStore>(new MemoryObjectStore());
  if (url.starts_with("file://")) {
    std::string_view path = url.substr(7);
    if (!path.starts_with('/')) {
      return Status::InvalidArgument("object store URL '" + std::string(url) +
                                     "': expected file:///absolute/path");
    }
    LocalObjectStoreOptions options;
    options.keep_free_bytes = local_keep_free_bytes;
    GEOFS_ASSIGN_OR_RETURN(auto store, LocalObjectStore::Open(path, std::move(options)));
    return std::unique_ptr<ObjectStore>(std::move(store));
  }
  if (url.starts_with("s3://")) {
    GEOFS_ASSIGN_OR_RETURN(S3Options options, ParseS3Url(url));
    ResolveS3Environment(&options);
    GEOFS_ASSIGN_OR_RETURN(auto store, S3ObjectStore::Create(std::move(options)));
    return std::unique_ptr<ObjectStore>(std::move(store));
  }
  return Status::InvalidArgument("object store URL '" + std::string(url) +
                                 "': expected file:///path, s3://bucket/prefix or memory:");
}

}  // namespace geofs::object
