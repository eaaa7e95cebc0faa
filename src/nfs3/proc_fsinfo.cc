#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcFsinfo(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  std::span<const uint8_t> fh;
  if (!DecodeFh(args, &fh)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  call->backend().GetAttr(call->cred(), call->object(), [call](Result<vfs::Attr> attr) {
    if (!attr.ok()) return call->FailWithoutAttrs(ToNfsStat(attr.status()));
    const NfsOptions& o = call->nfs().options;
    vfs::Capabilities caps = call->backend().GetCapabilities();
    uint32_t properties = kFsfHomogeneous;
    if (caps.hard_links) properties |= kFsfLink;
    if (caps.symlinks) properties |= kFsfSymlink;
    if (caps.can_set_time) properties |= kFsfCanSetTime;
    xdr::Encoder e = NfsCall::OkBody();
    EncodePostOpAttr(e, *attr, call->fsid());
    e.U32(o.rtmax);
    e.U32(o.rtpref);
    e.U32(o.rtmult);
    e.U32(o.wtmax);
    e.U32(o.wtpref);
    e.U32(o.wtmult);
    e.U32(o.dtpref);
    e.U64(caps.max_file_size);
    EncodeTime(e, caps.time_delta);
    e.U32(properties);
    call->Reply(std::move(e));
  });
}

}  // namespace geofs::nfs3
