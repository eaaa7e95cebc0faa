#include "nfs3/nfs_test_util.h"

#include <arpa/inet.h>

namespace geofs::nfs3::testing {

Args& Args::Sattr(const vfs::SetAttrs& a) {
  auto opt32 = [&](const std::optional<uint32_t>& v) {
    Bool(v.has_value());
    if (v) U32(*v);
  };
  opt32(a.mode);
  opt32(a.uid);
  opt32(a.gid);
  Bool(a.size.has_value());
  if (a.size) U64(*a.size);
  auto time = [&](vfs::TimeUpdate how, WallTime t) {
    U32(static_cast<uint32_t>(how));
    if (how == vfs::TimeUpdate::kClientTime) Time(t);
  };
  time(a.atime_how, a.atime);
  time(a.mtime_how, a.mtime);
  return *this;
}

namespace {

WallTime ReadTime(xdr::Decoder& d) {
  uint32_t sec = 0, nsec = 0;
  d.U32(&sec);
  d.U32(&nsec);
  return {sec, nsec};
}

}  // namespace

Fattr ReadFattr(xdr::Decoder& d) {
  Fattr a;
  d.U32(&a.type);
  d.U32(&a.mode);
  d.U32(&a.nlink);
  d.U32(&a.uid);
  d.U32(&a.gid);
  d.U64(&a.size);
  d.U64(&a.used);
  d.U32(&a.rdev_major);
  d.U32(&a.rdev_minor);
  d.U64(&a.fsid);
  d.U64(&a.fileid);
  a.atime = ReadTime(d);
  a.mtime = ReadTime(d);
  a.ctime = ReadTime(d);
  return a;
}

std::optional<Fattr> ReadPostOpAttr(xdr::Decoder& d) {
  bool present = false;
  if (!d.Bool(&present) || !present) return std::nullopt;
  return ReadFattr(d);
}

WccData ReadWcc(xdr::Decoder& d) {
  WccData w;
  d.Bool(&w.has_before);
  if (w.has_before) {
    d.U64(&w.before_size);
    w.before_mtime = ReadTime(d);
    w.before_ctime = ReadTime(d);
  }
  w.after = ReadPostOpAttr(d);
  return w;
}

Bytes ReadOpaque(xdr::Decoder& d, size_t max) {
  std::span<const uint8_t> b;
  if (!d.Opaque(max, &b)) return {};
  return Bytes(b.begin(), b.end());
}

std::optional<Bytes> ReadPostOpFh(xdr::Decoder& d) {
  bool present = false;
  if (!d.Bool(&present) || !present) return std::nullopt;
  return ReadOpaque(d, kMaxFhBytes);
}

NfsStat CallResult::status() const {
  xdr::Decoder d(body);
  uint32_t st = 0xffffffff;
  d.U32(&st);
  return static_cast<NfsStat>(st);
}

xdr::Decoder CallResult::After() const {
  xdr::Decoder d(body);
  uint32_t st;
  d.U32(&st);
  return d;
}

rpc::PeerAddress MakePeer(const std::string& address) {
  rpc::PeerAddress peer;
  peer.port = 700;
  if (inet_pton(AF_INET, address.c_str(), peer.bytes.data()) == 1) {
    peer.is_v4 = true;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, address.c_str(), peer.bytes.data()), 1) << address;
    peer.is_v4 = false;
  }
  return peer;
}

rpc::CallContext MakeContext(uint32_t program, uint32_t proc, const Caller& who) {
  rpc::CallContext ctx;
  ctx.xid = 42;
  ctx.program = program;
  ctx.procedure = proc;
  ctx.flavor = who.flavor;
  if (who.flavor == rpc::AuthFlavor::kSys) {
    rpc::AuthSys sys;
    sys.machine_name = "client";
    sys.uid = who.uid;
    sys.gid = who.gid;
    sys.gids = who.gids;
    ctx.auth_sys = sys;
  }
  ctx.peer = MakePeer(who.address);
  return ctx;
}

