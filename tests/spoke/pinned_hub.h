// geofs-hubd as a child process that keeps its gRPC port across restarts
// (HubProcess picks a new one at every start), so that a spoke started with
// `--hub HOST:PORT` finds the restarted hub by itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "geofs/status.h"
#include "hub_process.h"

namespace geofs::spoke::testing {

class PinnedHub {
 public:
  // `extra_args` are added to every start (e.g. {"--lease-ttl", "2"}). The
  // hub also serves NFS (export "/") on ports picked at each start.
  explicit PinnedHub(std::vector<std::string> extra_args);
  ~PinnedHub();
  PinnedHub(const PinnedHub&) = delete;
  PinnedHub& operator=(const PinnedHub&) = delete;

  // The first start picks a free port (geofs::testing::PickFreePort); later
  // ones bind the same port again over the same data directory. Waits for
  // the "listening" line.
  Status Start();
  // SIGTERM; OK if it exits with status 0.
  Status Stop();
  void Kill();
  // Sends `sig` (SIGSTOP/SIGCONT).
  void Signal(int sig);

  std::string grpc_address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  // libnfs URL of export "/" of the current run (no auto-reconnect).
  std::string NfsUrl() const;
  std::string Log() const;
  // geofsctl --hub <this hub> args...
  Result<hub::testing::CommandResult> Ctl(const std::vector<std::string>& args) const;

 private:
  const std::vector<std::string> extra_args_;
  hub::testing::TempDir base_;
  std::unique_ptr<hub::testing::Child> child_;
  std::string earlier_logs_;
  int runs_ = 0;
  uint16_t grpc_port_ = 0, nfs_port_ = 0, mount_port_ = 0;
};

}  // namespace geofs::spoke::testing
