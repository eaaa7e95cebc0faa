#include "nfs3/nfs_call.h"

namespace geofs::nfs3 {

bool NfsCall::Resolve(const rpc::CallContext& ctx, std::span<const uint8_t> fh) {
  auto decoded = nfs_.codec->Decode(fh);
  if (!decoded.ok()) {
    FailWithoutAttrs(ToNfsStat(decoded.status()));
    return false;
  }
  const Export* exp = nfs_.exports->FindById(decoded->export_id);
  if (exp == nullptr) {
    FailWithoutAttrs(NfsStat::kStale);
    return false;
  }
  if (!exp->Allows(ctx.peer)) {
    FailWithoutAttrs(NfsStat::kAcces);
    return false;
  }
  exp_ = exp;
  object_ = decoded->handle;
  cred_ = exp->CredentialsFor(ctx);
  return true;
}

bool NfsCall::ResolveSecond(std::span<const uint8_t> fh) {
  auto decoded = nfs_.codec->Decode(fh);
  if (!decoded.ok()) {
    Fail(ToNfsStat(decoded.status()));
    return false;
  }
  if (decoded->export_id != exp_->id) {
    Fail(nfs_.exports->FindById(decoded->export_id) ? NfsStat::kXdev : NfsStat::kStale);
    return false;
  }
  second_ = decoded->handle;
  return true;
}

bool NfsCall::CheckWritable() {
  if (!exp_->options.read_only) return true;
  Fail(NfsStat::kRofs);
  return false;
}

bool NfsCall::CheckName(std::string_view name, NameUse use) {
  NfsStat st = nfs3::CheckName(name, use);
  if (st == NfsStat::kOk) return true;
  Fail(st);
  return false;
}

xdr::Encoder NfsCall::OkBody() {
  xdr::Encoder e;
  e.U32(static_cast<uint32_t>(NfsStat::kOk));
  return e;
}

void NfsCall::Reply(xdr::Encoder body) { respond_(rpc::Reply::Success(std::move(body))); }

void NfsCall::Fail(NfsStat status) {
  bool object_known = exp_ != nullptr && status != NfsStat::kStale && status != NfsStat::kBadHandle;
  if (!object_known || shape_ == FailShape::kStatusOnly) return FailWithoutAttrs(status);
  bool wants_second = shape_ == FailShape::kTwoWcc || shape_ == FailShape::kAttrAndWcc;
  CallPtr self = shared_from_this();
  backend().GetAttr(cred_, object_, [self, status, wants_second](Result<vfs::Attr> first) {
    std::optional<vfs::Attr> a;
    if (first.ok()) a = std::move(first).value();
    if (!wants_second || !self->second_) return self->ReplyFailure(status, a, std::nullopt);
    self->backend().GetAttr(self->cred_, *self->second_, [self, status, a](Result<vfs::Attr> b) {
      std::optional<vfs::Attr> second;
      if (b.ok()) second = std::move(b).value();
      self->ReplyFailure(status, a, second);
    });
  });
}

void NfsCall::FailWithoutAttrs(NfsStat status) { ReplyFailure(status, std::nullopt, std::nullopt); }

void NfsCall::ReplyFailure(NfsStat status, const std::optional<vfs::Attr>& first,
                           const std::optional<vfs::Attr>& second) {
  xdr::Encoder e;
  e.U32(static_cast<uint32_t>(status));
  uint64_t fsid = exp_ ? exp_->id : 0;
  switch (shape_) {
    case FailShape::kStatusOnly:
      break;
    case FailShape::kPostOpAttr:
      EncodePostOpAttr(e, first, fsid);
      break;
    case FailShape::kWcc:
      EncodeWcc(e, vfs::Wcc{std::nullopt, first}, fsid);
      break;
    case FailShape::kTwoWcc:
      EncodeWcc(e, vfs::Wcc{std::nullopt, first}, fsid);
      EncodeWcc(e, vfs::Wcc{std::nullopt, second}, fsid);
      break;
    case FailShape::kAttrAndWcc:
      EncodePostOpAttr(e, first, fsid);
      EncodeWcc(e, vfs::Wcc{std::nullopt, second}, fsid);
      break;
  }
  Reply(std::move(e));
}

void ReplyCreated(NfsCall& call, Result<vfs::CreateReply> result) {
  if (!result.ok()) return call.Fail(result.status());
  xdr::Encoder e = NfsCall::OkBody();
  EncodePostOpFh(e, call.HandleOf(result->object.handle));
  EncodePostOpAttr(e, result->object.attr, call.fsid());
  EncodeWcc(e, result->dir_wcc, call.fsid());
  call.Reply(std::move(e));
}

void ReplyWcc(NfsCall& call, Result<vfs::Wcc> result) {
  if (!result.ok()) return call.Fail(result.status());
  xdr::Encoder e = NfsCall::OkBody();
  EncodeWcc(e, *result, call.fsid());
  call.Reply(std::move(e));
}

}  // namespace geofs::nfs3
