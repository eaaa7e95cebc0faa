// Every NFSv3 procedure through NfsProgram::Dispatch over a MemoryBackend:
// success and the main error paths.
#include <gtest/gtest.h>

#include <set>

#include "nfs3/nfs_test_util.h"

namespace geofs::nfs3::testing {
namespace {

constexpr uint32_t kUnstable = 0;
constexpr uint32_t kFileSync = 2;

class ProceduresTest : public NfsTest {};

TEST_F(ProceduresTest, NullAnswersWithAnEmptyBody) {
  CallResult r = Call(NfsProc::kNull, Bytes{});
  EXPECT_EQ(r.accept, rpc::AcceptStat::kSuccess);
  EXPECT_TRUE(r.body.empty());
}

TEST_F(ProceduresTest, UnknownProceduresAreUnavailable) {
  for (uint32_t proc : {22u, 23u, 1000u, 0xffffffffu}) {
    CallResult r = Dispatch(*program_, proc, Args().Fh(root_).bytes());
    EXPECT_EQ(r.accept, rpc::AcceptStat::kProcUnavail) << proc;
  }
}

TEST_F(ProceduresTest, EmptyOrTruncatedArgumentsAreGarbage) {
  for (uint32_t proc = 1; proc < kNfsProcCount; ++proc) {
    CallResult r = Dispatch(*program_, proc, Bytes{});
    EXPECT_EQ(r.accept, rpc::AcceptStat::kGarbageArgs) << proc;
    Bytes truncated = Args().Fh(root_).bytes();
    truncated.resize(truncated.size() - 3);
    EXPECT_EQ(Dispatch(*program_, proc, truncated).accept, rpc::AcceptStat::kGarbageArgs) << proc;
  }
}

TEST_F(ProceduresTest, HandleLongerThan64BytesIsGarbage) {
  Bytes fh(65, 1);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(fh)).accept, rpc::AcceptStat::kGarbageArgs);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(Bytes{})).status(), NfsStat::kBadHandle);
}

TEST_F(ProceduresTest, GetattrReportsTheExportFsid) {
  CallResult r = Call(NfsProc::kGetattr, Args().Fh(root_));
  ASSERT_EQ(r.accept, rpc::AcceptStat::kSuccess);
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  Fattr a = ReadFattr(d);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_EQ(a.type, static_cast<uint32_t>(vfs::FileType::kDirectory));
  EXPECT_EQ(a.fsid, export_->id);
  Bytes file = CreateFile(root_, "f");
  EXPECT_EQ(GetAttr(file).fsid, export_->id);
  EXPECT_NE(GetAttr(file).fileid, a.fileid);
}

TEST_F(ProceduresTest, SetattrChangesModeAndReturnsWcc) {
  Bytes file = CreateFile(root_, "f", 0644);
  WriteData(file, 0, "hello world");
  Fattr before = GetAttr(file);
  clock_.Advance(std::chrono::seconds(5));
  vfs::SetAttrs set;
  set.mode = 0600;
  set.size = 5;
  CallResult r = Call(NfsProc::kSetattr, Args().Fh(file).Sattr(set).Bool(false));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  WccData wcc = ReadWcc(d);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(wcc.has_before);
  EXPECT_EQ(wcc.before_size, 11u);
  EXPECT_EQ(wcc.before_ctime, before.ctime);
  ASSERT_TRUE(wcc.after);
  EXPECT_EQ(wcc.after->mode, 0600u);
  EXPECT_EQ(wcc.after->size, 5u);
  EXPECT_GT(wcc.after->ctime, before.ctime);
}

TEST_F(ProceduresTest, SetattrGuardMismatchIsNotSync) {
  Bytes file = CreateFile(root_, "f");
  Fattr a = GetAttr(file);
  vfs::SetAttrs set;
  set.mode = 0600;
  WallTime wrong{a.ctime.sec + 1, a.ctime.nsec};
  CallResult r = Call(NfsProc::kSetattr, Args().Fh(file).Sattr(set).Bool(true).Time(wrong));
  EXPECT_EQ(r.status(), NfsStat::kNotSync);
  xdr::Decoder d = r.After();
  WccData wcc = ReadWcc(d);
  ASSERT_TRUE(wcc.after);
  EXPECT_EQ(wcc.after->mode, 0644u);  // unchanged, and reported
  r = Call(NfsProc::kSetattr, Args().Fh(file).Sattr(set).Bool(true).Time(a.ctime));
  EXPECT_EQ(r.status(), NfsStat::kOk);
  EXPECT_EQ(GetAttr(file).mode, 0600u);
}

