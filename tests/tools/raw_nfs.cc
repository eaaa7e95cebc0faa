#include "tools/raw_nfs.h"

#include <poll.h>

#include <chrono>
#include <cstring>

namespace geofs::testing {
namespace {

constexpr int kMountProgram = 100005;
constexpr int kNfsProgram = 100003;
constexpr auto kCallTimeout = std::chrono::seconds(30);

struct Pending {
  bool done = false;
  Status status;
  const std::function<void(void*)>* on_reply = nullptr;
};

void OnReply(rpc_context* rpc, int status, void* data, void* private_data) {
  auto* p = static_cast<Pending*>(private_data);
  p->done = true;
  if (status == RPC_STATUS_SUCCESS) {
    if (p->on_reply != nullptr) (*p->on_reply)(data);
  } else if (status == RPC_STATUS_ERROR) {
    p->status = Status::IoError(data != nullptr ? static_cast<const char*>(data) : "rpc error");
  } else {
    p->status = Status::Aborted("rpc call cancelled or timed out");
  }
}

// Queues one call and services `rpc` until its callback has run.
Status InvokeOn(rpc_context* rpc, const std::function<int(rpc_context*, rpc_cb, void*)>& start,
                const std::function<void(void*)>& on_reply) {
  Pending pending;
  pending.on_reply = &on_reply;
  if (start(rpc, OnReply, &pending) != 0) {
    return Status::IoError(std::string("could not queue the call: ") + rpc_get_error(rpc));
  }
  auto deadline = std::chrono::steady_clock::now() + kCallTimeout;
  while (!pending.done) {
    pollfd pfd{rpc_get_fd(rpc), static_cast<short>(rpc_which_events(rpc)), 0};
    int n = poll(&pfd, 1, 100);
    if (n < 0 && errno != EINTR) return Status::FromErrno(errno, "poll");
    if (rpc_service(rpc, n > 0 ? pfd.revents : 0) < 0) {
      // libnfs has already failed the pending call (and set pending.status).
      if (!pending.done) rpc_disconnect(rpc, "service failed");
      return pending.status.ok() ? Status::IoError(rpc_get_error(rpc)) : pending.status;
    }
    if (!pending.done && std::chrono::steady_clock::now() > deadline) {
      // Fails the call now, while `pending` is still alive.
      rpc_disconnect(rpc, "timed out");
      return Status(StatusCode::kDeadlineExceeded, "no reply within 30 s");
    }
  }
  return pending.status;
}

Result<rpc_context*> ConnectRpc(const RawOptions& options, uint16_t port, int program) {
  rpc_context* rpc = rpc_init_context();
  if (rpc == nullptr) return Status::Internal("rpc_init_context failed");
  std::vector<uint32_t> gids = options.gids;
  rpc_set_auth(rpc, libnfs_authunix_create("geofs-test", options.uid, options.gid,
                                           static_cast<uint32_t>(gids.size()), gids.data()));
  Status connected = InvokeOn(
      rpc,
      [&](rpc_context* r, rpc_cb cb, void* p) {
        return rpc_connect_port_async(r, "127.0.0.1", port, program, 3, cb, p);
      },
      [](void*) {});
  if (!connected.ok()) {
    rpc_destroy_context(rpc);
    return Status::Unavailable("connect to 127.0.0.1:" + std::to_string(port) + ": " +
                               connected.ToString());
  }
  return rpc;
}

Verifier ToVerifier(const char* bytes) {
  Verifier v;
  std::memcpy(v.data(), bytes, v.size());
  return v;
}

std::optional<fattr3> Attrs(const post_op_attr& a) {
  if (!a.attributes_follow) return std::nullopt;
  return a.post_op_attr_u.attributes;
}

FileHandle Handle(const post_op_fh3& fh) {
  return fh.handle_follows ? FromFh3(fh.post_op_fh3_u.handle) : FileHandle();
}

diropargs3 DirOp(const FileHandle& dir, const std::string& name) {
  diropargs3 d{};
  d.dir = ToFh3(dir);
  d.name = const_cast<char*>(name.c_str());
  return d;
}

}  // namespace

nfs_fh3 ToFh3(const FileHandle& fh) {
  nfs_fh3 out{};
  out.data.data_len = static_cast<u_int>(fh.size());
  out.data.data_val = const_cast<char*>(fh.data());
  return out;
}

FileHandle FromFh3(const nfs_fh3& fh) { return FileHandle(fh.data.data_val, fh.data.data_len); }

sattr3 NoAttrs() {
  sattr3 a;
  std::memset(&a, 0, sizeof(a));
  return a;
}

sattr3 ModeAttrs(uint32_t mode) {
  sattr3 a = NoAttrs();
  a.mode.set_it = 1;
  a.mode.set_mode3_u.mode = mode;
  return a;
}

std::string NfsStatName(int status) {
  const char* s = nfsstat3_to_str(status);
  return std::string(s != nullptr ? s : "?") + " (" + std::to_string(status) + ")";
}

Result<RawNfs::MountReply> RawNfs::Mnt(const RawOptions& options) {
  GEOFS_ASSIGN_OR_RETURN(rpc_context * rpc, ConnectRpc(options, options.mount_port, kMountProgram));
  MountReply reply;
  std::string path = options.export_path;
  Status s = InvokeOn(
      rpc,
      [&](rpc_context* r, rpc_cb cb, void* p) {
        return rpc_mount3_mnt_async(r, cb, path.data(), p);
      },
      [&](void* data) {
        auto* res = static_cast<mountres3*>(data);
        reply.status = res->fhs_status;
        if (res->fhs_status != MNT3_OK) return;
        const fhandle3& fh = res->mountres3_u.mountinfo.fhandle;
        reply.root.assign(fh.fhandle3_val, fh.fhandle3_len);
      });
  rpc_destroy_context(rpc);
  if (!s.ok()) return s;
  return reply;
}

Result<std::unique_ptr<RawNfs>> RawNfs::Connect(const RawOptions& options) {
  GEOFS_ASSIGN_OR_RETURN(MountReply mnt, Mnt(options));
  if (mnt.status != MNT3_OK) {
    return Status::AccessDenied("MNT " + options.export_path + " answered mountstat3 " +
                                std::to_string(mnt.status));
  }
  return ConnectWithRoot(options, std::move(mnt.root));
}

Result<std::unique_ptr<RawNfs>> RawNfs::ConnectWithRoot(const RawOptions& options,
                                                        FileHandle root) {
  GEOFS_ASSIGN_OR_RETURN(rpc_context * rpc, ConnectRpc(options, options.nfs_port, kNfsProgram));
  return std::unique_ptr<RawNfs>(new RawNfs(rpc, std::move(root)));
}

RawNfs::~RawNfs() { rpc_destroy_context(rpc_); }

Status RawNfs::Invoke(const std::function<int(rpc_context*, rpc_cb, void*)>& start,
                      const std::function<void(void*)>& on_reply) {
  return InvokeOn(rpc_, start, on_reply);
}

Result<RawNfs::AttrReply> RawNfs::Getattr(const FileHandle& fh) {
  GETATTR3args args{};
  args.object = ToFh3(fh);
  AttrReply out;
  GEOFS_RETURN_IF_ERROR(Call<GETATTR3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_getattr_async(r, cb, &args, p); },
      [&](GETATTR3res& res) {
        out.status = res.status;
        if (res.status == NFS3_OK) out.attr = res.GETATTR3res_u.resok.obj_attributes;
      }));
  return out;
}

