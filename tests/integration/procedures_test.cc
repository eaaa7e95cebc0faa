// Every NFSv3 procedure and its main error paths through the real client
// (libnfs), against each server: geofs-spoked serving a local directory and
// geofs-hubd serving its namespace. Results are cross-checked against the
// server's own view (the directory on disk, or a separate mount of the hub)
// where that proves the server really did the work.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include "integration/daemon_test_base.h"

namespace geofs::testing {
namespace {

constexpr uint32_t kMiB = 1 << 20;

// The daemon runs with --squash none so that a root client can chown.
class ProceduresTest : public ServerTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "none"}));
    client_ = Mount();
    ASSERT_NE(client_, nullptr);
    nfs_ = client_->ctx();
  }

  std::unique_ptr<NfsClient> client_;
  nfs_context* nfs_ = nullptr;
};

TEST_P(ProceduresTest, GetattrReportsWhatIsOnDisk) {
  GEOFS_ASSERT_OK(client_->WriteFile("/f", "hello", 0640));
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client_->Stat("/f"));
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat local, ServerLstat("f"));
  EXPECT_EQ(st.nfs_size, 5u);
  EXPECT_TRUE(S_ISREG(st.nfs_mode));
  EXPECT_EQ(st.nfs_mode & 07777, 0640u);
  EXPECT_EQ(local.mode & 07777, 0640u);
  EXPECT_EQ(st.nfs_uid, 0u);
  EXPECT_EQ(st.nfs_nlink, 1u);
  EXPECT_EQ(st.nfs_mtime, static_cast<uint64_t>(local.mtime_sec));
  EXPECT_EQ(st.nfs_mtime_nsec, static_cast<uint64_t>(local.mtime_nsec));

  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 root, client_->Stat("/"));
  EXPECT_TRUE(S_ISDIR(root.nfs_mode));
  EXPECT_NE(root.nfs_ino, st.nfs_ino);
  EXPECT_EQ(root.nfs_dev, st.nfs_dev) << "fsid must be constant within the export";
}

TEST_P(ProceduresTest, SetattrChmodChownTruncateUtimes) {
  GEOFS_ASSERT_OK(client_->WriteFile("/f", "hello world"));

  ASSERT_EQ(nfs_chmod(nfs_, "/f", 0600), 0) << client_->Error();
  ASSERT_EQ(nfs_chown(nfs_, "/f", 1234, 5678), 0) << client_->Error();
  ASSERT_EQ(nfs_truncate(nfs_, "/f", 5), 0) << client_->Error();
  timeval times[2] = {{1000000000, 250000}, {1200000000, 500000}};
  ASSERT_EQ(nfs_utimes(nfs_, "/f", times), 0) << client_->Error();

  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client_->Stat("/f"));
  EXPECT_EQ(st.nfs_mode & 07777, 0600u);
  EXPECT_EQ(st.nfs_uid, 1234u);
  EXPECT_EQ(st.nfs_gid, 5678u);
  EXPECT_EQ(st.nfs_size, 5u);
  EXPECT_EQ(st.nfs_atime, 1000000000u);
  EXPECT_EQ(st.nfs_atime_nsec, 250000000u);
  EXPECT_EQ(st.nfs_mtime, 1200000000u);
  EXPECT_EQ(st.nfs_mtime_nsec, 500000000u);

  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat local, ServerLstat("f"));
  EXPECT_EQ(local.mode & 07777, 0600u);
  EXPECT_EQ(local.uid, 1234u);
  EXPECT_EQ(local.gid, 5678u);
  EXPECT_EQ(local.size, 5u);
  EXPECT_EQ(local.mtime_sec, 1200000000);
  EXPECT_EQ(ServerContent("f"), "hello");

  // Growing by truncate reads back as zeros.
  ASSERT_EQ(nfs_truncate(nfs_, "/f", 8), 0) << client_->Error();
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client_->ReadFile("/f"));
  EXPECT_EQ(data, std::string("hello\0\0\0", 8));

  EXPECT_EQ(nfs_chmod(nfs_, "/missing", 0600), -ENOENT);
}

TEST_P(ProceduresTest, SetattrGuardMismatchIsNotSync) {
  GEOFS_ASSERT_OK(client_->WriteFile("/f", "x"));
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto file, raw->Lookup(raw->root(), "f"));
  ASSERT_NFS_STATUS(NFS3_OK, file.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(file.fh));

  auto guarded = [&](nfstime3 ctime) -> Result<nfsstat3> {
    SETATTR3args args{};
    args.object = ToFh3(file.fh);
    args.new_attributes = ModeAttrs(0604);
    args.guard.check = 1;
    args.guard.sattrguard3_u.obj_ctime = ctime;
    nfsstat3 status = NFS3_OK;
    GEOFS_RETURN_IF_ERROR(raw->Call<SETATTR3res>(
        [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_setattr_async(r, cb, &args, p); },
        [&](SETATTR3res& res) { status = res.status; }));
    return status;
  };
  nfstime3 wrong = attr.attr.ctime;
  wrong.seconds -= 7;
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 mismatch, guarded(wrong));
  EXPECT_NFS_STATUS(NFS3ERR_NOT_SYNC, mismatch);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 match, guarded(attr.attr.ctime));
  EXPECT_NFS_STATUS(NFS3_OK, match);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client_->Stat("/f"));
  EXPECT_EQ(st.nfs_mode & 07777, 0604u);
}

