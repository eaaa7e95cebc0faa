#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcReadlink(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                  rpc::Responder respond) {
  std::span<const uint8_t> fh;
  if (!DecodeFh(args, &fh)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  call->backend().ReadLink(call->cred(), call->object(), [call](Result<vfs::ReadLinkReply> r) {
    if (!r.ok()) return call->Fail(r.status());
    xdr::Encoder e = NfsCall::OkBody();
    EncodePostOpAttr(e, r->attr, call->fsid());
    e.String(r->target);
    call->Reply(std::move(e));
  });
}

}  // namespace geofs::nfs3
