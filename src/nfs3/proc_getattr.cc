#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcGetattr(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                 rpc::Responder respond) {
  std::span<const uint8_t> fh;
  if (!DecodeFh(args, &fh)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kStatusOnly, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  call->backend().GetAttr(call->cred(), call->object(), [call](Result<vfs::Attr> attr) {
    if (!attr.ok()) return call->Fail(attr.status());
    xdr::Encoder e = NfsCall::OkBody();
    EncodeFattr(e, *attr, call->fsid());
    call->Reply(std::move(e));
  });
}

}  // namespace geofs::nfs3
