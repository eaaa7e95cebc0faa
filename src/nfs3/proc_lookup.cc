#include "nfs3/nfs_call.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {
namespace {

void ReplyFound(NfsCall& call, const vfs::Entry& object, const std::optional<vfs::Attr>& dir) {
  xdr::Encoder e = NfsCall::OkBody();
  e.Opaque(call.HandleOf(object.handle).bytes());
  EncodePostOpAttr(e, object.attr, call.fsid());
  EncodePostOpAttr(e, dir, call.fsid());
  call.Reply(std::move(e));
}

}  // namespace

void ProcLookup(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                rpc::Responder respond) {
  DirOpArgs what;
  if (!DecodeDirOp(args, &what)) return GarbageArgs(respond);
  CallPtr call = NewCall(nfs, FailShape::kPostOpAttr, std::move(respond));
  if (!call->Resolve(ctx, what.dir) || !call->CheckName(what.name, NameUse::kLookup)) return;

  auto on_lookup = [call](Result<vfs::LookupReply> r) {
    if (!r.ok()) return call->Fail(r.status());
    ReplyFound(*call, r->object, r->dir_attr);
  };
  if (what.name == ".") {
    // "." is the directory itself, reachable only with search permission.
    call->backend().Access(call->cred(), call->object(), vfs::kAccessLookup,
                           [call](Result<vfs::AccessReply> r) {
                             if (!r.ok()) return call->Fail(r.status());
                             if (r->attr.type != vfs::FileType::kDirectory)
                               return call->Fail(NfsStat::kNotDir);
                             if ((r->granted & vfs::kAccessLookup) == 0)
                               return call->Fail(NfsStat::kAcces);
                             ReplyFound(*call, vfs::Entry{call->object(), r->attr}, r->attr);
                           });
  } else if (what.name == "..") {
    call->backend().LookupParent(call->cred(), call->object(), on_lookup);
  } else {
    call->backend().Lookup(call->cred(), call->object(), what.name, on_lookup);
  }
}

}  // namespace geofs::nfs3
