// Internal to the NFS program: the state of one call from dispatch to reply,
// and the steps every procedure shares (handle resolution, export policy,
// failure replies with the attributes RFC 1813 allows).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "geofs/vfs.h"
#include "nfs3/export.h"
#include "nfs3/nfs3_xdr.h"
#include "nfs3/nfs_program.h"
#include "nfs3/nfs_status.h"
#include "rpc/program.h"
#include "xdr/xdr.h"

namespace geofs::nfs3 {

// What a procedure's failure reply carries after the status (*3resfail).
enum class FailShape : uint8_t {
  kStatusOnly,  // GETATTR
  kPostOpAttr,  // post_op_attr of the object
  kWcc,         // wcc_data of the object
  kTwoWcc,      // RENAME: wcc_data of the source, then the target directory
  kAttrAndWcc,  // LINK: post_op_attr of the file, wcc_data of the directory
};

// One call in progress. Shared (by shared_ptr) between the procedure and the
// backend callbacks, so it lives until the reply is sent; the responder is
// invoked exactly once, by Reply or one of the Fail variants.
//
// Usage: decode all arguments first (GarbageArgs on failure), then Resolve
// the handle(s), check policy, call the backend, and Reply or Fail.
class NfsCall : public std::enable_shared_from_this<NfsCall> {
 public:
  NfsCall(const NfsContext& nfs, FailShape shape, rpc::Responder respond)
      : nfs_(nfs), shape_(shape), respond_(std::move(respond)) {}

  // Authenticates `fh`, finds its export, checks the peer against the
  // export's allowlist and derives the caller's credentials. On failure
  // replies (BADHANDLE, STALE, ACCES; no attributes) and returns false.
  bool Resolve(const rpc::CallContext& ctx, std::span<const uint8_t> fh);
  // A second handle (RENAME target directory, LINK directory). It must be
  // in the same export as the first: otherwise replies XDEV.
  // REQUIRES: Resolve succeeded.
  bool ResolveSecond(std::span<const uint8_t> fh);
  // Replies ROFS and returns false if the export is read-only.
  bool CheckWritable();
  // Replies with CheckName's error and returns false if `name` is unusable.
  bool CheckName(std::string_view name, NameUse use);

  // A reply body starting with NFS3_OK.
  static xdr::Encoder OkBody();
  void Reply(xdr::Encoder body);
  // Replies `status` with the attributes the failure shape carries, fetched
  // from the backend (absent if the object is unknown, stale or forged, or
  // the peer is not allowed).
  void Fail(NfsStat status);
  void Fail(const Status& status) { Fail(ToNfsStat(status)); }
  // Replies `status` with every optional attribute absent (used when the
  // attributes themselves could not be read).
  void FailWithoutAttrs(NfsStat status);

  FileHandle HandleOf(const vfs::Handle& h) const { return nfs_.codec->Encode(exp_->id, h); }

  const NfsContext& nfs() const { return nfs_; }
  const Export& exp() const { return *exp_; }
  vfs::Backend& backend() const { return *exp_->backend; }
  uint64_t fsid() const { return exp_->id; }
  const vfs::Credentials& cred() const { return cred_; }
  const vfs::Handle& object() const { return object_; }
  const vfs::Handle& second() const { return *second_; }

 private:
  void ReplyFailure(NfsStat status, const std::optional<vfs::Attr>& first,
                    const std::optional<vfs::Attr>& second);

  const NfsContext& nfs_;
  const FailShape shape_;
  rpc::Responder respond_;
  const Export* exp_ = nullptr;
  vfs::Credentials cred_;
  vfs::Handle object_;
  std::optional<vfs::Handle> second_;
};

using CallPtr = std::shared_ptr<NfsCall>;

inline CallPtr NewCall(const NfsContext& nfs, FailShape shape, rpc::Responder respond) {
  return std::make_shared<NfsCall>(nfs, shape, std::move(respond));
}

inline void GarbageArgs(const rpc::Responder& respond) {
  respond(rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs));
}

// Replies to CREATE, MKDIR, SYMLINK and MKNOD (diropres3).
void ReplyCreated(NfsCall& call, Result<vfs::CreateReply> result);
// Replies to SETATTR, REMOVE and RMDIR (wcc_data either way).
void ReplyWcc(NfsCall& call, Result<vfs::Wcc> result);

}  // namespace geofs::nfs3
