// Namespace: the hub's authoritative file system tree (inodes, directory
// entries, symlink targets, and each file's chunk map) over a KvStore.
//
// The operations mirror include/geofs/vfs.h and return its reply structs, so
// a vfs::Backend (and the gRPC service) is a thin wrapper: file data is not
// here, only which chunks hold it (GetChunkMap / CommitChunkMap).
//
// Guarantees:
//  - Every change is one atomic KvStore batch, durable (synced) before the
//    call returns OK: a crash at any instant leaves a consistent namespace
//    holding every acknowledged change. (One exception a caller asks for:
//    RegisterChunks with `sync` false, durable with the next synced change.)
//  - Inode numbers come from a persistent counter and are never reused;
//    generations are a keyed bijection of the inode number, so they never
//    repeat either. Handles (16 bytes: inode, generation) therefore never
//    name another object; a removed object's handle is kStale.
//  - Lookup costs O(1) point reads; ReadDir costs O(page); GetChunkMap of a
//    range costs one seek plus the extents returned. Nothing scans.
//  - READDIR cookies are per-directory sequence numbers assigned when a name
//    is created (or renamed in): stable whatever else changes, so a cookie
//    never goes bad and the cookie verifier is a per-directory constant.
//  - Reads (GetAttr, Lookup, ReadDir, GetChunkMap...) never change
//    anything: atime moves only by SetAttr (the hub is mounted "noatime").
//
// Chunk reference counting and garbage collection: a chunk's refcount is the
// number of extents (in all files) that name it, updated in the same batch
// as the extents. A chunk the namespace knows with refcount 0 is recorded
// with the time it became unreferenced, and CollectGarbage deletes it once
// that is older than the grace period. A writer follows this protocol:
//   1. RegisterChunks(the chunks it is about to reference): unknown chunks
//      are recorded (refcount 0, "since now"), known unreferenced ones get a
//      fresh grace period;
//   2. store the chunks the object store lacks;
//   3. CommitChunkMap within the grace period.
// So a stored chunk that is never committed is collected after the grace,
// and a chunk that a commit is about to reference is never collected first.
// CommitChunkMap refuses chunks that were not registered (kInvalidArgument)
// or that GC has started deleting (kUnavailable: register and upload again).
//
// Thread safety and concurrency: every method may be called from any thread.
// Reads run on a snapshot of the store, without locks, and see one
// consistent state. Changes are serialised by one mutex held while the
// change is computed and written, and released before the fsync, which
// concurrent changes share (group commit); a change becomes visible to
// readers just before it is durable, like a local file system's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/clock.h"
#include "geofs/status.h"
#include "geofs/vfs.h"
#include "meta/kv_store.h"
#include "meta/types.h"

namespace geofs::meta {

namespace schema {
struct InodeRecord;
}  // namespace schema
class Txn;

struct NamespaceOptions {
  // Source of file times and of GC timestamps. REQUIRES: outlives the
  // Namespace.
  Clock* clock = Clock::Real();
  // The root directory of a new (empty) store.
  uint32_t root_mode = 0755;
  uint32_t root_uid = 0;
  uint32_t root_gid = 0;
  // Inode numbers reserved per write of the persistent counter. Numbers
  // reserved but unused when the process stops are skipped, never reused.
  uint64_t ino_reserve = 1024;
};

struct GcResult {
  uint64_t deleted = 0;  // chunks deleted from the object store and forgotten
  uint64_t failed = 0;   // delete_fn failed; they stay and are retried next time
  uint64_t orphans = 0;  // stored chunks without a record, deleted (CollectOrphan)
};

class Namespace {
 public:
  // Opens the namespace in `store`, creating the root directory if the store
  // is empty. kCorruption / kNotSupported if the store holds something else.
  // REQUIRES: `store` outlives the Namespace, and no other Namespace (in
  // any process) writes to it.
  static Result<std::unique_ptr<Namespace>> Open(KvStore* store,
                                                 const NamespaceOptions& options = {});
  ~Namespace();
  Namespace(const Namespace&) = delete;
  Namespace& operator=(const Namespace&) = delete;

