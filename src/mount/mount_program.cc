#include "mount/mount_program.h"

#include <arpa/inet.h>

#include "common/logging.h"
#include "nfs3/nfs_status.h"

namespace geofs::mount {
namespace {

// The client's address without its port: how the mount list names hosts.
std::string HostOf(const rpc::PeerAddress& peer) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(peer.is_v4 ? AF_INET : AF_INET6, peer.bytes.data(), text, sizeof(text));
  return text;
}

rpc::Reply Void() { return rpc::Reply::Success(xdr::Encoder()); }

rpc::Reply MntStatus(nfs3::MountStat st) {
  xdr::Encoder e;
  e.U32(static_cast<uint32_t>(st));
  return rpc::Reply::Success(std::move(e));
}

}  // namespace

MountProgram::MountProgram(const nfs3::ExportTable* exports, const nfs3::HandleCodec* codec,
                           MountOptions options)
    : exports_(exports), codec_(codec), mounts_(options.max_mount_entries) {}

void MountProgram::Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                            rpc::Responder respond) {
  xdr::Decoder decoder(args);
  switch (static_cast<MountProc>(ctx.procedure)) {
    case MountProc::kNull:
      return respond(Void());
    case MountProc::kMnt:
      return respond(Mnt(ctx, decoder));
    case MountProc::kDump:
      return respond(Dump());
    case MountProc::kUmnt:
      return respond(Umnt(ctx, decoder));
    case MountProc::kUmntAll:
      return respond(UmntAll(ctx));
    case MountProc::kExport:
      return respond(ExportList());
  }
  respond(rpc::Reply::Error(rpc::AcceptStat::kProcUnavail));
}

rpc::Reply MountProgram::Mnt(const rpc::CallContext& ctx, xdr::Decoder& args) {
  std::string_view path;
  if (!args.String(kMaxDirPathBytes, &path)) {
    return rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs);
  }
  const nfs3::Export* exp = exports_->FindByPath(path);
  std::string host = HostOf(ctx.peer);
  if (exp == nullptr) return MntStatus(nfs3::MountStat::kNoEnt);
  if (!exp->Allows(ctx.peer)) {
    GetLogger("mount")->info("refused mount of {} by {}: not in the allowlist", exp->options.path,
                             host);
    return MntStatus(nfs3::MountStat::kAcces);
  }
  mounts_.Add(host, exp->options.path);
  GetLogger("mount")->debug("{} mounted {}", host, exp->options.path);
  xdr::Encoder e;
  e.U32(static_cast<uint32_t>(nfs3::MountStat::kOk));
  e.Opaque(codec_->Encode(exp->id, exp->root).bytes());
  e.U32(2);  // auth_flavors: AUTH_SYS first, the flavour clients should pick
  e.U32(static_cast<uint32_t>(rpc::AuthFlavor::kSys));
  e.U32(static_cast<uint32_t>(rpc::AuthFlavor::kNone));
  return rpc::Reply::Success(std::move(e));
}

rpc::Reply MountProgram::Dump() const {
  xdr::Encoder e;
  for (const MountList::Entry& m : mounts_.Snapshot()) {
    e.Bool(true);
    e.String(m.host);
    e.String(m.path);
  }
  e.Bool(false);
  return rpc::Reply::Success(std::move(e));
}

rpc::Reply MountProgram::Umnt(const rpc::CallContext& ctx, xdr::Decoder& args) {
  std::string_view path;
  if (!args.String(kMaxDirPathBytes, &path)) {
    return rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs);
  }
  mounts_.Remove(HostOf(ctx.peer), nfs3::NormalizeExportPath(path));
  return Void();
}

rpc::Reply MountProgram::UmntAll(const rpc::CallContext& ctx) {
  mounts_.RemoveHost(HostOf(ctx.peer));
  return Void();
}

rpc::Reply MountProgram::ExportList() const {
  xdr::Encoder e;
  for (const auto& exp : exports_->exports()) {
    e.Bool(true);
    e.String(exp->options.path);
    // No groups means every client may mount.
    for (const nfs3::Cidr& cidr : exp->options.allow) {
      e.Bool(true);
      e.String(cidr.ToString());
    }
    e.Bool(false);
  }
  e.Bool(false);
  return rpc::Reply::Success(std::move(e));
}

}  // namespace geofs::mount
