// HubBackend: the hub's namespace and chunk store as a vfs::Backend, so the
// shared NFS front end serves the hub's whole tree (export "/").
//
// Metadata operations forward to meta::Namespace. File data:
//  - READ assembles the committed chunks of the range (holes read as zeros)
//    from a ChunkCache; every chunk is verified against its hash when it is
//    fetched, and a corrupt or missing chunk fails the read (kCorruption /
//    kIoError), it is never served.
//  - WRITE buffers the bytes in memory, per file, as a WriteOverlay over the
//    committed contents; GETATTR and READ in this process see them at once.
//  - A flush turns a file's overlay into chunks: each run of written bytes is
//    widened to the boundaries of the committed extents it touches, those
//    old bytes are read and overlaid, the span is cut by the content-defined
//    chunker, new chunks are registered and stored, and the span's chunk map
//    is replaced with CommitChunkMap against the version that was read
//    (re-read and redone when another writer moved the version on). So an
//    edit re-chunks only the chunks around it, and bytes that did not change
//    produce the chunks they had before (deduplicated, not stored again).
//  - Flushes happen on COMMIT and on FILE_SYNC/DATA_SYNC writes (durable
//    before the reply), when a file's or the process's buffered bytes pass a
//    bound (then only up to the last content-defined boundary, keeping the
//    tail buffered so that a sequential writer's chunks match what a single
//    pass would cut), after `dirty_expire` in the background, before a
//    SETATTR or truncating CREATE of the file, and in FlushAll (shutdown).
//    UNSTABLE data not yet flushed is lost in a crash, as NFS allows: the
//    front end's write verifier changes on restart and clients resend.
//
// Thread-safe. Calls run synchronously and invoke their callback before
// returning (the NFS server calls backends from its worker pool).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "chunk/chunk_store.h"
#include "chunk/chunker.h"
#include "geofs/clock.h"
#include "geofs/vfs.h"
#include "hub/change_gate.h"
#include "hub/chunk_cache.h"
#include "hub/fs_stats.h"
#include "meta/namespace.h"

namespace geofs::hub {

class WriteOverlay;
struct DirtySpan;

struct HubBackendOptions {
  // How new file data is cut into chunks. Must match what other writers
  // (geofsctl import, spokes) use for their data to deduplicate with it.
  chunk::ChunkerOptions chunker;
  // Raw chunk bytes kept for reads.
  size_t chunk_cache_bytes = size_t{256} << 20;
  // Buffered (unflushed) bytes of one file before its writer flushes it.
  size_t max_dirty_bytes_per_file = size_t{64} << 20;
  // Buffered bytes of all files before a writer flushes its own file.
  size_t max_dirty_bytes = size_t{512} << 20;
  // Buffered data older than this is flushed in the background; zero
  // disables the background flusher (tests).
  std::chrono::milliseconds dirty_expire{5000};
  // Chunks stored in parallel by one flush.
  int upload_parallelism = 4;
  // What FSSTAT reports as space; no path: only what the namespace holds.
  SpaceSource space;
  // Time of writes. REQUIRES: outlives the backend.
  Clock* clock = Clock::Real();
  // Coherence: every change (metadata, and each flush's commit) first
  // invalidates the spokes' leases on what it changes (change_gate.h).
  // Null: changes are not gated. REQUIRES: outlives the backend.
  LeaseManager* leases = nullptr;

  Status Validate() const;
};

class HubBackend : public vfs::Backend {
 public:
  // REQUIRES: `ns` and `chunks` outlive the backend; options.Validate().ok().
  HubBackend(meta::Namespace* ns, chunk::ChunkStore* chunks, HubBackendOptions options = {});
  // Stops the background flusher. Buffered data not flushed is dropped:
  // call FlushAll first to keep it.
  ~HubBackend() override;
  HubBackend(const HubBackend&) = delete;
  HubBackend& operator=(const HubBackend&) = delete;

  // Flushes every file's buffered data (dropping that of removed files);
  // the first error, after trying all.
  Status FlushAll();

  // Bytes written and not yet flushed, over all files.
  uint64_t dirty_bytes() const { return dirty_bytes_.load(); }
  const ChunkCache& chunk_cache() const { return cache_; }

  vfs::Capabilities GetCapabilities() const override;
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
  struct FileState;
  enum class FlushMode {
    kAll,          // everything buffered (durability)
    kStablePrefix  // up to content-defined boundaries (memory pressure)
  };

  // The state of file `ino`, created if `create`; null if absent.
  std::shared_ptr<FileState> FindState(uint64_t ino);
  std::shared_ptr<FileState> GetOrCreateState(uint64_t ino, const vfs::Handle& h);
  // Drops `state` from the table if it holds nothing.
  void MaybeForget(const std::shared_ptr<FileState>& state);
  // `attr` with the unflushed writes of its file applied (size, times).
  vfs::Attr Patched(vfs::Attr attr);
  template <typename Reply>
  void PatchReply(Reply& reply);

  Status Flush(const std::shared_ptr<FileState>& state, FlushMode mode);
  // Flushes the file behind `h` if it has buffered data.
  Status FlushIfDirty(const vfs::Handle& h);
  // Re-chunks and commits one group of runs; returns where the commit ended.
  Result<uint64_t> FlushSpan(FileState& state, const WriteOverlay& snapshot,
                             const meta::ChunkMap& map, const DirtySpan& span, FlushMode mode,
                             const vfs::Credentials& cred, WallTime mtime);
  // The committed bytes [begin, end) of a file from its chunk map `extents`
  // (zeros where no extent covers them) copied into `out`.
  Status ReadCommitted(const std::vector<meta::Extent>& extents, uint64_t begin,
                       std::span<uint8_t> out);
  Result<Buffer> FetchChunk(const meta::Extent& e);
  // Names the chunks of `extents` (their bytes are data[e.offset -
  // data_offset ...]), registers them and stores the ones the store lacks.
  Status StoreChunks(std::span<const uint8_t> data, uint64_t data_offset,
                     std::vector<meta::Extent>* extents);
  void BackgroundFlusher(std::stop_token stop);

  meta::Namespace* const ns_;
  chunk::ChunkStore* const chunks_;
  const HubBackendOptions options_;
  ChangeGate gate_;
  ChunkCache cache_;

  std::mutex files_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<FileState>> files_;  // guarded by files_mu_
  std::atomic<uint64_t> dirty_bytes_{0};

  std::mutex flusher_mu_;
  std::condition_variable_any flusher_cv_;
  std::jthread flusher_;  // last: stopped first
};

}  // namespace geofs::hub
