#include "mount/mount_program.h"

#include <gtest/gtest.h>

#include "nfs3/nfs_test_util.h"

namespace geofs::mount {
namespace {

using nfs3::MountStat;
using nfs3::testing::Args;
using nfs3::testing::Bytes;
using nfs3::testing::Caller;
using nfs3::testing::CallResult;
using nfs3::testing::From;

struct MountEntry {
  std::string host, path;
  bool operator==(const MountEntry&) const = default;
};

class MountProgramTest : public nfs3::testing::NfsTest {
 protected:
  MountProgramTest() {
    nfs3::ExportOptions options;
    options.path = "/datasets";
    options.allow = {*nfs3::Cidr::Parse("10.0.0.0/8"), *nfs3::Cidr::Parse("127.0.0.1")};
    AddExport(options);
    MountOptions mount_options;
    mount_options.max_mount_entries = 4;
    mount_ = std::make_unique<MountProgram>(&exports_, &codec_, mount_options);
  }

  CallResult Mount(uint32_t proc, const Bytes& args, const Caller& who = {}) {
    return nfs3::testing::Dispatch(*mount_, proc, args, who);
  }
  CallResult Mnt(std::string_view path, const Caller& who = {}) {
    return Mount(static_cast<uint32_t>(MountProc::kMnt), Args().Str(path).bytes(), who);
  }
  std::vector<MountEntry> DumpList() {
    CallResult r = Mount(static_cast<uint32_t>(MountProc::kDump), {});
    EXPECT_EQ(r.accept, rpc::AcceptStat::kSuccess);
    xdr::Decoder d = r.Body();
    std::vector<MountEntry> out;
    bool more = false;
    while (d.Bool(&more) && more) {
      std::string_view host, path;
      d.String(kMaxHostNameBytes, &host);
      d.String(kMaxDirPathBytes, &path);
      out.push_back({std::string(host), std::string(path)});
    }
    EXPECT_TRUE(d.ok());
    return out;
  }

