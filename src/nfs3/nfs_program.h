// The NFSv3 program (RFC 1813; program 100003, version 3) over vfs::Backend.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "nfs3/export.h"
#include "nfs3/handle_codec.h"
#include "rpc/program.h"

namespace geofs::nfs3 {

// Transfer sizes reported by FSINFO; READ and WRITE counts are capped at the
// maxima. Clients size their requests from the preferred values.
struct NfsOptions {
  uint32_t rtmax = 1 << 20;
  uint32_t rtpref = 1 << 20;
  uint32_t rtmult = 4096;
  uint32_t wtmax = 1 << 20;
  uint32_t wtpref = 1 << 20;
  uint32_t wtmult = 4096;
  uint32_t dtpref = 64 << 10;  // preferred READDIR request size
};

using WriteVerifier = std::array<uint8_t, 8>;

// Everything NFS procedures share. Immutable while the program serves.
struct NfsContext {
  const ExportTable* exports = nullptr;
  const HandleCodec* codec = nullptr;
  NfsOptions options;
  // Random per program instance, i.e. per server start: a client that sees
  // it change re-sends its uncommitted (UNSTABLE) writes.
  WriteVerifier write_verifier{};
};

// Thread-safe: Dispatch may run on many threads at once. Replies to
// procedures whose backend answers asynchronously are sent from the
// backend's callback thread.
class NfsProgram : public rpc::Program {
 public:
  // `exports` and `codec` are not owned and must outlive the program.
  NfsProgram(const ExportTable* exports, const HandleCodec* codec, NfsOptions options = {});

  uint32_t program() const override;
  uint32_t min_version() const override;
  uint32_t max_version() const override;
  void Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                rpc::Responder respond) override;
  // NULL always; GETATTR, LOOKUP, ACCESS, FSINFO and PATHCONF when every
  // export's backend has QuickMetadata(); SETATTR and the namespace changes
  // (CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK) when every
  // backend also has QuickChanges().
  bool RunsInline(const rpc::CallContext& ctx) const override;

  const WriteVerifier& write_verifier() const { return nfs_.write_verifier; }

 private:
  NfsContext nfs_;
};

}  // namespace geofs::nfs3
