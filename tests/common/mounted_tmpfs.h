// A small tmpfs mounted on a fresh directory, for tests of full file
// systems (ENOSPC). Mounting needs CAP_SYS_ADMIN: check mounted() and skip
// with error() where it is missing.
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace geofs::testing {

class MountedTmpfs {
 public:
  // `size` in tmpfs syntax: "16m".
  explicit MountedTmpfs(const std::string& size) {
    std::string pattern = (std::filesystem::temp_directory_path() / "geofs-tmpfs-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      error_ = std::strerror(errno);
      return;
    }
    path_ = pattern;
    const std::string options = "size=" + size;
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~MountedTmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  MountedTmpfs(const MountedTmpfs&) = delete;
  MountedTmpfs& operator=(const MountedTmpfs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string error_;
};

// Writes `path` until its file system is full. False if it cannot be created.
inline bool FillFileSystem(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const std::string block(64 << 10, 'x');
  while (std::fwrite(block.data(), 1, block.size(), f) == block.size()) {
  }
  std::fclose(f);
  return true;
}

}  // namespace geofs::testing