TEST_F(ProceduresTest, SetattrBadTimeHowIsGarbage) {
  Bytes args = Args()
                   .Fh(root_)
                   .Bool(false)
                   .Bool(false)
                   .Bool(false)
                   .Bool(false)
                   .U32(3)
                   .U32(0)
                   .Bool(false)
                   .bytes();
  EXPECT_EQ(Call(NfsProc::kSetattr, args).accept, rpc::AcceptStat::kGarbageArgs);
}

TEST_F(ProceduresTest, LookupFindsObjectsWithBothAttributes) {
  Bytes file = CreateFile(root_, "f");
  CallResult r = Call(NfsProc::kLookup, Args().DirOp(root_, "f"));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  Bytes fh = ReadOpaque(d, kMaxFhBytes);
  auto obj = ReadPostOpAttr(d);
  auto dir = ReadPostOpAttr(d);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(fh, file);
  ASSERT_TRUE(obj && dir);
  EXPECT_EQ(obj->type, static_cast<uint32_t>(vfs::FileType::kRegular));
  EXPECT_EQ(dir->type, static_cast<uint32_t>(vfs::FileType::kDirectory));
}

TEST_F(ProceduresTest, LookupMissingNameIsNoEntWithDirAttributes) {
  CallResult r = Call(NfsProc::kLookup, Args().DirOp(root_, "missing"));
  EXPECT_EQ(r.status(), NfsStat::kNoEnt);
  xdr::Decoder d = r.After();
  auto dir = ReadPostOpAttr(d);
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->fileid, GetAttr(root_).fileid);
}

TEST_F(ProceduresTest, LookupDotAndDotDot) {
  Bytes sub = MakeDir(root_, "sub");
  EXPECT_EQ(Lookup(sub, ".").second, sub);
  EXPECT_EQ(Lookup(sub, "..").second, root_);
  EXPECT_EQ(Lookup(root_, "..").second, root_);  // the root is its own parent
  Bytes file = CreateFile(root_, "f");
  EXPECT_EQ(Lookup(file, ".").first, NfsStat::kNotDir);
  EXPECT_EQ(Lookup(file, "x").first, NfsStat::kNotDir);
}

TEST_F(ProceduresTest, LookupNameRules) {
  EXPECT_EQ(Lookup(root_, std::string(255, 'a')).first, NfsStat::kNoEnt);
  EXPECT_EQ(Lookup(root_, std::string(256, 'a')).first, NfsStat::kNameTooLong);
  EXPECT_EQ(Lookup(root_, "a/b").first, NfsStat::kInval);
  EXPECT_EQ(Lookup(root_, "").first, NfsStat::kInval);
  EXPECT_EQ(Lookup(root_, std::string("a\0b", 3)).first, NfsStat::kInval);
}

TEST_F(ProceduresTest, LookupDotNeedsSearchPermission) {
  Bytes dir = MakeDir(root_, "private", 0700);
  Caller user = User(1000, 1000);
  EXPECT_EQ(Lookup(dir, ".", user).first, NfsStat::kAcces);
  EXPECT_EQ(Lookup(dir, ".").first, NfsStat::kOk);
}

TEST_F(ProceduresTest, AccessReportsGrantedBits) {
  Bytes file = CreateFile(root_, "f", 0644);
  constexpr uint32_t kAll = 0x3f;
  CallResult r = Call(NfsProc::kAccess, Args().Fh(file).U32(kAll));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  ASSERT_TRUE(ReadPostOpAttr(d));
  uint32_t granted = 0;
  d.U32(&granted);
  EXPECT_EQ(granted, vfs::kAccessRead | vfs::kAccessModify | vfs::kAccessExtend);

  Caller user = User(1000, 1000);
  r = Call(NfsProc::kAccess, Args().Fh(file).U32(kAll), user);
  d = r.After();
  ReadPostOpAttr(d);
  d.U32(&granted);
  EXPECT_EQ(granted, vfs::kAccessRead);
  // Only requested bits (and no unknown ones) come back.
  r = Call(NfsProc::kAccess, Args().Fh(file).U32(vfs::kAccessModify | 0x1000));
  d = r.After();
  ReadPostOpAttr(d);
  d.U32(&granted);
  EXPECT_EQ(granted, vfs::kAccessModify);
}

TEST_F(ProceduresTest, SymlinkAndReadlink) {
  vfs::SetAttrs attrs;
  CallResult r =
      Call(NfsProc::kSymlink, Args().DirOp(root_, "link").Sattr(attrs).Str("target/path"));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  auto fh = ReadPostOpFh(d);
  auto attr = ReadPostOpAttr(d);
  WccData wcc = ReadWcc(d);
  ASSERT_TRUE(d.ok() && fh && attr && wcc.after);
  EXPECT_EQ(attr->type, static_cast<uint32_t>(vfs::FileType::kSymlink));
  EXPECT_EQ(attr->size, 11u);

  r = Call(NfsProc::kReadlink, Args().Fh(*fh));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  d = r.After();
  EXPECT_TRUE(ReadPostOpAttr(d));
  std::string_view target;
  ASSERT_TRUE(d.String(4096, &target));
  EXPECT_EQ(target, "target/path");

  Bytes file = CreateFile(root_, "f");
  EXPECT_EQ(Call(NfsProc::kReadlink, Args().Fh(file)).status(), NfsStat::kInval);
}