TEST_P(ProceduresTest, LookupWalksPathsAndDotEntries) {
  ASSERT_EQ(nfs_mkdir(nfs_, "/d"), 0) << client_->Error();
  ASSERT_EQ(nfs_mkdir(nfs_, "/d/e"), 0) << client_->Error();
  GEOFS_ASSERT_OK(client_->WriteFile("/d/e/f", "deep"));
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client_->ReadFile("/d/e/f"));
  EXPECT_EQ(data, "deep");
  EXPECT_EQ(client_->Stat("/d/missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->Stat("/d/e/f/g").status().code(), StatusCode::kNotDirectory);

  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto d, raw->Lookup(raw->root(), "d"));
  ASSERT_NFS_STATUS(NFS3_OK, d.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto e, raw->Lookup(d.fh, "e"));
  ASSERT_NFS_STATUS(NFS3_OK, e.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto root_attr, raw->Getattr(raw->root()));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto d_attr, raw->Getattr(d.fh));

  GEOFS_ASSERT_OK_AND_ASSIGN(auto dot, raw->Lookup(e.fh, "."));
  ASSERT_NFS_STATUS(NFS3_OK, dot.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto dot_attr, raw->Getattr(dot.fh));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto e_attr, raw->Getattr(e.fh));
  EXPECT_EQ(dot_attr.attr.fileid, e_attr.attr.fileid);

  GEOFS_ASSERT_OK_AND_ASSIGN(auto dotdot, raw->Lookup(e.fh, ".."));
  ASSERT_NFS_STATUS(NFS3_OK, dotdot.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto dotdot_attr, raw->Getattr(dotdot.fh));
  EXPECT_EQ(dotdot_attr.attr.fileid, d_attr.attr.fileid);

  // ".." of the export root stays at the root: no escape from the export.
  GEOFS_ASSERT_OK_AND_ASSIGN(auto above, raw->Lookup(raw->root(), ".."));
  ASSERT_NFS_STATUS(NFS3_OK, above.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto above_attr, raw->Getattr(above.fh));
  EXPECT_EQ(above_attr.attr.fileid, root_attr.attr.fileid);

  GEOFS_ASSERT_OK_AND_ASSIGN(auto missing, raw->Lookup(d.fh, "nope"));
  EXPECT_NFS_STATUS(NFS3ERR_NOENT, missing.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto f, raw->Lookup(e.fh, "f"));
  ASSERT_NFS_STATUS(NFS3_OK, f.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto in_file, raw->Lookup(f.fh, "x"));
  EXPECT_NFS_STATUS(NFS3ERR_NOTDIR, in_file.status);
}

TEST_P(ProceduresTest, AccessGrantsByModeBits) {
  GEOFS_ASSERT_OK(client_->WriteFile("/f", "x", 0644));
  GEOFS_ASSERT_OK(client_->WriteFile("/x", "x", 0755));
  ASSERT_EQ(nfs_mkdir(nfs_, "/d"), 0) << client_->Error();
  EXPECT_EQ(nfs_access(nfs_, "/f", R_OK | W_OK), 0);
  EXPECT_EQ(nfs_access(nfs_, "/f", X_OK), -EACCES) << "root gets execute only if an x bit is set";
  EXPECT_EQ(nfs_access(nfs_, "/x", X_OK), 0);
  EXPECT_EQ(nfs_access(nfs_, "/missing", R_OK), -ENOENT);

  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  constexpr uint32_t kAll = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
                            ACCESS3_DELETE | ACCESS3_EXECUTE;
  GEOFS_ASSERT_OK_AND_ASSIGN(auto d, raw->Lookup(raw->root(), "d"));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto dir_access, raw->Access(d.fh, kAll));
  ASSERT_NFS_STATUS(NFS3_OK, dir_access.first);
  EXPECT_EQ(dir_access.second &
                (ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE),
            ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto f, raw->Lookup(raw->root(), "f"));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto file_access, raw->Access(f.fh, ACCESS3_READ | ACCESS3_EXECUTE));
  ASSERT_NFS_STATUS(NFS3_OK, file_access.first);
  EXPECT_EQ(file_access.second, static_cast<uint32_t>(ACCESS3_READ))
      << "only requested bits may be granted, and no execute without x bits";
}

