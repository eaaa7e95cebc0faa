// The NFS server that the real-program tests mount through geofs-nfs-fuse.
// Each kind of deployment (a standalone spoke over a directory, the hub's own
// export, a spoke over a hub) is one small ExportServer subclass; the tests
// run once per entry of ExportServerKinds().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "geofs/status.h"

namespace geofs::realprog {

// One running export that root (uid 0, not squashed) may read and write.
// Not thread-safe.
class ExportServer {
 public:
  virtual ~ExportServer() = default;

  // Starts the processes and waits until the export can be mounted.
  virtual Status Start() = 0;
  // Stops the processes cleanly; OK only if they exit with status 0.
  virtual Status Stop() = 0;
  // SIGKILL, like a crash: only what was acknowledged as stable may remain.
  // Start() again serves the same state (Url() may change).
  virtual void Kill() = 0;
  // libnfs URL of the export (AUTH_SYS uid 0, no auto-reconnect).
  virtual std::string Url() const = 0;
  // What the processes logged, for failure messages.
  virtual std::string Log() const = 0;

  // libnfs URL (uid 0) of the same tree where it is authoritative: the
  // export itself, or for a spoke over a hub the portal through the hub's
  // own export.
  virtual std::string AuthorityUrl() const { return Url(); }
  // Waits until everything the export acknowledged is visible at
  // AuthorityUrl() (a spoke's journal committed at its hub); kDeadlineExceeded
  // after `timeout`.
  virtual Status WaitSettled(std::chrono::milliseconds timeout) { return Status::Ok(); }
};

struct ExportServerKind {
  std::string name;  // a gtest parameter name: letters and digits only
  std::function<Result<std::unique_ptr<ExportServer>>()> create;
};

// geofs-spoked --export-dir over a fresh temporary directory.
Result<std::unique_ptr<ExportServer>> CreateStandaloneSpoke();
// geofs-hubd over a fresh data directory, serving its namespace as export /.
Result<std::unique_ptr<ExportServer>> CreateHubExport();

// geofs-hubd (with its own NFS export) and geofs-spoked --hub serving the
// hub's /datasets from a fresh cache directory.
Result<std::unique_ptr<ExportServer>> CreateSpokeOverHub();

// Every kind the tests run against.
std::vector<ExportServerKind> ExportServerKinds();

}  // namespace geofs::realprog
