#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcSetattr(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                 rpc::Responder respond) {
  std::span<const uint8_t> fh;
  vfs::SetAttrs attrs;
  bool guarded;
  std::optional<WallTime> guard_ctime;
  if (!DecodeFh(args, &fh) || !DecodeSattr(args, &attrs) || !args.Bool(&guarded)) {
    return GarbageArgs(respond);
  }
  if (guarded) {
    WallTime ctime;
    if (!DecodeTime(args, &ctime)) return GarbageArgs(respond);
    guard_ctime = ctime;
  }
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, fh) || !call->CheckWritable()) return;
  call->backend().SetAttr(call->cred(), call->object(), attrs, guard_ctime,
                          [call](Result<vfs::Wcc> wcc) { ReplyWcc(*call, std::move(wcc)); });
}

}  // namespace geofs::nfs3