  struct HandleParts {
    uint64_t ino = 0;
    uint64_t generation = 0;
  };
  static vfs::Handle MakeHandle(uint64_t ino, uint64_t generation);
  // kBadHandle if `h` is not 16 bytes.
  static Result<HandleParts> ParseHandle(const vfs::Handle& h);

  vfs::Handle RootHandle() const { return root_handle_; }
  static vfs::Capabilities Capabilities();

  // --- The vfs.h operations. Handles are this class's; names follow vfs.h
  // (vfs::ValidateName); permissions follow src/vfs/access.h.
  Result<vfs::Attr> GetAttr(const vfs::Handle& h);
  // `guard_ctime`: kNotSync unless the object's ctime equals it. A size
  // change of a regular file trims its chunk map and bumps its version.
  Result<vfs::Wcc> SetAttr(const vfs::Credentials& cred, const vfs::Handle& h,
                           const vfs::SetAttrs& attrs, std::optional<WallTime> guard_ctime);
  Result<vfs::LookupReply> Lookup(const vfs::Credentials& cred, const vfs::Handle& dir,
                                  std::string_view name);
  // The inode the entry `name` of `dir` names, if any: one read, with no
  // permission check and no check of `dir`'s generation (for callers that
  // only need to know what a change will touch; the change checks both).
  Result<std::optional<uint64_t>> EntryIno(const vfs::Handle& dir, std::string_view name);
  // The root's parent is the root.
  Result<vfs::LookupReply> LookupParent(const vfs::Credentials& cred, const vfs::Handle& dir);
  Result<vfs::AccessReply> Access(const vfs::Credentials& cred, const vfs::Handle& h,
                                  uint32_t requested);
  Result<vfs::ReadLinkReply> ReadLink(const vfs::Handle& h);
  // UNCHECKED over an existing regular file applies only the size (open
  // with O_TRUNC); GUARDED fails with kAlreadyExists; EXCLUSIVE succeeds
  // only as a replay with the same verifier, which the file keeps until its
  // attributes or contents are first set.
  Result<vfs::CreateReply> Create(const vfs::Credentials& cred, const vfs::Handle& dir,
                                  std::string_view name, const vfs::CreateRequest& req);