Result<nfsstat3> RawNfs::Setattr(const FileHandle& fh, const sattr3& attrs) {
  SETATTR3args args{};
  args.object = ToFh3(fh);
  args.new_attributes = attrs;
  nfsstat3 out = NFS3_OK;
  GEOFS_RETURN_IF_ERROR(Call<SETATTR3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_setattr_async(r, cb, &args, p); },
      [&](SETATTR3res& res) { out = res.status; }));
  return out;
}

Result<RawNfs::HandleReply> RawNfs::Lookup(const FileHandle& dir, const std::string& name) {
  LOOKUP3args args{};
  args.what = DirOp(dir, name);
  HandleReply out;
  GEOFS_RETURN_IF_ERROR(Call<LOOKUP3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_lookup_async(r, cb, &args, p); },
      [&](LOOKUP3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        out.fh = FromFh3(res.LOOKUP3res_u.resok.object);
        out.attr = Attrs(res.LOOKUP3res_u.resok.obj_attributes);
      }));
  return out;
}

Result<RawNfs::HandleReply> RawNfs::Create(const FileHandle& dir, const std::string& name,
                                           createmode3 how, const sattr3& attrs,
                                           const Verifier& verf) {
  CREATE3args args{};
  args.where = DirOp(dir, name);
  args.how.mode = how;
  if (how == EXCLUSIVE) {
    std::memcpy(args.how.createhow3_u.verf, verf.data(), verf.size());
  } else {
    args.how.createhow3_u.obj_attributes = attrs;
  }
  HandleReply out;
  GEOFS_RETURN_IF_ERROR(Call<CREATE3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_create_async(r, cb, &args, p); },
      [&](CREATE3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        out.fh = Handle(res.CREATE3res_u.resok.obj);
        out.attr = Attrs(res.CREATE3res_u.resok.obj_attributes);
      }));
  return out;
}