CallResult Dispatch(rpc::Program& program, uint32_t proc, const Bytes& args, const Caller& who,
                    std::shared_ptr<const void> record) {
  rpc::CallContext ctx = MakeContext(program.program(), proc, who);
  ctx.version = program.max_version();
  ctx.record = std::move(record);
  CallResult result;
  program.Dispatch(ctx, args, [&result](rpc::Reply reply) {
    ++result.replies;
    result.accept = reply.stat;
    result.body = reply.body.Flatten();
    reply.body.ForEachSegment([&](const auto&) { ++result.segments; });
  });
  EXPECT_EQ(result.replies, 1) << "procedure " << proc;
  return result;
}

NfsTest::NfsTest() {
  ExportOptions options;
  options.squash = Squash::kNone;
  root_ = AddExport(options);
  backend_ = backends_.front().get();
  export_ = exports_.FindByPath("/");
  program_ = std::make_unique<NfsProgram>(&exports_, &codec_, options_);
}

Bytes NfsTest::AddExport(ExportOptions options) {
  backends_.push_back(std::make_unique<vfs::MemoryBackend>(&clock_));
  auto exp = exports_.Add(std::move(options), backends_.back().get());
  EXPECT_TRUE(exp.ok()) << exp.status().ToString();
  return Encode(*exp, (*exp)->root);
}

Bytes NfsTest::Encode(const Export* exp, const vfs::Handle& h) const {
  FileHandle fh = codec_.Encode(exp->id, h);
  return Bytes(fh.bytes().begin(), fh.bytes().end());
}

CallResult NfsTest::Call(NfsProc proc, const Args& args, const Caller& who) {
  return Call(proc, args.bytes(), who);
}

CallResult NfsTest::Call(NfsProc proc, const Bytes& args, const Caller& who) {
  return Dispatch(*program_, static_cast<uint32_t>(proc), args, who);
}

Bytes NfsTest::CreateFile(const Bytes& dir, std::string_view name, uint32_t mode,
                          const Caller& who) {
  vfs::SetAttrs attrs;
  attrs.mode = mode;
  CallResult r = Call(NfsProc::kCreate, Args().DirOp(dir, name).U32(0).Sattr(attrs), who);
  EXPECT_EQ(r.status(), NfsStat::kOk) << "CREATE " << name;
  xdr::Decoder d = r.After();
  return ReadPostOpFh(d).value_or(Bytes{});
}

Bytes NfsTest::MakeDir(const Bytes& dir, std::string_view name, uint32_t mode, const Caller& who) {
  vfs::SetAttrs attrs;
  attrs.mode = mode;
  CallResult r = Call(NfsProc::kMkdir, Args().DirOp(dir, name).Sattr(attrs), who);
  EXPECT_EQ(r.status(), NfsStat::kOk) << "MKDIR " << name;
  xdr::Decoder d = r.After();
  return ReadPostOpFh(d).value_or(Bytes{});
}

void NfsTest::WriteData(const Bytes& fh, uint64_t offset, std::string_view data,
                        const Caller& who) {
  Bytes payload(data.begin(), data.end());
  CallResult r = Call(NfsProc::kWrite,
                      Args().Fh(fh).U64(offset).U32(payload.size()).U32(2).Opaque(payload), who);
  EXPECT_EQ(r.status(), NfsStat::kOk) << "WRITE";
}

Fattr NfsTest::GetAttr(const Bytes& fh) {
  CallResult r = Call(NfsProc::kGetattr, Args().Fh(fh));
  EXPECT_EQ(r.status(), NfsStat::kOk) << "GETATTR";
  xdr::Decoder d = r.After();
  return ReadFattr(d);
}

std::pair<NfsStat, Bytes> NfsTest::Lookup(const Bytes& dir, std::string_view name,
                                          const Caller& who) {
  CallResult r = Call(NfsProc::kLookup, Args().DirOp(dir, name), who);
  if (r.status() != NfsStat::kOk) return {r.status(), {}};
  xdr::Decoder d = r.After();
  return {NfsStat::kOk, ReadOpaque(d, kMaxFhBytes)};
}

}  // namespace geofs::nfs3::testing
