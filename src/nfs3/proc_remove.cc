#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcRemove(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  DirOpArgs what;
  if (!DecodeDirOp(args, &what)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, what.dir) || !call->CheckWritable() ||
      !call->CheckName(what.name, NameUse::kRemove)) {
    return;
  }
  call->backend().Remove(call->cred(), call->object(), what.name,
                         [call](Result<vfs::Wcc> wcc) { ReplyWcc(*call, std::move(wcc)); });
}

}  // namespace geofs::nfs3