TEST_P(ProceduresTest, SymlinkAndReadlink) {
  ASSERT_EQ(nfs_symlink(nfs_, "some/where/else", "/link"), 0) << client_->Error();
  char target[4096] = {};
  ASSERT_EQ(nfs_readlink(nfs_, "/link", target, sizeof(target) - 1), 0) << client_->Error();
  EXPECT_STREQ(target, "some/where/else");
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client_->Stat("/link"));
  EXPECT_TRUE(S_ISLNK(st.nfs_mode));
  EXPECT_EQ(st.nfs_size, std::strlen("some/where/else"));

  GEOFS_ASSERT_OK_AND_ASSIGN(std::string local, ServerReadlink("link"));
  EXPECT_EQ(local, "some/where/else");

  EXPECT_EQ(nfs_symlink(nfs_, "x", "/link"), -EEXIST);
  GEOFS_ASSERT_OK(client_->WriteFile("/plain", "x"));
  EXPECT_EQ(nfs_readlink(nfs_, "/plain", target, sizeof(target) - 1), -EINVAL)
      << "READLINK of a regular file is NFS3ERR_INVAL";
}

TEST_P(ProceduresTest, UnstableWritesThenCommit) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto file, raw->Create(raw->root(), "u", UNCHECKED, ModeAttrs(0644)));
  ASSERT_NFS_STATUS(NFS3_OK, file.status);
  ASSERT_FALSE(file.fh.empty());

  std::string expected;
  Verifier verf{};
  for (int i = 0; i < 3; ++i) {
    std::string chunk(100000, static_cast<char>('a' + i));
    GEOFS_ASSERT_OK_AND_ASSIGN(auto w, raw->Write(file.fh, expected.size(), chunk, UNSTABLE));
    ASSERT_NFS_STATUS(NFS3_OK, w.status);
    EXPECT_EQ(w.count, chunk.size());
    if (i == 0) verf = w.verf;
    EXPECT_EQ(w.verf, verf) << "the write verifier must not change while the server runs";
    expected += chunk;
  }
  GEOFS_ASSERT_OK_AND_ASSIGN(auto commit, raw->Commit(file.fh));
  ASSERT_NFS_STATUS(NFS3_OK, commit.status);
  EXPECT_EQ(commit.verf, verf) << "COMMIT must return the verifier of the writes it covers";
  EXPECT_EQ(ServerContent("u"), expected);

  GEOFS_ASSERT_OK_AND_ASSIGN(auto head, raw->Read(file.fh, 0, 1000));
  ASSERT_NFS_STATUS(NFS3_OK, head.status);
  EXPECT_EQ(head.data, expected.substr(0, 1000));
  EXPECT_FALSE(head.eof);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto tail, raw->Read(file.fh, 250000, 100000));
  EXPECT_EQ(tail.data, expected.substr(250000));
  EXPECT_TRUE(tail.eof);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto past, raw->Read(file.fh, 1000000, 10));
  ASSERT_NFS_STATUS(NFS3_OK, past.status);
  EXPECT_TRUE(past.data.empty());
  EXPECT_TRUE(past.eof);

  // The same through the libnfs client: unstable writes, then fsync (COMMIT).
  GEOFS_ASSERT_OK(client_->WriteFile("/v", expected));
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string back, client_->ReadFile("/v"));
  EXPECT_EQ(back, expected);
  EXPECT_EQ(ServerContent("v"), expected);
}

TEST_P(ProceduresTest, StableWritesAreCommittedAtLeastAsAsked) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto file, raw->Create(raw->root(), "s", GUARDED, ModeAttrs(0644)));
  ASSERT_NFS_STATUS(NFS3_OK, file.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto w1, raw->Write(file.fh, 0, "file-sync ", FILE_SYNC));
  ASSERT_NFS_STATUS(NFS3_OK, w1.status);
  EXPECT_EQ(w1.committed, FILE_SYNC);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto w2, raw->Write(file.fh, 10, "data-sync", DATA_SYNC));
  ASSERT_NFS_STATUS(NFS3_OK, w2.status);
  EXPECT_GE(w2.committed, DATA_SYNC);
  EXPECT_EQ(ServerContent("s"), "file-sync data-sync");

  // libnfs writes FILE_SYNC for files opened O_SYNC.
  GEOFS_ASSERT_OK(client_->WriteFile("/o", "synced", 0644, O_SYNC));
  EXPECT_EQ(ServerContent("o"), "synced");
}

TEST_P(ProceduresTest, ReadAndWriteAreCappedAtOneMiB) {
  std::string big(3 * kMiB, 'z');
  GEOFS_ASSERT_OK(client_->WriteFile("/big", big));
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto file, raw->Lookup(raw->root(), "big"));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto r, raw->Read(file.fh, 0, 2 * kMiB));
  ASSERT_NFS_STATUS(NFS3_OK, r.status);
  EXPECT_GT(r.data.size(), 0u);
  EXPECT_LE(r.data.size(), kMiB) << "READ larger than rtmax must be shortened";
  EXPECT_EQ(r.data, big.substr(0, r.data.size()));
  EXPECT_FALSE(r.eof);
}

