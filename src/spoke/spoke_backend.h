// SpokeBackend: a hub portal as a vfs::Backend, served from a coherent cache.
//
// Handles are the hub's (inode, generation) (hub_convert.h); the front end
// adds the export id and the HMAC. Root() is the portal directory, resolved
// once by Open().
//
// Layers (docs/spoke.md):
//  - metadata (MetadataCache): attributes, lookups, directory pages, symlink
//    targets and chunk maps, each valid while the hub's lease on its inode
//    lives; a hub invalidation drops the inode's entries. Without a session
//    nothing is reused beyond the call that fetched it: every NFS call
//    revalidates with the hub.
//  - chunks (ChunkFetcher over a cache::ChunkCache): immutable and named by
//    hash, so a cached chunk is always good, with or without a lease.
// READ: chunk map -> each extent's chunk (cache, else hub, shared fetches)
// -> the reply, a zero-copy slice when one chunk covers it.
// Prefetch (src/prefetch/, docs/prefetch.md): every LOOKUP, GETATTR, READDIR
// and READ is recorded in an access ring; the Prefetcher's predictors read
// it and fetch ahead through this backend (spoke_backend_prefetch.cc):
// whole directories described in one DescribeDir round trip, chunks into
// the cache.
// Namespace changes go to the hub synchronously, tagged with the session (so
// the hub does not invalidate us for our own change); the replies refresh or
// drop our entries. Writes: see spoke_backend_write.cc.
// Partition: a call the cache cannot answer fails with kUnavailable
// (NFS3ERR_JUKEBOX: clients retry), unless the portal is immutable; then
// expired entries serve reads while the hub is unreachable and every change
// is kReadOnly.
//
// Thread-safe. Callbacks run on gRPC threads or the caller's.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "cache/chunk_cache.h"
#include "common/buffer_pool.h"
#include "geofs/clock.h"
#include "geofs/vfs.h"
#include "prefetch/access_ring.h"
#include "prefetch/prefetcher.h"
#include "spoke/create_log.h"
#include "spoke/write_journal.h"

namespace geofs::v1 {
class CreateRequest;
}  // namespace geofs::v1

namespace geofs {
class WorkerPool;
}  // namespace geofs

namespace geofs::spoke {

class HubLink;
class MetadataCache;
class ChunkFetcher;
class ChangeBatcher;
class JournalUploader;
class LocalCreates;
struct ChunkMap;

struct SpokeBackendOptions {
  std::string portal = "/";  // the hub directory served
  // Serve cached data read-only when the hub is unreachable (and refuse
  // every change with kReadOnly at all times).
  bool immutable = false;
  // The prefetcher (docs/prefetch.md); off: only what READs ask for is
  // fetched.
  bool prefetch = true;
  prefetch::PrefetcherOptions prefetcher;
  // Of the cache's capacity, the share prefetched chunks not read yet may
  // take.
  double prefetch_cache_share = 0.5;
  size_t max_cached_inodes = 1 << 20;
  Clock* clock = Clock::Real();  // REQUIRES: outlives the backend
  // Write-behind of creates (docs/coherence.md): the log of creates
  // answered here, and what it held at start (sent to the hub at once).
  // Null: every create goes to the hub. REQUIRES: outlives the backend.
  CreateLog* create_log = nullptr;
  std::vector<LoggedCreate> recovered_creates;
  // Answer CREATEs here when the directory's lease allows (needs
  // create_log and a journal); else recovered creates are still sent.
  bool local_creates = false;
  std::chrono::milliseconds local_create_delay{250};
};

// Counters for stats and the metrics endpoint.
struct SpokeStats {
  uint64_t metadata_hits = 0;
  uint64_t metadata_misses = 0;
  uint64_t chunk_hits = 0;
  uint64_t chunk_misses = 0;
  uint64_t bytes_from_hub = 0;    // stored-form chunk bytes received
  uint64_t bytes_from_cache = 0;  // raw chunk bytes served from the cache
  uint64_t leases_held = 0;       // inodes with a live lease
  uint64_t invalidations = 0;
  uint64_t hub_changes = 0;              // namespace changes sent to the hub
  uint64_t hub_change_calls = 0;         // the calls that carried them
  uint64_t changes_deferred = 0;         // deferred by the hub to wait for another spoke
  uint64_t journal_bytes = 0;            // written, not yet committed at the hub
  uint64_t local_creates = 0;            // CREATEs answered here (write-behind)
  uint64_t local_creates_pending = 0;    // of those, not yet at the hub
  uint64_t local_creates_cancelled = 0;  // removed before they were sent
  uint64_t local_create_conflicts = 0;   // committed under another name
  uint64_t local_creates_lost = 0;       // refused by the hub
  bool hub_connected = false;
  double hub_state_seconds = 0;  // how long the link has been in its state
  uint64_t session = 0;
  bool immutable = false;
  std::optional<prefetch::PrefetchStats> prefetch;  // with the prefetcher on
};

class SpokeBackend : public vfs::Backend {
 public:
  // Resolves the portal at the hub (as root) and starts uploading what
  // `journal` holds (a restart replays it). `journal` may be null: then
  // WRITE answers kNotSupported. REQUIRES: link, cache, journal outlive it.
  static Result<std::unique_ptr<SpokeBackend>> Open(HubLink* link, cache::ChunkCache* cache,
                                                    WriteJournal* journal,
                                                    SpokeBackendOptions options);
  ~SpokeBackend() override;

