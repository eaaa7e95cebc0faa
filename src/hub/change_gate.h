// ChangeGate: every namespace change, from any source (the gRPC API, the
// hub's NFS export), runs under LeaseManager::BeginChange on the inodes it
// affects, so that no spoke still caches their old state under a lease
// when the change commits (docs/coherence.md).
//
// Affected inodes: setattr and chunk-map commits the file; create, mkdir,
// symlink and mknod the directory (and the file an UNCHECKED create would
// truncate); remove and rmdir the directory and the removed inode; rename
// both directories, the moved inode and an overwritten target; link the
// file and the directory. Changes to one directory run concurrently, but
// each also holds the entries it adds, removes or replaces (LeaseManager
// `names`), which no other change may hold. Names are looked up before the
// change begins and again once it has (only a change holding the entry can
// alter it, so the second answer holds until the commit); if the second
// names an inode outside the guarded set the change starts over.
//
// `origin` is the session making the change (0: none): it gets no
// invalidation, and leases on the inodes its reply describes.
//
// Thread-safe. REQUIRES: the caller holds no ChangeGuard and no namespace
// lock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"
#include "geofs/vfs.h"
#include "hub/lease_manager.h"
#include "meta/namespace.h"

namespace geofs::hub {

// The origin of changes made by no session (the hub's NFS export).
inline constexpr uint64_t kNoSession = 0;

// A change run without waiting: the ChangeGate methods given one never
// block on coherence (the namespace still takes its lock), and hand the
// change's guard to the caller instead of ending it.
struct NoWaitChange {
  // Set when the change would have had to wait (for invalidations, for
  // another change of its names, for the restart grace): nothing was done,
  // and the call's result means nothing; run it again without NoWaitChange.
  bool would_wait = false;
  // The change's coherence guard once it ran; the caller ends it once the
  // change is durable.
  LeaseManager::ChangeGuard guard;
};

class ChangeGate {
 public:
  // `leases` null: changes run directly (no coherence). REQUIRES: both
  // outlive the gate.
  ChangeGate(meta::Namespace* ns, LeaseManager* leases) : ns_(ns), leases_(leases) {}

  Result<vfs::Wcc> SetAttr(uint64_t origin, const vfs::Credentials& cred, const vfs::Handle& h,
                           const vfs::SetAttrs& attrs, std::optional<WallTime> guard_ctime,
                           NoWaitChange* no_wait = nullptr);
  Result<meta::CommitReply> CommitChunkMap(uint64_t origin, const vfs::Credentials& cred,
                                           const vfs::Handle& h, const meta::ChunkMapUpdate& update,
                                           NoWaitChange* no_wait = nullptr);
  // `reserved_ino` not 0: the file gets that reserved number, and
  // `answered_ctime` as its ctime (Namespace::CreateReserved).
  Result<vfs::CreateReply> Create(uint64_t origin, const vfs::Credentials& cred,
                                  const vfs::Handle& dir, std::string_view name,
                                  const vfs::CreateRequest& req, NoWaitChange* no_wait = nullptr,
                                  uint64_t reserved_ino = 0,
                                  std::optional<WallTime> answered_ctime = std::nullopt);
  Result<vfs::CreateReply> Mkdir(uint64_t origin, const vfs::Credentials& cred,
                                 const vfs::Handle& dir, std::string_view name,
                                 const vfs::SetAttrs& attrs, NoWaitChange* no_wait = nullptr);
  Result<vfs::CreateReply> Symlink(uint64_t origin, const vfs::Credentials& cred,
                                   const vfs::Handle& dir, std::string_view name,
                                   std::string_view target, const vfs::SetAttrs& attrs,
                                   NoWaitChange* no_wait = nullptr);
  Result<vfs::CreateReply> Mknod(uint64_t origin, const vfs::Credentials& cred,
                                 const vfs::Handle& dir, std::string_view name,
                                 const vfs::MknodRequest& req, NoWaitChange* no_wait = nullptr);
  Result<vfs::Wcc> Remove(uint64_t origin, const vfs::Credentials& cred, const vfs::Handle& dir,
                          std::string_view name, NoWaitChange* no_wait = nullptr);
  Result<vfs::Wcc> Rmdir(uint64_t origin, const vfs::Credentials& cred, const vfs::Handle& dir,
                         std::string_view name, NoWaitChange* no_wait = nullptr);
  Result<vfs::RenameReply> Rename(uint64_t origin, const vfs::Credentials& cred,
                                  const vfs::Handle& from_dir, std::string_view from_name,
                                  const vfs::Handle& to_dir, std::string_view to_name,
                                  NoWaitChange* no_wait = nullptr);
  Result<vfs::LinkReply> Link(uint64_t origin, const vfs::Credentials& cred,
                              const vfs::Handle& file, const vfs::Handle& dir,
                              std::string_view name, NoWaitChange* no_wait = nullptr);

 private:
  using Inos = std::vector<uint64_t>;
  using Names = std::vector<std::string>;
  // Runs `op` under a change of affected() holding the entries `names`
  // (affected() is recomputed once the change began; see above), then
  // leases leased(reply) to `origin`.
  // With `no_wait`, as described at NoWaitChange.
  template <typename T>
  Result<T> Gated(uint64_t origin, const std::function<Inos()>& affected, const Names& names,
                  const std::function<Result<T>()>& op, const std::function<Inos(const T&)>& leased,
                  NoWaitChange* no_wait);
  // The inode `name` in `dir` names now, appended to `out` (nothing if none).
  // It is read again once the change has begun, so it costs one read, not
  // a lookup with attributes and permission checks.
  void AddChild(const vfs::Handle& dir, std::string_view name, Inos* out);
  Result<vfs::CreateReply> CreateLike(uint64_t origin, const vfs::Handle& dir,
                                      std::string_view name, const std::function<Inos()>& affected,
                                      const std::function<Result<vfs::CreateReply>()>& op,
                                      NoWaitChange* no_wait);
  // REMOVE or RMDIR (`op`) of `name` in `dir`: changes the directory and the
  // removed inode; leases the directory to `origin`.
  Result<vfs::Wcc> RemoveLike(uint64_t origin, const vfs::Credentials& cred, const vfs::Handle& dir,
                              std::string_view name, const std::function<Result<vfs::Wcc>()>& op,
                              NoWaitChange* no_wait);

  meta::Namespace* const ns_;
  LeaseManager* const leases_;
};

// The inode of a namespace handle, appended to `out` (nothing if malformed:
// the namespace then fails the operation itself).
void AddIno(const vfs::Handle& h, std::vector<uint64_t>* out);
// The LeaseManager name key of entry `name` in directory `dir` (a malformed
// handle gives a key of its own bytes: the namespace fails the operation).
std::string EntryKey(const vfs::Handle& dir, std::string_view name);

}  // namespace geofs::hub