TEST_P(ProceduresTest, CreateModesUncheckedGuardedExclusive) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto first, raw->Create(raw->root(), "c", UNCHECKED, ModeAttrs(0644)));
  ASSERT_NFS_STATUS(NFS3_OK, first.status);
  ASSERT_TRUE(first.attr.has_value());
  EXPECT_EQ(first.attr->type, NF3REG);
  EXPECT_EQ(first.attr->mode & 07777, 0644u);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto w, raw->Write(first.fh, 0, "keep", FILE_SYNC));
  ASSERT_NFS_STATUS(NFS3_OK, w.status);

  // UNCHECKED over an existing file succeeds and leaves it alone (no size).
  GEOFS_ASSERT_OK_AND_ASSIGN(auto again, raw->Create(raw->root(), "c", UNCHECKED, ModeAttrs(0644)));
  ASSERT_NFS_STATUS(NFS3_OK, again.status);
  EXPECT_EQ(ServerContent("c"), "keep");
  // UNCHECKED with size 0 truncates it: the Linux client sends exactly this
  // for open(O_CREAT|O_TRUNC) of a name it believes absent.
  sattr3 truncate = NoAttrs();
  truncate.size.set_it = 1;
  truncate.size.set_size3_u.size = 0;
  GEOFS_ASSERT_OK_AND_ASSIGN(auto truncated, raw->Create(raw->root(), "c", UNCHECKED, truncate));
  ASSERT_NFS_STATUS(NFS3_OK, truncated.status);
  EXPECT_EQ(ServerContent("c"), "");

  GEOFS_ASSERT_OK_AND_ASSIGN(auto guarded, raw->Create(raw->root(), "c", GUARDED, ModeAttrs(0644)));
  EXPECT_NFS_STATUS(NFS3ERR_EXIST, guarded.status);

  Verifier v1 = {'v', 'e', 'r', 'i', 'f', 'y', '0', '1'};
  Verifier v2 = {'v', 'e', 'r', 'i', 'f', 'y', '0', '2'};
  GEOFS_ASSERT_OK_AND_ASSIGN(auto ex, raw->Create(raw->root(), "x", EXCLUSIVE, NoAttrs(), v1));
  ASSERT_NFS_STATUS(NFS3_OK, ex.status);
  ASSERT_FALSE(ex.fh.empty());
  GEOFS_ASSERT_OK_AND_ASSIGN(auto ex_attr, raw->Getattr(ex.fh));

  // A retransmitted EXCLUSIVE create (same verifier) returns the same file.
  GEOFS_ASSERT_OK_AND_ASSIGN(auto replay, raw->Create(raw->root(), "x", EXCLUSIVE, NoAttrs(), v1));
  ASSERT_NFS_STATUS(NFS3_OK, replay.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto replay_attr, raw->Getattr(replay.fh));
  EXPECT_EQ(replay_attr.attr.fileid, ex_attr.attr.fileid);

  GEOFS_ASSERT_OK_AND_ASSIGN(auto other, raw->Create(raw->root(), "x", EXCLUSIVE, NoAttrs(), v2));
  EXPECT_NFS_STATUS(NFS3ERR_EXIST, other.status);

  // As RFC 1813 asks, the client then sets the real attributes.
  sattr3 set = ModeAttrs(0640);
  set.atime.set_it = SET_TO_SERVER_TIME;
  set.mtime.set_it = SET_TO_SERVER_TIME;
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 set_status, raw->Setattr(ex.fh, set));
  EXPECT_NFS_STATUS(NFS3_OK, set_status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto after, raw->Getattr(ex.fh));
  EXPECT_EQ(after.attr.mode & 07777, 0640u);
  EXPECT_EQ(after.attr.size, 0u);

  // Through libnfs: O_EXCL on an existing file fails.
  nfsfh* fh = nullptr;
  EXPECT_EQ(nfs_open2(nfs_, "/c", O_WRONLY | O_CREAT | O_EXCL, 0644, &fh), -EEXIST);
}

