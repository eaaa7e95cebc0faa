// What must survive a daemon restart (file handles, with the same state or
// data directory) and what must not (the write verifier), on each server.
// For a spoke over a hub, Restart() and Kill() take both processes down;
// SpokeRestartTest restarts the spoke alone under a running hub.
#include <filesystem>
#include <string>

#include "integration/daemon_test_base.h"

namespace geofs::testing {
namespace {

class RestartTest : public ServerTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "none"}));
    auto raw = Raw();
    ASSERT_NE(raw, nullptr);
    root_ = raw->root();
    GEOFS_ASSERT_OK_AND_ASSIGN(auto dir, raw->Mkdir(root_, "dir", 0755));
    ASSERT_NFS_STATUS(NFS3_OK, dir.status);
    dir_ = dir.fh;
    GEOFS_ASSERT_OK_AND_ASSIGN(auto file, raw->Create(dir_, "file", GUARDED, ModeAttrs(0644)));
    ASSERT_NFS_STATUS(NFS3_OK, file.status);
    file_ = file.fh;
    GEOFS_ASSERT_OK_AND_ASSIGN(auto w, raw->Write(file_, 0, "before restart", UNSTABLE));
    ASSERT_NFS_STATUS(NFS3_OK, w.status);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto commit, raw->Commit(file_));
    ASSERT_NFS_STATUS(NFS3_OK, commit.status);
    EXPECT_EQ(commit.verf, w.verf);
    verf_ = commit.verf;
    GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(file_));
    fileid_ = attr.attr.fileid;
  }

  // Checks that the handles taken before the restart still name the same
  // objects, and that the write verifier changed.
  void ExpectOldHandlesWork() {
    // A client that mounted before the restart reconnects and goes on with
    // the handles it holds, without a new MNT.
    GEOFS_ASSERT_OK_AND_ASSIGN(auto raw, RawNfs::ConnectWithRoot(RawOptionsFor(0, 0), root_));
    GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(file_));
    ASSERT_NFS_STATUS(NFS3_OK, attr.status);
    EXPECT_EQ(attr.attr.fileid, fileid_);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto read, raw->Read(file_, 0, 100));
    ASSERT_NFS_STATUS(NFS3_OK, read.status);
    EXPECT_EQ(read.data, "before restart");
    GEOFS_ASSERT_OK_AND_ASSIGN(auto looked, raw->Lookup(dir_, "file"));
    ASSERT_NFS_STATUS(NFS3_OK, looked.status);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto looked_attr, raw->Getattr(looked.fh));
    EXPECT_EQ(looked_attr.attr.fileid, fileid_);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto in_root, raw->Lookup(root_, "dir"));
    ASSERT_NFS_STATUS(NFS3_OK, in_root.status);

    GEOFS_ASSERT_OK_AND_ASSIGN(auto w, raw->Write(file_, 14, ", after", UNSTABLE));
    ASSERT_NFS_STATUS(NFS3_OK, w.status);
    EXPECT_NE(w.verf, verf_) << "the write verifier must change when the server restarts";
    GEOFS_ASSERT_OK_AND_ASSIGN(auto commit, raw->Commit(file_));
    ASSERT_NFS_STATUS(NFS3_OK, commit.status);
    EXPECT_EQ(commit.verf, w.verf);
    EXPECT_NE(commit.verf, verf_);

    auto client = Mount();
    ASSERT_NE(client, nullptr);
    GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client->ReadFile("/dir/file"));
    EXPECT_EQ(data, "before restart, after");
  }

  FileHandle root_, dir_, file_;
  Verifier verf_{};
  uint64_t fileid_ = 0;
};

TEST_P(RestartTest, HandlesSurviveCleanRestart) {
  GEOFS_ASSERT_OK(daemon_->Restart());
  ExpectOldHandlesWork();
}

TEST_P(RestartTest, HandlesSurviveCrashAndRestart) {
  daemon_->Kill();
  GEOFS_ASSERT_OK(daemon_->Start());
  ExpectOldHandlesWork();
}

TEST_P(RestartTest, HandlesOfRemovedObjectsAreStaleAfterRestart) {
  auto client = Mount();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(nfs_unlink(client->ctx(), "/dir/file"), 0) << client->Error();
  client.reset();
  GEOFS_ASSERT_OK(daemon_->Restart());
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(file_));
  EXPECT_NFS_STATUS(NFS3ERR_STALE, attr.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto dir, raw->Getattr(dir_));
  EXPECT_NFS_STATUS(NFS3_OK, dir.status);
}

TEST_P(RestartTest, NewHandleKeyInvalidatesOldHandles) {
  // A lost handle key means a fresh one: handles signed with the old key must
  // be refused, not resolved. Both daemons keep it in their state (spoke) or
  // data (hub) directory; the hub's namespace stays.
  GEOFS_ASSERT_OK(daemon_->Stop());
  ASSERT_TRUE(std::filesystem::remove(daemon_->state_dir() + "/handle.key"));
  GEOFS_ASSERT_OK(daemon_->Start());
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto attr, raw->Getattr(file_));
  EXPECT_TRUE(attr.status == NFS3ERR_BADHANDLE || attr.status == NFS3ERR_STALE)
      << NfsStatName(attr.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto looked, raw->Lookup(raw->root(), "dir"));
  EXPECT_NFS_STATUS(NFS3_OK, looked.status);
}

// Only the spoke goes down; the hub keeps running (and keeps the leases the
// old session held until they expire or the new session replaces them).
using SpokeRestartTest = RestartTest;

TEST_P(SpokeRestartTest, HandlesSurviveCleanSpokeRestart) {
  GEOFS_ASSERT_OK(daemon_->StopFrontEnd());
  GEOFS_ASSERT_OK(daemon_->Start());
  ExpectOldHandlesWork();
}

TEST_P(SpokeRestartTest, HandlesSurviveSpokeCrash) {
  daemon_->KillFrontEnd();
  GEOFS_ASSERT_OK(daemon_->Start());
  ExpectOldHandlesWork();
}

TEST_P(SpokeRestartTest, CommittedWriteReachesTheHubAfterSpokeCrash) {
  // COMMIT answered means the data is in the spoke's synced journal; a crash
  // before the upload must not lose it: the restarted spoke commits it.
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto w, raw->Write(file_, 14, " and more", UNSTABLE));
  ASSERT_NFS_STATUS(NFS3_OK, w.status);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto commit, raw->Commit(file_));
  ASSERT_NFS_STATUS(NFS3_OK, commit.status);
  raw.reset();
  daemon_->KillFrontEnd();
  GEOFS_ASSERT_OK(daemon_->Start());
  EXPECT_EQ(ServerContent("dir/file"), "before restart and more");
}

GEOFS_INSTANTIATE_FOR_EACH_SERVER(RestartTest);
INSTANTIATE_TEST_SUITE_P(, SpokeRestartTest, ::testing::Values(ServerKind::kSpokeOverHub));

}  // namespace
}  // namespace geofs::testing
