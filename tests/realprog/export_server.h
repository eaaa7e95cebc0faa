// The NFS server that the real-program tests mount through geofs-nfs-fuse.
// Each kind of deployment (a standalone spoke over a directory, the hub's own
// export, later a spoke over a hub) is one small ExportServer subclass; the
// tests run once per entry of ExportServerKinds().
#pragma once

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
};

struct ExportServerKind {
  std::string name;  // a gtest parameter name: letters and digits only
  std::function<Result<std::unique_ptr<ExportServer>>()> create;
};

// geofs-spoked --export-dir over a fresh temporary directory.
Result<std::unique_ptr<ExportServer>> CreateStandaloneSpoke();
// geofs-hubd over a fresh data directory, serving its namespace as export /.
Result<std::unique_ptr<ExportServer>> CreateHubExport();

// Every kind the tests run against.
std::vector<ExportServerKind> ExportServerKinds();

}  // namespace geofs::realprog
