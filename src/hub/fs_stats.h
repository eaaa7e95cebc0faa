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

// Where the space the hub reports comes from.
struct SpaceSource {
  // The file system holding this path (the local object store's directory);
  // empty: unbounded.
  std::string statfs_path;
  // Not reported free: the object store leaves it to the namespace
  // (LocalObjectStoreOptions::keep_free_bytes).
  uint64_t keep_free_bytes = 0;
};

// Space from `space`, file counts from the namespace. No attributes are
// filled.
Result<vfs::FsStats> HubFsStats(meta::Namespace& ns, const SpaceSource& space);

}  // namespace geofs::hub
