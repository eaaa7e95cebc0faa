// Export policy against each running server: read-only exports, squashing,
// permission checks from AUTH_SYS credentials, and the client allowlist.
// Objects with given owners and modes are made under Local() and published
// (imported, for a hub) before the clients under test see them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "integration/daemon_test_base.h"

namespace geofs::testing {
namespace {

constexpr uint32_t kNobody = 65534;

// Creates a local file with exactly this mode and owner.
void MakeLocalFile(const std::string& path, const std::string& content, mode_t mode, uid_t uid = 0,
                   gid_t gid = 0) {
  std::ofstream(path, std::ios::binary) << content;
  ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
  ASSERT_EQ(chown(path.c_str(), uid, gid), 0) << path;
}

void MakeLocalDir(const std::string& path, mode_t mode, uid_t uid = 0, gid_t gid = 0) {
  ASSERT_EQ(mkdir(path.c_str(), mode), 0) << path;
  ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
  ASSERT_EQ(chown(path.c_str(), uid, gid), 0) << path;
}

class ReadOnlyExportTest : public ServerTest {
 protected:
  void SetUp() override {
    // Root is not squashed, so every refusal below comes from --read-only
    // and not from permission bits.
    ASSERT_NO_FATAL_FAILURE(StartDaemon({"--read-only", "--squash", "none"}));
    ASSERT_NO_FATAL_FAILURE(MakeLocalFile(Local("f"), "content", 0644));
    ASSERT_NO_FATAL_FAILURE(MakeLocalDir(Local("d"), 0755));
    ASSERT_NO_FATAL_FAILURE(MakeLocalDir(Local("empty"), 0755));
    ASSERT_EQ(symlink("f", Local("l").c_str()), 0);
    ASSERT_NO_FATAL_FAILURE(Publish());
  }
};

TEST_P(ReadOnlyExportTest, RefusesEveryModifyingProcedure) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  const FileHandle& root = raw->root();
  GEOFS_ASSERT_OK_AND_ASSIGN(auto f, raw->Lookup(root, "f"));
  ASSERT_NFS_STATUS(NFS3_OK, f.status);

  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 setattr, raw->Setattr(f.fh, ModeAttrs(0600)));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, setattr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto write, raw->Write(f.fh, 0, "x", FILE_SYNC));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, write.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto create, raw->Create(root, "new", UNCHECKED, ModeAttrs(0644)));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, create.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto exclusive, raw->Create(root, "new", EXCLUSIVE, NoAttrs(), {'v'}));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, exclusive.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto mkdir, raw->Mkdir(root, "newdir", 0755));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, mkdir.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto symlink, raw->Symlink(root, "newlink", "f"));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, symlink.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto mknod, raw->MknodFifo(root, "newfifo", 0644));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, mknod.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 remove, raw->Remove(root, "f"));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, remove);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 rmdir, raw->Rmdir(root, "empty"));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, rmdir);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 rename, raw->Rename(root, "f", root, "g"));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, rename);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 link, raw->Link(f.fh, root, "hard"));
  EXPECT_NFS_STATUS(NFS3ERR_ROFS, link);

  // Nothing changed on the server.
  EXPECT_EQ(ServerContent("f"), "content");
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat st, ServerLstat("f"));
  EXPECT_EQ(st.mode & 07777, 0644u);
  EXPECT_EQ(st.nlink, 1u);
  for (const char* name : {"new", "newdir", "newlink", "newfifo", "g", "hard"}) {
    EXPECT_FALSE(ServerHas(name)) << name;
  }
  EXPECT_TRUE(ServerHas("empty"));
}

