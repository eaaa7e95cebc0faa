// LocalObjectStore: objects as files under a directory (the hub's embedded
// default: nothing to set up).
//
// Layout under the root:
//   objects/<key>   each '/'-separated key component is a directory level, so
//                   the key layout is the fan-out: chunk keys
//                   "chunks/ab/abcdef..." spread over 256 directories.
//   tmp/            files being written; removed at Open once an hour old.
//
// Put writes tmp/<unique>, fdatasyncs it, renames it into place and fsyncs
// the parent directory (and any directory it had to create), so an object is
// durable and complete before Put returns, and a crash leaves either the old
// or the new object. The syncs of concurrent Puts (and Deletes) are grouped
// (SyncBatcher): a crowd of Puts costs a few journal commits, not two each.
//
// Limits of the file-system mapping: a key component is at most 255 bytes
// (kNameTooLong), and a key cannot be stored when it is also a "directory" of
// another stored key ("a" and "a/b"): that Put gets kInvalidArgument. Empty
// directories left by Delete are kept (fan-out directories are reused).
//
// Thread-safe; several processes may share a root.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "object/object_store.h"
#include "object/sync_batcher.h"

namespace geofs::object {

struct LocalObjectStoreOptions {
  // How each barrier syncs a file or directory (default: fdatasync/fsync).
  // Tests pass one that records the calls.
  SyncBatcher::SyncFn sync;
};

class LocalObjectStore : public ObjectStore {
 public:
  // Opens the store rooted at `root`, creating the directories if needed.
  static Result<std::unique_ptr<LocalObjectStore>> Open(std::string_view root,
                                                        LocalObjectStoreOptions options = {});

  Status Put(std::string_view key, std::span<const uint8_t> data) override;
  Result<Buffer> Get(std::string_view key) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<ObjectListing> List(std::string_view prefix, std::string_view page_token,
                             size_t max_keys) override;
  std::string Describe() const override { return "file://" + root_; }

  // The file that holds `key` (whether or not it exists). For tests and fsck
  // tools that need to reach the bytes behind the store's back.
  std::string PathOf(std::string_view key) const { return objects_dir_ + "/" + std::string(key); }

 private:
  LocalObjectStore(std::string root, LocalObjectStoreOptions options);

  Status MakeParents(const std::string& path, std::string_view key);
  Status WriteTemp(const std::string& tmp, std::span<const uint8_t> data, std::string_view key);

  const std::string root_;
  const std::string objects_dir_;
  const std::string tmp_dir_;
  // Temp names are pid.nonce.counter: unique among live writers, and the
  // nonce keeps a reused pid from meeting a crashed writer's leftovers.
  const std::string tmp_nonce_;
  std::atomic<uint64_t> tmp_counter_{0};
  SyncBatcher syncer_;
};

}  // namespace geofs::object
