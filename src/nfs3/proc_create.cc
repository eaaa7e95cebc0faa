#include <algorithm>

#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcCreate(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  DirOpArgs where;
  uint32_t mode;
  vfs::CreateRequest req;
  if (!DecodeDirOp(args, &where) || !args.U32(&mode)) return GarbageArgs(respond);
  switch (static_cast<vfs::CreateMode>(mode)) {
    case vfs::CreateMode::kUnchecked:
    case vfs::CreateMode::kGuarded:
      if (!DecodeSattr(args, &req.attrs)) return GarbageArgs(respond);
      break;
    case vfs::CreateMode::kExclusive: {
      std::span<const uint8_t> verf;
      if (!args.FixedOpaque(req.verifier.size(), &verf)) return GarbageArgs(respond);
      std::copy(verf.begin(), verf.end(), req.verifier.begin());
      break;
    }
    default:
      return GarbageArgs(respond);
  }
  req.mode = static_cast<vfs::CreateMode>(mode);
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, where.dir) || !call->CheckWritable() ||
      !call->CheckName(where.name, NameUse::kCreate)) {
    return;
  }
  call->backend().Create(call->cred(), call->object(), where.name, req,
                         [call](Result<vfs::CreateReply> r) { ReplyCreated(*call, std::move(r)); });
}

}  // namespace geofs::nfs3
