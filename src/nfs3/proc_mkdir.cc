#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcMkdir(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
               rpc::Responder respond) {
  DirOpArgs where;
  vfs::SetAttrs attrs;
  if (!DecodeDirOp(args, &where) || !DecodeSattr(args, &attrs)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, where.dir) || !call->CheckWritable() ||
      !call->CheckName(where.name, NameUse::kCreate)) {
    return;
  }
  call->backend().Mkdir(call->cred(), call->object(), where.name, attrs,
                        [call](Result<vfs::CreateReply> r) { ReplyCreated(*call, std::move(r)); });
}

}  // namespace geofs::nfs3
