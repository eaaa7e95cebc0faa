#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcCommit(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  std::span<const uint8_t> fh;
  uint64_t offset;
  uint32_t count;
  if (!DecodeFh(args, &fh) || !args.U64(&offset) || !args.U32(&count)) {
    return GarbageArgs(respond);
  }
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  call->backend().Commit(call->cred(), call->object(), offset, count, [call](Result<vfs::Wcc> wcc) {
    if (!wcc.ok()) return call->Fail(wcc.status());
    xdr::Encoder e = NfsCall::OkBody();
    EncodeWcc(e, *wcc, call->fsid());
    e.FixedOpaque(call->nfs().write_verifier);
    call->Reply(std::move(e));
  });
}

}  // namespace geofs::nfs3