TEST_F(ProceduresTest, SymlinkTargetRules) {
  vfs::SetAttrs attrs;
  EXPECT_EQ(Call(NfsProc::kSymlink, Args().DirOp(root_, "l").Sattr(attrs).Str("")).status(),
            NfsStat::kNoEnt);
  EXPECT_EQ(
      Call(NfsProc::kSymlink, Args().DirOp(root_, "l").Sattr(attrs).Str(std::string(4097, 'x')))
          .status(),
      NfsStat::kNameTooLong);
  EXPECT_EQ(Call(NfsProc::kSymlink, Args().DirOp(root_, "..").Sattr(attrs).Str("t")).status(),
            NfsStat::kExist);
}

TEST_F(ProceduresTest, WriteThenReadBack) {
  Bytes file = CreateFile(root_, "f");
  Bytes payload(10000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7);
  CallResult r = Call(NfsProc::kWrite,
                      Args().Fh(file).U64(100).U32(payload.size()).U32(kUnstable).Opaque(payload));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  WccData wcc = ReadWcc(d);
  uint32_t count = 0, committed = 99;
  d.U32(&count);
  d.U32(&committed);
  std::span<const uint8_t> verf;
  ASSERT_TRUE(d.FixedOpaque(8, &verf));
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_TRUE(wcc.has_before);
  EXPECT_EQ(wcc.before_size, 0u);
  ASSERT_TRUE(wcc.after);
  EXPECT_EQ(wcc.after->size, 10100u);
  EXPECT_EQ(count, payload.size());
  EXPECT_LE(committed, 2u);
  EXPECT_TRUE(std::equal(verf.begin(), verf.end(), program_->write_verifier().begin()));

  r = Call(NfsProc::kRead, Args().Fh(file).U64(100).U32(20000));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  d = r.After();
  auto attr = ReadPostOpAttr(d);
  bool eof = false;
  d.U32(&count);
  d.Bool(&eof);
  Bytes data = ReadOpaque(d);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(attr);
  EXPECT_EQ(count, payload.size());
  EXPECT_TRUE(eof);
  EXPECT_EQ(data, payload);
  // The data travels as its own gather segment, not copied into the header.
  EXPECT_GE(r.segments, 2u);

  r = Call(NfsProc::kRead, Args().Fh(file).U64(0).U32(50));
  d = r.After();
  ReadPostOpAttr(d);
  d.U32(&count);
  d.Bool(&eof);
  data = ReadOpaque(d);
  EXPECT_EQ(count, 50u);
  EXPECT_FALSE(eof);
  EXPECT_EQ(data, Bytes(50, 0));  // the hole before offset 100 reads as zeros
}

TEST_F(ProceduresTest, ReadOfDirectoryFailsWithAttributes) {
  CallResult r = Call(NfsProc::kRead, Args().Fh(root_).U64(0).U32(10));
  EXPECT_EQ(r.status(), NfsStat::kIsDir);
  xdr::Decoder d = r.After();
  EXPECT_TRUE(ReadPostOpAttr(d));
}

TEST_F(ProceduresTest, ReadAndWriteCountsAreCappedAtTheMaxima) {
  options_.rtmax = 8192;
  options_.wtmax = 4096;
  program_ = std::make_unique<NfsProgram>(&exports_, &codec_, options_);
  Bytes file = CreateFile(root_, "f");
  Bytes payload(10000, 'x');
  CallResult r = Call(NfsProc::kWrite,
                      Args().Fh(file).U64(0).U32(payload.size()).U32(kFileSync).Opaque(payload));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  ReadWcc(d);
  uint32_t count = 0;
  d.U32(&count);
  EXPECT_EQ(count, 4096u);
  Buffer big = Buffer::CopyOf(std::string(20000, 'y'));
  backend_->Write({}, codec_.Decode(file)->handle, 0, big, vfs::Stability::kFileSync,
                  [](Result<vfs::WriteReply> w) { ASSERT_TRUE(w.ok()); });
  r = Call(NfsProc::kRead, Args().Fh(file).U64(0).U32(100000));
  d = r.After();
  ReadPostOpAttr(d);
  d.U32(&count);
  EXPECT_EQ(count, 8192u);
}

