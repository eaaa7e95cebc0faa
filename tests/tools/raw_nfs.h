// Synchronous calls over libnfs's raw RPC layer, for tests that need exact
// protocol control: chosen create modes and verifiers, write stability and
// verifiers, COMMIT, directory cookies and verifiers, stored file handles.
#pragma once

// libnfs-raw.h needs the types from libnfs.h first.
// clang-format off
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
// clang-format on

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"

namespace geofs::testing {

// An NFS file handle's bytes, kept across connections and restarts.
using FileHandle = std::string;
using Verifier = std::array<char, 8>;

struct RawOptions {
  uint16_t nfs_port = 0;
  uint16_t mount_port = 0;
  // AUTH_SYS credentials of every call.
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> gids;
  std::string export_path = "/";
};

// A view of `fh` as libnfs's argument type. The view borrows fh's bytes.
nfs_fh3 ToFh3(const FileHandle& fh);
FileHandle FromFh3(const nfs_fh3& fh);
// An sattr3 that sets nothing.
sattr3 NoAttrs();
// An sattr3 that sets only the mode.
sattr3 ModeAttrs(uint32_t mode);

// One TCP connection to the NFS program, authenticated with AUTH_SYS, plus
// the export's root handle obtained by MOUNT MNT. Every call is synchronous
// and times out after 30 s (the connection is then dropped and later calls
// fail). Not thread-safe.
class RawNfs {
 public:
  struct MountReply {
    mountstat3 status = MNT3_OK;
    FileHandle root;  // set iff status == MNT3_OK
  };
  // Only MOUNT v3 MNT of options.export_path, on a connection of its own.
  static Result<MountReply> Mnt(const RawOptions& options);
  // MNT, then connects to NFS v3. Fails unless MNT answers MNT3_OK.
  static Result<std::unique_ptr<RawNfs>> Connect(const RawOptions& options);
  // Connects to NFS v3 without MOUNT, reusing a root handle obtained
  // earlier, as a client does when it reconnects after a server restart.
  static Result<std::unique_ptr<RawNfs>> ConnectWithRoot(const RawOptions& options,
                                                         FileHandle root);
  ~RawNfs();

  RawNfs(const RawNfs&) = delete;
  RawNfs& operator=(const RawNfs&) = delete;

  const FileHandle& root() const { return root_; }

  // Issues one call and waits for its reply. `start(rpc, cb, private_data)`
  // queues it (a libnfs rpc_*_async function); `on_reply` sees the decoded
  // reply, which libnfs frees afterwards: copy what you need. A transport
  // failure or an RPC-level rejection (PROG_UNAVAIL, GARBAGE_ARGS, ...) is
  // a non-OK Status and on_reply is not called.
  template <typename Res>
  Status Call(const std::function<int(rpc_context*, rpc_cb, void*)>& start,
              const std::function<void(Res&)>& on_reply) {
    return Invoke(start, [&](void* data) { on_reply(*static_cast<Res*>(data)); });
  }

  // Typed helpers for what tests do most. Each returns the nfsstat3 and,
  // when it is NFS3_OK, the fields tests inspect.
  struct AttrReply {
    nfsstat3 status = NFS3_OK;
    fattr3 attr{};
  };
  struct HandleReply {
    nfsstat3 status = NFS3_OK;
    FileHandle fh;               // empty unless the server returned one
    std::optional<fattr3> attr;  // the object's attributes, when returned
  };
  struct WriteReply {
    nfsstat3 status = NFS3_OK;
    uint32_t count = 0;
    stable_how committed = UNSTABLE;
    Verifier verf{};
  };
  struct CommitReply {
    nfsstat3 status = NFS3_OK;
    Verifier verf{};
  };
  struct ReadReply {
    nfsstat3 status = NFS3_OK;
    std::string data;
    bool eof = false;
  };
  struct DirEntry {
    uint64_t fileid = 0;
    std::string name;
    uint64_t cookie = 0;
    FileHandle fh;  // READDIRPLUS only, when the server sent one
  };
  struct ReadDirReply {
    nfsstat3 status = NFS3_OK;
    std::vector<DirEntry> entries;
    Verifier verf{};
    bool eof = false;
  };

  Result<AttrReply> Getattr(const FileHandle& fh);
  Result<nfsstat3> Setattr(const FileHandle& fh, const sattr3& attrs);
  Result<HandleReply> Lookup(const FileHandle& dir, const std::string& name);
  // UNCHECKED and GUARDED set `attrs`; EXCLUSIVE sends `verf` instead.
  Result<HandleReply> Create(const FileHandle& dir, const std::string& name, createmode3 how,
                             const sattr3& attrs, const Verifier& verf = {});
  Result<HandleReply> Mkdir(const FileHandle& dir, const std::string& name, uint32_t mode);
  Result<HandleReply> Symlink(const FileHandle& dir, const std::string& name,
                              const std::string& target);
  Result<HandleReply> MknodFifo(const FileHandle& dir, const std::string& name, uint32_t mode);
  Result<nfsstat3> Remove(const FileHandle& dir, const std::string& name);
  Result<nfsstat3> Rmdir(const FileHandle& dir, const std::string& name);
  Result<nfsstat3> Rename(const FileHandle& from_dir, const std::string& from_name,
                          const FileHandle& to_dir, const std::string& to_name);
  Result<nfsstat3> Link(const FileHandle& file, const FileHandle& dir, const std::string& name);
  Result<WriteReply> Write(const FileHandle& fh, uint64_t offset, std::string_view data,
                           stable_how stable);
  Result<CommitReply> Commit(const FileHandle& fh, uint64_t offset = 0, uint32_t count = 0);
  Result<ReadReply> Read(const FileHandle& fh, uint64_t offset, uint32_t count);
  // Returns the nfsstat3 and the granted access bits.
  Result<std::pair<nfsstat3, uint32_t>> Access(const FileHandle& fh, uint32_t requested);
  Result<ReadDirReply> ReadDir(const FileHandle& dir, uint64_t cookie, const Verifier& verf,
                               uint32_t count);
  Result<ReadDirReply> ReadDirPlus(const FileHandle& dir, uint64_t cookie, const Verifier& verf,
                                   uint32_t dircount, uint32_t maxcount);

 private:
  explicit RawNfs(rpc_context* rpc, FileHandle root) : rpc_(rpc), root_(std::move(root)) {}
  Status Invoke(const std::function<int(rpc_context*, rpc_cb, void*)>& start,
                const std::function<void(void*)>& on_reply);

  rpc_context* rpc_;
  FileHandle root_;
};

// The symbolic name of an nfsstat3 ("NFS3ERR_ROFS"), for test messages.
std::string NfsStatName(int status);

}  // namespace geofs::testing
