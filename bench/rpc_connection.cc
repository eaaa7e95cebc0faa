#include "rpc_connection.h"

#include <poll.h>

#include <cerrno>
#include <cstring>

#include "libnfs_raw.h"

namespace geofs::bench {
namespace {

constexpr std::chrono::seconds kSetupTimeout(10);

// State of one synchronous call: the callback fills it, the caller waits on `done`.
struct SyncCall {
  bool done = false;
  Status status;
  FileHandle fh;
  uint64_t size = 0;
};

Status RpcFailure(const char* what, int status, void* data) {
  const std::string detail = status == RPC_STATUS_ERROR && data != nullptr
                                 ? static_cast<const char*>(data)
                                 : (status == RPC_STATUS_TIMEOUT ? "timed out" : "cancelled");
  return Status::IoError(std::string(what) + ": " + detail);
}

Status NfsFailure(const char* what, int nfsstat) {
  return Status::IoError(std::string(what) + ": " + nfsstat3_to_str(nfsstat));
}

void OnConnected(rpc_context*, int status, void* data, void* private_data) {
  auto* call = static_cast<SyncCall*>(private_data);
  if (status != RPC_STATUS_SUCCESS) call->status = RpcFailure("connect", status, data);
  call->done = true;
}

void OnMounted(rpc_context*, int status, void* data, void* private_data) {
  auto* call = static_cast<SyncCall*>(private_data);
  call->done = true;
  if (status != RPC_STATUS_SUCCESS) {
    call->status = RpcFailure("MNT", status, data);
    return;
  }
  const auto* res = static_cast<const mountres3*>(data);
  if (res->fhs_status != MNT3_OK) {
    call->status = Status::IoError("MNT refused with status " + std::to_string(res->fhs_status));
    return;
  }
  const fhandle3& fh = res->mountres3_u.mountinfo.fhandle;
  auto handle = FileHandle::FromBytes(fh.fhandle3_val, fh.fhandle3_len);
  if (!handle.ok()) {
    call->status = handle.status();
    return;
  }
  call->fh = *handle;
}

void OnLookup(rpc_context*, int status, void* data, void* private_data) {
  auto* call = static_cast<SyncCall*>(private_data);
  call->done = true;
  if (status != RPC_STATUS_SUCCESS) {
    call->status = RpcFailure("LOOKUP", status, data);
    return;
  }
  const auto* res = static_cast<const LOOKUP3res*>(data);
  if (res->status != NFS3_OK) {
    call->status = NfsFailure("LOOKUP", res->status);
    return;
  }
  const nfs_fh3& obj = res->LOOKUP3res_u.resok.object;
  auto handle = FileHandle::FromBytes(obj.data.data_val, obj.data.data_len);
  if (!handle.ok()) {
    call->status = handle.status();
    return;
  }
  call->fh = *handle;
}

void OnGetAttr(rpc_context*, int status, void* data, void* private_data) {
  auto* call = static_cast<SyncCall*>(private_data);
  call->done = true;
  if (status != RPC_STATUS_SUCCESS) {
    call->status = RpcFailure("GETATTR", status, data);
    return;
  }
  const auto* res = static_cast<const GETATTR3res*>(data);
  if (res->status != NFS3_OK) {
    call->status = NfsFailure("GETATTR", res->status);
    return;
  }
  call->size = res->GETATTR3res_u.resok.obj_attributes.size;
}

Status Wait(RpcConnection& conn, SyncCall& call) {
  GEOFS_RETURN_IF_ERROR(conn.ServiceUntil([&] { return call.done; }, kSetupTimeout));
  return call.status;
}

}  // namespace

Result<FileHandle> FileHandle::FromBytes(const char* data, uint32_t size) {
  if (size == 0 || size > kMaxSize) {
    return Status::BadHandle("file handle of " + std::to_string(size) + " bytes");
  }
  FileHandle fh;
  fh.size = size;
  std::memcpy(fh.bytes.data(), data, size);
  return fh;
}

Result<std::unique_ptr<RpcConnection>> RpcConnection::Connect(const NfsUrl& url, int port,
                                                              int program, int version,
                                                              std::chrono::milliseconds timeout) {
  rpc_context* rpc = rpc_init_context();
  if (rpc == nullptr) return Status::Internal("rpc_init_context failed");
  std::unique_ptr<RpcConnection> conn(new RpcConnection(rpc));
  if (url.uid >= 0) rpc_set_uid(rpc, url.uid);
  if (url.gid >= 0) rpc_set_gid(rpc, url.gid);

  SyncCall call;
  if (rpc_connect_port_async(rpc, url.host.c_str(), port, program, version, OnConnected, &call) !=
      0) {
    return Status::Unavailable("connect to " + url.host + ":" + std::to_string(port) + ": " +
                               conn->LastError());
  }
  GEOFS_RETURN_IF_ERROR(conn->ServiceUntil([&] { return call.done; }, timeout));
  GEOFS_RETURN_IF_ERROR(call.status);
  return conn;
}

RpcConnection::~RpcConnection() { rpc_destroy_context(rpc_); }

Status RpcConnection::Service(int timeout_ms) {
  pollfd pfd{};
  pfd.fd = rpc_get_fd(rpc_);
  pfd.events = static_cast<short>(rpc_which_events(rpc_));
  const int ready = poll(&pfd, 1, timeout_ms);
  if (ready < 0) {
    if (errno == EINTR) return Status::Ok();
    return Status::FromErrno(errno, "poll");
  }
  if (rpc_service(rpc_, ready > 0 ? pfd.revents : 0) < 0) {
    return Status::IoError("connection failed: " + LastError());
  }
  return Status::Ok();
}

Status RpcConnection::ServiceUntil(const std::function<bool()>& done,
                                   std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status(StatusCode::kDeadlineExceeded, "no reply from the server");
    GEOFS_RETURN_IF_ERROR(Service(static_cast<int>(std::min<int64_t>(left.count(), 100))));
  }
  return Status::Ok();
}

