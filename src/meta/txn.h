// Txn: one namespace change being assembled, and the read helpers the
// operations share. Internal to src/meta.
//
// A Txn stages inode records in memory (read-your-writes for inodes), and
// turns every other change into batch operations at once. Finish() encodes
// the changed inodes, resolves chunk refcount deltas against the store and
// brings the statistics up to date; the Namespace then writes the batch.
// Not thread-safe; used under Namespace::write_mu_, so reads of the store
// see the latest committed state.
#pragma once

#include <map>
#include <optional>
#include <string_view>

#include "geofs/vfs.h"
#include "meta/kv_store.h"
#include "meta/schema.h"
#include "meta/types.h"

namespace geofs::meta {

// The inode `ino` as `reader` sees it; kNotFound if absent.
Result<schema::InodeRecord> ReadInode(KvReader& reader, uint64_t ino);
// The inode a handle names: kBadHandle if malformed, kStale if it is gone
// or its generation differs.
Result<schema::InodeRecord> ReadInodeByHandle(KvReader& reader, const vfs::Handle& h);
// The entry `name` of directory `dir`, or nullopt.
Result<std::optional<schema::DirentValue>> ReadEntry(KvReader& reader, uint64_t dir,
                                                     std::string_view name);

// Adds (sign +1) or removes (sign -1) an inode's share of the statistics.
void AccountInode(NamespaceStats& stats, const schema::InodeRecord& rec, int64_t sign);

class Txn {
 public:
  using InodeRecord = schema::InodeRecord;

  // REQUIRES: `store` outlives the Txn.
  Txn(KvStore* store, WallTime now, const NamespaceStats& stats);

  WallTime now() const { return now_; }
  WriteBatch& batch() { return batch_; }
  KvStore* store() const { return store_; }
  // The statistics as of the staged change (inode counts are added by
  // Finish).
  NamespaceStats& stats() { return stats_; }

  // The staged inode `ino`, loaded on first use; kNotFound if it does not
  // exist (or this Txn removed it). Pointers stay valid for the Txn's life.
  Result<InodeRecord*> Inode(uint64_t ino);
  // As ReadInodeByHandle, staged.
  Result<InodeRecord*> InodeByHandle(const vfs::Handle& h);
  InodeRecord* AddInode(InodeRecord rec);
  void RemoveInode(uint64_t ino);

  // Committed entries only: a Txn looks a name up before changing it.
  Result<std::optional<schema::DirentValue>> FindEntry(uint64_t dir, std::string_view name);
  // Adds `name` -> `child` to `dir` with the directory's next cookie, and
  // counts the link (child's nlink, or dir's nlink and child's parent for a
  // subdirectory).
  void LinkEntry(InodeRecord* dir, std::string_view name, InodeRecord* child);
  // Removes entry `name` (cookie `cookie`) -> `child` from `dir` and
  // uncounts the link.
  void UnlinkEntry(InodeRecord* dir, std::string_view name, uint64_t cookie, InodeRecord* child);

  // Extents of regular file `file`; each also moves file->used and the
  // chunk's refcount.
  void PutExtent(InodeRecord* file, const Extent& e);
  void DeleteExtent(InodeRecord* file, const Extent& e);

  // Stages the changed inodes and the chunk records into the batch.
  // kInvalidArgument if a newly referenced chunk is unknown or its size
  // differs; kUnavailable if it is being collected; kCorruption if a
  // refcount would go negative.
  Status Finish();

 private:
  struct Slot {
    std::optional<InodeRecord> original;  // as stored; nullopt for new inodes
    std::optional<InodeRecord> current;   // nullopt once removed
  };
  struct RefDelta {
    int64_t delta = 0;
    uint64_t size = 0;
  };

  Status ApplyRefDelta(const ChunkId& id, const RefDelta& d);

  KvStore* const store_;
  const WallTime now_;
  NamespaceStats stats_;
  WriteBatch batch_;
  std::map<uint64_t, Slot> inodes_;
  std::map<ChunkId, RefDelta> refs_;
};

}  // namespace geofs::meta
