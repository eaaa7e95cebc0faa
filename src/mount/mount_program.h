// The MOUNT program (RFC 1813 appendix I; program 100005, version 3): hands
// out the root file handle of an export and keeps the advisory mount list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mount/mount_list.h"
#include "nfs3/export.h"
#include "nfs3/handle_codec.h"
#include "rpc/program.h"

namespace geofs::mount {

inline constexpr uint32_t kMountProgram = 100005;
inline constexpr uint32_t kMountVersion = 3;
inline constexpr size_t kMaxDirPathBytes = 1024;  // MNTPATHLEN
inline constexpr size_t kMaxHostNameBytes = 255;  // MNTNAMLEN

enum class MountProc : uint32_t {
  kNull = 0,
  kMnt = 1,
  kDump = 2,
  kUmnt = 3,
  kUmntAll = 4,
  kExport = 5,
};

struct MountOptions {
  // Bound on the DUMP list (see MountList).
  size_t max_mount_entries = 1024;
};

// Thread-safe. MNT refuses peers outside an export's allowlist with
// MNT3ERR_ACCES; unknown paths are MNT3ERR_NOENT. Hosts in the mount list
// are the peers' IP addresses.
class MountProgram : public rpc::Program {
 public:
  // `exports` and `codec` are not owned and must outlive the program.
  MountProgram(const nfs3::ExportTable* exports, const nfs3::HandleCodec* codec,
               MountOptions options = {});

  uint32_t program() const override { return kMountProgram; }
  uint32_t min_version() const override { return kMountVersion; }
  uint32_t max_version() const override { return kMountVersion; }
  void Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                rpc::Responder respond) override;

 private:
  rpc::Reply Mnt(const rpc::CallContext& ctx, xdr::Decoder& args);
  rpc::Reply Dump() const;
  rpc::Reply Umnt(const rpc::CallContext& ctx, xdr::Decoder& args);
  rpc::Reply UmntAll(const rpc::CallContext& ctx);
  rpc::Reply ExportList() const;

  const nfs3::ExportTable* exports_;
  const nfs3::HandleCodec* codec_;
  MountList mounts_;
};

}  // namespace geofs::mount