TEST_F(ProceduresTest, WriteCountMustMatchData) {
  Bytes file = CreateFile(root_, "f");
  Bytes payload(10, 'x');
  CallResult r =
      Call(NfsProc::kWrite, Args().Fh(file).U64(0).U32(11).U32(kUnstable).Opaque(payload));
  EXPECT_EQ(r.status(), NfsStat::kInval);
  xdr::Decoder d = r.After();
  WccData wcc = ReadWcc(d);
  EXPECT_TRUE(wcc.after);
  EXPECT_EQ(GetAttr(file).size, 0u);
  r = Call(NfsProc::kWrite, Args().Fh(file).U64(0).U32(10).U32(3).Opaque(payload));
  EXPECT_EQ(r.accept, rpc::AcceptStat::kGarbageArgs);
}

// A backend that remembers where WRITE data pointed, to prove it is a view of
// the received record rather than a copy.
class RecordingBackend : public vfs::MemoryBackend {
 public:
  using MemoryBackend::MemoryBackend;
  void Write(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset, Buffer data,
             vfs::Stability stability, vfs::Callback<vfs::WriteReply> cb) override {
    last_data = data.data();
    MemoryBackend::Write(cred, h, offset, std::move(data), stability, std::move(cb));
  }
  const uint8_t* last_data = nullptr;
};

TEST(WriteZeroCopyTest, PayloadIsASliceOfTheRecord) {
  RecordingBackend backend;
  HandleCodec codec(HandleCodec::RandomKey());
  ExportTable exports;
  ExportOptions options;
  options.squash = Squash::kNone;
  const Export* exp = *exports.Add(options, &backend);
  NfsProgram program(&exports, &codec);
  FileHandle root = codec.Encode(exp->id, exp->root);
  Bytes root_fh(root.bytes().begin(), root.bytes().end());
  vfs::SetAttrs attrs;
  CallResult created = Dispatch(program, static_cast<uint32_t>(NfsProc::kCreate),
                                Args().DirOp(root_fh, "f").U32(0).Sattr(attrs).bytes());
  xdr::Decoder d = created.After();
  Bytes file = *ReadPostOpFh(d);

  Bytes payload(4096, 'z');
  auto record = std::make_shared<Bytes>(
      Args().Fh(file).U64(0).U32(payload.size()).U32(kFileSync).Opaque(payload).bytes());
  CallResult r = Dispatch(program, static_cast<uint32_t>(NfsProc::kWrite), *record, {}, record);
  ASSERT_EQ(r.status(), NfsStat::kOk);
  EXPECT_GE(backend.last_data, record->data());
  EXPECT_LT(backend.last_data, record->data() + record->size());
}

TEST_F(ProceduresTest, CreateModes) {
  vfs::SetAttrs attrs;
  attrs.mode = 0640;
  CallResult r = Call(NfsProc::kCreate, Args().DirOp(root_, "f").U32(0).Sattr(attrs));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  auto fh = ReadPostOpFh(d);
  auto attr = ReadPostOpAttr(d);
  WccData wcc = ReadWcc(d);
  ASSERT_TRUE(d.ok() && fh && attr && wcc.after);
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_EQ(attr->mode, 0640u);
  EXPECT_TRUE(wcc.has_before);

  // UNCHECKED over an existing file succeeds; GUARDED does not.
  r = Call(NfsProc::kCreate, Args().DirOp(root_, "f").U32(0).Sattr(attrs));
  EXPECT_EQ(r.status(), NfsStat::kOk);
  r = Call(NfsProc::kCreate, Args().DirOp(root_, "f").U32(1).Sattr(attrs));
  EXPECT_EQ(r.status(), NfsStat::kExist);
  d = r.After();
  EXPECT_TRUE(ReadWcc(d).after);  // failure still carries the directory's attributes

  EXPECT_EQ(Call(NfsProc::kCreate, Args().DirOp(root_, ".").U32(0).Sattr(attrs)).status(),
            NfsStat::kExist);
  EXPECT_EQ(Call(NfsProc::kCreate, Args().DirOp(root_, "f").U32(3).Sattr(attrs)).accept,
            rpc::AcceptStat::kGarbageArgs);
  Bytes file = *fh;
  EXPECT_EQ(Call(NfsProc::kCreate, Args().DirOp(file, "x").U32(0).Sattr(attrs)).status(),
            NfsStat::kNotDir);
}

