// Runs an NFS server under test (geofs-spoked over a directory, geofs-hubd
// over a fresh data directory, or geofs-spoked in hub mode paired with its own
// geofs-hubd) as child processes on free loopback ports, for tests that drive
// the whole daemon with a real client.
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
  // geofs-spoked --hub --portal /datasets over a geofs-hubd of its own:
  // export "/datasets" (the hub's /datasets, through the spoke's cache).
  kSpokeOverHub,
};
// "Spoke", "Hub" or "SpokeOverHub" (used in test names).
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
  // Also serve PORTMAP v2 on a port of its own (--portmap-port). Not for a
  // hub.
  bool portmap = false;
  // How long Start() waits for the ports to accept connections, and Stop()
  // waits for the process to exit.
  std::chrono::milliseconds timeout{10000};
};

// The server under test: a spoke over a private temporary directory
// (export_dir()) serving export "/"; a hub over a private data directory
// (state_dir()) serving export "/", with export_dir() as a staging tree that
// Publish() imports; or, for kSpokeOverHub, two processes: a hub (its own NFS
// export "/" is the authority's view, HubUrl()) and the front end, a spoke in
// hub mode serving the hub's "/datasets" as export "/datasets", into which
// Publish() imports export_dir(). The front end is the process the client
// under test talks to (the hub itself for kHub).
// Everything lives under one temporary base directory that the destructor
// removes (set GEOFS_TEST_KEEP=1 to keep it). The front end's NFS and MOUNT
// ports and the hub's NFS port are chosen once, so a restarted daemon listens
// where the old one did (a hub's gRPC port is picked anew by each start, and
// a spoke over a hub is started after its hub). Not thread-safe: use from
// one thread.
class Daemon {
 public:
  // Creates the directories and picks ports; does not start the process.
  static Result<std::unique_ptr<Daemon>> Create(DaemonOptions options);
  ~Daemon();

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Starts the hub of a kSpokeOverHub if it is not running, then the front
  // end, and waits until every port accepts TCP and the log says
  // "listening". On failure the Status carries the daemon's log.
  // REQUIRES: !running().
  Status Start();
  // SIGTERM to the front end, then to the hub of a kSpokeOverHub, each
  // waited for; OK only if each exits with status 0 in time (otherwise it is
  // killed and the Status says why, with the log).
  Status Stop();
  // SIGKILL and reap every process. No-op for those not running.
  void Kill();
  // Stop() then Start() with the same ports and directories.
  Status Restart();
  // Only the front end: SIGTERM (StopFrontEnd) or SIGKILL (KillFrontEnd),
  // leaving a kSpokeOverHub's hub running; Start() brings it back. For the
  // other kinds these are Stop() and Kill().
  Status StopFrontEnd();
  void KillFrontEnd();

  // Makes what the test wrote under export_dir() visible through the export:
  // nothing to do for a spoke (it serves that directory); for a hub,
  // `geofsctl import --keep-extraneous export_dir() HUB_DIR` (HUB_DIR: "/",
  // or "/datasets" under a spoke), which keeps modes, owners, mtimes and
  // symlinks (not FIFOs or devices) and leaves entries made through NFS
  // alone. REQUIRES: running().
  Status Publish();
  // Hub kinds only: runs `geofsctl --hub grpc_address() args...`; its output
  // (stdout and stderr), or an error carrying it if the exit status is not 0.
  // REQUIRES: the hub is running.
  Result<std::string> Ctl(const std::vector<std::string>& args);
  // kSpokeOverHub: waits until the spoke's write journal is empty, i.e.
  // every write it took has been committed at the hub (read from its
  // Prometheus endpoint, geofs_spoke_journal_bytes); fails if the journal
  // does not shrink for `stall_timeout`. OK at once for the other kinds,
  // whose writes reach the served data synchronously. REQUIRES: running().
  Status WaitForWriteBack(std::chrono::milliseconds stall_timeout = std::chrono::seconds(30));

  // Replaces DaemonOptions::extra_args for the next Start() (e.g. to restart
  // with another policy over the same state).
  void set_extra_args(std::vector<std::string> args) { options_.extra_args = std::move(args); }