TEST_P(ProceduresTest, MkdirAndRmdir) {
  ASSERT_EQ(nfs_mkdir2(nfs_, "/d", 0750), 0) << client_->Error();
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client_->Stat("/d"));
  EXPECT_TRUE(S_ISDIR(st.nfs_mode));
  EXPECT_EQ(st.nfs_mode & 07777, 0750u);
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat local, ServerLstat("d"));
  EXPECT_TRUE(S_ISDIR(local.mode));
  EXPECT_EQ(nfs_mkdir(nfs_, "/d"), -EEXIST);
  EXPECT_EQ(nfs_mkdir(nfs_, "/missing/d"), -ENOENT);

  GEOFS_ASSERT_OK(client_->WriteFile("/d/f", "x"));
  EXPECT_EQ(nfs_rmdir(nfs_, "/d"), -ENOTEMPTY);
  EXPECT_EQ(nfs_rmdir(nfs_, "/d/f"), -ENOTDIR);
  ASSERT_EQ(nfs_unlink(nfs_, "/d/f"), 0) << client_->Error();
  ASSERT_EQ(nfs_rmdir(nfs_, "/d"), 0) << client_->Error();
  EXPECT_EQ(client_->Stat("/d").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(ServerHas("d"));
  EXPECT_EQ(nfs_rmdir(nfs_, "/d"), -ENOENT);

  // A subdirectory adds a link to its parent.
  ASSERT_EQ(nfs_mkdir(nfs_, "/p"), 0);
  ASSERT_EQ(nfs_mkdir(nfs_, "/p/c"), 0);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 parent, client_->Stat("/p"));
  EXPECT_EQ(parent.nfs_nlink, 3u);
}

TEST_P(ProceduresTest, MknodMakesAFifo) {
  ASSERT_EQ(nfs_mknod(nfs_, "/fifo", S_IFIFO | 0640, 0), 0) << client_->Error();
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client_->Stat("/fifo"));
  EXPECT_TRUE(S_ISFIFO(st.nfs_mode));
  EXPECT_EQ(st.nfs_mode & 07777, 0640u);
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat local, ServerLstat("fifo"));
  EXPECT_TRUE(S_ISFIFO(local.mode));

  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto again, raw->MknodFifo(raw->root(), "fifo", 0600));
  EXPECT_NFS_STATUS(NFS3ERR_EXIST, again.status);
}

TEST_P(ProceduresTest, Remove) {
  GEOFS_ASSERT_OK(client_->WriteFile("/f", "x"));
  ASSERT_EQ(nfs_unlink(nfs_, "/f"), 0) << client_->Error();
  EXPECT_FALSE(ServerHas("f"));
  EXPECT_EQ(nfs_unlink(nfs_, "/f"), -ENOENT);

  ASSERT_EQ(nfs_mkdir(nfs_, "/d"), 0);
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 dir_remove, raw->Remove(raw->root(), "d"));
  EXPECT_NE(dir_remove, NFS3_OK) << "REMOVE must not remove a directory";
  EXPECT_TRUE(ServerHas("d"));
}

TEST_P(ProceduresTest, RenameWithinAcrossAndOverExisting) {
  ASSERT_EQ(nfs_mkdir(nfs_, "/a"), 0);
  ASSERT_EQ(nfs_mkdir(nfs_, "/b"), 0);
  GEOFS_ASSERT_OK(client_->WriteFile("/a/one", "1"));
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 before, client_->Stat("/a/one"));

  ASSERT_EQ(nfs_rename(nfs_, "/a/one", "/a/two"), 0) << client_->Error();
  EXPECT_EQ(client_->Stat("/a/one").status().code(), StatusCode::kNotFound);
  ASSERT_EQ(nfs_rename(nfs_, "/a/two", "/b/three"), 0) << client_->Error();
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 moved, client_->Stat("/b/three"));
  EXPECT_EQ(moved.nfs_ino, before.nfs_ino) << "rename must keep the file's identity";
  EXPECT_EQ(ServerContent("b/three"), "1");

  // Over an existing file: the target is replaced.
  GEOFS_ASSERT_OK(client_->WriteFile("/b/victim", "old"));
  ASSERT_EQ(nfs_rename(nfs_, "/b/three", "/b/victim"), 0) << client_->Error();
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client_->ReadFile("/b/victim"));
  EXPECT_EQ(data, "1");
  EXPECT_EQ(client_->Stat("/b/three").status().code(), StatusCode::kNotFound);

  // A directory over an empty directory works; over a non-empty one it fails.
  ASSERT_EQ(nfs_mkdir(nfs_, "/a/sub"), 0);
  ASSERT_EQ(nfs_mkdir(nfs_, "/b/empty"), 0);
  ASSERT_EQ(nfs_rename(nfs_, "/a/sub", "/b/empty"), 0) << client_->Error();
  ASSERT_EQ(nfs_mkdir(nfs_, "/a/sub2"), 0);
  int rc = nfs_rename(nfs_, "/a/sub2", "/b");
  EXPECT_TRUE(rc == -ENOTEMPTY || rc == -EEXIST) << rc;
  EXPECT_EQ(nfs_rename(nfs_, "/a/missing", "/a/x"), -ENOENT);
  // A file over a directory and a directory over a file are refused
  // (RFC 1813 says NFS3ERR_EXIST; knfsd answers ISDIR/NOTDIR).
  GEOFS_ASSERT_OK(client_->WriteFile("/a/file", "f"));
  rc = nfs_rename(nfs_, "/a/file", "/b/empty");
  EXPECT_TRUE(rc == -EISDIR || rc == -EEXIST) << rc;
  rc = nfs_rename(nfs_, "/a/sub2", "/a/file");
  EXPECT_TRUE(rc == -ENOTDIR || rc == -EEXIST) << rc;
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string file_data, client_->ReadFile("/a/file"));
  EXPECT_EQ(file_data, "f");
}