TEST_F(ProceduresTest, ExclusiveCreateReplayReturnsTheSameHandle) {
  const uint8_t verf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const uint8_t other[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  CallResult first = Call(NfsProc::kCreate, Args().DirOp(root_, "x").U32(2).Fixed(verf));
  ASSERT_EQ(first.status(), NfsStat::kOk);
  CallResult replay = Call(NfsProc::kCreate, Args().DirOp(root_, "x").U32(2).Fixed(verf));
  ASSERT_EQ(replay.status(), NfsStat::kOk);
  xdr::Decoder d1 = first.After(), d2 = replay.After();
  EXPECT_EQ(ReadPostOpFh(d1), ReadPostOpFh(d2));
  EXPECT_EQ(Call(NfsProc::kCreate, Args().DirOp(root_, "x").U32(2).Fixed(other)).status(),
            NfsStat::kExist);
}

TEST_F(ProceduresTest, MkdirAndRmdir) {
  Bytes dir = MakeDir(root_, "d", 0750);
  Fattr a = GetAttr(dir);
  EXPECT_EQ(a.type, static_cast<uint32_t>(vfs::FileType::kDirectory));
  EXPECT_EQ(a.mode, 0750u);
  EXPECT_EQ(GetAttr(root_).nlink, 3u);
  vfs::SetAttrs attrs;
  EXPECT_EQ(Call(NfsProc::kMkdir, Args().DirOp(root_, "d").Sattr(attrs)).status(), NfsStat::kExist);
  CreateFile(dir, "inner");
  CallResult r = Call(NfsProc::kRmdir, Args().DirOp(root_, "d"));
  EXPECT_EQ(r.status(), NfsStat::kNotEmpty);
  xdr::Decoder d = r.After();
  EXPECT_TRUE(ReadWcc(d).after);
  EXPECT_EQ(Call(NfsProc::kRemove, Args().DirOp(dir, "inner")).status(), NfsStat::kOk);
  r = Call(NfsProc::kRmdir, Args().DirOp(root_, "d"));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  d = r.After();
  WccData wcc = ReadWcc(d);
  ASSERT_TRUE(wcc.after);
  EXPECT_EQ(wcc.after->nlink, 2u);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(dir)).status(), NfsStat::kStale);
  EXPECT_EQ(Call(NfsProc::kRmdir, Args().DirOp(root_, ".")).status(), NfsStat::kInval);
  EXPECT_EQ(Call(NfsProc::kRmdir, Args().DirOp(root_, "..")).status(), NfsStat::kInval);
}

TEST_F(ProceduresTest, MknodTypes) {
  vfs::SetAttrs attrs;
  attrs.mode = 0600;
  CallResult r = Call(NfsProc::kMknod, Args().DirOp(root_, "fifo").U32(7).Sattr(attrs));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  ReadPostOpFh(d);
  auto attr = ReadPostOpAttr(d);
  ASSERT_TRUE(attr);
  EXPECT_EQ(attr->type, 7u);

  r = Call(NfsProc::kMknod, Args().DirOp(root_, "chr").U32(4).Sattr(attrs).U32(1).U32(3));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  d = r.After();
  ReadPostOpFh(d);
  attr = ReadPostOpAttr(d);
  ASSERT_TRUE(attr);
  EXPECT_EQ(attr->type, 4u);
  EXPECT_EQ(attr->rdev_major, 1u);
  EXPECT_EQ(attr->rdev_minor, 3u);

  for (uint32_t t : {1u, 2u, 5u}) {
    EXPECT_EQ(Call(NfsProc::kMknod, Args().DirOp(root_, "x").U32(t)).status(), NfsStat::kBadType);
  }
  EXPECT_EQ(Call(NfsProc::kMknod, Args().DirOp(root_, "x").U32(9)).accept,
            rpc::AcceptStat::kGarbageArgs);
}

TEST_F(ProceduresTest, RemoveMakesOldHandlesStale) {
  Bytes file = CreateFile(root_, "f");
  CallResult r = Call(NfsProc::kRemove, Args().DirOp(root_, "f"));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  WccData wcc = ReadWcc(d);
  EXPECT_TRUE(wcc.has_before && wcc.after);
  EXPECT_EQ(Lookup(root_, "f").first, NfsStat::kNoEnt);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(file)).status(), NfsStat::kStale);
  EXPECT_EQ(Call(NfsProc::kRemove, Args().DirOp(root_, "f")).status(), NfsStat::kNoEnt);
  EXPECT_EQ(Call(NfsProc::kRemove, Args().DirOp(root_, ".")).status(), NfsStat::kInval);
}