  // --- Inode numbers for a client that answers creates before the hub has
  // them (a spoke's write-behind, docs/coherence.md): it hands out handles
  // from a reservation at once, and creates each file here later.
  struct InodeReservation {
    uint64_t first = 0;                 // numbers first .. first + size - 1
    std::vector<uint64_t> generations;  // of each number, in order
  };
  static constexpr uint32_t kMaxReservation = 65536;
  // Sets `count` (1..kMaxReservation) numbers aside, durably: no other
  // create ever takes them.
  Result<InodeReservation> ReserveInodes(uint32_t count);
  // Create of a regular file (UNCHECKED or GUARDED) as inode `ino`, a
  // reserved number no create has used yet (kInvalidArgument otherwise);
  // the number is used up in the same batch. If `name` already names `ino`
  // (a replay of a create that succeeded) it returns the file as it is;
  // if it names another object, kAlreadyExists. `answered_ctime`: the
  // time a spoke answered the create before the hub had it (write-behind);
  // the new file's ctime, so that a SETATTR guarded by what the spoke
  // answered holds.
  Result<vfs::CreateReply> CreateReserved(const vfs::Credentials& cred, const vfs::Handle& dir,
                                          std::string_view name, const vfs::CreateRequest& req,
                                          uint64_t ino,
                                          std::optional<WallTime> answered_ctime = std::nullopt);
  Result<vfs::CreateReply> Mkdir(const vfs::Credentials& cred, const vfs::Handle& dir,
                                 std::string_view name, const vfs::SetAttrs& attrs);
  Result<vfs::CreateReply> Symlink(const vfs::Credentials& cred, const vfs::Handle& dir,
                                   std::string_view name, std::string_view target,
                                   const vfs::SetAttrs& attrs);
  Result<vfs::CreateReply> Mknod(const vfs::Credentials& cred, const vfs::Handle& dir,
                                 std::string_view name, const vfs::MknodRequest& req);
  // Removing the last link frees the inode and drops its chunk references in
  // the same batch (a file of n extents: a batch of O(n) keys).
  Result<vfs::Wcc> Remove(const vfs::Credentials& cred, const vfs::Handle& dir,
                          std::string_view name);
  Result<vfs::Wcc> Rmdir(const vfs::Credentials& cred, const vfs::Handle& dir,
                         std::string_view name);
  // POSIX rename: atomic, across directories, replacing a file by a file or
  // a directory by an empty directory; kInvalidArgument for moving a
  // directory into itself; a no-op if both names already name one object.
  Result<vfs::RenameReply> Rename(const vfs::Credentials& cred, const vfs::Handle& from_dir,
                                  std::string_view from_name, const vfs::Handle& to_dir,
                                  std::string_view to_name);
  Result<vfs::LinkReply> Link(const vfs::Credentials& cred, const vfs::Handle& file,
                              const vfs::Handle& dir, std::string_view name);
  // "." (cookie 1) and ".." (cookie 2), then entries in creation order, each
  // listed once per listing while it exists. kTooSmall if max_entries is 0,
  // kBadCookie for a cookie the directory never issued.
  Result<vfs::DirPage> ReadDir(const vfs::Credentials& cred, const vfs::Handle& dir,
                               const vfs::ReadDirRequest& req);

  // --- File contents.
  // The extents of `h` overlapping [offset, offset + length) (saturating),
  // with the version and attributes they belong to. kInvalidArgument /
  // kIsDirectory for objects without contents; CheckRead permissions.
  Result<ChunkMap> GetChunkMap(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset,
                               uint64_t length);
  // Replaces the extents of a range, sets the size, bumps the version, and
  // adjusts chunk refcounts, atomically; kAborted if the file's version is
  // not update.expected_version. Extents the range cuts through are split
  // (both sides keep referencing their chunk). CheckWrite permissions.
  Result<CommitReply> CommitChunkMap(const vfs::Credentials& cred, const vfs::Handle& h,
                                     const ChunkMapUpdate& update);

  // --- Chunks and garbage collection (see the protocol above).
  // kUnavailable if one of them is being collected (retry after the GC
  // pass); kInvalidArgument if a known chunk's size differs.
  // With `sync` false the registration is applied (and protects the chunks
  // in this process) but becomes durable only with the next synced change,
  // such as the writer's commit, which covers it. A crash before that loses
  // it: chunks stored meanwhile are then orphans (stored, unknown to the
  // namespace), which CollectOrphan removes once older than the grace
  // period, and the writer's commit fails cleanly (not registered).
  Status RegisterChunks(std::span<const ChunkRef> chunks, bool sync = true);
  // Records the size of each chunk's stored form, as the object store
  // reported it once the chunk was stored (ChunkStore::Put's result), so
  // that Stats() knows the store's bytes without listing it. Chunks the
  // namespace no longer knows, and sizes of 0, are skipped. `sync` as for
  // RegisterChunks.
  Status RecordStoredSizes(std::span<const StoredChunkSize> sizes, bool sync = true);
  // What the namespace knows of a chunk; nullopt if nothing.
  Result<std::optional<ChunkInfo>> GetChunk(const ChunkId& id);
  // Up to `max` chunks with refcount 0 since before `before`, oldest first
  // (including ones GC already started collecting).
  Result<std::vector<ChunkInfo>> ListUnreferenced(WallTime before, size_t max);
  // Deletes up to `max` chunks that have been unreferenced for `grace` or
  // longer at `now`: each is first marked "collecting" (so no commit can
  // reference it any more), then `delete_fn` removes it from the object
  // store (it must treat "already gone" as success), then it is forgotten.
  // A crash or a delete_fn failure leaves it marked, and the next pass
  // retries it. A chunk with refcount > 0 is never passed to delete_fn.
  // delete_fn runs without locks held.
  Result<GcResult> CollectGarbage(WallTime now, std::chrono::nanoseconds grace,
                                  const std::function<Status(const ChunkId&)>& delete_fn,
                                  size_t max = SIZE_MAX);
  // Deletes a stored chunk the namespace has no record of (an orphan: its
  // registration was lost in a crash), stored at `stored_at`, its object
  // `stored_size` bytes. If a record exists (a writer registered it), returns false and
  // does nothing. Otherwise records it as being collected, unreferenced
  // since `stored_at` (so RegisterChunks and commits refuse it from then
  // on), calls `delete_fn` without locks held, and forgets it: true. A crash
  // or a delete_fn failure leaves it marked, and CollectGarbage retries it.
  // The caller passes only objects older than the grace period, like the
  // chunks CollectGarbage deletes: writers register before they store, so a
  // fresh object without a record can only be an orphan too, but the grace
  // keeps the sweep from racing anything that stores without registering.
  Result<bool> CollectOrphan(const ChunkId& id, uint64_t stored_size, WallTime stored_at,
                             const std::function<Status(const ChunkId&)>& delete_fn);