  // Handlers HubLink::Start needs: invalidations and renewals go to the cache.
  void AttachSessionHandlers();
  SpokeStats Stats() const;
  // Commits every file's journalled writes at the hub and stops uploading
  // (shutdown): what is left stays in the journal for the next start.
  Status FlushAll();

  vfs::Capabilities GetCapabilities() const override;
  // GetAttr, Lookup, LookupParent and Access answer from the leased metadata
  // cache, or else send an asynchronous hub request and return: none of them
  // waits, so the front end may run them on its network threads.
  bool QuickMetadata() const override { return true; }
  // Read serves page-cache hits with non-blocking reads and sends cache
  // misses to io_uring or the hub, calling back from their threads.
  bool QuickReads() const override { return true; }
  // Changes send an asynchronous hub request and return; the rare change
  // that must first wait for the file's journalled writes to reach the hub
  // (a truncation) waits on flushers_, not on the caller's thread.
  bool QuickChanges() const override { return true; }
  Result<vfs::Handle> Root() override;
  void GetAttr(const vfs::Credentials& cred, const vfs::Handle& h,
               vfs::Callback<vfs::Attr> cb) override;
  void SetAttr(const vfs::Credentials& cred, const vfs::Handle& h, const vfs::SetAttrs& attrs,
               std::optional<WallTime> guard_ctime, vfs::Callback<vfs::Wcc> cb) override;
  void Lookup(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
              vfs::Callback<vfs::LookupReply> cb) override;
  void LookupParent(const vfs::Credentials& cred, const vfs::Handle& dir,
                    vfs::Callback<vfs::LookupReply> cb) override;
  void Access(const vfs::Credentials& cred, const vfs::Handle& h, uint32_t requested,
              vfs::Callback<vfs::AccessReply> cb) override;
  void ReadLink(const vfs::Credentials& cred, const vfs::Handle& h,
                vfs::Callback<vfs::ReadLinkReply> cb) override;
  void Read(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset, uint32_t count,
            vfs::Callback<vfs::ReadReply> cb) override;
  void Write(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset, Buffer data,
             vfs::Stability stability, vfs::Callback<vfs::WriteReply> cb) override;
  void Create(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
              const vfs::CreateRequest& req, vfs::Callback<vfs::CreateReply> cb) override;
  void Mkdir(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
             const vfs::SetAttrs& attrs, vfs::Callback<vfs::CreateReply> cb) override;
  void Symlink(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
               std::string_view target, const vfs::SetAttrs& attrs,
               vfs::Callback<vfs::CreateReply> cb) override;
  void Mknod(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
             const vfs::MknodRequest& req, vfs::Callback<vfs::CreateReply> cb) override;
  void Remove(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
              vfs::Callback<vfs::Wcc> cb) override;
  void Rmdir(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
             vfs::Callback<vfs::Wcc> cb) override;
  void Rename(const vfs::Credentials& cred, const vfs::Handle& from_dir, std::string_view from_name,
              const vfs::Handle& to_dir, std::string_view to_name,
              vfs::Callback<vfs::RenameReply> cb) override;
  void Link(const vfs::Credentials& cred, const vfs::Handle& file, const vfs::Handle& dir,
            std::string_view name, vfs::Callback<vfs::LinkReply> cb) override;
  void ReadDir(const vfs::Credentials& cred, const vfs::Handle& dir, const vfs::ReadDirRequest& req,
               vfs::Callback<vfs::DirPage> cb) override;
  void FsStat(const vfs::Credentials& cred, const vfs::Handle& h,
              vfs::Callback<vfs::FsStats> cb) override;
  void Commit(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset, uint32_t count,
              vfs::Callback<vfs::Wcc> cb) override;

