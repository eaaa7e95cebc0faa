// LocalObjectStore: objects as files under a directory (the hub's embedded
// default: nothing to set up).
//
// Layout under the root:
//   objects/<key>   each '/'-separated key component is a directory level, so
//                   the key layout is the fan-out: chunk keys
//                   "chunks/ab/abcdef..." spread over 256 directories.
//   tmp/            files being written; removed at Open once an hour old.
//
// Put writes tmp/<unique>, runs a file-system barrier (its data is durable),
// renames it into place (creating missing directories), and runs a second
// barrier (the new name, and any directory created, are durable). PutMany
// does the same for a set: every temp file, one barrier, every rename, one
// barrier. So an object is durable and complete before Put returns, and a
// crash leaves either the old or the new object at its name, never a torn
// one. Delete unlinks, then runs a barrier. Barriers are syncfs(2) calls
// shared by every concurrent Put and Delete (SyncBatcher): a crowd of Puts
// costs a few journal commits in all, whatever directories they write to.
// The price: a barrier also flushes whatever else is dirty on the same file
// system, so put the store on a file system that is not busy with unrelated
// writes.
// Put keeps `keep_free_bytes` of the file system free (each object's claim
// on the space lasts while its file is written).
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
  // How each barrier makes the file system durable (default: syncfs).
  // Tests pass one that records what each barrier saw.
  SyncBatcher::BarrierFn barrier;
  // Put refuses (kNoSpace) an object that would leave less than this free
  // on the store's file system: what shares it (the hub's namespace) keeps
  // room to record changes, deletions among them, when the store is full.
  uint64_t keep_free_bytes = 0;
};

class LocalObjectStore : public ObjectStore {
 public:
  ~LocalObjectStore() override;

  // Opens the store rooted at `root`, creating the directories if needed.
  static Result<std::unique_ptr<LocalObjectStore>> Open(std::string_view root,
                                                        LocalObjectStoreOptions options = {});

  Status Put(std::string_view key, std::span<const uint8_t> data) override;
  std::vector<Status> PutMany(std::span<const ObjectPut> puts, int parallelism) override;
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
  // REQUIRES: `root_fd` is open on `root`; the store closes it.
  LocalObjectStore(std::string root, int root_fd, LocalObjectStoreOptions options);

  // Bytes a Put in flight counts against the free space, so that
  // concurrent Puts see each other's before statvfs does; given back when
  // the claim is destroyed.
  class SpaceClaim {
   public:
    SpaceClaim(std::atomic<uint64_t>* claimed, uint64_t n) : claimed_(claimed), n_(n) {
      if (claimed_ != nullptr) claimed_->fetch_add(n_);
    }
    SpaceClaim(SpaceClaim&& other) noexcept : claimed_(other.claimed_), n_(other.n_) {
      other.claimed_ = nullptr;
    }
    SpaceClaim(const SpaceClaim&) = delete;
    SpaceClaim& operator=(const SpaceClaim&) = delete;
    SpaceClaim& operator=(SpaceClaim&&) = delete;
    ~SpaceClaim() {
      if (claimed_ != nullptr) claimed_->fetch_sub(n_);
    }

   private:
    std::atomic<uint64_t>* claimed_;
    uint64_t n_;
  };

  // With keep_free_bytes set: kNoSpace unless `size` more bytes, beyond
  // those of the other claims, leave keep_free_bytes free.
  Result<SpaceClaim> ClaimSpace(uint64_t size, const std::string& context);
  Status MakeParents(const std::string& path, std::string_view key);
  Status WriteTemp(const std::string& tmp, std::span<const uint8_t> data, std::string_view key);
  Status RenameIntoPlace(const std::string& tmp, const std::string& path, std::string_view key);
  // A name in tmp/ no other writer uses.
  std::string NewTempPath();

  const std::string root_;
  const std::string objects_dir_;
  const std::string tmp_dir_;
  // Temp names are pid.nonce.counter: unique among live writers, and the
  // nonce keeps a reused pid from meeting a crashed writer's leftovers.
  const std::string tmp_prefix_;  // "pid.nonce."
  std::atomic<uint64_t> tmp_counter_{0};
  const int root_fd_;  // names the file system for the barriers and statvfs
  const uint64_t keep_free_bytes_;
  std::atomic<uint64_t> claimed_bytes_{0};  // by the live SpaceClaims
  SyncBatcher syncer_;
};

}  // namespace geofs::object
