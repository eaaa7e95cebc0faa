#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcMknod(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
               rpc::Responder respond) {
  DirOpArgs where;
  uint32_t type;
  vfs::MknodRequest req;
  bool bad_type = false;
  if (!DecodeDirOp(args, &where) || !args.U32(&type)) return GarbageArgs(respond);
  switch (static_cast<vfs::FileType>(type)) {
    case vfs::FileType::kCharDevice:
    case vfs::FileType::kBlockDevice:
      if (!DecodeSattr(args, &req.attrs) || !args.U32(&req.rdev_major) ||
          !args.U32(&req.rdev_minor)) {
        return GarbageArgs(respond);
      }
      break;
    case vfs::FileType::kSocket:
    case vfs::FileType::kFifo:
      if (!DecodeSattr(args, &req.attrs)) return GarbageArgs(respond);
      break;
    case vfs::FileType::kRegular:
    case vfs::FileType::kDirectory:
    case vfs::FileType::kSymlink:
      bad_type = true;  // valid XDR (a void arm), but MKNOD does not make these
      break;
    default:
      return GarbageArgs(respond);
  }
  req.type = static_cast<vfs::FileType>(type);
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, where.dir) || !call->CheckWritable() ||
      !call->CheckName(where.name, NameUse::kCreate)) {
    return;
  }
  if (bad_type) return call->Fail(NfsStat::kBadType);
  call->backend().Mknod(call->cred(), call->object(), where.name, req,
                        [call](Result<vfs::CreateReply> r) { ReplyCreated(*call, std::move(r)); });
}

}  // namespace geofs::nfs3