Result<RawNfs::HandleReply> RawNfs::Mkdir(const FileHandle& dir, const std::string& name,
                                          uint32_t mode) {
  MKDIR3args args{};
  args.where = DirOp(dir, name);
  args.attributes = ModeAttrs(mode);
  HandleReply out;
  GEOFS_RETURN_IF_ERROR(Call<MKDIR3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_mkdir_async(r, cb, &args, p); },
      [&](MKDIR3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        out.fh = Handle(res.MKDIR3res_u.resok.obj);
        out.attr = Attrs(res.MKDIR3res_u.resok.obj_attributes);
      }));
  return out;
}

Result<RawNfs::HandleReply> RawNfs::Symlink(const FileHandle& dir, const std::string& name,
                                            const std::string& target) {
  SYMLINK3args args{};
  args.where = DirOp(dir, name);
  args.symlink.symlink_attributes = NoAttrs();
  args.symlink.symlink_data = const_cast<char*>(target.c_str());
  HandleReply out;
  GEOFS_RETURN_IF_ERROR(Call<SYMLINK3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_symlink_async(r, cb, &args, p); },
      [&](SYMLINK3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        out.fh = Handle(res.SYMLINK3res_u.resok.obj);
        out.attr = Attrs(res.SYMLINK3res_u.resok.obj_attributes);
      }));
  return out;
}

Result<RawNfs::HandleReply> RawNfs::MknodFifo(const FileHandle& dir, const std::string& name,
                                              uint32_t mode) {
  MKNOD3args args{};
  args.where = DirOp(dir, name);
  args.what.type = NF3FIFO;
  args.what.mknoddata3_u.pipe_attributes = ModeAttrs(mode);
  HandleReply out;
  GEOFS_RETURN_IF_ERROR(Call<MKNOD3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_mknod_async(r, cb, &args, p); },
      [&](MKNOD3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        out.fh = Handle(res.MKNOD3res_u.resok.obj);
        out.attr = Attrs(res.MKNOD3res_u.resok.obj_attributes);
      }));
  return out;
}

Result<nfsstat3> RawNfs::Remove(const FileHandle& dir, const std::string& name) {
  REMOVE3args args{};
  args.object = DirOp(dir, name);
  nfsstat3 out = NFS3_OK;
  GEOFS_RETURN_IF_ERROR(Call<REMOVE3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_remove_async(r, cb, &args, p); },
      [&](REMOVE3res& res) { out = res.status; }));
  return out;
}

Result<nfsstat3> RawNfs::Rmdir(const FileHandle& dir, const std::string& name) {
  RMDIR3args args{};
  args.object = DirOp(dir, name);
  nfsstat3 out = NFS3_OK;
  GEOFS_RETURN_IF_ERROR(Call<RMDIR3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_rmdir_async(r, cb, &args, p); },
      [&](RMDIR3res& res) { out = res.status; }));
  return out;
}

Result<nfsstat3> RawNfs::Rename(const FileHandle& from_dir, const std::string& from_name,
                                const FileHandle& to_dir, const std::string& to_name) {
  RENAME3args args{};
  args.from = DirOp(from_dir, from_name);
  args.to = DirOp(to_dir, to_name);
  nfsstat3 out = NFS3_OK;
  GEOFS_RETURN_IF_ERROR(Call<RENAME3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_rename_async(r, cb, &args, p); },
      [&](RENAME3res& res) { out = res.status; }));
  return out;
}

Result<nfsstat3> RawNfs::Link(const FileHandle& file, const FileHandle& dir,
                              const std::string& name) {
  LINK3args args{};
  args.file = ToFh3(file);
  args.link = DirOp(dir, name);
  nfsstat3 out = NFS3_OK;
  GEOFS_RETURN_IF_ERROR(Call<LINK3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_link_async(r, cb, &args, p); },
      [&](LINK3res& res) { out = res.status; }));
  return out;
}

