// MemoryBackend: a complete file system tree held in memory.
//
// For unit tests of the NFS layer and of the layers stacked on a Backend
// (caches), and as the reference semantics the other backends are checked
// against (tests/vfs/ runs one conformance suite over every backend).
//
//  - Handles are 16 bytes: inode number (8) + generation (8), big-endian.
//    Inode numbers are never reused and generations are unpredictable, so a
//    handle can never name a different object; a removed object's handle is
//    kStale, a handle of the wrong size kBadHandle.
//  - fileid is the inode number.
//  - File data lives in 64 KiB blocks allocated on first write, so holes
//    (sparse writes, truncation upwards) cost nothing and read as zeros.
//  - ReadDir: "." (cookie 1) and ".." (cookie 2) come first; every other
//    entry gets a sequence number from a per-directory counter when its name
//    is created (or renamed in), and entries are listed in that order with
//    the sequence number as cookie. A cookie therefore stays valid whatever
//    is added or removed later, including its own entry: the listing resumes
//    after it. Cookies larger than any the directory has issued are
//    kBadCookie. Since no cookie ever becomes invalid, the cookie verifier is
//    a per-directory constant and the caller's verifier is not checked.
//  - EXCLUSIVE create keeps the verifier with the file until its times are
//    set or it is written to; a replay with the same verifier returns the
//    same file, any other verifier gets kAlreadyExists.
//  - Thread-safe: one mutex serialises all operations. Callbacks run inline,
//    after the mutex is released, so they may call back into the backend.
#pragma once

#include <memory>

#include "geofs/clock.h"
#include "geofs/vfs.h"

namespace geofs::vfs {

class MemoryBackend : public Backend {
 public:
  // REQUIRES: `clock` outlives the backend.
  explicit MemoryBackend(Clock* clock = Clock::Real());
  ~MemoryBackend() override;
  MemoryBackend(const MemoryBackend&) = delete;
  MemoryBackend& operator=(const MemoryBackend&) = delete;

  Capabilities GetCapabilities() const override;
  Result<Handle> Root() override;

  void GetAttr(const Credentials& cred, const Handle& h, Callback<Attr> cb) override;
  void SetAttr(const Credentials& cred, const Handle& h, const SetAttrs& attrs,
               std::optional<WallTime> guard_ctime, Callback<Wcc> cb) override;
  void Lookup(const Credentials& cred, const Handle& dir, std::string_view name,
              Callback<LookupReply> cb) override;
  void LookupParent(const Credentials& cred, const Handle& dir, Callback<LookupReply> cb) override;
  void Access(const Credentials& cred, const Handle& h, uint32_t requested,
              Callback<AccessReply> cb) override;
  void ReadLink(const Credentials& cred, const Handle& h, Callback<ReadLinkReply> cb) override;
  void Read(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
            Callback<ReadReply> cb) override;
  void Write(const Credentials& cred, const Handle& h, uint64_t offset, Buffer data,
             Stability stability, Callback<WriteReply> cb) override;
  void Create(const Credentials& cred, const Handle& dir, std::string_view name,
              const CreateRequest& req, Callback<CreateReply> cb) override;
  void Mkdir(const Credentials& cred, const Handle& dir, std::string_view name,
             const SetAttrs& attrs, Callback<CreateReply> cb) override;
  void Symlink(const Credentials& cred, const Handle& dir, std::string_view name,
               std::string_view target, const SetAttrs& attrs, Callback<CreateReply> cb) override;
  void Mknod(const Credentials& cred, const Handle& dir, std::string_view name,
             const MknodRequest& req, Callback<CreateReply> cb) override;
  void Remove(const Credentials& cred, const Handle& dir, std::string_view name,
              Callback<Wcc> cb) override;
  void Rmdir(const Credentials& cred, const Handle& dir, std::string_view name,
             Callback<Wcc> cb) override;
  void Rename(const Credentials& cred, const Handle& from_dir, std::string_view from_name,
              const Handle& to_dir, std::string_view to_name, Callback<RenameReply> cb) override;
  void Link(const Credentials& cred, const Handle& file, const Handle& dir, std::string_view name,
            Callback<LinkReply> cb) override;
  void ReadDir(const Credentials& cred, const Handle& dir, const ReadDirRequest& req,
               Callback<DirPage> cb) override;
  void FsStat(const Credentials& cred, const Handle& h, Callback<FsStats> cb) override;
  void Commit(const Credentials& cred, const Handle& h, uint64_t offset, uint32_t count,
              Callback<Wcc> cb) override;

 private:
  class Tree;
  std::unique_ptr<Tree> tree_;
};

}  // namespace geofs::vfs
