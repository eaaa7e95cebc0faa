// What only the hub's export has to prove: changes made through NFS keep the
// namespace and the chunk store consistent for the hub's own tools, and what
// arrives through `geofsctl import` reads back the same over NFS.
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "integration/daemon_test_base.h"

namespace geofs::testing {
namespace {

// Bytes that differ by position, so that chunks cannot collapse into one.
std::string Varied(size_t size, int seed) {
  std::string s(size, '\0');
  uint64_t x = 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(seed + 1);
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

class HubExportTest : public DaemonTest {
 protected:
  ServerKind server_kind() const override { return ServerKind::kHub; }
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemon()); }
};

TEST_F(HubExportTest, NfsChangesLeaveAConsistentNamespace) {
  auto client = Mount();
  ASSERT_NE(client, nullptr);
  nfs_context* nfs = client->ctx();
  ASSERT_EQ(nfs_mkdir(nfs, "/a"), 0) << client->Error();
  ASSERT_EQ(nfs_mkdir(nfs, "/b"), 0) << client->Error();
  // Several chunks (the default average is 1 MiB), then rewritten in part.
  const std::string big = Varied(6 << 20, 1);
  GEOFS_ASSERT_OK(client->WriteFile("/a/big", big));
  GEOFS_ASSERT_OK(client->WriteFile("/a/copy", big));
  GEOFS_ASSERT_OK(client->WriteFile("/a/small", "small"));
  ASSERT_EQ(nfs_link(nfs, "/a/big", "/b/big-link"), 0) << client->Error();
  ASSERT_EQ(nfs_rename(nfs, "/a/small", "/b/moved"), 0) << client->Error();
  ASSERT_EQ(nfs_symlink(nfs, "../a/big", "/b/sym"), 0) << client->Error();
  ASSERT_EQ(nfs_truncate(nfs, "/a/copy", 1 << 20), 0) << client->Error();
  GEOFS_ASSERT_OK(client->WriteFile("/a/big", Varied(3 << 20, 2)));
  ASSERT_EQ(nfs_unlink(nfs, "/a/big"), 0) << client->Error();
  ASSERT_EQ(nfs_mkdir(nfs, "/b/gone"), 0) << client->Error();
  ASSERT_EQ(nfs_rmdir(nfs, "/b/gone"), 0) << client->Error();

  GEOFS_ASSERT_OK_AND_ASSIGN(std::string linked, client->ReadFile("/b/big-link"));
  EXPECT_TRUE(linked == Varied(3 << 20, 2)) << "the hard link must see the rewrite";
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string copy, client->ReadFile("/a/copy"));
  EXPECT_TRUE(copy == big.substr(0, 1 << 20));

  // fsck exits non-zero on any broken invariant or chunk; the same must hold
  // after a restart, with nothing left in memory.
  GEOFS_ASSERT_OK(daemon_->Ctl({"fsck", "--verify-data"}));
  GEOFS_ASSERT_OK(daemon_->Restart());
  GEOFS_ASSERT_OK(daemon_->Ctl({"fsck", "--verify-data"}));
  auto again = Mount();
  ASSERT_NE(again, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string moved, again->ReadFile("/b/moved"));
  EXPECT_EQ(moved, "small");
}

TEST_F(HubExportTest, ImportedTreeReadsBackOverNfs) {
  ASSERT_EQ(mkdir(Local("dir").c_str(), 0750), 0);
  const std::string data = Varied(5 << 20, 3);
  std::ofstream(Local("dir/data"), std::ios::binary) << data;
  std::ofstream(Local("dir/text"), std::ios::binary) << "text";
  ASSERT_EQ(chmod(Local("dir/text").c_str(), 0600), 0);
  ASSERT_EQ(chown(Local("dir/text").c_str(), 1234, 5678), 0);
  ASSERT_EQ(symlink("data", Local("dir/link").c_str()), 0);
  ASSERT_NO_FATAL_FAILURE(Publish());

  auto client = Mount();
  ASSERT_NE(client, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string back, client->ReadFile("/dir/data"));
  EXPECT_TRUE(back == data) << "imported content differs over NFS";
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 text, client->Stat("/dir/text"));
  EXPECT_EQ(text.nfs_mode & 07777, 0600u);
  EXPECT_EQ(text.nfs_uid, 1234u);
  EXPECT_EQ(text.nfs_gid, 5678u);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 dir, client->Stat("/dir"));
  EXPECT_EQ(dir.nfs_mode & 07777, 0750u);
  char target[64] = {};
  ASSERT_EQ(nfs_readlink(client->ctx(), "/dir/link", target, sizeof(target) - 1), 0)
      << client->Error();
  EXPECT_STREQ(target, "data");

  // A second import of the changed source only brings the change, and what
  // NFS clients made meanwhile stays (--keep-extraneous).
  GEOFS_ASSERT_OK(client->WriteFile("/dir/from-nfs", "kept"));
  std::ofstream(Local("dir/text"), std::ios::binary | std::ios::trunc) << "changed";
  ASSERT_NO_FATAL_FAILURE(Publish());
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string changed, client->ReadFile("/dir/text"));
  EXPECT_EQ(changed, "changed");
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string kept, client->ReadFile("/dir/from-nfs"));
  EXPECT_EQ(kept, "kept");
}

}  // namespace
}  // namespace geofs::testing
