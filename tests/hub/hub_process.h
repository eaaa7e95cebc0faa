// Test helpers that run geofs-hubd and geofsctl as processes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "geofs/status.h"

namespace geofs::hub::testing {

// Where the build put the binaries (compile definitions of the test).
std::string HubdPath();
std::string GeofsctlPath();

// A fresh temporary directory, removed with its contents by the destructor
// (unless GEOFS_TEST_KEEP=1). Mode 0755 so that other users may read in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child process with its stdout and stderr captured in files. The kernel
// kills it if the test process dies first.
class Child {
 public:
  struct Options {
    std::vector<std::string> argv;
    std::vector<std::string> env;  // "NAME=VALUE", added to the environment
    std::optional<uid_t> uid;      // run as this user (and its gid)
    std::string stdout_path;
    std::string stderr_path;
  };
  static Result<std::unique_ptr<Child>> Start(Options options);
  ~Child();  // kills a child still running

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Waits for the exit; kDeadlineExceeded (child killed) after `timeout`.
  // Returns the exit status, or 128 + signal number.
  Result<int> Wait(std::chrono::milliseconds timeout);
  // True once it has exited (reaps it; *status gets what Wait would return).
  bool Exited(int* status = nullptr);
  void Kill();
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  explicit Child(Options options) : options_(std::move(options)) {}
  Options options_;
  pid_t pid_ = -1;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs a command to completion.
Result<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                 std::optional<uid_t> uid = std::nullopt,
                                 std::chrono::milliseconds timeout = std::chrono::minutes(2));

struct HubOptions {
  bool nfs = false;          // also serve NFS (ports picked by the hub)
  std::string object_store;  // --object-store; empty: the default
  std::string data_dir;      // --data-dir; empty: a private directory
  std::vector<std::string> extra_args;
  std::vector<std::string> env;
};

// One geofs-hubd over a private data directory that survives restarts.
class HubProcess {
 public:
  static Result<std::unique_ptr<HubProcess>> Create(HubOptions options);
  ~HubProcess();

  // Starts it and waits for its "listening" line (the ports it bound).
  Status Start();
  // SIGTERM; OK if it exits with status 0.
  Status Stop();
  // SIGKILL.
  void Kill();
  // Sends `sig` (SIGSTOP/SIGCONT to make it unreachable and back).
  void Signal(int sig);
  bool running() const { return child_ && child_->running(); }

  const std::string& data_dir() const { return data_dir_; }
  std::string grpc_address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  uint16_t nfs_port() const { return nfs_port_; }
  uint16_t mount_port() const { return mount_port_; }
  // libnfs URL of export "/" (no auto-reconnect).
  std::string NfsUrl(uint32_t uid = 0, uint32_t gid = 0) const;
  std::string Log() const;

  // geofsctl --hub <this hub> args...
  Result<CommandResult> Ctl(const std::vector<std::string>& args,
                            std::optional<uid_t> uid = std::nullopt) const;

 private:
  explicit HubProcess(HubOptions options) : options_(std::move(options)) {}

  HubOptions options_;
  TempDir base_;
  std::string data_dir_;
  std::string log_path_;
  std::unique_ptr<Child> child_;
  uint16_t grpc_port_ = 0, nfs_port_ = 0, mount_port_ = 0;
};

}  // namespace geofs::hub::testing