TEST_F(ProceduresTest, RenameWithinAndAcrossDirectories) {
  Bytes a = MakeDir(root_, "a");
  Bytes b = MakeDir(root_, "b");
  Bytes file = CreateFile(a, "f");
  CallResult r = Call(NfsProc::kRename, Args().DirOp(a, "f").DirOp(a, "g"));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  r = Call(NfsProc::kRename, Args().DirOp(a, "g").DirOp(b, "h"));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  WccData from = ReadWcc(d), to = ReadWcc(d);
  ASSERT_TRUE(d.ok() && from.after && to.after);
  EXPECT_EQ(from.after->fileid, GetAttr(a).fileid);
  EXPECT_EQ(to.after->fileid, GetAttr(b).fileid);
  EXPECT_EQ(Lookup(b, "h").second, file);
  EXPECT_EQ(Lookup(a, "g").first, NfsStat::kNoEnt);

  // Over an existing file: the target is replaced.
  Bytes other = CreateFile(b, "other");
  ASSERT_EQ(Call(NfsProc::kRename, Args().DirOp(b, "h").DirOp(b, "other")).status(), NfsStat::kOk);
  EXPECT_EQ(Lookup(b, "other").second, file);
  EXPECT_EQ(Call(NfsProc::kGetattr, Args().Fh(other)).status(), NfsStat::kStale);

  r = Call(NfsProc::kRename, Args().DirOp(a, "missing").DirOp(b, "x"));
  EXPECT_EQ(r.status(), NfsStat::kNoEnt);
  d = r.After();
  from = ReadWcc(d);
  to = ReadWcc(d);
  EXPECT_TRUE(from.after && to.after);
  EXPECT_EQ(Call(NfsProc::kRename, Args().DirOp(a, ".").DirOp(b, "x")).status(), NfsStat::kInval);
}

TEST_F(ProceduresTest, RenameAndLinkAcrossExportsAreXdev) {
  ExportOptions other_options;
  other_options.path = "/other";
  other_options.squash = Squash::kNone;
  Bytes other_root = AddExport(other_options);
  Bytes file = CreateFile(root_, "f");
  CallResult r = Call(NfsProc::kRename, Args().DirOp(root_, "f").DirOp(other_root, "f"));
  EXPECT_EQ(r.status(), NfsStat::kXdev);
  r = Call(NfsProc::kLink, Args().Fh(file).DirOp(other_root, "f"));
  EXPECT_EQ(r.status(), NfsStat::kXdev);
  EXPECT_EQ(Lookup(root_, "f").second, file);
}

TEST_F(ProceduresTest, LinkAddsAName) {
  Bytes file = CreateFile(root_, "f");
  Bytes dir = MakeDir(root_, "d");
  CallResult r = Call(NfsProc::kLink, Args().Fh(file).DirOp(dir, "hard"));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  auto attr = ReadPostOpAttr(d);
  WccData wcc = ReadWcc(d);
  ASSERT_TRUE(d.ok() && attr && wcc.after);
  EXPECT_EQ(attr->nlink, 2u);
  EXPECT_EQ(Lookup(dir, "hard").second, file);
  r = Call(NfsProc::kLink, Args().Fh(file).DirOp(dir, "hard"));
  EXPECT_EQ(r.status(), NfsStat::kExist);
  d = r.After();
  EXPECT_TRUE(ReadPostOpAttr(d));
  EXPECT_TRUE(ReadWcc(d).after);
  EXPECT_EQ(Call(NfsProc::kLink, Args().Fh(dir).DirOp(root_, "dirlink")).status(), NfsStat::kIsDir);
}

TEST_F(ProceduresTest, Fsstat) {
  CallResult r = Call(NfsProc::kFsstat, Args().Fh(root_));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  EXPECT_TRUE(ReadPostOpAttr(d));
  uint64_t v[6];
  for (uint64_t& x : v) d.U64(&x);
  uint32_t invarsec = 1;
  d.U32(&invarsec);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_GE(v[0], v[1]);
  EXPECT_GE(v[1], v[2]);
  EXPECT_EQ(invarsec, 0u);
}

TEST_F(ProceduresTest, FsinfoReportsTransferSizesAndCapabilities) {
  CallResult r = Call(NfsProc::kFsinfo, Args().Fh(root_));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  EXPECT_TRUE(ReadPostOpAttr(d));
  uint32_t rtmax, rtpref, rtmult, wtmax, wtpref, wtmult, dtpref, properties;
  uint64_t maxfilesize;
  d.U32(&rtmax);
  d.U32(&rtpref);
  d.U32(&rtmult);
  d.U32(&wtmax);
  d.U32(&wtpref);
  d.U32(&wtmult);
  d.U32(&dtpref);
  d.U64(&maxfilesize);
  uint32_t delta_sec, delta_nsec;
  d.U32(&delta_sec);
  d.U32(&delta_nsec);
  d.U32(&properties);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_EQ(rtmax, 1u << 20);
  EXPECT_EQ(rtpref, 1u << 20);
  EXPECT_EQ(wtmax, 1u << 20);
  EXPECT_EQ(wtpref, 1u << 20);
  EXPECT_EQ(rtmult, 4096u);
  EXPECT_EQ(wtmult, 4096u);
  EXPECT_EQ(dtpref, 64u << 10);
  vfs::Capabilities caps = backend_->GetCapabilities();
  EXPECT_EQ(maxfilesize, caps.max_file_size);
  EXPECT_EQ(delta_sec, caps.time_delta.sec);
  EXPECT_EQ(delta_nsec, caps.time_delta.nsec);
  EXPECT_EQ(properties, kFsfLink | kFsfSymlink | kFsfHomogeneous | kFsfCanSetTime);
}

