// ObjectStore: a flat namespace of immutable-once-written byte objects (the
// hub's chunk storage), with local-directory, S3 and in-memory
// implementations and wrappers (see object_store_wrapper.h).
//
// Contract shared by every implementation (tests/object/ checks it on all):
//  - Calls are synchronous and may block on disk or network I/O for a long
//    time; callers run them on worker threads, never on an event loop.
//  - Every implementation is thread-safe.
//  - Keys: 1..1024 bytes, no NUL, '/' separates non-empty components that are
//    not "." or ".." (so no leading, trailing or doubled '/'). A key that
//    breaks these rules gets kInvalidArgument from every call.
//  - Put is atomic and replaces: a reader sees either the whole old object,
//    the whole new one, or kNotFound; never a partial object. When Put
//    returns OK the object is durable (as durable as the backend allows).
//  - Get/Head of a missing key: kNotFound. Delete of a missing key: OK.
//  - List returns keys in ascending byte order, paged (S3: in the server's
//    order, which is byte order on AWS).
//  - Errors name the key (or prefix) and, for S3, the HTTP status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/buffer.h"
#include "geofs/clock.h"
#include "geofs/status.h"

namespace geofs::object {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  // When the object was last written (UTC), at the backend's resolution
  // (seconds for S3). Garbage collection uses it for grace periods.
  WallTime modified;
};

// One object of a PutMany.
struct ObjectPut {
  std::string_view key;
  std::span<const uint8_t> data;
};

struct ObjectListing {
  std::vector<ObjectInfo> objects;
  // Pass to the next List call to continue; empty when the listing is done.
  // Opaque: its form depends on the implementation.
  std::string next_page_token;
};

class ObjectStore {
 public:
  // Largest page List returns (S3's own limit).
  static constexpr size_t kMaxListPage = 1000;

  virtual ~ObjectStore() = default;

  // Stores `data` under `key`, replacing any existing object atomically.
  virtual Status Put(std::string_view key, std::span<const uint8_t> data) = 0;
  // Stores each object as Put does, up to `parallelism` at a time, and
  // returns one status per object, in order. The default runs Put on each;
  // the local store overrides it to make the whole set durable with two
  // barriers (not two per object). Wrappers keep the default, so that what
  // they do to Put applies to each object.
  virtual std::vector<Status> PutMany(std::span<const ObjectPut> puts, int parallelism);
  // The whole object.
  virtual Result<Buffer> Get(std::string_view key) = 0;
  // The object's size and modification time, without its bytes.
  virtual Result<ObjectInfo> Head(std::string_view key) = 0;
  virtual Status Delete(std::string_view key) = 0;
  // Up to `max_keys` (1..kMaxListPage) objects whose keys start with
  // `prefix`, in ascending key order, starting after the page that returned
  // `page_token` (empty: from the beginning). A page may hold fewer than
  // `max_keys` objects even when more follow; only an empty
  // next_page_token ends the listing.
  virtual Result<ObjectListing> List(std::string_view prefix, std::string_view page_token,
                                     size_t max_keys) = 0;
  // Where the objects live, for logs and messages ("file:///srv/x",
  // "s3://bucket/prefix", "memory:").
  virtual std::string Describe() const = 0;

  // Whether `key` exists: Head without the kNotFound error.
  Result<bool> Exists(std::string_view key);
  // Calls `fn` on every object under `prefix` in key order, fetching pages of
  // `page_size`. Stops at, and returns, the first error of `fn` or of List.
  Status ForEach(std::string_view prefix, const std::function<Status(const ObjectInfo&)>& fn,
                 size_t page_size = kMaxListPage);
};

// Checks `key` against the key rules above; the message names the key.
Status ValidateObjectKey(std::string_view key);

// Opens the store named by `url`:
//  - file:///abs/path: a LocalObjectStore rooted at /abs/path (created if
//    missing).
//  - s3://bucket[/prefix][?endpoint=http://host:port&region=R&addressing=path|virtual]
//    an S3ObjectStore. Without an endpoint the store talks to AWS (https,
//    virtual-host addressing unless told otherwise); with one, path-style
//    addressing is the default (what S3-compatible servers expect). Region
//    defaults to $AWS_REGION, then $AWS_DEFAULT_REGION, then us-east-1.
//    Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
//    AWS_SESSION_TOKEN; without them requests are unsigned (public buckets).
//  - memory: a MemoryObjectStore (tests, demos).
// A file:// store keeps `local_keep_free_bytes` of its file system free
// (LocalObjectStoreOptions::keep_free_bytes).
Result<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url,
                                                     uint64_t local_keep_free_bytes = 0);

}  // namespace geofs::object