TEST_P(ReadOnlyExportTest, ReadsWork) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto f, raw->Lookup(raw->root(), "f"));
  ASSERT_NFS_STATUS(NFS3_OK, f.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(f.fh));
  EXPECT_NFS_STATUS(NFS3_OK, attr.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto read, raw->Read(f.fh, 0, 100));
  ASSERT_NFS_STATUS(NFS3_OK, read.status);
  EXPECT_EQ(read.data, "content");
  GEOFS_ASSERT_OK_AND_ASSIGN(auto dir, raw->ReadDir(raw->root(), 0, {}, 8192));
  EXPECT_NFS_STATUS(NFS3_OK, dir.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto plus, raw->ReadDirPlus(raw->root(), 0, {}, 8192, 65536));
  EXPECT_NFS_STATUS(NFS3_OK, plus.status);
  EXPECT_GE(plus.entries.size(), 4u);

  // ACCESS must not promise what the export will refuse.
  GEOFS_ASSERT_OK_AND_ASSIGN(auto access, raw->Access(f.fh, ACCESS3_READ | ACCESS3_MODIFY |
                                                                ACCESS3_EXTEND | ACCESS3_DELETE));
  ASSERT_NFS_STATUS(NFS3_OK, access.first);
  EXPECT_EQ(access.second, static_cast<uint32_t>(ACCESS3_READ));
  GEOFS_ASSERT_OK_AND_ASSIGN(
      auto dir_access,
      raw->Access(raw->root(), ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE));
  ASSERT_NFS_STATUS(NFS3_OK, dir_access.first);
  EXPECT_EQ(dir_access.second, static_cast<uint32_t>(ACCESS3_LOOKUP));

  // The same through libnfs.
  auto client = Mount();
  ASSERT_NE(client, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client->ReadFile("/f"));
  EXPECT_EQ(data, "content");
  char target[256] = {};
  ASSERT_EQ(nfs_readlink(client->ctx(), "/l", target, sizeof(target) - 1), 0) << client->Error();
  EXPECT_STREQ(target, "f");
  GEOFS_ASSERT_OK_AND_ASSIGN(auto names, client->ListNames("/"));
  EXPECT_GE(names.size(), 4u);
  EXPECT_EQ(nfs_mkdir(client->ctx(), "/x"), -EROFS);
  EXPECT_EQ(nfs_unlink(client->ctx(), "/f"), -EROFS);
  EXPECT_EQ(nfs_chmod(client->ctx(), "/f", 0600), -EROFS);
  EXPECT_FALSE(client->WriteFile("/f", "overwrite").ok());
  EXPECT_EQ(ServerContent("f"), "content");
}

class SquashTest : public ServerTest {
 protected:
  // Creates /pub/name as (uid, gid) and returns the owner the server reports,
  // after checking that the server's own view agrees.
  void CreateAs(uint32_t uid, uint32_t gid, const std::string& name, uint32_t* owner_uid,
                uint32_t* owner_gid) {
    struct stat pub;
    if (lstat(Local("pub").c_str(), &pub) != 0) {
      ASSERT_NO_FATAL_FAILURE(MakeLocalDir(Local("pub"), 0777));
      ASSERT_NO_FATAL_FAILURE(Publish());
    }
    auto client = Mount(uid, gid);
    ASSERT_NE(client, nullptr);
    GEOFS_ASSERT_OK(client->WriteFile("/pub/" + name, "x"));
    GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client->Stat("/pub/" + name));
    GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat local, ServerLstat("pub/" + name));
    EXPECT_EQ(local.uid, st.nfs_uid);
    EXPECT_EQ(local.gid, st.nfs_gid);
    *owner_uid = static_cast<uint32_t>(st.nfs_uid);
    *owner_gid = static_cast<uint32_t>(st.nfs_gid);
  }
};

TEST_P(SquashTest, DefaultDependsOnTheServer) {
  // A standalone spoke squashes root like knfsd; the hub trusts client uids
  // as its gRPC API does (src/hub/main.cc).
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  uint32_t uid = 1, gid = 1;
  ASSERT_NO_FATAL_FAILURE(CreateAs(0, 0, "by-root", &uid, &gid));
  EXPECT_EQ(uid, hub() ? 0u : kNobody);
  EXPECT_EQ(gid, hub() ? 0u : kNobody);
}

TEST_P(SquashTest, RootSquashMapsOnlyRoot) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "root"}));
  uint32_t uid = 0, gid = 0;
  ASSERT_NO_FATAL_FAILURE(CreateAs(0, 0, "by-root", &uid, &gid));
  EXPECT_EQ(uid, kNobody);
  EXPECT_EQ(gid, kNobody);

  // A squashed root has no more rights than anyone: the 0755 root-owned
  // export root refuses it.
  auto client = Mount(0, 0);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(nfs_mkdir(client->ctx(), "/not-allowed"), -EACCES);

  // Other users keep their identity.
  ASSERT_NO_FATAL_FAILURE(CreateAs(1000, 1000, "by-user", &uid, &gid));
  EXPECT_EQ(uid, 1000u);
  EXPECT_EQ(gid, 1000u);
}

