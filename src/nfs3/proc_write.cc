#include <algorithm>
#include <limits>

#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

void ProcWrite(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
               rpc::Responder respond) {
  std::span<const uint8_t> fh;
  uint64_t offset;
  uint32_t count, stable;
  std::span<const uint8_t> data;
  if (!DecodeFh(args, &fh) || !args.U64(&offset) || !args.U32(&count) || !args.U32(&stable) ||
      !args.Opaque(std::numeric_limits<uint32_t>::max(), &data) ||
      stable > static_cast<uint32_t>(vfs::Stability::kFileSync)) {
    return GarbageArgs(respond);
  }
  CallPtr call = NewCall(nfs, FailShape::kWcc, std::move(respond));
  if (!call->Resolve(ctx, fh) || !call->CheckWritable()) return;
  // count and the opaque's own length describe the same bytes; a client
  // that disagrees with itself gets INVAL rather than a guess.
  if (count != data.size()) return call->Fail(NfsStat::kInval);
  // Beyond wtmax the write is short, which RFC 1813 allows.
  size_t n = std::min<size_t>(count, nfs.options.wtmax);
  // The payload stays in the received record: the buffer shares its owner.
  Buffer payload = ctx.record ? Buffer(ctx.record, data.data(), n) : Buffer::CopyOf(data.first(n));
  call->backend().Write(call->cred(), call->object(), offset, std::move(payload),
                        static_cast<vfs::Stability>(stable), [call](Result<vfs::WriteReply> r) {
                          if (!r.ok()) return call->Fail(r.status());
                          xdr::Encoder e = NfsCall::OkBody();
                          EncodeWcc(e, r->wcc, call->fsid());
                          e.U32(r->count);
                          e.U32(static_cast<uint32_t>(r->committed));
                          e.FixedOpaque(call->nfs().write_verifier);
                          call->Reply(std::move(e));
                        });
}

}  // namespace geofs::nfs3
