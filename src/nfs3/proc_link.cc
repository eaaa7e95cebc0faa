#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcLink(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
              rpc::Responder respond) {
  std::span<const uint8_t> file;
  DirOpArgs link;
  if (!DecodeFh(args, &file) || !DecodeDirOp(args, &link)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kAttrAndWcc, std::move(respond));
  if (!call->Resolve(ctx, file) || !call->ResolveSecond(link.dir) || !call->CheckWritable() ||
      !call->CheckName(link.name, NameUse::kCreate)) {
    return;
  }
  call->backend().Link(call->cred(), call->object(), call->second(), link.name,
                       [call](Result<vfs::LinkReply> r) {
                         if (!r.ok()) return call->Fail(r.status());
                         xdr::Encoder e = NfsCall::OkBody();
                         EncodePostOpAttr(e, r->file_attr, call->fsid());
                         EncodeWcc(e, r->dir_wcc, call->fsid());
                         call->Reply(std::move(e));
                       });
}

}  // namespace geofs::nfs3
