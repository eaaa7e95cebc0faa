#include <algorithm>

#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {
namespace {

// The smallest entryplus3 that carries attributes and a handle.
constexpr size_t kMinPlusEntryBytes = kMinDirEntryBytes + kPostOpAttrBytes + 4 + 4 +
                                      xdr::Pad4(HandleCodec::kHeaderBytes + HandleCodec::kMacBytes);

// An entryplus3 with a name of up to 16 bytes and a handle of up to 48.
constexpr size_t kTypicalPlusEntryBytes =
    DirEntryBytes(16) + kPostOpAttrBytes + 4 + 4 + xdr::Pad4(48);

}  // namespace

// `maxcount` bounds the whole encoded READDIRPLUS3resok exactly. `dircount`
// is treated as the hint RFC 1813 allows, as Linux's knfsd does: the Linux
// client sends dircount = maxcount / 8, and honouring it as a hard cap would
// halve the entries per reply and double the round trips of a listing.
// Entries are added while the next one fits; if not even one fits (and the
// directory has one to give): NFS3ERR_TOOSMALL.
void ProcReaddirplus(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                     rpc::Responder respond) {
  std::span<const uint8_t> fh;
  vfs::ReadDirRequest req;
  uint32_t dircount, maxcount;
  if (!DecodeFh(args, &fh) || !args.U64(&req.cookie) || !args.U64(&req.verifier) ||
      !args.U32(&dircount) || !args.U32(&maxcount)) {
    return GarbageArgs(respond);
  }
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, fh)) return;
  size_t budget = std::min(maxcount, nfs.options.rtmax);
  size_t room = budget > kDirReplyFixedBytes ? budget - kDirReplyFixedBytes : 0;
  size_t fit = room / kMinPlusEntryBytes;
  req.max_entries = static_cast<uint32_t>(std::max<size_t>(1, fit));
  req.with_attrs = true;
  call->backend().ReadDir(
      call->cred(), call->object(), req, [call, budget](Result<vfs::DirPage> r) {
        if (!r.ok()) return call->Fail(r.status());
        const vfs::DirPage& page = *r;
        xdr::Encoder e = NfsCall::OkBody();
        // Room for the page at typical name and handle sizes, at once.
        e.ReserveInline(
            std::min(budget, kDirReplyFixedBytes + page.entries.size() * kTypicalPlusEntryBytes));
        EncodePostOpAttr(e, page.dir_attr, call->fsid());
        e.U64(page.verifier);
        size_t used = kDirReplyFixedBytes - (page.dir_attr ? 0 : kFattrBytes);
        size_t n = 0;
        for (const vfs::DirEntry& entry : page.entries) {
          size_t dir_cost = DirEntryBytes(entry.name.size());
          FileHandle handle;
          size_t cost = dir_cost + 4 + 4;  // + post_op_attr and post_op_fh3 discriminants
          if (entry.entry) {
            handle = call->HandleOf(entry.entry->handle);
            cost += kFattrBytes + 4 + xdr::Pad4(handle.size());
          }
          if (used + cost > budget) break;
          used += cost;
          e.Bool(true);
          e.U64(entry.fileid);
          e.String(entry.name);
          e.U64(entry.cookie);
          if (entry.entry) {
            e.Bool(true);
            EncodeFattr(e, entry.entry->attr, call->fsid());
            EncodePostOpFh(e, handle);
          } else {
            e.Bool(false);
            e.Bool(false);
          }
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
