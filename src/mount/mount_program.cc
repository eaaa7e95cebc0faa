#include "mount/mount_program.h"

#include <arpa/inet.h>

#include <future>

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

// The export whose path is the longest component-wise prefix of `path`
// (normalised), or null.
const nfs3::Export* ExportContaining(const nfs3::ExportTable& exports, const std::string& path) {
  const nfs3::Export* best = nullptr;
  for (const auto& exp : exports.exports()) {
    const std::string& root = exp->options.path;
    bool contains = root == "/" || path == root ||
                    (path.size() > root.size() && path.starts_with(root) && path[root.size()] == '/');
    if (contains && (best == nullptr || root.size() > best->options.path.size())) best = exp.get();
  }
  return best;
}

// Walks `relative` ("a/b/c") down from the export's root with the caller's
// credentials, so a client may mount any directory inside an export it may
// search, as Linux's knfsd allows. "." and ".." are refused: they could
// leave the export.
Result<vfs::Handle> ResolveInside(const nfs3::Export& exp, const vfs::Credentials& cred,
                                  std::string_view relative) {
  vfs::Handle current = exp.root;
  while (!relative.empty()) {
    size_t slash = relative.find('/');
    std::string_view name = relative.substr(0, slash);
    relative = slash == std::string_view::npos ? "" : relative.substr(slash + 1);
    if (name == "." || name == "..") return Status::InvalidArgument("'.' or '..' in mount path");
    // MOUNT runs on a worker thread, so waiting for an asynchronous backend
    // here blocks nobody else.
    std::promise<Result<vfs::LookupReply>> done;
    exp.backend->Lookup(cred, current, name,
                        [&done](Result<vfs::LookupReply> r) { done.set_value(std::move(r)); });
    Result<vfs::LookupReply> found = done.get_future().get();
    if (!found.ok()) return found.status();
    if (found->object.attr.type != vfs::FileType::kDirectory) {
      return Status::NotDirectory(std::string(name));
    }
    current = found->object.handle;
  }
  return current;
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
  std::string wanted = nfs3::NormalizeExportPath(path);
  const nfs3::Export* exp = ExportContaining(*exports_, wanted);
  std::string host = HostOf(ctx.peer);
  if (exp == nullptr) return MntStatus(nfs3::MountStat::kNoEnt);
  if (!exp->Allows(ctx.peer)) {
    GetLogger("mount")->info("refused mount of {} by {}: not in the allowlist", wanted, host);
    return MntStatus(nfs3::MountStat::kAcces);
  }
  std::string_view relative(wanted);
  relative.remove_prefix(exp->options.path == "/" ? 1 : exp->options.path.size());
  if (relative.starts_with('/')) relative.remove_prefix(1);
  Result<vfs::Handle> root = ResolveInside(*exp, exp->CredentialsFor(ctx), relative);
  if (!root.ok()) {
    GetLogger("mount")->info("refused mount of {} by {}: {}", wanted, host,
                             root.status().ToString());
    return MntStatus(nfs3::ToMountStat(root.status()));
  }
  mounts_.Add(host, wanted);
  GetLogger("mount")->debug("{} mounted {}", host, wanted);
  xdr::Encoder e;
  e.U32(static_cast<uint32_t>(nfs3::MountStat::kOk));
  e.Opaque(codec_->Encode(exp->id, *root).bytes());
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
