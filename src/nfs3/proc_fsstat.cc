#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcFsstat(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  std::span<const uint8_t> fh;
  if (!DecodeFh(args, &fh)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  call->backend().FsStat(call->cred(), call->object(), [call](Result<vfs::FsStats> r) {
    if (!r.ok()) return call->Fail(r.status());
    xdr::Encoder e = NfsCall::OkBody();
    EncodePostOpAttr(e, r->attr, call->fsid());
    e.U64(r->total_bytes);
    e.U64(r->free_bytes);
    e.U64(r->avail_bytes);
    e.U64(r->total_files);
    e.U64(r->free_files);
    e.U64(r->avail_files);
    e.U32(0);  // invarsec: the figures may change at any moment
    call->Reply(std::move(e));
  });
}

}  // namespace geofs::nfs3