TEST_P(SquashTest, NoneKeepsRoot) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "none"}));
  uint32_t uid = 1, gid = 1;
  ASSERT_NO_FATAL_FAILURE(CreateAs(0, 0, "by-root", &uid, &gid));
  EXPECT_EQ(uid, 0u);
  EXPECT_EQ(gid, 0u);
}

TEST_P(SquashTest, AllMapsEveryone) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "all"}));
  uint32_t uid = 0, gid = 0;
  ASSERT_NO_FATAL_FAILURE(CreateAs(1000, 1000, "by-user", &uid, &gid));
  EXPECT_EQ(uid, kNobody);
  EXPECT_EQ(gid, kNobody);
}

TEST_P(SquashTest, AnonymousIdentityIsConfigurable) {
  ASSERT_NO_FATAL_FAILURE(
      StartDaemon({"--squash", "all", "--anon-uid", "4242", "--anon-gid", "4343"}));
  uint32_t uid = 0, gid = 0;
  ASSERT_NO_FATAL_FAILURE(CreateAs(1000, 1000, "by-user", &uid, &gid));
  EXPECT_EQ(uid, 4242u);
  EXPECT_EQ(gid, 4343u);
}

// Root squash. The export root is root-owned 0755.
class PermissionTest : public ServerTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "root"}));
    ASSERT_NO_FATAL_FAILURE(MakeLocalFile(Local("rootfile"), "r", 0644));
    ASSERT_NO_FATAL_FAILURE(MakeLocalFile(Local("groupfile"), "g", 0640, 0, 2000));
    ASSERT_NO_FATAL_FAILURE(MakeLocalDir(Local("pub"), 0777));
    ASSERT_NO_FATAL_FAILURE(Publish());
  }
};

TEST_P(PermissionTest, UserCanReadButNotWriteRootsFile) {
  auto client = Mount(1000, 1000);
  ASSERT_NE(client, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client->ReadFile("/rootfile"));
  EXPECT_EQ(data, "r");
  EXPECT_EQ(nfs_access(client->ctx(), "/rootfile", R_OK), 0);
  EXPECT_EQ(nfs_access(client->ctx(), "/rootfile", W_OK), -EACCES);
  EXPECT_FALSE(client->WriteFile("/rootfile", "mine").ok());
  EXPECT_EQ(nfs_chmod(client->ctx(), "/rootfile", 0666), -EPERM);
  EXPECT_EQ(nfs_truncate(client->ctx(), "/rootfile", 0), -EACCES);

  auto raw = Raw(1000, 1000);
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto f, raw->Lookup(raw->root(), "rootfile"));
  ASSERT_NFS_STATUS(NFS3_OK, f.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto write, raw->Write(f.fh, 0, "mine", FILE_SYNC));
  EXPECT_NFS_STATUS(NFS3ERR_ACCES, write.status);
  sattr3 chown = NoAttrs();
  chown.uid.set_it = 1;
  chown.uid.set_uid3_u.uid = 1000;
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 chowned, raw->Setattr(f.fh, chown));
  EXPECT_NFS_STATUS(NFS3ERR_PERM, chowned);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto access,
                             raw->Access(f.fh, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND));
  ASSERT_NFS_STATUS(NFS3_OK, access.first);
  EXPECT_EQ(access.second, static_cast<uint32_t>(ACCESS3_READ));
  EXPECT_EQ(ServerContent("rootfile"), "r");
}

TEST_P(PermissionTest, UserCannotChangeRootsDirectory) {
  auto client = Mount(1000, 1000);
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->WriteFile("/mine", "x").ok());
  EXPECT_EQ(nfs_mkdir(client->ctx(), "/mydir"), -EACCES);
  EXPECT_EQ(nfs_unlink(client->ctx(), "/rootfile"), -EACCES);
  EXPECT_EQ(nfs_rename(client->ctx(), "/rootfile", "/pub/stolen"), -EACCES);
  EXPECT_EQ(nfs_symlink(client->ctx(), "x", "/mylink"), -EACCES);

  auto raw = Raw(1000, 1000);
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto create,
                             raw->Create(raw->root(), "mine", GUARDED, ModeAttrs(0644)));
  EXPECT_NFS_STATUS(NFS3ERR_ACCES, create.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto mkdir, raw->Mkdir(raw->root(), "mydir", 0755));
  EXPECT_NFS_STATUS(NFS3ERR_ACCES, mkdir.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 remove, raw->Remove(raw->root(), "rootfile"));
  EXPECT_NFS_STATUS(NFS3ERR_ACCES, remove);

  EXPECT_FALSE(ServerHas("mine"));
  EXPECT_FALSE(ServerHas("mydir"));
  EXPECT_TRUE(ServerHas("rootfile"));

  // A world-writable directory is fine, and the user owns what it creates.
  GEOFS_ASSERT_OK(client->WriteFile("/pub/mine", "x"));
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat st, ServerLstat("pub/mine"));
  EXPECT_EQ(st.uid, 1000u);
  EXPECT_EQ(st.gid, 1000u);
}

