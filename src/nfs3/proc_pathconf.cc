#include <algorithm>

#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcPathconf(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                  rpc::Responder respond) {
  std::span<const uint8_t> fh;
  if (!DecodeFh(args, &fh)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  call->backend().GetAttr(call->cred(), call->object(), [call](Result<vfs::Attr> attr) {
    if (!attr.ok()) return call->FailWithoutAttrs(ToNfsStat(attr.status()));
    vfs::Capabilities caps = call->backend().GetCapabilities();
    xdr::Encoder e = NfsCall::OkBody();
    EncodePostOpAttr(e, *attr, call->fsid());
    e.U32(caps.link_max);
    e.U32(static_cast<uint32_t>(std::min<size_t>(caps.name_max, kMaxNameBytes)));
    e.Bool(true);   // no_trunc: longer names are refused, never truncated
    e.Bool(true);   // chown_restricted: only root may give a file away
    e.Bool(false);  // case_insensitive
    e.Bool(true);   // case_preserving
    call->Reply(std::move(e));
  });
}

}  // namespace geofs::nfs3
