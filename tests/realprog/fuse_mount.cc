#include "fuse_mount.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#ifndef GEOFS_NFS_FUSE_PATH
#error "GEOFS_NFS_FUSE_PATH must name the geofs-nfs-fuse binary"
#endif

namespace geofs::realprog {
namespace {

constexpr char kFusermount[] = "/usr/bin/fusermount3";
constexpr auto kMountTimeout = std::chrono::seconds(20);

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Status RunFusermount(const std::vector<std::string>& flags, const std::string& mountpoint) {
  std::vector<std::string> argv = {kFusermount};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(mountpoint);
  GEOFS_ASSIGN_OR_RETURN(hub::testing::CommandResult r,
                         hub::testing::RunCommand(argv, std::nullopt, std::chrono::seconds(30)));
  if (r.exit_code != 0) {
    return Status::Internal("fusermount3 failed (" + std::to_string(r.exit_code) + "): " + r.err);
  }
  return Status::Ok();
}

}  // namespace

std::string NfsFusePath() {
  const char* env = std::getenv("GEOFS_NFS_FUSE");
  return env != nullptr && *env != '\0' ? env : GEOFS_NFS_FUSE_PATH;
}

bool IsMounted(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ..."
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point != mountpoint) continue;
    if (line.find(" - fuse.geofs-nfs ") != std::string::npos) return true;
  }
  return false;
}

Result<std::unique_ptr<FuseMount>> FuseMount::Mount(const std::string& url,
                                                    const std::string& mountpoint) {
  if (access("/dev/fuse", R_OK | W_OK) != 0) {
    return Status::FromErrno(errno, "/dev/fuse (load the fuse module; run as root)");
  }
  if (access(kFusermount, X_OK) != 0) {
    return Status::NotFound(std::string(kFusermount) + " missing: scripts/install-deps.sh");
  }
  hub::testing::Child::Options options;
  options.argv = {NfsFusePath(), url, mountpoint, "-f"};
  options.stdout_path = options.stderr_path = mountpoint + ".bridge.log";
  GEOFS_ASSIGN_OR_RETURN(std::unique_ptr<hub::testing::Child> child,
                         hub::testing::Child::Start(std::move(options)));
  std::unique_ptr<FuseMount> mount(new FuseMount(mountpoint, std::move(child)));
  const auto deadline = std::chrono::steady_clock::now() + kMountTimeout;
  while (!IsMounted(mountpoint)) {
    int status = 0;
    if (mount->child_->Exited(&status)) {
      mount->mounted_ = false;
      return Status::Unavailable("geofs-nfs-fuse exited with " + std::to_string(status) +
                                 " before mounting: " + mount->Log());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    "geofs-nfs-fuse did not mount within 20 s: " + mount->Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return mount;
}

FuseMount::~FuseMount() {
  if (mounted_ && IsMounted(mountpoint_)) {
    // A test that failed may still hold files open: detach lazily then. A
    // destructor can do nothing more if that fails too.
    if (!RunFusermount({"-u"}, mountpoint_).ok()) {
      static_cast<void>(RunFusermount({"-u", "-z"}, mountpoint_));
    }
  }
  if (child_->running() && !child_->Wait(std::chrono::seconds(5)).ok()) child_->Kill();
}

Status FuseMount::Unmount() {
  if (!mounted_) return Status::Internal("not mounted");
  GEOFS_RETURN_IF_ERROR(RunFusermount({"-u"}, mountpoint_));
  mounted_ = false;
  GEOFS_ASSIGN_OR_RETURN(int status, child_->Wait(std::chrono::seconds(10)));
  if (status != 0) {
    return Status::Internal("geofs-nfs-fuse exited with " + std::to_string(status) + ": " + Log());
  }
  return Status::Ok();
}

std::string FuseMount::Log() const { return ReadWhole(mountpoint_ + ".bridge.log"); }

}  // namespace geofs::realprog