TEST_P(PermissionTest, GroupBitsHonourPrimaryAndSupplementaryGroups) {
  RawOptions outsider = RawOptionsFor(1001, 1001);
  RawOptions primary = RawOptionsFor(1001, 2000);
  RawOptions supplementary = RawOptionsFor(1001, 1001);
  supplementary.gids = {5, 2000, 7};

  for (const auto& [options, may_read] :
       {std::pair{outsider, false}, std::pair{primary, true}, std::pair{supplementary, true}}) {
    GEOFS_ASSERT_OK_AND_ASSIGN(auto raw, RawNfs::Connect(options));
    GEOFS_ASSERT_OK_AND_ASSIGN(auto f, raw->Lookup(raw->root(), "groupfile"));
    ASSERT_NFS_STATUS(NFS3_OK, f.status);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto read, raw->Read(f.fh, 0, 10));
    if (may_read) {
      EXPECT_NFS_STATUS(NFS3_OK, read.status) << "gid " << options.gid;
      EXPECT_EQ(read.data, "g");
    } else {
      EXPECT_NFS_STATUS(NFS3ERR_ACCES, read.status);
    }
  }
}

class AllowlistTest : public ServerTest {};

TEST_P(AllowlistTest, ClientOutsideTheAllowlistCannotMount) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"--allow", "10.0.0.0/8"}));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto mnt, RawNfs::Mnt(RawOptionsFor(0, 0)));
  EXPECT_EQ(mnt.status, MNT3ERR_ACCES);
  auto client = NfsClient::Mount(daemon_->Url());
  EXPECT_FALSE(client.ok()) << "libnfs mounted despite the allowlist";
}

TEST_P(AllowlistTest, ClientInsideTheAllowlistMounts) {
  ASSERT_NO_FATAL_FAILURE(
      StartDaemon({"--allow", "10.0.0.0/8", "--allow", "127.0.0.0/8", "--squash", "none"}));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto mnt, RawNfs::Mnt(RawOptionsFor(0, 0)));
  EXPECT_EQ(mnt.status, MNT3_OK);
  auto client = Mount();
  ASSERT_NE(client, nullptr);
  GEOFS_ASSERT_OK(client->WriteFile("/ok", "fine"));
}

TEST_P(AllowlistTest, HandlesAreRefusedToClientsOutsideTheAllowlist) {
  // A handle learnt while allowed must not work once the policy excludes the
  // client: the check is per call, not only at MNT.
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  GEOFS_ASSERT_OK_AND_ASSIGN(auto mnt, RawNfs::Mnt(RawOptionsFor(0, 0)));
  ASSERT_EQ(mnt.status, MNT3_OK);
  GEOFS_ASSERT_OK(daemon_->Stop());
  daemon_->set_extra_args({"--allow", "10.0.0.0/8"});
  GEOFS_ASSERT_OK(daemon_->Start());

  // Straight to NFS with the old root handle (MNT would refuse), as a client
  // that mounted earlier would.
  GEOFS_ASSERT_OK_AND_ASSIGN(auto raw, RawNfs::ConnectWithRoot(RawOptionsFor(0, 0), mnt.root));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(mnt.root));
  EXPECT_NFS_STATUS(NFS3ERR_ACCES, attr.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto lookup, raw->Lookup(mnt.root, "anything"));
  EXPECT_NFS_STATUS(NFS3ERR_ACCES, lookup.status);
}

GEOFS_INSTANTIATE_FOR_EACH_SERVER(ReadOnlyExportTest);
GEOFS_INSTANTIATE_FOR_EACH_SERVER(SquashTest);
GEOFS_INSTANTIATE_FOR_EACH_SERVER(PermissionTest);
GEOFS_INSTANTIATE_FOR_EACH_SERVER(AllowlistTest);

}  // namespace
}  // namespace geofs::testing
