#include "nfs3/nfs3_xdr.h"

#include <gtest/gtest.h>

#include "nfs3/nfs_status.h"
#include "nfs3/nfs_test_util.h"

namespace geofs::nfs3 {
namespace {

TEST(NameRulesTest, CheckName) {
  EXPECT_EQ(CheckName("a", NameUse::kCreate), NfsStat::kOk);
  EXPECT_EQ(CheckName(std::string(255, 'x'), NameUse::kCreate), NfsStat::kOk);
  EXPECT_EQ(CheckName(std::string(256, 'x'), NameUse::kLookup), NfsStat::kNameTooLong);
  EXPECT_EQ(CheckName("", NameUse::kLookup), NfsStat::kInval);
  EXPECT_EQ(CheckName("a/b", NameUse::kCreate), NfsStat::kInval);
  EXPECT_EQ(CheckName(std::string_view("a\0", 2), NameUse::kCreate), NfsStat::kInval);
  EXPECT_EQ(CheckName(".", NameUse::kLookup), NfsStat::kOk);
  EXPECT_EQ(CheckName("..", NameUse::kLookup), NfsStat::kOk);
  EXPECT_EQ(CheckName(".", NameUse::kCreate), NfsStat::kExist);
  EXPECT_EQ(CheckName("..", NameUse::kCreate), NfsStat::kExist);
  EXPECT_EQ(CheckName(".", NameUse::kRemove), NfsStat::kInval);
  EXPECT_EQ(CheckName("...", NameUse::kRemove), NfsStat::kOk);
}

TEST(NameRulesTest, CheckPath) {
  EXPECT_EQ(CheckPath("/a/b/../c"), NfsStat::kOk);
  EXPECT_EQ(CheckPath(std::string(4096, 'p')), NfsStat::kOk);
  EXPECT_EQ(CheckPath(std::string(4097, 'p')), NfsStat::kNameTooLong);
  EXPECT_EQ(CheckPath(""), NfsStat::kNoEnt);
  EXPECT_EQ(CheckPath(std::string_view("a\0b", 3)), NfsStat::kInval);
}

TEST(Nfs3XdrTest, FattrIs84BytesAndClampsTimes) {
  vfs::Attr a;
  a.type = vfs::FileType::kSymlink;
  a.mode = 0170755;  // type bits in the mode are not sent
  a.atime = {-5, 1};
  a.mtime = {int64_t{1} << 40, 2};
  xdr::Encoder e;
  EncodeFattr(e, a, 77);
  std::vector<uint8_t> bytes = e.Flatten();
  ASSERT_EQ(bytes.size(), kFattrBytes);
  xdr::Decoder d(bytes);
  testing::Fattr f = testing::ReadFattr(d);
  EXPECT_EQ(f.type, 5u);
  EXPECT_EQ(f.mode, 0755u);
  EXPECT_EQ(f.fsid, 77u);
  EXPECT_EQ(f.atime.sec, 0);
  EXPECT_EQ(f.mtime.sec, 0xffffffffll);
}

TEST(Nfs3XdrTest, DecodeSattr) {
  vfs::SetAttrs in;
  in.mode = 0104755;
  in.gid = 9;
  in.size = 1ull << 40;
  in.atime_how = vfs::TimeUpdate::kServerTime;
  in.mtime_how = vfs::TimeUpdate::kClientTime;
  in.mtime = {123, 456};
  std::vector<uint8_t> bytes = testing::Args().Sattr(in).bytes();
  xdr::Decoder d(bytes);
  vfs::SetAttrs out;
  ASSERT_TRUE(DecodeSattr(d, &out));
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_EQ(out.mode, 04755u);
  EXPECT_FALSE(out.uid);
  EXPECT_EQ(out.gid, 9u);
  EXPECT_EQ(out.size, 1ull << 40);
  EXPECT_EQ(out.atime_how, vfs::TimeUpdate::kServerTime);
  EXPECT_EQ(out.mtime_how, vfs::TimeUpdate::kClientTime);
  EXPECT_EQ(out.mtime, (WallTime{123, 456}));
  // A bool that is neither 0 nor 1 is malformed.
  bytes[3] = 2;
  xdr::Decoder bad(bytes);
  EXPECT_FALSE(DecodeSattr(bad, &out));
}

TEST(NfsStatusTest, MapsEveryCode) {
  EXPECT_EQ(ToNfsStat(StatusCode::kOk), NfsStat::kOk);
  EXPECT_EQ(ToNfsStat(StatusCode::kNotFound), NfsStat::kNoEnt);
  EXPECT_EQ(ToNfsStat(StatusCode::kAlreadyExists), NfsStat::kExist);
  EXPECT_EQ(ToNfsStat(StatusCode::kNotPermitted), NfsStat::kPerm);
  EXPECT_EQ(ToNfsStat(StatusCode::kAccessDenied), NfsStat::kAcces);
  EXPECT_EQ(ToNfsStat(StatusCode::kStale), NfsStat::kStale);
  EXPECT_EQ(ToNfsStat(StatusCode::kBadHandle), NfsStat::kBadHandle);
  EXPECT_EQ(ToNfsStat(StatusCode::kUnavailable), NfsStat::kJukebox);
  EXPECT_EQ(ToNfsStat(StatusCode::kAborted), NfsStat::kJukebox);
  EXPECT_EQ(ToNfsStat(StatusCode::kBadCookie), NfsStat::kBadCookie);
  EXPECT_EQ(ToNfsStat(StatusCode::kNotSync), NfsStat::kNotSync);
  EXPECT_EQ(ToNfsStat(StatusCode::kTooSmall), NfsStat::kTooSmall);
  EXPECT_EQ(ToNfsStat(StatusCode::kCorruption), NfsStat::kIo);
  EXPECT_EQ(ToNfsStat(StatusCode::kInternal), NfsStat::kServerFault);
  EXPECT_EQ(ToNfsStat(StatusCode::kCrossDevice), NfsStat::kXdev);
  EXPECT_EQ(ToNfsStat(StatusCode::kQuotaExceeded), NfsStat::kDQuot);
  // Every code maps to something other than OK, except kOk.
  for (int c = 1; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    EXPECT_NE(ToNfsStat(static_cast<StatusCode>(c)), NfsStat::kOk) << c;
    EXPECT_NE(ToMountStat(static_cast<StatusCode>(c)), MountStat::kOk) << c;
  }
  EXPECT_EQ(ToMountStat(StatusCode::kNotFound), MountStat::kNoEnt);
  EXPECT_EQ(ToMountStat(StatusCode::kAccessDenied), MountStat::kAcces);
  EXPECT_EQ(ToMountStat(StatusCode::kInternal), MountStat::kServerFault);
}

}  // namespace
}  // namespace geofs::nfs3
