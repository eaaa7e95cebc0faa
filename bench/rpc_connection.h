// A TCP connection to one ONC RPC program through libnfs's raw async API,
// plus the few synchronous calls the load generator needs before a run.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "geofs/status.h"
#include "nfs_url.h"

struct rpc_context;

namespace geofs::bench {

// An NFSv3 file handle (at most 64 bytes), held by value so that ops in
// flight never allocate for it.
struct FileHandle {
  static constexpr uint32_t kMaxSize = 64;

  // REQUIRES: size <= kMaxSize (checked; returns BadHandle otherwise).
  static Result<FileHandle> FromBytes(const char* data, uint32_t size);

  uint32_t size = 0;
  std::array<char, kMaxSize> bytes{};
};

// Not thread-safe: one thread at a time drives a connection; different
// connections may be driven by different threads concurrently.
class RpcConnection {
 public:
  // Connects to `program`/`version` at host:port (no portmapper) and waits for
  // the connection to be established, for at most `timeout`.
  static Result<std::unique_ptr<RpcConnection>> Connect(const NfsUrl& url, int port, int program,
                                                        int version,
                                                        std::chrono::milliseconds timeout);
  ~RpcConnection();
  RpcConnection(const RpcConnection&) = delete;
  RpcConnection& operator=(const RpcConnection&) = delete;

  rpc_context* rpc() const { return rpc_; }

  // Waits up to `timeout_ms` for the socket to be ready, then lets libnfs
  // send queued calls and run the callbacks of received replies. Fails when
  // the connection is broken.
  Status Service(int timeout_ms);

  // Calls Service() until `done()` is true; fails after `timeout`.
  Status ServiceUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

  // libnfs's description of the last error on this connection.
  std::string LastError() const;

 private:
  explicit RpcConnection(rpc_context* rpc) : rpc_(rpc) {}

  rpc_context* rpc_;
};

// MNT of url.export_path on url.mount_port: the export's root handle.
Result<FileHandle> MountExport(const NfsUrl& url);

// Synchronous NFSv3 LOOKUP of `name` in `dir`, for resolving handles before a
// timed run. Fails on any RPC or NFS error.
Result<FileHandle> LookupSync(RpcConnection& conn, const FileHandle& dir, const std::string& name);

// Synchronous NFSv3 GETATTR: the object's size in bytes.
Result<uint64_t> FileSizeSync(RpcConnection& conn, const FileHandle& fh);

}  // namespace geofs::bench