  // --- When orphans can exist. Only a crash loses a registration, so the
  // object store needs listing (an orphan sweep) only after a run that did
  // not end with MarkCleanStop: listing millions of objects on every GC
  // pass would cost far more (S3 bills and time) than the orphans do.
  // The server calls MarkRunning when it starts: if the previous run did
  // not stop cleanly (or this is the store's first run), a sweep becomes
  // due for the objects stored before `now`; so it does when some known
  // chunks have no recorded stored size (the sweep's listing records them).
  // Synced. True if the previous run stopped cleanly.
  Result<bool> MarkRunning(WallTime now);
  // The server calls this last, after every change has returned. Synced.
  Status MarkCleanStop();
  // The time before which stored objects need a sweep; nullopt if none.
  Result<std::optional<WallTime>> OrphanSweepDue();
  // A sweep covering every object stored before `due` finished: it is no
  // longer due, unless MarkRunning has set a newer time meanwhile. Synced.
  Status OrphanSweepDone(WallTime due);

  // --- Pipelined commits.
  // While an UnsyncedScope lives on a thread, the changes that thread makes
  // return once written (visible, each still one atomic batch) but before
  // they are durable; the caller makes them durable with Sync() before it
  // acknowledges them, so that one sync covers a whole group of changes.
  class UnsyncedScope {
   public:
    UnsyncedScope();
    ~UnsyncedScope();
    UnsyncedScope(const UnsyncedScope&) = delete;
    UnsyncedScope& operator=(const UnsyncedScope&) = delete;

   private:
    bool previous_;
  };
  // Makes every change that returned before this call durable.
  Status Sync();
  // True while the store refuses changes after a failed write (a full
  // disk); the next change after room returns resumes it (KvStore::Resume).
  bool WritesStopped() const { return store_->Stopped(); }

  // --- Whole-namespace views.
  Result<NamespaceStats> Stats();
  // Walks every record of a snapshot and returns each broken invariant it
  // finds, in words (empty: consistent). O(records) time, O(inodes + chunks)
  // memory; does not block changes.
  Result<std::vector<std::string>> Fsck();

 private:
  using InodeRecord = schema::InodeRecord;

  Namespace(KvStore* store, const NamespaceOptions& options);
  Status Load();
  // Re-reads the counters after a failed write, whose effect is unknown.
  void Reload();
  WallTime Now() const { return options_.clock->WallNow(); }
  vfs::Handle HandleOf(const InodeRecord& rec) const;
  vfs::Entry EntryOf(const InodeRecord& rec) const;
  uint64_t GenerationOf(uint64_t ino) const;

