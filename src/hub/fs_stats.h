// The file system statistics the hub reports (NFS FSSTAT, gRPC FsStat).
#pragma once

#include <string>

#include "geofs/vfs.h"
#include "meta/namespace.h"

namespace geofs::hub {

// Object stores without a size limit (S3) report this much free space.
inline constexpr uint64_t kUnboundedFreeBytes = uint64_t{1} << 50;
// The namespace has no inode limit; this many free inodes are reported.
inline constexpr uint64_t kUnboundedFreeFiles = uint64_t{1} << 40;

// Space from the file system holding `statfs_path` (the local object store),
// or unbounded when it is empty; file counts from the namespace. No
// attributes are filled.
Result<vfs::FsStats> HubFsStats(meta::Namespace& ns, const std::string& statfs_path);

}  // namespace geofs::hub
