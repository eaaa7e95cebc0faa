// Runs geofs-spoked as a child process on free loopback ports, for tests that
// drive the whole daemon with a real client.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "geofs/status.h"

namespace geofs::testing {

struct DaemonOptions {
  // Path of the geofs-spoked binary; empty means SpokedPath().
  std::string binary;
  // Flags appended after the fixed ones, e.g. {"--read-only"} or
  // {"--squash", "none"}.
  std::vector<std::string> extra_args;
  // Serve NFS and MOUNT on one port.
  bool shared_port = false;
  // Also serve PORTMAP v2 on a port of its own (--portmap-port).
  bool portmap = false;
  // How long Start() waits for the ports to accept connections, and Stop()
  // waits for the process to exit.
  std::chrono::milliseconds timeout{10000};
};

// One geofs-spoked process serving a private temporary directory as export
// "/". The export, state directory and log live under one temporary base
// directory that the destructor removes (set GEOFS_TEST_KEEP=1 to keep it).
// The ports are chosen once, so a restarted daemon listens where the old one
// did. Not thread-safe: use from one thread.
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

  // Replaces DaemonOptions::extra_args for the next Start() (e.g. to restart
  // with another policy over the same state).
  void set_extra_args(std::vector<std::string> args) { options_.extra_args = std::move(args); }

  bool running() const { return pid_ > 0; }
  uint16_t nfs_port() const { return nfs_port_; }
  uint16_t mount_port() const { return mount_port_; }
  // 0 unless DaemonOptions::portmap.
  uint16_t portmap_port() const { return portmap_port_; }
  const std::string& export_dir() const { return export_dir_; }
  const std::string& state_dir() const { return state_dir_; }

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

  DaemonOptions options_;
  std::string base_dir_;
  std::string export_dir_;
  std::string state_dir_;
  std::string log_path_;
  uint16_t nfs_port_ = 0;
  uint16_t mount_port_ = 0;
  uint16_t portmap_port_ = 0;
  pid_t pid_ = -1;
};

// The geofs-spoked to test: $GEOFS_SPOKED if set, else the one this build
// made (a compile definition).
std::string SpokedPath();

}  // namespace geofs::testing
