#include "hub/fs_stats.h"

#include <sys/statvfs.h>

#include <cerrno>

namespace geofs::hub {

Result<vfs::FsStats> HubFsStats(meta::Namespace& ns, const SpaceSource& space) {
  GEOFS_ASSIGN_OR_RETURN(meta::NamespaceStats stats, ns.Stats());
  vfs::FsStats out;
  const std::string& statfs_path = space.statfs_path;
  if (statfs_path.empty()) {
    out.free_bytes = out.avail_bytes = kUnboundedFreeBytes;
    out.total_bytes = stats.referenced_bytes + stats.unreferenced_bytes + kUnboundedFreeBytes;
  } else {
    struct statvfs fs;
    if (::statvfs(statfs_path.c_str(), &fs) != 0) {
      return Status::FromErrno(errno, "statvfs " + statfs_path);
    }
    out.total_bytes = uint64_t{fs.f_blocks} * fs.f_frsize;
    const uint64_t keep = space.keep_free_bytes;
    const uint64_t free = uint64_t{fs.f_bfree} * fs.f_frsize;
    const uint64_t avail = uint64_t{fs.f_bavail} * fs.f_frsize;
    out.free_bytes = free > keep ? free - keep : 0;
    out.avail_bytes = avail > keep ? avail - keep : 0;
  }
  out.total_files = stats.inodes + kUnboundedFreeFiles;
  out.free_files = out.avail_files = kUnboundedFreeFiles;
  return out;
}

}  // namespace geofs::hub
