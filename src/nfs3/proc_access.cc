#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {
namespace {

constexpr uint32_t kAllAccessBits = vfs::kAccessRead | vfs::kAccessLookup | vfs::kAccessModify |
                                    vfs::kAccessExtend | vfs::kAccessDelete | vfs::kAccessExecute;
constexpr uint32_t kWriteAccessBits = vfs::kAccessModify | vfs::kAccessExtend | vfs::kAccessDelete;

}  // namespace

void ProcAccess(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  std::span<const uint8_t> fh;
  uint32_t requested;
  if (!DecodeFh(args, &fh) || !args.U32(&requested)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  requested &= kAllAccessBits;
  call->backend().Access(call->cred(), call->object(), requested,
                         [call, requested](Result<vfs::AccessReply> r) {
                           if (!r.ok()) return call->Fail(r.status());
                           uint32_t granted = r->granted & requested;
                           if (call->exp().options.read_only) granted &= ~kWriteAccessBits;
                           xdr::Encoder e = NfsCall::OkBody();
                           EncodePostOpAttr(e, r->attr, call->fsid());
                           e.U32(granted);
                           call->Reply(std::move(e));
                         });
}

}  // namespace geofs::nfs3