TEST_P(ProceduresTest, HardLink) {
  GEOFS_ASSERT_OK(client_->WriteFile("/a", "shared"));
  ASSERT_EQ(nfs_link(nfs_, "/a", "/b"), 0) << client_->Error();
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 a, client_->Stat("/a"));
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 b, client_->Stat("/b"));
  EXPECT_EQ(a.nfs_ino, b.nfs_ino);
  EXPECT_EQ(a.nfs_nlink, 2u);
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat la, ServerLstat("a"));
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat lb, ServerLstat("b"));
  EXPECT_EQ(la.ino, lb.ino);

  GEOFS_ASSERT_OK(client_->WriteFile("/b", "changed"));
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client_->ReadFile("/a"));
  EXPECT_EQ(data, "changed");
  EXPECT_EQ(nfs_link(nfs_, "/a", "/b"), -EEXIST);
  EXPECT_EQ(nfs_link(nfs_, "/missing", "/c"), -ENOENT);
  ASSERT_EQ(nfs_unlink(nfs_, "/a"), 0);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 left, client_->Stat("/b"));
  EXPECT_EQ(left.nfs_nlink, 1u);
}

TEST_P(ProceduresTest, ReadDirAndReadDirPlusListEverything) {
  std::set<std::string> expected = {"sub"};
  ASSERT_EQ(nfs_mkdir(nfs_, "/sub"), 0);
  for (int i = 0; i < 40; ++i) {
    std::string name = "file-" + std::to_string(i);
    GEOFS_ASSERT_OK(client_->WriteFile("/" + name, name));
    expected.insert(name);
  }

  GEOFS_ASSERT_OK_AND_ASSIGN(auto names, client_->ListNames("/"));
  std::multiset<std::string> seen(names.begin(), names.end());
  seen.erase(".");
  seen.erase("..");
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), expected);
  EXPECT_EQ(seen.size(), expected.size()) << "an entry was listed twice";

  // libnfs fills type and size from READDIRPLUS attributes.
  nfsdir* dir = nullptr;
  ASSERT_EQ(nfs_opendir(nfs_, "/", &dir), 0) << client_->Error();
  int checked = 0;
  while (nfsdirent* e = nfs_readdir(nfs_, dir)) {
    std::string name = e->name;
    if (name == "sub") {
      EXPECT_EQ(e->type, static_cast<uint32_t>(NF3DIR));
      ++checked;
    } else if (name.rfind("file-", 0) == 0) {
      EXPECT_EQ(e->type, static_cast<uint32_t>(NF3REG)) << name;
      EXPECT_EQ(e->size, name.size()) << name;
      ++checked;
    }
  }
  nfs_closedir(nfs_, dir);
  EXPECT_EQ(checked, 41);

  // Raw READDIR in one go; its fileids agree with GETATTR.
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto listing, raw->ReadDir(raw->root(), 0, {}, 64 * 1024));
  ASSERT_NFS_STATUS(NFS3_OK, listing.status);
  EXPECT_TRUE(listing.eof);
  int compared = 0;
  for (const auto& e : listing.entries) {
    if (e.name != "file-7") continue;
    GEOFS_ASSERT_OK_AND_ASSIGN(auto looked, raw->Lookup(raw->root(), e.name));
    GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(looked.fh));
    EXPECT_EQ(attr.attr.fileid, e.fileid);
    ++compared;
  }
  EXPECT_EQ(compared, 1);

  // READDIRPLUS hands out usable handles.
  GEOFS_ASSERT_OK_AND_ASSIGN(auto plus, raw->ReadDirPlus(raw->root(), 0, {}, 64 * 1024, kMiB));
  ASSERT_NFS_STATUS(NFS3_OK, plus.status);
  EXPECT_TRUE(plus.eof);
  for (const auto& e : plus.entries) {
    if (e.name != "file-9") continue;
    ASSERT_FALSE(e.fh.empty());
    GEOFS_ASSERT_OK_AND_ASSIGN(auto r, raw->Read(e.fh, 0, 100));
    ASSERT_NFS_STATUS(NFS3_OK, r.status);
    EXPECT_EQ(r.data, "file-9");
  }

  // Cookie 0 starts over whatever verifier comes with it (the Linux client
  // resends the one it cached).
  Verifier stale = {'s', 't', 'a', 'l', 'e', '!', '!', '!'};
  GEOFS_ASSERT_OK_AND_ASSIGN(auto restart, raw->ReadDir(raw->root(), 0, stale, 64 * 1024));
  ASSERT_NFS_STATUS(NFS3_OK, restart.status);
  EXPECT_EQ(restart.entries.size(), listing.entries.size());

  GEOFS_ASSERT_OK_AND_ASSIGN(auto file, raw->Lookup(raw->root(), "file-1"));
  GEOFS_ASSERT_OK_AND_ASSIGN(auto not_dir, raw->ReadDir(file.fh, 0, {}, 4096));
  EXPECT_NFS_STATUS(NFS3ERR_NOTDIR, not_dir.status);
}

