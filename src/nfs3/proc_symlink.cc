#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcSymlink(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                 rpc::Responder respond) {
  DirOpArgs where;
  vfs::SetAttrs attrs;
  std::string_view target;
  if (!DecodeDirOp(args, &where) || !DecodeSattr(args, &attrs) || !DecodeName(args, &target)) {
    return GarbageArgs(respond);
  }
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, where.dir) || !call->CheckWritable() ||
      !call->CheckName(where.name, NameUse::kCreate)) {
    return;
  }
  if (NfsStat st = CheckPath(target); st != NfsStat::kOk) return call->Fail(st);
  call->backend().Symlink(
      call->cred(), call->object(), where.name, target, attrs,
      [call](Result<vfs::CreateReply> r) { ReplyCreated(*call, std::move(r)); });
}

}  // namespace geofs::nfs3
