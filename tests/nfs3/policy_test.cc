// Export policy through the NFS program: read-only exports, identity
// squashing, client allowlists, and forged or altered file handles.
#include <gtest/gtest.h>

#include "nfs3/nfs_test_util.h"

namespace geofs::nfs3::testing {
namespace {

class PolicyTest : public NfsTest {
 protected:
  // Adds an export with `options` at `path` and returns its root handle.
  Bytes Add(std::string path, ExportOptions options) {
    options.path = std::move(path);
    return AddExport(std::move(options));
  }
  uint32_t OwnerOf(const Bytes& fh) { return GetAttr(fh).uid; }
  uint32_t GroupOf(const Bytes& fh) { return GetAttr(fh).gid; }
};

TEST_F(PolicyTest, ReadOnlyExportRefusesEveryModifyingProcedure) {
  // Populate the backend through a writable export of the same tree first.
  ExportOptions rw;
  rw.squash = Squash::kNone;
  ExportOptions ro = rw;
  ro.read_only = true;
  ro.path = "/ro";
  auto exp = exports_.Add(ro, backend_);
  ASSERT_TRUE(exp.ok());
  Bytes file_rw = CreateFile(root_, "f");
  WriteData(file_rw, 0, "data");
  MakeDir(root_, "d");
  Bytes ro_root = Encode(*exp, (*exp)->root);
  Bytes ro_file = Lookup(ro_root, "f").second;
  ASSERT_FALSE(ro_file.empty());
  Bytes payload(4, 'x');
  vfs::SetAttrs attrs;
  const uint8_t verf[8] = {};

  struct Case {
    NfsProc proc;
    Bytes args;
  };
  std::vector<Case> cases = {
      {NfsProc::kSetattr, Args().Fh(ro_file).Sattr(attrs).Bool(false).bytes()},
      {NfsProc::kWrite, Args().Fh(ro_file).U64(0).U32(4).U32(2).Opaque(payload).bytes()},
      {NfsProc::kCreate, Args().DirOp(ro_root, "n").U32(0).Sattr(attrs).bytes()},
      {NfsProc::kCreate, Args().DirOp(ro_root, "n").U32(2).Fixed(verf).bytes()},
      {NfsProc::kMkdir, Args().DirOp(ro_root, "n").Sattr(attrs).bytes()},
      {NfsProc::kSymlink, Args().DirOp(ro_root, "n").Sattr(attrs).Str("t").bytes()},
      {NfsProc::kMknod, Args().DirOp(ro_root, "n").U32(7).Sattr(attrs).bytes()},
      {NfsProc::kRemove, Args().DirOp(ro_root, "f").bytes()},
      {NfsProc::kRmdir, Args().DirOp(ro_root, "d").bytes()},
      {NfsProc::kRename, Args().DirOp(ro_root, "f").DirOp(ro_root, "g").bytes()},
      {NfsProc::kLink, Args().Fh(ro_file).DirOp(ro_root, "g").bytes()},
  };
  for (const Case& c : cases) {
    CallResult r = Call(c.proc, c.args);
    EXPECT_EQ(r.status(), NfsStat::kRofs) << static_cast<int>(c.proc);
  }
  // Nothing changed, and reads still work.
  EXPECT_EQ(Lookup(ro_root, "f").first, NfsStat::kOk);
  EXPECT_EQ(Lookup(ro_root, "g").first, NfsStat::kNoEnt);
  EXPECT_EQ(Lookup(ro_root, "n").first, NfsStat::kNoEnt);
  EXPECT_EQ(Lookup(ro_root, "d").first, NfsStat::kOk);
  CallResult r = Call(NfsProc::kRead, Args().Fh(ro_file).U64(0).U32(10));
  EXPECT_EQ(r.status(), NfsStat::kOk);
  EXPECT_EQ(Call(NfsProc::kCommit, Args().Fh(ro_file).U64(0).U32(0)).status(), NfsStat::kOk);

  // ACCESS never grants modification there, though the same caller may
  // modify the file through the writable export.
  auto granted = [&](const Bytes& fh) {
    CallResult a = Call(NfsProc::kAccess, Args().Fh(fh).U32(0x3f));
    xdr::Decoder d = a.After();
    ReadPostOpAttr(d);
    uint32_t bits = 0;
    d.U32(&bits);
    return bits;
  };
  EXPECT_EQ(granted(file_rw) & vfs::kAccessModify, vfs::kAccessModify);
  EXPECT_EQ(granted(ro_file), vfs::kAccessRead);
  EXPECT_EQ(granted(ro_root) & (vfs::kAccessModify | vfs::kAccessExtend | vfs::kAccessDelete), 0u);
}

TEST_F(PolicyTest, RootSquashMapsRootToAnonymous) {
  ExportOptions options;  // squash root is the default
  options.anon_uid = 65534;
  options.anon_gid = 65533;
  Bytes root = Add("/squashed", options);
  // The tree's root belongs to root: make it writable for the squashed user.
  vfs::SetAttrs open_up;
  open_up.mode = 0777;
  ASSERT_EQ(Call(NfsProc::kSetattr, Args().Fh(root).Sattr(open_up).Bool(false)).status(),
            NfsStat::kPerm);  // squashed root is not the owner
  backends_.back()->SetAttr({}, exports_.FindByPath("/squashed")->root, open_up, std::nullopt,
                            [](Result<vfs::Wcc> r) { ASSERT_TRUE(r.ok()); });

  Bytes by_root = CreateFile(root, "by_root", 0644, User(0, 0));
  EXPECT_EQ(OwnerOf(by_root), 65534u);
  EXPECT_EQ(GroupOf(by_root), 65533u);
  Bytes by_user = CreateFile(root, "by_user", 0644, User(1000, 100));
  EXPECT_EQ(OwnerOf(by_user), 1000u);
  EXPECT_EQ(GroupOf(by_user), 100u);
  Bytes by_none = CreateFile(root, "by_none", 0644, NoAuth());
  EXPECT_EQ(OwnerOf(by_none), 65534u);
}

TEST_F(PolicyTest, NoSquashKeepsRoot) {
  Bytes file = CreateFile(root_, "f", 0644, User(0, 0));
  EXPECT_EQ(OwnerOf(file), 0u);
  EXPECT_EQ(GroupOf(file), 0u);
}

TEST_F(PolicyTest, SquashAllMapsEveryone) {
  ExportOptions options;
  options.squash = Squash::kAll;
  options.anon_uid = 4000;
  options.anon_gid = 4001;
  Bytes root = Add("/all", options);
  vfs::SetAttrs open_up;
  open_up.mode = 0777;
  backends_.back()->SetAttr({}, exports_.FindByPath("/all")->root, open_up, std::nullopt,
                            [](Result<vfs::Wcc> r) { ASSERT_TRUE(r.ok()); });
  Bytes file = CreateFile(root, "f", 0644, User(1000, 100, {5, 6}));
  EXPECT_EQ(OwnerOf(file), 4000u);
  EXPECT_EQ(GroupOf(file), 4001u);
  Bytes by_root = CreateFile(root, "g", 0644, User(0, 0));
  EXPECT_EQ(OwnerOf(by_root), 4000u);
}

TEST_F(PolicyTest, PermissionsUseTheCallersIdentity) {
  Bytes file = CreateFile(root_, "f", 0644);  // owned by root (no squash)
  Caller user = User(1000, 1000);
  Bytes payload(3, 'x');
  CallResult r = Call(NfsProc::kWrite, Args().Fh(file).U64(0).U32(3).U32(2).Opaque(payload), user);
  EXPECT_EQ(r.status(), NfsStat::kAcces);
  EXPECT_EQ(Call(NfsProc::kRead, Args().Fh(file).U64(0).U32(3), user).status(), NfsStat::kOk);
  vfs::SetAttrs attrs;
  EXPECT_EQ(Call(NfsProc::kCreate, Args().DirOp(root_, "x").U32(0).Sattr(attrs), user).status(),
            NfsStat::kAcces);
  // A supplementary group opens a group-writable directory.
  Bytes shared = MakeDir(root_, "shared", 0775);
  vfs::SetAttrs chgrp;
  chgrp.gid = 50;
  ASSERT_EQ(Call(NfsProc::kSetattr, Args().Fh(shared).Sattr(chgrp).Bool(false)).status(),
            NfsStat::kOk);
  EXPECT_EQ(Call(NfsProc::kCreate, Args().DirOp(shared, "x").U32(0).Sattr(attrs), user).status(),
            NfsStat::kAcces);
  Caller member = User(1000, 1000, {50});
  EXPECT_EQ(Call(NfsProc::kCreate, Args().DirOp(shared, "x").U32(0).Sattr(attrs), member).status(),
            NfsStat::kOk);
}

TEST_F(PolicyTest, AllowlistRefusesOtherPeers) {
  ExportOptions options;
  options.squash = Squash::kNone;
  options.allow = {*Cidr::Parse("10.0.0.0/8"), *Cidr::Parse("fd00::/8")};
  Bytes root = Add("/private", options);
  Caller outsider;  // 127.0.0.1
  CallResult r = Call(NfsProc::kGetattr, Args().Fh(root), outsider);
  EXPECT_EQ(r.status(), NfsStat::kAcces);
  r = Call(NfsProc::kLookup, Args().DirOp(root, "x"), outsider);
  EXPECT_EQ(r.status(), NfsStat::kAcces);
  xdr::Decoder d = r.After();
  EXPECT_FALSE(ReadPostOpAttr(d));  // nothing leaks to a refused peer
  EXPECT_EQ(Call(NfsProc::kNull, Bytes{}, outsider).accept, rpc::AcceptStat::kSuccess);

  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(root), From("10.1.2.3")).status(), NfsStat::kOk);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(root), From("fd12::1")).status(), NfsStat::kOk);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(root), From("::ffff:10.9.9.9")).status(),
            NfsStat::kOk);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(root), From("11.0.0.1")).status(), NfsStat::kAcces);
  // Other exports are unaffected.
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(root_), outsider).status(), NfsStat::kOk);
}