std::string RpcConnection::LastError() const {
  const char* error = rpc_get_error(rpc_);
  return error != nullptr ? error : "unknown error";
}

Result<FileHandle> MountExport(const NfsUrl& url) {
  GEOFS_ASSIGN_OR_RETURN(auto conn, RpcConnection::Connect(url, url.mount_port, MOUNT_PROGRAM,
                                                           MOUNT_V3, kSetupTimeout));
  SyncCall call;
  std::string path = url.export_path;
  if (rpc_mount3_mnt_async(conn->rpc(), OnMounted, path.data(), &call) != 0) {
    return Status::IoError("MNT: " + conn->LastError());
  }
  GEOFS_RETURN_IF_ERROR(Wait(*conn, call));
  return call.fh;
}

Result<FileHandle> LookupSync(RpcConnection& conn, const FileHandle& dir, const std::string& name) {
  std::string name_arg = name;
  LOOKUP3args args{};
  args.what.dir = ToNfsFh3(dir);
  args.what.name = name_arg.data();
  SyncCall call;
  if (rpc_nfs3_lookup_async(conn.rpc(), OnLookup, &args, &call) != 0) {
    return Status::IoError("LOOKUP " + name + ": " + conn.LastError());
  }
  const Status status = Wait(conn, call);
  if (!status.ok()) return Status(status.code(), std::string(status.message()) + " (" + name + ")");
  return call.fh;
}

Result<uint64_t> FileSizeSync(RpcConnection& conn, const FileHandle& fh) {
  GETATTR3args args{};
  args.object = ToNfsFh3(fh);
  SyncCall call;
  if (rpc_nfs3_getattr_async(conn.rpc(), OnGetAttr, &args, &call) != 0) {
    return Status::IoError("GETATTR: " + conn.LastError());
  }
  GEOFS_RETURN_IF_ERROR(Wait(conn, call));
  return call.size;
}

}  // namespace geofs::bench