  // Writes `txn` (with the counters and stats), releases `lock`, then waits
  // until the write is durable unless `sync` is false (then a later synced
  // change makes it durable). REQUIRES: `lock` holds write_mu_.
  Status Commit(Txn& txn, std::unique_lock<std::mutex>& lock, bool sync = true);
  // A new, unlinked inode staged in `txn`: number `ino`, or with `ino` 0
  // the next one from the counter. REQUIRES: write_mu_ held.
  InodeRecord* NewInode(Txn& txn, vfs::FileType type, uint32_t mode, uint32_t uid, uint32_t gid,
                        uint64_t ino = 0);
  // Takes reserved number `ino` out of its run of unused ones.
  Status UseReservedIno(Txn& txn, uint64_t ino);
  // Create, and CreateReserved when `reserved_ino` is not 0.
  Result<vfs::CreateReply> CreateAs(const vfs::Credentials& cred, const vfs::Handle& dir,
                                    std::string_view name, const vfs::CreateRequest& req,
                                    uint64_t reserved_ino, std::optional<WallTime> answered_ctime);
  // Creates and links `name` in `dir`, owned by the caller, with `attrs`,
  // as inode `ino` (0: a fresh number).
  // REQUIRES: write_mu_ held, CheckDirWrite passed and `name` is free.
  Result<InodeRecord*> MakeChild(Txn& txn, const vfs::Credentials& cred, InodeRecord* dir,
                                 std::string_view name, vfs::FileType type,
                                 const vfs::SetAttrs& attrs, uint64_t ino = 0);
  // Creates `name` in `dir`, initialised by `init`, for the create family.
  Result<vfs::CreateReply> CreateNode(const vfs::Credentials& cred, const vfs::Handle& dir,
                                      std::string_view name, vfs::FileType type,
                                      const vfs::SetAttrs& attrs,
                                      const std::function<void(InodeRecord*)>& init);
  // CREATE of a name that exists (see Create).
  Status OpenExisting(Txn& txn, const vfs::Credentials& cred, InodeRecord* file,
                      const vfs::CreateRequest& req);
  // Applies `req` to `rec`. REQUIRES: vfs::CheckSetAttr(rec, req, cred) OK.
  Status ApplySetAttrs(Txn& txn, InodeRecord* rec, const vfs::SetAttrs& req,
                       const vfs::Credentials& cred);
  Result<vfs::Wcc> RemoveName(const vfs::Credentials& cred, const vfs::Handle& dir,
                              std::string_view name, bool want_dir);
  // Drops one link of `victim` (already unlinked from its directory) and
  // frees it, with its extents, when none is left.
  Status ReleaseInode(Txn& txn, InodeRecord* victim);
  // Makes the extents of `file` cover nothing in [begin, end) nor past
  // `new_size`, splitting extents cut by those bounds.
  Status CutExtents(Txn& txn, InodeRecord* file, uint64_t begin, uint64_t end, uint64_t new_size);
  // Marks an unreferenced chunk as being collected, if it is still
  // unreferenced since `c.unreferenced_since`; false if it changed.
  Result<bool> MarkCollecting(const ChunkInfo& c);
  // Forgets a chunk marked collecting, once the object store lost it.
  Status ForgetChunk(const ChunkId& id);
  // True if directory `ancestor` is `dir` or above it.
  Result<bool> IsSelfOrAncestor(Txn& txn, uint64_t ancestor, uint64_t dir);

  KvStore* const store_;
  const NamespaceOptions options_;
  uint64_t salt_ = 0;
  vfs::Handle root_handle_;

  // Serialises changes: each reads the latest state, then writes a batch.
  std::mutex write_mu_;
  uint64_t next_ino_ = 0;   // guarded by write_mu_
  uint64_t ino_limit_ = 0;  // guarded by write_mu_: the persisted limit
  NamespaceStats stats_;    // guarded by write_mu_: as last written
};

}  // namespace geofs::meta