TEST_F(PolicyTest, EveryAlteredByteOfAHandleIsRejected) {
  Bytes secret = CreateFile(root_, "secret");
  Bytes other = CreateFile(root_, "other");
  WriteData(other, 0, "other's data");
  for (const Bytes& original : {secret, root_}) {
    for (size_t i = 0; i < original.size(); ++i) {
      for (uint8_t flip : {0x01, 0x80, 0xff}) {
        Bytes fh = original;
        fh[i] ^= flip;
        NfsStat st = Call(NfsProc::kGetattr, Args().Fh(fh)).status();
        EXPECT_TRUE(st == NfsStat::kBadHandle || st == NfsStat::kStale)
            << "byte " << i << " flip " << int(flip) << " gave " << static_cast<int>(st);
      }
    }
    // Truncated and extended handles too.
    for (size_t len = 0; len < original.size(); ++len) {
      Bytes fh(original.begin(), original.begin() + len);
      EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(fh)).status(), NfsStat::kBadHandle) << len;
    }
    Bytes longer = original;
    longer.push_back(0);
    EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(longer)).status(), NfsStat::kBadHandle);
  }
}

TEST_F(PolicyTest, SplicedBackendHandleIsRejected) {
  // Take the authenticated envelope of one file and the backend bytes of
  // another: the MAC no longer matches.
  Bytes a = CreateFile(root_, "a");
  Bytes b = CreateFile(root_, "b");
  ASSERT_EQ(a.size(), b.size());
  Bytes spliced = a;
  std::copy(b.begin() + HandleCodec::kHeaderBytes, b.end() - HandleCodec::kMacBytes,
            spliced.begin() + HandleCodec::kHeaderBytes);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(spliced)).status(), NfsStat::kBadHandle);
}

TEST_F(PolicyTest, HandleFromAnotherKeyIsBadHandle) {
  HandleCodec other(HandleCodec::RandomKey());
  FileHandle fh = other.Encode(export_->id, export_->root);
  EXPECT_EQ(
      Call(NfsProc::kGetattr, Args().Fh(Bytes(fh.bytes().begin(), fh.bytes().end()))).status(),
      NfsStat::kBadHandle);
}

TEST_F(PolicyTest, HandleOfUnknownExportIsStale) {
  FileHandle fh = codec_.Encode(export_->id + 1, export_->root);
  EXPECT_EQ(
      Call(NfsProc::kGetattr, Args().Fh(Bytes(fh.bytes().begin(), fh.bytes().end()))).status(),
      NfsStat::kStale);
}

TEST_F(PolicyTest, AuthenticHandleWithUnknownBackendBytesIsStaleOrBad) {
  vfs::Handle bogus(std::vector<uint8_t>(16, 0x5a));
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(Encode(export_, bogus))).status(), NfsStat::kStale);
  vfs::Handle wrong_size(std::vector<uint8_t>(3, 1));
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(Encode(export_, wrong_size))).status(),
            NfsStat::kBadHandle);
}

}  // namespace
}  // namespace geofs::nfs3::testing
