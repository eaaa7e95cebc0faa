#include "nfs3/nfs_program.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstdlib>

#include "nfs3/nfs3_xdr.h"
#include "nfs3/procedures.h"

namespace geofs::nfs3 {
namespace {

// Indexed by procedure number (NfsProc).
constexpr Procedure kProcedures[kNfsProcCount] = {
    ProcNull,   ProcGetattr, ProcSetattr,  ProcLookup, ProcAccess,  ProcReadlink,
    ProcRead,   ProcWrite,   ProcCreate,   ProcMkdir,  ProcSymlink, ProcMknod,
    ProcRemove, ProcRmdir,   ProcRename,   ProcLink,   ProcReaddir, ProcReaddirplus,
    ProcFsstat, ProcFsinfo,  ProcPathconf, ProcCommit,
};

}  // namespace

NfsProgram::NfsProgram(const ExportTable* exports, const HandleCodec* codec, NfsOptions options) {
  nfs_.exports = exports;
  nfs_.codec = codec;
  nfs_.options = options;
  if (RAND_bytes(nfs_.write_verifier.data(), static_cast<int>(nfs_.write_verifier.size())) != 1) {
    std::abort();  // no randomness at all: the system cannot run a server safely
  }
}

uint32_t NfsProgram::program() const { return kNfsProgram; }
uint32_t NfsProgram::min_version() const { return kNfsVersion; }
uint32_t NfsProgram::max_version() const { return kNfsVersion; }

bool NfsProgram::RunsInline(const rpc::CallContext& ctx) const {
  const auto& exports = nfs_.exports->exports();
  switch (static_cast<NfsProc>(ctx.procedure)) {
    case NfsProc::kNull:
      return true;
    case NfsProc::kFsinfo:
    case NfsProc::kPathconf:
    case NfsProc::kGetattr:
    case NfsProc::kLookup:
    case NfsProc::kAccess:
      return std::all_of(exports.begin(), exports.end(),
                         [](const auto& e) { return e->backend->QuickMetadata(); });
    case NfsProc::kRead:
      // A failure reply asks the backend for attributes (QuickMetadata).
      return std::all_of(exports.begin(), exports.end(), [](const auto& e) {
        return e->backend->QuickMetadata() && e->backend->QuickReads();
      });
    case NfsProc::kSetattr:
    case NfsProc::kCreate:
    case NfsProc::kMkdir:
    case NfsProc::kSymlink:
    case NfsProc::kMknod:
    case NfsProc::kRemove:
    case NfsProc::kRmdir:
    case NfsProc::kRename:
    case NfsProc::kLink:
      // A failure reply asks the backend for attributes (QuickMetadata).
      return std::all_of(exports.begin(), exports.end(), [](const auto& e) {
        return e->backend->QuickMetadata() && e->backend->QuickChanges();
      });
    default:
      return false;
  }
}

void NfsProgram::Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                          rpc::Responder respond) {
  if (ctx.procedure >= kNfsProcCount) {
    respond(rpc::Reply::Error(rpc::AcceptStat::kProcUnavail));
    return;
  }
  xdr::Decoder decoder(args);
  kProcedures[ctx.procedure](nfs_, ctx, decoder, std::move(respond));
}

}  // namespace geofs::nfs3
