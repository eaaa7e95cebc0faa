// Runs geofs-spoked in hub mode as a child process, for tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "geofs/status.h"
#include "hub_process.h"

namespace geofs::spoke::testing {

struct SpokeProcessOptions {
  std::string hub_address;
  std::string portal = "/datasets";
  std::vector<std::string> extra_args;  // e.g. {"--immutable"}
  std::string cache_dir;                // empty: a private temporary one
};

// One geofs-spoked --hub over a private cache directory that survives
// restarts (ports are picked anew by each start).
class SpokeProcess {
 public:
  static Result<std::unique_ptr<SpokeProcess>> Create(SpokeProcessOptions options);

  // Starts it and waits for its "listening" and "metrics" lines.
  Status Start();
  // SIGTERM; OK if it exits with status 0.
  Status Stop();
  void Kill();
  // Sends `sig` (SIGSTOP/SIGCONT to cut it off and resume it).
  void Signal(int sig);
  // True while the process runs (reaps it once it has exited).
  bool Alive();

  const std::string& cache_dir() const { return cache_dir_; }
  uint16_t nfs_port() const { return nfs_port_; }
  uint16_t mount_port() const { return mount_port_; }
  // libnfs URL of the portal's export (no auto-reconnect).
  std::string NfsUrl(uint32_t uid = 0, uint32_t gid = 0) const;
  std::string Log() const;
  // The Prometheus counters, by name (labels dropped).
  Result<std::map<std::string, double>> Metrics() const;
  // One of them; kNotFound if the spoke does not report it.
  Result<double> Metric(const std::string& name) const;
  // Waits until the write journal is empty, no file has pending writes and
  // no create answered by the spoke waits to be sent (everything taken is
  // committed at the hub); kDeadlineExceeded after
  // `timeout`.
  Status WaitJournalDrained(std::chrono::milliseconds timeout) const;

 private:
  explicit SpokeProcess(SpokeProcessOptions options) : options_(std::move(options)) {}

  SpokeProcessOptions options_;
  hub::testing::TempDir base_;
  std::string cache_dir_;
  std::unique_ptr<hub::testing::Child> child_;
  std::string log_;  // logs of earlier runs
  uint16_t nfs_port_ = 0, mount_port_ = 0, metrics_port_ = 0;
};

}  // namespace geofs::spoke::testing
