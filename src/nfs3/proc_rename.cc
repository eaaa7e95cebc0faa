#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcRename(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  DirOpArgs from, to;
  if (!DecodeDirOp(args, &from) || !DecodeDirOp(args, &to)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kTwoWcc, std::move(respond));
  if (!call->Resolve(ctx, from.dir) || !call->ResolveSecond(to.dir) || !call->CheckWritable() ||
      !call->CheckName(from.name, NameUse::kRemove) ||
      !call->CheckName(to.name, NameUse::kRemove)) {
    return;
  }
  call->backend().Rename(call->cred(), call->object(), from.name, call->second(), to.name,
                         [call](Result<vfs::RenameReply> r) {
                           if (!r.ok()) return call->Fail(r.status());
                           xdr::Encoder e = NfsCall::OkBody();
                           EncodeWcc(e, r->from_dir_wcc, call->fsid());
                           EncodeWcc(e, r->to_dir_wcc, call->fsid());
                           call->Reply(std::move(e));
                         });
}

}  // namespace geofs::nfs3