 private:
  SpokeBackend(HubLink* link, cache::ChunkCache* cache, WriteJournal* journal,
               SpokeBackendOptions options);

  // Starts uploader_ over journal_. REQUIRES: journal_ != nullptr,
  // flushers_, and local_ if there is to be one.
  void StartUploader();
  // Whether expired entries may serve: an immutable portal cut off.
  bool AllowExpired() const;
  // Refuses changes on an immutable portal.
  Status CheckWritable() const;
  // The attributes of `key` (cached, else from the hub), with journalled
  // writes applied.
  void FetchAttr(const vfs::Credentials& cred, const FileKey& key, vfs::Callback<vfs::Attr> cb);
  // The file's whole chunk map (cached, else from the hub).
  void FetchChunkMap(const vfs::Credentials& cred, const FileKey& key,
                     std::function<void(Result<std::shared_ptr<const ChunkMap>>)> cb);
  // `attr` of file `key` with its pending journal writes applied (a hash
  // lookup: this runs for every attribute the spoke answers with).
  vfs::Attr Patched(const FileKey& key, vfs::Attr attr) const;
  // The access stream (docs/prefetch.md): no-ops with prefetch off.
  void Record(const prefetch::AccessEvent& event) {
    if (ring_) ring_->Record(event);
  }
  prefetch::AccessEvent EventOf(uint32_t uid, prefetch::AccessOp op, const FileKey& key) const;
  void RecordOp(const vfs::Credentials& cred, prefetch::AccessOp op, const FileKey& key);
  void RecordLookup(uint32_t uid, const FileKey& dir, const FileKey& child, vfs::FileType type);
  // Starts the prefetcher over this backend (spoke_backend_prefetch.cc).
  void StartPrefetch();
  class PrefetchBridge;