TEST_P(ProceduresTest, FsstatFsinfoPathconf) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  FSINFO3args info_args{};
  info_args.fsroot = ToFh3(raw->root());
  FSINFO3resok info{};
  nfsstat3 info_status = NFS3ERR_SERVERFAULT;
  GEOFS_ASSERT_OK(
      raw->Call<FSINFO3res>([&](rpc_context* r, rpc_cb cb,
                                void* p) { return rpc_nfs3_fsinfo_async(r, cb, &info_args, p); },
                            [&](FSINFO3res& res) {
                              info_status = res.status;
                              if (res.status == NFS3_OK) info = res.FSINFO3res_u.resok;
                            }));
  ASSERT_NFS_STATUS(NFS3_OK, info_status);
  EXPECT_EQ(info.rtmax, kMiB);
  EXPECT_EQ(info.wtmax, kMiB);
  EXPECT_EQ(info.rtpref, kMiB);
  EXPECT_EQ(info.wtpref, kMiB);
  EXPECT_GE(info.dtpref, 4096u);
  EXPECT_GE(info.maxfilesize, uint64_t{1} << 40);
  constexpr uint32_t kProps = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
  EXPECT_EQ(info.properties & kProps, kProps);
  EXPECT_EQ(nfs_get_readmax(nfs_), kMiB);
  EXPECT_EQ(nfs_get_writemax(nfs_), kMiB);

  PATHCONF3args pc_args{};
  pc_args.object = ToFh3(raw->root());
  PATHCONF3resok pc{};
  nfsstat3 pc_status = NFS3ERR_SERVERFAULT;
  GEOFS_ASSERT_OK(
      raw->Call<PATHCONF3res>([&](rpc_context* r, rpc_cb cb,
                                  void* p) { return rpc_nfs3_pathconf_async(r, cb, &pc_args, p); },
                              [&](PATHCONF3res& res) {
                                pc_status = res.status;
                                if (res.status == NFS3_OK) pc = res.PATHCONF3res_u.resok;
                              }));
  ASSERT_NFS_STATUS(NFS3_OK, pc_status);
  EXPECT_EQ(pc.name_max, 255u);
  EXPECT_TRUE(pc.no_trunc);
  EXPECT_TRUE(pc.chown_restricted);
  EXPECT_FALSE(pc.case_insensitive);
  EXPECT_TRUE(pc.case_preserving);
  EXPECT_GE(pc.linkmax, 1u);

  FSSTAT3args st_args{};
  st_args.fsroot = ToFh3(raw->root());
  FSSTAT3resok st{};
  nfsstat3 st_status = NFS3ERR_SERVERFAULT;
  GEOFS_ASSERT_OK(raw->Call<FSSTAT3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_fsstat_async(r, cb, &st_args, p); },
      [&](FSSTAT3res& res) {
        st_status = res.status;
        if (res.status == NFS3_OK) st = res.FSSTAT3res_u.resok;
      }));
  ASSERT_NFS_STATUS(NFS3_OK, st_status);
  struct statvfs local;
  ASSERT_EQ(statvfs(StorageDir().c_str(), &local), 0);
  EXPECT_EQ(st.tbytes, uint64_t{local.f_blocks} * local.f_frsize);
  EXPECT_LE(st.fbytes, st.tbytes);
  EXPECT_LE(st.abytes, st.fbytes);
  EXPECT_GT(st.tfiles, 0u);

  nfs_statvfs_64 vfs{};
  ASSERT_EQ(nfs_statvfs64(nfs_, "/", &vfs), 0) << client_->Error();
  EXPECT_EQ(vfs.f_blocks * vfs.f_frsize, st.tbytes);
}