  std::unique_ptr<MountProgram> mount_;
};

TEST_F(MountProgramTest, NullAndUnknownProcedures) {
  CallResult r = Mount(0, {});
  EXPECT_EQ(r.accept, rpc::AcceptStat::kSuccess);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(Mount(6, {}).accept, rpc::AcceptStat::kProcUnavail);
  EXPECT_EQ(mount_->program(), 100005u);
  EXPECT_EQ(mount_->min_version(), 3u);
  EXPECT_EQ(mount_->max_version(), 3u);
}

TEST_F(MountProgramTest, MntReturnsAWorkingRootHandleAndFlavours) {
  CallResult r = Mnt("/");
  ASSERT_EQ(r.accept, rpc::AcceptStat::kSuccess);
  xdr::Decoder d = r.Body();
  uint32_t status = 99;
  d.U32(&status);
  ASSERT_EQ(status, static_cast<uint32_t>(MountStat::kOk));
  Bytes fh = nfs3::testing::ReadOpaque(d, nfs3::kMaxFhBytes);
  uint32_t n = 0;
  d.U32(&n);
  std::vector<uint32_t> flavors(n);
  for (uint32_t& f : flavors) d.U32(&f);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_EQ(fh, root_);
  ASSERT_FALSE(flavors.empty());
  EXPECT_EQ(flavors[0], static_cast<uint32_t>(rpc::AuthFlavor::kSys));
  // The handle works for NFS.
  EXPECT_EQ(GetAttr(fh).type, static_cast<uint32_t>(vfs::FileType::kDirectory));
}

TEST_F(MountProgramTest, MntErrors) {
  auto status_of = [](const CallResult& r) {
    xdr::Decoder d = r.Body();
    uint32_t st = 99;
    d.U32(&st);
    return static_cast<MountStat>(st);
  };
  EXPECT_EQ(status_of(Mnt("/missing")), MountStat::kNoEnt);
  EXPECT_EQ(status_of(Mnt("//datasets/")), MountStat::kOk);
  EXPECT_EQ(status_of(Mnt("/datasets", From("10.1.1.1"))), MountStat::kOk);
  EXPECT_EQ(status_of(Mnt("/datasets", From("192.168.0.1"))), MountStat::kAcces);
  EXPECT_EQ(Mnt(std::string(1025, 'a')).accept, rpc::AcceptStat::kGarbageArgs);
  EXPECT_EQ(status_of(Mnt("/" + std::string(1023, 'a'))), MountStat::kNameTooLong);
  EXPECT_EQ(Mount(1, {}).accept, rpc::AcceptStat::kGarbageArgs);
}

TEST_F(MountProgramTest, DumpTracksMountsAndUnmounts) {
  EXPECT_TRUE(DumpList().empty());
  Mnt("/");
  Mnt("/datasets");
  Mnt("/", From("10.0.0.2"));
  Mnt("/", From("10.0.0.2"));         // listed once
  Mnt("/missing", From("10.0.0.3"));  // failed mounts are not listed
  EXPECT_EQ(DumpList(), (std::vector<MountEntry>{
                            {"127.0.0.1", "/"}, {"127.0.0.1", "/datasets"}, {"10.0.0.2", "/"}}));
  Mount(static_cast<uint32_t>(MountProc::kUmnt), Args().Str("/datasets/").bytes());
  EXPECT_EQ(DumpList(), (std::vector<MountEntry>{{"127.0.0.1", "/"}, {"10.0.0.2", "/"}}));
  Mount(static_cast<uint32_t>(MountProc::kUmntAll), {}, From("10.0.0.2"));
  EXPECT_EQ(DumpList(), (std::vector<MountEntry>{{"127.0.0.1", "/"}}));
  CallResult r = Mount(static_cast<uint32_t>(MountProc::kUmnt), {});
  EXPECT_EQ(r.accept, rpc::AcceptStat::kGarbageArgs);
}

TEST_F(MountProgramTest, DumpListIsBounded) {
  for (int i = 0; i < 10; ++i) Mnt("/", From("10.0.0." + std::to_string(i)));
  std::vector<MountEntry> list = DumpList();
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list.front().host, "10.0.0.6");  // the oldest were dropped
  EXPECT_EQ(list.back().host, "10.0.0.9");
}

TEST_F(MountProgramTest, ExportListsPathsAndGroups) {
  CallResult r = Mount(static_cast<uint32_t>(MountProc::kExport), {});
  ASSERT_EQ(r.accept, rpc::AcceptStat::kSuccess);
  xdr::Decoder d = r.Body();
  std::vector<std::pair<std::string, std::vector<std::string>>> exports;
  bool more = false;
  while (d.Bool(&more) && more) {
    std::string_view path;
    d.String(kMaxDirPathBytes, &path);
    std::vector<std::string> groups;
    bool group = false;
    while (d.Bool(&group) && group) {
      std::string_view name;
      d.String(kMaxHostNameBytes, &name);
      groups.emplace_back(name);
    }
    exports.emplace_back(std::string(path), std::move(groups));
  }
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  ASSERT_EQ(exports.size(), 2u);
  EXPECT_EQ(exports[0].first, "/");
  EXPECT_TRUE(exports[0].second.empty());
  EXPECT_EQ(exports[1].first, "/datasets");
  EXPECT_EQ(exports[1].second, (std::vector<std::string>{"10.0.0.0/8", "127.0.0.1/32"}));
}

TEST(MountListTest, AddRemove) {
  MountList list(8);
  list.Add("a", "/x");
  list.Add("a", "/y");
  list.Add("b", "/x");
  list.Remove("a", "/x");
  list.Remove("zz", "/x");
  auto snap = list.Snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].path, "/y");
  list.RemoveHost("b");
  EXPECT_EQ(list.Snapshot().size(), 1u);
  MountList none(0);
  none.Add("a", "/");
  EXPECT_TRUE(none.Snapshot().empty());
}

}  // namespace
}  // namespace geofs::mount

namespace geofs::mount {
namespace {

MountStat MntStatusOf(const nfs3::testing::CallResult& r) {
  xdr::Decoder d = r.Body();
  uint32_t st = 99;
  d.U32(&st);
  return static_cast<MountStat>(st);
}

TEST_F(MountProgramTest, MntOfASubdirectoryReturnsThatDirectory) {
  Bytes train = MakeDir(MakeDir(root_, "imagenet"), "train");
  CreateFile(root_, "file");
  CallResult r = Mnt("/imagenet//train/");
  ASSERT_EQ(MntStatusOf(r), MountStat::kOk);
  xdr::Decoder d = r.Body();
  uint32_t status;
  d.U32(&status);
  EXPECT_EQ(nfs3::testing::ReadOpaque(d, nfs3::kMaxFhBytes), train);
  EXPECT_EQ(DumpList().back().path, "/imagenet/train");

  EXPECT_EQ(MntStatusOf(Mnt("/imagenet/missing")), MountStat::kNoEnt);
  EXPECT_EQ(MntStatusOf(Mnt("/file")), MountStat::kNotDir);
  EXPECT_EQ(MntStatusOf(Mnt("/imagenet/../imagenet")), MountStat::kInval);
}

TEST_F(MountProgramTest, MntOfASubdirectoryNeedsSearchPermission) {
  Bytes locked = MakeDir(root_, "locked", 0700);
  MakeDir(locked, "inner");
  Caller user;
  user.uid = 1000;
  user.gid = 1000;
  EXPECT_EQ(MntStatusOf(Mnt("/locked/inner", user)), MountStat::kAcces);
  EXPECT_EQ(MntStatusOf(Mnt("/locked/inner")), MountStat::kOk);
}

}  // namespace
}  // namespace geofs::mount