  // FetchAttr, waiting. REQUIRES: not on a gRPC thread.
  Result<vfs::Attr> AttrSync(const vfs::Credentials& cred, const FileKey& key);
  // Sends the SETATTR; answers `cb` and drops the file's entries.
  void SetAttrAtHub(const vfs::Credentials& cred, const FileKey& key, const vfs::SetAttrs& attrs,
                    std::optional<WallTime> guard_ctime, vfs::Callback<vfs::Wcc> cb);
  // Whether `name` is free in `dir`, from the hub (a complete listing of a
  // small directory, else a lookup); either leaves it cached.
  void LearnWhetherMissing(const vfs::Credentials& cred, const vfs::Handle& dir,
                           const FileKey& dkey, std::string_view name,
                           std::function<void(bool)> then);
  // Create past the write-behind checks: to the hub.
  void CreateAfterChecks(const vfs::Credentials& cred, const FileKey& dir, std::string_view name,
                         const vfs::CreateRequest& create, vfs::Callback<vfs::CreateReply> cb);
  // Sends a CREATE-like request; answers `cb` and drops the directory's
  // entries.
  void CreateAtHub(const FileKey& dir, const v1::CreateRequest& req,
                   vfs::Callback<vfs::CreateReply> cb);
  // REMOVE (directory=false) or RMDIR; drops the directory's and the
  // victim's entries either way.
  void RemoveAtHub(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
                   bool directory, vfs::Callback<vfs::Wcc> cb);
  // Write-behind of creates (spoke_backend_local.cc, local_creates.h).
  // REQUIRES: flushers_.
  void StartLocalCreates();
  // True if `ino` (a file, a directory's files, or any: LocalScope) has
  // creates answered here that the hub does not have yet. Operations that
  // need the hub to have them first go through local_->Flush, which
  // continues on a flusher thread (kUnavailable if the hub could not take
  // them yet: NFS3ERR_JUKEBOX, the client retries).
  bool HasLocal(LocalScope scope, uint64_t ino) const;
  // What TryCreateHere did.
  enum class CreatedHere {
    kAnswered,     // `cb` is answered
    kNameUnknown,  // all else allows it, but whether `name` is free is not known
    kNo,           // go to the hub
  };
  // Answers here if the lease on `dir` allows.
  CreatedHere TryCreateHere(const vfs::Credentials& cred, const FileKey& dir, std::string_view name,
                            const vfs::CreateRequest& create, vfs::Callback<vfs::CreateReply>& cb);
  bool TrySetAttrHere(const vfs::Credentials& cred, const FileKey& key, const vfs::SetAttrs& attrs,
                      std::optional<WallTime> guard_ctime, vfs::Callback<vfs::Wcc>& cb);
  bool TryRemoveHere(const vfs::Credentials& cred, const FileKey& dir, std::string_view name,
                     vfs::Callback<vfs::Wcc>& cb);
  // What must reach the hub before an operation on `name` in `dir` may go
  // there: `dir` itself, if it is a file created here (the hub answers
  // NOTDIR once it has it), or the file created here as `name`.
  std::optional<uint64_t> LocalInTheWay(const FileKey& dir, std::string_view name) const;
  // The directory's weak cache consistency data for a change answered
  // here: its times move (LocalCreates::TouchDir).
  vfs::Wcc DirChangedHere(const FileKey& dir, const vfs::Attr& dir_attr);
  // A file created here: its attributes, or false (then `cb` untouched).
  bool LookupHere(const vfs::Credentials& cred, const FileKey& dir, std::string_view name,
                  vfs::Callback<vfs::LookupReply>& cb);

  // Commits journalled writes preceding a truncation of the file `name`
  // in `dir` (CREATE over an existing file). Blocks: runs on flushers_.
  // REQUIRES: uploader_.
  Status FlushBeforeTruncate(const vfs::Credentials& cred, const FileKey& dir,
                             std::string_view name);

  HubLink* const link_;
  cache::ChunkCache* const cache_;
  WriteJournal* const journal_;
  const SpokeBackendOptions options_;
  std::unique_ptr<MetadataCache> meta_;
  std::unique_ptr<ChunkFetcher> fetcher_;
  // Sends SetAttr, Create, Remove, Rename and Link to the hub.
  std::unique_ptr<ChangeBatcher> changes_;
  // Storage of READ replies assembled from several chunks.
  BufferPool reply_pool_;
  FileKey root_;

  std::atomic<uint64_t> metadata_hits_{0}, metadata_misses_{0};

  std::mutex large_dirs_mu_;
  // Directories whose listing is more than a page (LearnWhetherMissing).
  std::unordered_set<uint64_t> large_dirs_;  // guarded by large_dirs_mu_

  // The access stream and what reads it; null with prefetch off. The
  // prefetcher goes before the fetcher and caches it uses.
  std::unique_ptr<prefetch::AccessRing> ring_;
  std::unique_ptr<prefetch::PrefetchSource> bridge_;  // a PrefetchBridge
  std::unique_ptr<prefetch::Prefetcher> prefetcher_;
  // Commits the journal at the hub in the background; null without a
  // journal. Stopped before the caches its hooks update go.
  std::unique_ptr<JournalUploader> uploader_;
  // Creates answered here; null without create_log or journal.
  std::unique_ptr<LocalCreates> local_;
  // Runs the changes that wait for a file's journalled writes to reach the
  // hub first (uploader_->Flush blocks). Last: its queued changes finish
  // before the uploader and the caches go.
  std::unique_ptr<WorkerPool> flushers_;
};

}  // namespace geofs::spoke
