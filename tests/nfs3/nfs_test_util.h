// Helpers for driving NfsProgram / MountProgram through Dispatch with
// XDR-encoded arguments, and for reading their replies.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/clock.h"
#include "geofs/vfs.h"
#include "nfs3/export.h"
#include "nfs3/handle_codec.h"
#include "nfs3/nfs3_xdr.h"
#include "nfs3/nfs_program.h"
#include "nfs3/nfs_status.h"
#include "rpc/program.h"
#include "vfs/memory_backend.h"
#include "xdr/xdr.h"

namespace geofs::nfs3::testing {

using Bytes = std::vector<uint8_t>;

// Builds call arguments.
class Args {
 public:
  Args& U32(uint32_t v) {
    e_.U32(v);
    return *this;
  }
  Args& U64(uint64_t v) {
    e_.U64(v);
    return *this;
  }
  Args& Bool(bool v) {
    e_.Bool(v);
    return *this;
  }
  Args& Opaque(std::span<const uint8_t> b) {
    e_.Opaque(b);
    return *this;
  }
  Args& Fixed(std::span<const uint8_t> b) {
    e_.FixedOpaque(b);
    return *this;
  }
  Args& Str(std::string_view s) {
    e_.String(s);
    return *this;
  }
  Args& Fh(const Bytes& fh) { return Opaque(fh); }
  Args& DirOp(const Bytes& dir, std::string_view name) { return Fh(dir).Str(name); }
  Args& Time(WallTime t) { return U32(static_cast<uint32_t>(t.sec)).U32(t.nsec); }
  // sattr3 from the fields that are set.
  Args& Sattr(const vfs::SetAttrs& a = {});
  Bytes bytes() const { return e_.Flatten(); }

 private:
  xdr::Encoder e_;
};

struct Fattr {
  uint32_t type = 0, mode = 0, nlink = 0, uid = 0, gid = 0;
  uint64_t size = 0, used = 0;
  uint32_t rdev_major = 0, rdev_minor = 0;
  uint64_t fsid = 0, fileid = 0;
  WallTime atime, mtime, ctime;
};
struct WccData {
  bool has_before = false;
  uint64_t before_size = 0;
  WallTime before_mtime, before_ctime;
  std::optional<Fattr> after;
};

// Reads one value; a failed decode fails the decoder (check d.ok()).
Fattr ReadFattr(xdr::Decoder& d);
std::optional<Fattr> ReadPostOpAttr(xdr::Decoder& d);
WccData ReadWcc(xdr::Decoder& d);
Bytes ReadOpaque(xdr::Decoder& d, size_t max = 1 << 24);
std::optional<Bytes> ReadPostOpFh(xdr::Decoder& d);

// One dispatched call's reply.
struct CallResult {
  int replies = 0;  // how many times the responder ran (must be 1)
  rpc::AcceptStat accept = rpc::AcceptStat::kSystemErr;
  Bytes body;
  size_t segments = 0;  // gather segments in the reply body

  // For NFS results: the nfsstat3 and a decoder positioned after it.
  NfsStat status() const;
  xdr::Decoder After() const;
  xdr::Decoder Body() const { return xdr::Decoder(body); }
};

struct Caller {
  rpc::AuthFlavor flavor = rpc::AuthFlavor::kSys;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> gids;
  std::string address = "127.0.0.1";
};

inline Caller User(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids = {}) {
  Caller c;
  c.uid = uid;
  c.gid = gid;
  c.gids = std::move(gids);
  return c;
}
inline Caller From(std::string address) {
  Caller c;
  c.address = std::move(address);
  return c;
}
inline Caller NoAuth() {
  Caller c;
  c.flavor = rpc::AuthFlavor::kNone;
  return c;
}

rpc::CallContext MakeContext(uint32_t program, uint32_t proc, const Caller& who);
rpc::PeerAddress MakePeer(const std::string& address);

// Dispatches one call synchronously (the backends used here answer inline).
CallResult Dispatch(rpc::Program& program, uint32_t proc, const Bytes& args, const Caller& who = {},
                    std::shared_ptr<const void> record = nullptr);

// An NfsProgram over one MemoryBackend exported as "/" (squash none unless
// a test adds exports of its own), with a manual clock.
class NfsTest : public ::testing::Test {
 protected:
  NfsTest();

  // Adds an export of a fresh MemoryBackend; returns its root handle.
  Bytes AddExport(ExportOptions options);

  CallResult Call(NfsProc proc, const Args& args, const Caller& who = {});
  CallResult Call(NfsProc proc, const Bytes& args, const Caller& who = {});

  // Shorthands that expect success (ADD_FAILURE otherwise) and return the
  // object's handle.
  Bytes CreateFile(const Bytes& dir, std::string_view name, uint32_t mode = 0644,
                   const Caller& who = {});
  Bytes MakeDir(const Bytes& dir, std::string_view name, uint32_t mode = 0755,
                const Caller& who = {});
  void WriteData(const Bytes& fh, uint64_t offset, std::string_view data, const Caller& who = {});
  Fattr GetAttr(const Bytes& fh);
  // LOOKUP's status and, on success, the handle.
  std::pair<NfsStat, Bytes> Lookup(const Bytes& dir, std::string_view name, const Caller& who = {});

  Bytes Encode(const Export* exp, const vfs::Handle& h) const;

  ManualClock clock_;
  HandleCodec codec_{HandleCodec::RandomKey()};
  ExportTable exports_;
  std::vector<std::unique_ptr<vfs::MemoryBackend>> backends_;
  vfs::MemoryBackend* backend_ = nullptr;  // the "/" export's
  const Export* export_ = nullptr;
  Bytes root_;
  NfsOptions options_;
  std::unique_ptr<NfsProgram> program_;
};

}  // namespace geofs::nfs3::testing
