// Mounts an NFS export on a local directory with geofs-nfs-fuse, so tests can
// run unmodified programs on it.
#pragma once

#include <memory>
#include <string>

#include "geofs/status.h"
#include "hub_process.h"

namespace geofs::realprog {

// The geofs-nfs-fuse this build made (a compile definition), or
// $GEOFS_NFS_FUSE if set.
std::string NfsFusePath();

// One geofs-nfs-fuse process and its mount. The destructor unmounts (lazily
// if the mount is busy) and stops the process, so a failed test never leaves
// a mount behind. Not thread-safe.
class FuseMount {
 public:
  // Mounts `url` on the existing empty directory `mountpoint` and waits until
  // the kernel lists the mount. Fails (never skips) if /dev/fuse is missing.
  static Result<std::unique_ptr<FuseMount>> Mount(const std::string& url,
                                                  const std::string& mountpoint);
  ~FuseMount();

  FuseMount(const FuseMount&) = delete;
  FuseMount& operator=(const FuseMount&) = delete;

  const std::string& path() const { return mountpoint_; }
  // fusermount3 -u, then waits for the bridge to exit with status 0.
  Status Unmount();
  // What the bridge wrote to stderr.
  std::string Log() const;

 private:
  FuseMount(std::string mountpoint, std::unique_ptr<hub::testing::Child> child)
      : mountpoint_(std::move(mountpoint)), child_(std::move(child)) {}

  std::string mountpoint_;
  std::unique_ptr<hub::testing::Child> child_;
  bool mounted_ = true;
};

// Whether /proc/self/mountinfo lists a geofs-nfs FUSE mount at `mountpoint`.
bool IsMounted(const std::string& mountpoint);

}  // namespace geofs::realprog