Result<RawNfs::WriteReply> RawNfs::Write(const FileHandle& fh, uint64_t offset,
                                         std::string_view data, stable_how stable) {
  WRITE3args args{};
  args.file = ToFh3(fh);
  args.offset = offset;
  args.count = static_cast<count3>(data.size());
  args.stable = stable;
  args.data.data_len = static_cast<u_int>(data.size());
  args.data.data_val = const_cast<char*>(data.data());
  WriteReply out;
  GEOFS_RETURN_IF_ERROR(Call<WRITE3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_write_async(r, cb, &args, p); },
      [&](WRITE3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        out.count = res.WRITE3res_u.resok.count;
        out.committed = res.WRITE3res_u.resok.committed;
        out.verf = ToVerifier(res.WRITE3res_u.resok.verf);
      }));
  return out;
}

Result<RawNfs::CommitReply> RawNfs::Commit(const FileHandle& fh, uint64_t offset, uint32_t count) {
  COMMIT3args args{};
  args.file = ToFh3(fh);
  args.offset = offset;
  args.count = count;
  CommitReply out;
  GEOFS_RETURN_IF_ERROR(Call<COMMIT3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_commit_async(r, cb, &args, p); },
      [&](COMMIT3res& res) {
        out.status = res.status;
        if (res.status == NFS3_OK) out.verf = ToVerifier(res.COMMIT3res_u.resok.verf);
      }));
  return out;
}

Result<RawNfs::ReadReply> RawNfs::Read(const FileHandle& fh, uint64_t offset, uint32_t count) {
  READ3args args{};
  args.file = ToFh3(fh);
  args.offset = offset;
  args.count = count;
  ReadReply out;
  GEOFS_RETURN_IF_ERROR(Call<READ3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_read_async(r, cb, &args, p); },
      [&](READ3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        const READ3resok& ok = res.READ3res_u.resok;
        out.data.assign(ok.data.data_val, ok.data.data_len);
        out.eof = ok.eof != 0;
      }));
  return out;
}

Result<std::pair<nfsstat3, uint32_t>> RawNfs::Access(const FileHandle& fh, uint32_t requested) {
  ACCESS3args args{};
  args.object = ToFh3(fh);
  args.access = requested;
  std::pair<nfsstat3, uint32_t> out{NFS3_OK, 0};
  GEOFS_RETURN_IF_ERROR(Call<ACCESS3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_access_async(r, cb, &args, p); },
      [&](ACCESS3res& res) {
        out.first = res.status;
        if (res.status == NFS3_OK) out.second = res.ACCESS3res_u.resok.access;
      }));
  return out;
}

Result<RawNfs::ReadDirReply> RawNfs::ReadDir(const FileHandle& dir, uint64_t cookie,
                                             const Verifier& verf, uint32_t count) {
  READDIR3args args{};
  args.dir = ToFh3(dir);
  args.cookie = cookie;
  std::memcpy(args.cookieverf, verf.data(), verf.size());
  args.count = count;
  ReadDirReply out;
  GEOFS_RETURN_IF_ERROR(Call<READDIR3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_readdir_async(r, cb, &args, p); },
      [&](READDIR3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        const READDIR3resok& ok = res.READDIR3res_u.resok;
        out.verf = ToVerifier(ok.cookieverf);
        out.eof = ok.reply.eof != 0;
        for (const entry3* e = ok.reply.entries; e != nullptr; e = e->nextentry) {
          out.entries.push_back({e->fileid, e->name, e->cookie, {}});
        }
      }));
  return out;
}

Result<RawNfs::ReadDirReply> RawNfs::ReadDirPlus(const FileHandle& dir, uint64_t cookie,
                                                 const Verifier& verf, uint32_t dircount,
                                                 uint32_t maxcount) {
  READDIRPLUS3args args{};
  args.dir = ToFh3(dir);
  args.cookie = cookie;
  std::memcpy(args.cookieverf, verf.data(), verf.size());
  args.dircount = dircount;
  args.maxcount = maxcount;
  ReadDirReply out;
  GEOFS_RETURN_IF_ERROR(Call<READDIRPLUS3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) {
        return rpc_nfs3_readdirplus_async(r, cb, &args, p);
      },
      [&](READDIRPLUS3res& res) {
        out.status = res.status;
        if (res.status != NFS3_OK) return;
        const READDIRPLUS3resok& ok = res.READDIRPLUS3res_u.resok;
        out.verf = ToVerifier(ok.cookieverf);
        out.eof = ok.reply.eof != 0;
        for (const entryplus3* e = ok.reply.entries; e != nullptr; e = e->nextentry) {
          out.entries.push_back({e->fileid, e->name, e->cookie, Handle(e->name_handle)});
        }
      }));
  return out;
}

}  // namespace geofs::testing
