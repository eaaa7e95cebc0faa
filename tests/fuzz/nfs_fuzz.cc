// Arbitrary bytes as the arguments of NFSv3 procedures, through
// NfsProgram::Dispatch over a MemoryBackend, checking that every call is
// answered exactly once with a well-formed reply.
//
// Input: byte 0 picks the procedure (values past 21 probe PROC_UNAVAIL);
// byte 1 is flags: bit 1 prepends a regular file's handle to the arguments
// and bit 0 then the root directory's (so the fuzzer reaches past handle
// authentication without forging HMACs; both give LINK's file and
// directory), bit 2 calls with AUTH_NONE, bit 3 as
// uid 1000 instead of root, bit 4 from a peer outside the allowlisted
// export, bit 5 against a read-only export of the same tree. The rest is the
// argument bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "common/logging.h"
#include "geofs/clock.h"
#include "nfs3/export.h"
#include "nfs3/handle_codec.h"
#include "nfs3/nfs3_xdr.h"
#include "nfs3/nfs_program.h"
#include "vfs/memory_backend.h"
#include "xdr/xdr.h"

namespace geofs::nfs3 {
namespace {

constexpr uint8_t kPrependRoot = 1 << 0;
constexpr uint8_t kPrependFile = 1 << 1;
constexpr uint8_t kAuthNone = 1 << 2;
constexpr uint8_t kUnprivileged = 1 << 3;
constexpr uint8_t kOutsider = 1 << 4;
constexpr uint8_t kReadOnly = 1 << 5;

// A fresh tree per input keeps runs independent and memory bounded.
struct World {
  World() : backend(&clock) {
    ExportOptions rw;
    rw.squash = Squash::kNone;
    rw.allow = {*Cidr::Parse("127.0.0.0/8")};
    rw_export = *exports.Add(rw, &backend);
    ExportOptions ro = rw;
    ro.path = "/ro";
    ro.read_only = true;
    ro_export = *exports.Add(ro, &backend);
    program = std::make_unique<NfsProgram>(&exports, &Codec());

    vfs::CreateRequest req;
    req.attrs.mode = 0644;
    backend.Create({}, rw_export->root, "file", req, [this](Result<vfs::CreateReply> r) {
      if (r.ok()) file = r->object.handle;
    });
    backend.Write({}, file, 0, Buffer::CopyOf(std::string_view("some file data")),
                  vfs::Stability::kFileSync, [](Result<vfs::WriteReply>) {});
    vfs::SetAttrs dir_attrs;
    dir_attrs.mode = 0755;
    backend.Mkdir({}, rw_export->root, "dir", dir_attrs, [](Result<vfs::CreateReply>) {});
    backend.Symlink({}, rw_export->root, "link", "file", {}, [](Result<vfs::CreateReply>) {});
  }

  // Shared by all inputs: immutable, and costly to key.
  static const HandleCodec& Codec() {
    static const HandleCodec* codec = [] {
      HandleCodec::Key key{};
      for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 13 + 1);
      return new HandleCodec(key);
    }();
    return *codec;
  }

  ManualClock clock;
  vfs::MemoryBackend backend;
  ExportTable exports;
  const Export* rw_export = nullptr;
  const Export* ro_export = nullptr;
  vfs::Handle file;
  std::unique_ptr<NfsProgram> program;
};

rpc::CallContext MakeContext(uint32_t proc, uint8_t flags) {
  rpc::CallContext ctx;
  ctx.program = kNfsProgram;
  ctx.version = kNfsVersion;
  ctx.procedure = proc;
  if (flags & kAuthNone) {
    ctx.flavor = rpc::AuthFlavor::kNone;
  } else {
    ctx.flavor = rpc::AuthFlavor::kSys;
    rpc::AuthSys sys;
    sys.uid = (flags & kUnprivileged) ? 1000 : 0;
    sys.gid = sys.uid;
    sys.gids = {sys.gid, 50};
    ctx.auth_sys = sys;
  }
  ctx.peer.is_v4 = true;
  ctx.peer.bytes = {(flags & kOutsider) ? uint8_t{10} : uint8_t{127}, 0, 0, 1};
  return ctx;
}

// A reply must be exactly one of: an RPC-level error with no body, or a
// body that starts with an nfsstat3 (NULL: an empty body).
void CheckReply(uint32_t proc, const rpc::Reply& reply) {
  if (reply.auth_error) std::abort();  // NFS procedures never deny auth
  if (reply.stat != rpc::AcceptStat::kSuccess) {
    if (reply.body.size() != 0) std::abort();
    if (proc < kNfsProcCount && reply.stat != rpc::AcceptStat::kGarbageArgs) std::abort();
    if (proc >= kNfsProcCount && reply.stat != rpc::AcceptStat::kProcUnavail) std::abort();
    return;
  }
  if (proc >= kNfsProcCount) std::abort();
  if (proc == 0) {
    if (reply.body.size() != 0) std::abort();
    return;
  }
  if (reply.body.size() < 4 || reply.body.size() % 4 != 0) std::abort();
}

}  // namespace
}  // namespace geofs::nfs3

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  geofs::SetLogLevel("off");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geofs::nfs3;
  if (size < 2) return 0;
  uint32_t proc = data[0] % (kNfsProcCount + 2);
  uint8_t flags = data[1];
  World world;
  const Export* exp = (flags & kReadOnly) ? world.ro_export : world.rw_export;

  geofs::xdr::Encoder prefix;
  const HandleCodec& codec = World::Codec();
  if (flags & kPrependFile) prefix.Opaque(codec.Encode(exp->id, world.file).bytes());
  if (flags & kPrependRoot) prefix.Opaque(codec.Encode(exp->id, exp->root).bytes());
  auto record = std::make_shared<std::vector<uint8_t>>(prefix.Flatten());
  record->insert(record->end(), data + 2, data + size);

  geofs::rpc::CallContext ctx = MakeContext(proc, flags);
  ctx.record = record;
  int replies = 0;
  world.program->Dispatch(ctx, *record, [&](geofs::rpc::Reply reply) {
    ++replies;
    CheckReply(proc, reply);
  });
  if (replies != 1) std::abort();  // the memory backend answers inline
  return 0;
}