TEST_F(ProceduresTest, Pathconf) {
  CallResult r = Call(NfsProc::kPathconf, Args().Fh(root_));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  EXPECT_TRUE(ReadPostOpAttr(d));
  uint32_t linkmax, name_max;
  bool no_trunc, chown_restricted, case_insensitive, case_preserving;
  d.U32(&linkmax);
  d.U32(&name_max);
  d.Bool(&no_trunc);
  d.Bool(&chown_restricted);
  d.Bool(&case_insensitive);
  d.Bool(&case_preserving);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(linkmax, backend_->GetCapabilities().link_max);
  EXPECT_EQ(name_max, 255u);
  EXPECT_TRUE(no_trunc);
  EXPECT_TRUE(chown_restricted);
  EXPECT_FALSE(case_insensitive);
  EXPECT_TRUE(case_preserving);
}

TEST_F(ProceduresTest, CommitReturnsTheWriteVerifier) {
  Bytes file = CreateFile(root_, "f");
  Bytes payload(100, 'c');
  CallResult w = Call(NfsProc::kWrite,
                      Args().Fh(file).U64(0).U32(payload.size()).U32(kUnstable).Opaque(payload));
  ASSERT_EQ(w.status(), NfsStat::kOk);
  xdr::Decoder wd = w.After();
  ReadWcc(wd);
  uint32_t count, committed;
  wd.U32(&count);
  wd.U32(&committed);
  std::span<const uint8_t> write_verf;
  wd.FixedOpaque(8, &write_verf);

  CallResult r = Call(NfsProc::kCommit, Args().Fh(file).U64(0).U32(0));
  ASSERT_EQ(r.status(), NfsStat::kOk);
  xdr::Decoder d = r.After();
  WccData wcc = ReadWcc(d);
  std::span<const uint8_t> commit_verf;
  ASSERT_TRUE(d.FixedOpaque(8, &commit_verf));
  EXPECT_EQ(d.remaining(), 0u);
  ASSERT_TRUE(wcc.after);
  EXPECT_EQ(wcc.after->size, 100u);
  EXPECT_TRUE(std::equal(commit_verf.begin(), commit_verf.end(), write_verf.begin()));
}

TEST_F(ProceduresTest, WriteVerifierIsPerProgramInstance) {
  NfsProgram again(&exports_, &codec_);
  EXPECT_NE(again.write_verifier(), program_->write_verifier());
  // Constant within one instance.
  WriteVerifier first = program_->write_verifier();
  Bytes file = CreateFile(root_, "f");
  for (int i = 0; i < 3; ++i) {
    CallResult r = Call(NfsProc::kCommit, Args().Fh(file).U64(0).U32(0));
    xdr::Decoder d = r.After();
    ReadWcc(d);
    std::span<const uint8_t> verf;
    ASSERT_TRUE(d.FixedOpaque(8, &verf));
    EXPECT_TRUE(std::equal(verf.begin(), verf.end(), first.begin()));
  }
}