  // Whether the front end runs.
  bool running() const { return front_.pid > 0; }
  ServerKind kind() const { return options_.kind; }
  uint16_t nfs_port() const { return nfs_port_; }
  uint16_t mount_port() const { return mount_port_; }
  // 0 unless DaemonOptions::portmap.
  uint16_t portmap_port() const { return portmap_port_; }
  // Spoke: the served directory. Hub kinds: the staging tree Publish()
  // imports.
  const std::string& export_dir() const { return export_dir_; }
  // Where the front end keeps its handle key (handle.key): a spoke's
  // --state-dir, a hub's --data-dir, a spoke over a hub's CACHE_DIR/state.
  const std::string& state_dir() const { return state_dir_; }
  // Hub kinds: the hub's --data-dir. Empty for kSpoke.
  const std::string& hub_data_dir() const { return hub_data_dir_; }
  // Hub kinds: "127.0.0.1:PORT" of the gRPC API of the running hub.
  const std::string& grpc_address() const { return grpc_address_; }
  // The export path clients mount: "/" or, for kSpokeOverHub, "/datasets".
  const std::string& export_path() const { return export_path_; }

  // A libnfs URL for the export with AUTH_SYS uid/gid and no auto-reconnect
  // (a dead server must fail the test, not hang it).
  std::string Url(uint32_t uid = 0, uint32_t gid = 0) const;
  // Hub kinds: a libnfs URL for the hub's own export "/" (the same as Url()
  // for kHub), where the export's root is HubPath("").
  std::string HubUrl(uint32_t uid = 0, uint32_t gid = 0) const;
  // Hub kinds: the path on the hub's export of `name` (relative to the
  // export's root): "/name" for kHub, "/datasets/name" for kSpokeOverHub.
  std::string HubPath(const std::string& name) const;

  // Everything the daemons wrote to stdout/stderr, across restarts (the
  // hub's log first for kSpokeOverHub).
  std::string Log() const;
  // Resident set size of the running front end (VmRSS), in bytes.
  Result<uint64_t> RssBytes() const;
  // Whether the front end (or a kSpokeOverHub's hub) has exited by itself
  // (reaps it if so); the exit description goes to *how when non-null.
  bool Exited(std::string* how = nullptr);

 private:
  // One child process and where its output goes.
  struct Process {
    std::string name;
    std::string log_path;
    pid_t pid = -1;
  };

  explicit Daemon(DaemonOptions options) : options_(std::move(options)) {}
  // Forks and execs `args` into `p`, output appended to p.log_path.
  static Status Spawn(const std::vector<std::string>& args, Process& p);
  // SIGTERM and wait up to the timeout; see Stop().
  Status StopProcess(Process& p);
  static void KillProcess(Process& p);
  // Whether `p` exited by itself (reaps it); see Exited().
  static bool ProcessExited(Process& p, std::string* how);
  static std::string ProcessLog(const Process& p);
  Status StartHub();
  // Waits until `ports` accept and `p`'s log after byte `log_start` says
  // it serves; for a hub, reads its gRPC port from that log.
  Status WaitUntilServing(Process& p, const std::vector<uint16_t>& ports, bool is_hub,
                          size_t log_start);
  std::vector<uint16_t> Ports() const;
  std::vector<std::string> FrontEndArguments() const;
  std::vector<std::string> HubArguments(uint16_t nfs_port, uint16_t mount_port,
                                        const std::vector<std::string>& extra) const;
  bool has_hub_process() const { return options_.kind == ServerKind::kSpokeOverHub; }

  DaemonOptions options_;
  std::string base_dir_;
  std::string export_dir_;
  std::string export_path_ = "/";
  std::string state_dir_;
  std::string hub_data_dir_;
  std::string cache_dir_;
  uint16_t nfs_port_ = 0;
  uint16_t mount_port_ = 0;
  uint16_t portmap_port_ = 0;
  // kSpokeOverHub: the hub's NFS (and MOUNT) port, and the spoke's
  // Prometheus port as its last start reported it.
  uint16_t hub_nfs_port_ = 0;
  uint16_t metrics_port_ = 0;
  bool portal_made_ = false;
  std::string grpc_address_;
  Process front_;
  Process hub_;  // kSpokeOverHub only
};

// The binaries to test: $GEOFS_SPOKED, $GEOFS_HUBD, $GEOFS_GEOFSCTL if set,
// else the ones this build made (compile definitions).
std::string SpokedPath();
std::string HubdPath();
std::string GeofsctlPath();

}  // namespace geofs::testing
