#include <algorithm>

#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcRead(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
              rpc::Responder respond) {
  std::span<const uint8_t> fh;
  uint64_t offset;
  uint32_t count;
  if (!DecodeFh(args, &fh) || !args.U64(&offset) || !args.U32(&count)) {
    return GarbageArgs(respond);
  }
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  count = std::min(count, nfs.options.rtmax);
  call->backend().Read(call->cred(), call->object(), offset, count,
                       [call](Result<vfs::ReadReply> r) {
                         if (!r.ok()) return call->Fail(r.status());
                         xdr::Encoder e = NfsCall::OkBody();
                         EncodePostOpAttr(e, r->attr, call->fsid());
                         // The file data goes to the socket without a copy.
                         if (r->file) {
                           e.U32(static_cast<uint32_t>(r->file->length));
                           e.Bool(r->eof);
                           e.OpaqueFileRef(std::move(*r->file));
                         } else {
                           e.U32(static_cast<uint32_t>(r->data.size()));
                           e.Bool(r->eof);
                           e.OpaqueRef(std::move(r->data));
                         }
                         call->Reply(std::move(e));
                       });
}

}  // namespace geofs::nfs3
