#include <algorithm>

#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {

// `count` bounds the encoded READDIR3resok exactly: entries are added while
// the next one still fits. A budget too small for even one entry (when the
// directory has one to give) is NFS3ERR_TOOSMALL.
void ProcReaddir(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                 rpc::Responder respond) {
  std::span<const uint8_t> fh;
  vfs::ReadDirRequest req;
  uint32_t count;
  if (!DecodeFh(args, &fh) || !args.U64(&req.cookie) || !args.U64(&req.verifier) ||
      !args.U32(&count)) {
    return GarbageArgs(respond);
  }
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  // Replies are never larger than a READ reply may be.
  size_t budget = std::min(count, nfs.options.rtmax);
  size_t room = budget > kDirReplyFixedBytes ? budget - kDirReplyFixedBytes : 0;
  req.max_entries = static_cast<uint32_t>(std::max<size_t>(1, room / kMinDirEntryBytes));
  req.with_attrs = false;
  call->backend().ReadDir(call->cred(), call->object(), req,
                          [call, budget](Result<vfs::DirPage> r) {
                            if (!r.ok()) return call->Fail(r.status());
                            const vfs::DirPage& page = *r;
                            xdr::Encoder e = NfsCall::OkBody();
                            EncodePostOpAttr(e, page.dir_attr, call->fsid());
                            e.U64(page.verifier);
                            size_t used = kDirReplyFixedBytes - (page.dir_attr ? 0 : kFattrBytes);
                            size_t n = 0;
                            for (const vfs::DirEntry& entry : page.entries) {
                              size_t cost = DirEntryBytes(entry.name.size());
                              if (used + cost > budget) break;
                              used += cost;
                              e.Bool(true);
                              e.U64(entry.fileid);
                              e.String(entry.name);
                              e.U64(entry.cookie);
                              ++n;
                            }
                            bool eof = page.eof && n == page.entries.size();
                            if (n == 0 && !eof) return call->Fail(NfsStat::kTooSmall);
                            e.Bool(false);
                            e.Bool(eof);
                            call->Reply(std::move(e));
                          });
}

}  // namespace geofs::nfs3