TEST_F(ProceduresTest, ClientTimesRoundTrip) {
  Bytes file = CreateFile(root_, "f");
  vfs::SetAttrs set;
  set.mtime_how = vfs::TimeUpdate::kClientTime;
  set.mtime = {4'000'000'000, 5};
  ASSERT_EQ(Call(NfsProc::kSetattr, Args().Fh(file).Sattr(set).Bool(false)).status(), NfsStat::kOk);
  Fattr a = GetAttr(file);
  EXPECT_EQ(a.mtime.sec, 4'000'000'000);
  EXPECT_EQ(a.mtime.nsec, 5u);
}

// Whether `program` runs `proc` on the network thread.
bool RunsInlineOn(const NfsProgram& program, NfsProc proc) {
  rpc::CallContext ctx;
  ctx.procedure = static_cast<uint32_t>(proc);
  return program.RunsInline(ctx);
}

// A MemoryBackend that declares its metadata calls quick.
class QuickBackend : public vfs::MemoryBackend {
 public:
  bool QuickMetadata() const override { return true; }
};

// One that declares its changes quick as well.
class QuickChangesBackend : public QuickBackend {
 public:
  bool QuickChanges() const override { return true; }
};

TEST(NfsProgramInlineTest, OnlyQuickMetadataOfQuickBackendsRunsInline) {
  HandleCodec codec(HandleCodec::RandomKey());
  QuickBackend quick;
  vfs::MemoryBackend slow;
  ExportTable exports;
  ExportOptions options;
  options.path = "/quick";
  ASSERT_TRUE(exports.Add(options, &quick).ok());
  NfsProgram program(&exports, &codec);
  for (NfsProc p : {NfsProc::kNull, NfsProc::kGetattr, NfsProc::kLookup, NfsProc::kAccess,
                    NfsProc::kFsinfo, NfsProc::kPathconf}) {
    EXPECT_TRUE(RunsInlineOn(program, p)) << static_cast<int>(p);
  }
  for (NfsProc p : {NfsProc::kRead, NfsProc::kWrite, NfsProc::kReaddirplus, NfsProc::kCreate,
                    NfsProc::kCommit}) {
    EXPECT_FALSE(RunsInlineOn(program, p)) << static_cast<int>(p);
  }
  options.path = "/slow";
  ExportTable mixed;
  ASSERT_TRUE(mixed.Add(options, &slow).ok());
  options.path = "/quick";
  ASSERT_TRUE(mixed.Add(options, &quick).ok());
  NfsProgram mixed_program(&mixed, &codec);
  EXPECT_TRUE(RunsInlineOn(mixed_program, NfsProc::kNull));
  EXPECT_FALSE(RunsInlineOn(mixed_program, NfsProc::kGetattr)) << "one export may block";
  EXPECT_FALSE(RunsInlineOn(mixed_program, NfsProc::kLookup));
}

TEST(NfsProgramInlineTest, ChangesRunInlineOnlyWhenEveryBackendSaysTheyAreQuick) {
  const NfsProc changes[] = {NfsProc::kSetattr, NfsProc::kCreate, NfsProc::kMkdir,
                             NfsProc::kSymlink, NfsProc::kMknod,  NfsProc::kRemove,
                             NfsProc::kRmdir,   NfsProc::kRename, NfsProc::kLink};
  HandleCodec codec(HandleCodec::RandomKey());
  QuickChangesBackend quick;
  QuickBackend quick_reads;
  ExportOptions options;
  options.path = "/quick";
  ExportTable exports;
  ASSERT_TRUE(exports.Add(options, &quick).ok());
  NfsProgram program(&exports, &codec);
  for (NfsProc p : changes) EXPECT_TRUE(RunsInlineOn(program, p)) << static_cast<int>(p);
  for (NfsProc p : {NfsProc::kRead, NfsProc::kWrite, NfsProc::kCommit, NfsProc::kReaddir,
                    NfsProc::kReaddirplus, NfsProc::kFsstat, NfsProc::kReadlink}) {
    EXPECT_FALSE(RunsInlineOn(program, p)) << static_cast<int>(p);
  }
  ExportTable mixed_exports;
  ASSERT_TRUE(mixed_exports.Add(options, &quick).ok());
  options.path = "/reads";
  ASSERT_TRUE(mixed_exports.Add(options, &quick_reads).ok());
  NfsProgram mixed(&mixed_exports, &codec);
  for (NfsProc p : changes) EXPECT_FALSE(RunsInlineOn(mixed, p)) << static_cast<int>(p);
  EXPECT_TRUE(RunsInlineOn(mixed, NfsProc::kGetattr));
}

// One whose reads never wait (a cache answering hits at once).
class QuickReadsBackend : public QuickBackend {
 public:
  bool QuickReads() const override { return true; }
};

TEST(NfsProgramInlineTest, ReadsRunInlineOnlyWhenEveryBackendSaysTheyAreQuick) {
  HandleCodec codec(HandleCodec::RandomKey());
  QuickReadsBackend quick_reads;
  QuickBackend quick_metadata;
  ExportOptions options;
  options.path = "/reads";
  ExportTable exports;
  ASSERT_TRUE(exports.Add(options, &quick_reads).ok());
  NfsProgram program(&exports, &codec);
  EXPECT_TRUE(RunsInlineOn(program, NfsProc::kRead));
  EXPECT_FALSE(RunsInlineOn(program, NfsProc::kWrite));
  EXPECT_FALSE(RunsInlineOn(program, NfsProc::kCreate));

  options.path = "/other";
  ASSERT_TRUE(exports.Add(options, &quick_metadata).ok());
  NfsProgram mixed(&exports, &codec);
  EXPECT_FALSE(RunsInlineOn(mixed, NfsProc::kRead)) << "the other export's reads may block";
}

}  // namespace
}  // namespace geofs::nfs3::testing