TEST_P(ProceduresTest, NamesLongerThan255BytesAreRefused) {
  std::string longest(255, 'n');
  std::string too_long(256, 'n');
  GEOFS_ASSERT_OK(client_->WriteFile("/" + longest, "ok"));
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client_->ReadFile("/" + longest));
  EXPECT_EQ(data, "ok");

  nfsfh* fh = nullptr;
  EXPECT_EQ(nfs_open2(nfs_, ("/" + too_long).c_str(), O_WRONLY | O_CREAT, 0644, &fh),
            -ENAMETOOLONG);
  EXPECT_EQ(nfs_mkdir(nfs_, ("/" + too_long).c_str()), -ENAMETOOLONG);

  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto create, raw->Create(raw->root(), too_long, UNCHECKED, NoAttrs()));
  EXPECT_NFS_STATUS(NFS3ERR_NAMETOOLONG, create.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto lookup, raw->Lookup(raw->root(), too_long));
  EXPECT_NFS_STATUS(NFS3ERR_NAMETOOLONG, lookup.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto mkdir, raw->Mkdir(raw->root(), too_long, 0755));
  EXPECT_NFS_STATUS(NFS3ERR_NAMETOOLONG, mkdir.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto symlink, raw->Symlink(raw->root(), too_long, "t"));
  EXPECT_NFS_STATUS(NFS3ERR_NAMETOOLONG, symlink.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 rename,
                             raw->Rename(raw->root(), longest, raw->root(), too_long));
  EXPECT_NFS_STATUS(NFS3ERR_NAMETOOLONG, rename);
}

TEST_P(ProceduresTest, ForgedHandlesNeverReachAnotherFile) {
  GEOFS_ASSERT_OK(client_->WriteFile("/secret", "s"));
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto file, raw->Lookup(raw->root(), "secret"));
  ASSERT_NFS_STATUS(NFS3_OK, file.status);
  ASSERT_LE(file.fh.size(), 64u);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto real, raw->Getattr(file.fh));
  for (size_t i = 0; i < file.fh.size(); ++i) {
    FileHandle forged = file.fh;
    forged[i] = static_cast<char>(forged[i] ^ 0x01);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(forged));
    EXPECT_TRUE(attr.status == NFS3ERR_BADHANDLE || attr.status == NFS3ERR_STALE)
        << "byte " << i << " flipped: " << NfsStatName(attr.status);
  }
  GEOFS_ASSERT_OK_AND_ASSIGN(auto truncated, raw->Getattr(file.fh.substr(0, file.fh.size() - 1)));
  EXPECT_TRUE(truncated.status == NFS3ERR_BADHANDLE || truncated.status == NFS3ERR_STALE)
      << NfsStatName(truncated.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto empty, raw->Getattr(FileHandle()));
  EXPECT_TRUE(empty.status == NFS3ERR_BADHANDLE || empty.status == NFS3ERR_STALE)
      << NfsStatName(empty.status);

  GEOFS_ASSERT_OK_AND_ASSIGN(auto still, raw->Getattr(file.fh));
  ASSERT_NFS_STATUS(NFS3_OK, still.status);
  EXPECT_EQ(still.attr.fileid, real.attr.fileid);

  // A removed file's handle is stale.
  ASSERT_EQ(nfs_unlink(nfs_, "/secret"), 0);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto gone, raw->Getattr(file.fh));
  EXPECT_NFS_STATUS(NFS3ERR_STALE, gone.status);
}

TEST_P(ProceduresTest, WccDataAccompaniesChanges) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto before, raw->Getattr(raw->root()));
  MKDIR3args args{};
  std::string name = "w";
  args.where.dir = ToFh3(raw->root());
  args.where.name = name.data();
  args.attributes = ModeAttrs(0755);
  MKDIR3resok ok{};
  nfsstat3 status = NFS3ERR_SERVERFAULT;
  GEOFS_ASSERT_OK(raw->Call<MKDIR3res>(
      [&](rpc_context* r, rpc_cb cb, void* p) { return rpc_nfs3_mkdir_async(r, cb, &args, p); },
      [&](MKDIR3res& res) {
        status = res.status;
        if (res.status == NFS3_OK) {
          ok = res.MKDIR3res_u.resok;
          ok.obj.handle_follows = 0;  // the handle's bytes die with the reply
        }
      }));
  ASSERT_NFS_STATUS(NFS3_OK, status);
  ASSERT_TRUE(ok.dir_wcc.before.attributes_follow);
  ASSERT_TRUE(ok.dir_wcc.after.attributes_follow);
  const wcc_attr& pre = ok.dir_wcc.before.pre_op_attr_u.attributes;
  const fattr3& post = ok.dir_wcc.after.post_op_attr_u.attributes;
  EXPECT_EQ(pre.mtime.seconds, before.attr.mtime.seconds);
  EXPECT_EQ(pre.mtime.nseconds, before.attr.mtime.nseconds);
  EXPECT_EQ(pre.ctime.seconds, before.attr.ctime.seconds);
  EXPECT_EQ(pre.ctime.nseconds, before.attr.ctime.nseconds);
  EXPECT_EQ(post.fileid, before.attr.fileid);
  EXPECT_EQ(post.nlink, before.attr.nlink + 1);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto after, raw->Getattr(raw->root()));
  EXPECT_EQ(post.mtime.seconds, after.attr.mtime.seconds);
  EXPECT_EQ(post.mtime.nseconds, after.attr.mtime.nseconds);
}

GEOFS_INSTANTIATE_FOR_EACH_SERVER(ProceduresTest);

}  // namespace
}  // namespace geofs::testing
