// Runs an NFS server under test (geofs-spoked over a directory, or geofs-hubd
// over a fresh data directory) as a child process on free loopback ports, for
// tests that drive the whole daemon with a real client.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"

namespace geofs::testing {

// Which daemon serves the export.
enum class ServerKind {
  kSpoke,  // geofs-spoked --export-dir: a local directory (LocalBackend)
  kHub,    // geofs-hubd --data-dir: the hub's namespace, export "/"
};
// "Spoke" or "Hub" (used in test names).
std::string_view ServerKindName(ServerKind kind);

struct DaemonOptions {
  ServerKind kind = ServerKind::kSpoke;
  // Path of the daemon binary; empty means SpokedPath() or HubdPath().
  std::string binary;
  // Flags appended after the fixed ones, e.g. {"--read-only"} or
  // {"--squash", "none"}.
  std::vector<std::string> extra_args;
  // Serve NFS and MOUNT on one port.
  bool shared_port = false;
  // Also serve PORTMAP v2 on a port of its own (--portmap-port). Spoke only.
  bool portmap = false;
  // How long Start() waits for the ports to accept connections, and Stop()
  // waits for the process to exit.
  std::chrono::milliseconds timeout{10000};
};

// One daemon process serving export "/": a spoke over a private temporary
// directory (export_dir()), or a hub over a private data directory
// (state_dir()) with export_dir() as a staging tree that Publish() imports.
// Everything lives under one temporary base directory that the destructor
// removes (set GEOFS_TEST_KEEP=1 to keep it). The NFS and MOUNT ports are
// chosen once, so a restarted daemon listens where the old one did (a hub's
// gRPC port is picked anew by each start). Not thread-safe: use from one
// thread.
class Daemon {
 public:
  // Creates the directories and picks ports; does not start the process.
  static Result<std::unique_ptr<Daemon>> Create(DaemonOptions options);
  ~Daemon();

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Starts the process and waits until every port accepts TCP and the log
  // says "listening". On failure the Status carries the daemon's log.
  // REQUIRES: !running().
  Status Start();
  // SIGTERM, then waits; OK only if the process exits with status 0 in time
  // (otherwise it is killed and the Status says why, with the log).
  Status Stop();
  // SIGKILL and reap. No-op if not running.
  void Kill();
  // Stop() then Start() with the same ports and directories.
  Status Restart();

  // Makes what the test wrote under export_dir() visible through the export:
  // nothing to do for a spoke (it serves that directory); for a hub,
  // `geofsctl import --keep-extraneous export_dir() /`, which keeps modes,
  // owners, mtimes and symlinks (not FIFOs or devices) and leaves entries
  // made through NFS alone. REQUIRES: running().
  Status Publish();
  // Hub only: runs `geofsctl --hub grpc_address() args...`; its output
  // (stdout and stderr), or an error carrying it if the exit status is not 0.
  // REQUIRES: running().
  Result<std::string> Ctl(const std::vector<std::string>& args);

  // Replaces DaemonOptions::extra_args for the next Start() (e.g. to restart
  // with another policy over the same state).
  void set_extra_args(std::vector<std::string> args) { options_.extra_args = std::move(args); }

  bool running() const { return pid_ > 0; }
  ServerKind kind() const { return options_.kind; }
  uint16_t nfs_port() const { return nfs_port_; }
  uint16_t mount_port() const { return mount_port_; }
  // 0 unless DaemonOptions::portmap.
  uint16_t portmap_port() const { return portmap_port_; }
  // Spoke: the served directory. Hub: the staging tree Publish() imports.
  const std::string& export_dir() const { return export_dir_; }
  // Spoke: --state-dir (the handle key). Hub: --data-dir.
  const std::string& state_dir() const { return state_dir_; }
  // Hub only: "127.0.0.1:PORT" of the gRPC API of the running process.
  const std::string& grpc_address() const { return grpc_address_; }

  // A libnfs URL for export "/" with AUTH_SYS uid/gid and no auto-reconnect
  // (a dead server must fail the test, not hang it).
  std::string Url(uint32_t uid = 0, uint32_t gid = 0) const;

  // Everything the daemon wrote to stdout/stderr, across restarts.
  std::string Log() const;
  // Resident set size of the running process (VmRSS), in bytes.
  Result<uint64_t> RssBytes() const;
  // Whether the process has exited by itself (reaps it if so); the exit
  // description goes to *how when non-null.
  bool Exited(std::string* how = nullptr);

 private:
  explicit Daemon(DaemonOptions options) : options_(std::move(options)) {}
  // Waits for the ports to accept and for "listening" in the log after byte
  // `log_start`.
  Status WaitUntilServing(size_t log_start);
  std::vector<uint16_t> Ports() const;
  std::vector<std::string> Arguments() const;
  std::string Name() const;

  DaemonOptions options_;
  std::string base_dir_;
  std::string export_dir_;
  std::string state_dir_;
  std::string log_path_;
  uint16_t nfs_port_ = 0;
  uint16_t mount_port_ = 0;
  uint16_t portmap_port_ = 0;
  std::string grpc_address_;
  pid_t pid_ = -1;
};

// The binaries to test: $GEOFS_SPOKED, $GEOFS_HUBD, $GEOFS_GEOFSCTL if set,
// else the ones this build made (compile definitions).
std::string SpokedPath();
std::string HubdPath();
std::string GeofsctlPath();

}  // namespace geofs::testing
