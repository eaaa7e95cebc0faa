// Write-behind of creates (geofs-spoked --local-creates, the default), with a
// hub and two spokes as processes: spoke A answers creates itself and sends
// them later (B has --no-local-creates);
// spoke B and the hub's own export see them once they are at the hub, with
// the handle and attributes A answered. A create removed before it was sent
// never reaches the hub; a change by another site to the directory sends
// A's creates first; a spoke killed -9 sends what it answered after its
// restart; a name taken at the hub while A was cut off keeps A's file under
// another name.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nfsc/libnfs.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "hub_process.h"
#include "spoke_process.h"
#include "tools/nfs_client.h"

namespace geofs::spoke::testing {
namespace {

using geofs::testing::NfsClient;
using hub::testing::HubOptions;
using hub::testing::HubProcess;

constexpr std::chrono::seconds kLeaseTtl{2};
// Long enough that only an invalidation, a flush or a restart sends a create
// within a test.
constexpr int kLongDelayMs = 60'000;

class LocalCreatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HubOptions hub_options;
    hub_options.nfs = true;
    hub_options.extra_args = {"--lease-ttl", std::to_string(kLeaseTtl.count())};
    auto hub = HubProcess::Create(hub_options);
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
    ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();
    std::ofstream(src_.path() + "/readme.txt") << "portal\n";
    auto imported = hub_->Ctl({"import", src_.path(), "/datasets"});
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_EQ(imported->exit_code, 0) << imported->err;
    auto hub_nfs = NfsClient::Mount(hub_->NfsUrl());
    ASSERT_TRUE(hub_nfs.ok()) << hub_nfs.status().ToString();
    hub_nfs_ = std::move(hub_nfs).value();
  }

  void TearDown() override {
    for (auto* spoke : {&a_, &b_}) {
      if (*spoke && (*spoke)->Alive()) EXPECT_TRUE((*spoke)->Stop().ok()) << (*spoke)->Log();
    }
    if (hub_ && hub_->running()) EXPECT_TRUE(hub_->Stop().ok()) << hub_->Log();
  }

  // Spoke A answers creates itself, sending them `delay_ms` later; B does not.
  void StartSpokes(int delay_ms) {
    for (auto* spoke : {&a_, &b_}) {
      SpokeProcessOptions options;
      options.hub_address = hub_->grpc_address();
      options.extra_args = {"--squash", "none"};
      if (spoke == &a_) {
        options.extra_args.insert(
            options.extra_args.end(),
            {"--local-creates", "--local-create-delay-ms", std::to_string(delay_ms)});
      } else {
        options.extra_args.push_back("--no-local-creates");
      }
      auto created = SpokeProcess::Create(options);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      *spoke = std::move(created).value();
      ASSERT_TRUE((*spoke)->Start().ok()) << (*spoke)->Log();
    }
    MountA();
    auto b = NfsClient::Mount(b_->NfsUrl());
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    b_nfs_ = std::move(b).value();
  }
  void MountA() {
    auto a = NfsClient::Mount(a_->NfsUrl());
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    a_nfs_ = std::move(a).value();
  }

  static double Metric(const SpokeProcess& spoke, const std::string& name) {
    auto value = spoke.Metric(name);
    EXPECT_TRUE(value.ok()) << value.status().ToString();
    return value.ok() ? *value : -1;
  }

  // CREATE of an empty file (no WRITE, which would send it at once).
  static void Create(NfsClient& nfs, const std::string& path, int mode = 0644) {
    nfsfh* fh = nullptr;
    ASSERT_EQ(nfs_creat(nfs.ctx(), path.c_str(), mode, &fh), 0) << path << ": " << nfs.Error();
    nfs_close(nfs.ctx(), fh);
  }

  // Waits (bounded) for `path` to exist at the hub.
  Result<nfs_stat_64> AtHub(const std::string& path, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto st = hub_nfs_->Stat("/datasets" + path);
      if (st.ok() || std::chrono::steady_clock::now() > deadline) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  hub::testing::TempDir src_;
  std::unique_ptr<HubProcess> hub_;
  std::unique_ptr<SpokeProcess> a_, b_;
  std::unique_ptr<NfsClient> hub_nfs_, a_nfs_, b_nfs_;
};

TEST_F(LocalCreatesTest, CreateSetAttrAndRemoveOfOneFileNeverReachTheHub) {
  StartSpokes(kLongDelayMs);
  const double changes_before = Metric(*a_, "geofs_spoke_hub_changes_total");
  for (int i = 0; i < 20; ++i) {
    const std::string path = "/tmp" + std::to_string(i);
    Create(*a_nfs_, path);
    ASSERT_EQ(nfs_chmod(a_nfs_->ctx(), path.c_str(), 0600), 0) << a_nfs_->Error();
    auto st = a_nfs_->Stat(path);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st->nfs_mode & 07777, 0600u);
    EXPECT_EQ(st->nfs_size, 0u);
    ASSERT_EQ(nfs_unlink(a_nfs_->ctx(), path.c_str()), 0) << a_nfs_->Error();
    EXPECT_FALSE(a_nfs_->Stat(path).ok()) << path << " still there after REMOVE";
  }
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_total"), 20);
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_cancelled_total"), 20);
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_pending"), 0);
  EXPECT_EQ(Metric(*a_, "geofs_spoke_hub_changes_total"), changes_before)
      << "a create removed before it was sent went to the hub";
  EXPECT_FALSE(hub_nfs_->Stat("/datasets/tmp0").ok());
}

TEST_F(LocalCreatesTest, ACreateReachesTheHubWithTheHandleAndAttributesAnswered) {
  StartSpokes(/*delay_ms=*/100);
  Create(*a_nfs_, "/made.txt", 0640);
  ASSERT_EQ(nfs_chmod(a_nfs_->ctx(), "/made.txt", 0604), 0) << a_nfs_->Error();
  timeval times[2] = {{1'600'000'000, 0}, {1'600'000'100, 0}};
  ASSERT_EQ(nfs_utimes(a_nfs_->ctx(), "/made.txt", times), 0) << a_nfs_->Error();
  auto answered = a_nfs_->Stat("/made.txt");
  ASSERT_TRUE(answered.ok()) << answered.status().ToString();
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_total"), 1);

  ASSERT_TRUE(a_->WaitJournalDrained(std::chrono::seconds(10)).ok()) << a_->Log();
  auto at_hub = hub_nfs_->Stat("/datasets/made.txt");
  ASSERT_TRUE(at_hub.ok()) << at_hub.status().ToString();
  auto at_b = b_nfs_->Stat("/made.txt");
  ASSERT_TRUE(at_b.ok()) << at_b.status().ToString();
  for (const nfs_stat_64& st : {*at_hub, *at_b}) {
    EXPECT_EQ(st.nfs_ino, answered->nfs_ino) << "the hub's file is not the one answered";
    EXPECT_EQ(st.nfs_mode & 07777, 0604u);
    EXPECT_EQ(st.nfs_mtime, 1'600'000'100u);
    EXPECT_EQ(st.nfs_atime, 1'600'000'000u);
    // What clients guard SETATTRs with holds after the commit too.
    EXPECT_EQ(st.nfs_ctime, answered->nfs_ctime);
    EXPECT_EQ(st.nfs_ctime_nsec, answered->nfs_ctime_nsec);
    EXPECT_EQ(st.nfs_uid, answered->nfs_uid);
    EXPECT_EQ(st.nfs_gid, answered->nfs_gid);
    EXPECT_EQ(st.nfs_size, 0u);
  }
  // A's own view after the commit comes from the hub and agrees.
  auto again = a_nfs_->Stat("/made.txt");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->nfs_ino, answered->nfs_ino);
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_pending"), 0);
  // Written through A after the commit: a file like any other.
  ASSERT_TRUE(a_nfs_->WriteFile("/made.txt", "data").ok()) << a_nfs_->Error();
  ASSERT_TRUE(a_->WaitJournalDrained(std::chrono::seconds(10)).ok());
  auto content = b_nfs_->ReadFile("/made.txt");
  ASSERT_TRUE(content.ok()) << content.status().ToString();
  EXPECT_EQ(*content, "data");
}

TEST_F(LocalCreatesTest, OperationsOnAFileCreatedHereSendItFirst) {
  StartSpokes(kLongDelayMs);
  // Its data (through the uploader), READDIR and RENAME each need the hub
  // to have the file.
  ASSERT_TRUE(a_nfs_->WriteFile("/written.txt", "bytes").ok()) << a_nfs_->Error();
  Create(*a_nfs_, "/listed.txt");
  auto names = a_nfs_->ListNames("/");
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_NE(std::find(names->begin(), names->end(), "listed.txt"), names->end());
  Create(*a_nfs_, "/renamed.txt");
  ASSERT_EQ(nfs_rename(a_nfs_->ctx(), "/renamed.txt", "/moved.txt"), 0) << a_nfs_->Error();
  ASSERT_TRUE(a_->WaitJournalDrained(std::chrono::seconds(10)).ok()) << a_->Log();
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_total"), 3);
  auto content = b_nfs_->ReadFile("/written.txt");
  ASSERT_TRUE(content.ok()) << content.status().ToString();
  EXPECT_EQ(*content, "bytes");
  EXPECT_TRUE(b_nfs_->Stat("/listed.txt").ok());
  EXPECT_TRUE(b_nfs_->Stat("/moved.txt").ok());
  EXPECT_FALSE(b_nfs_->Stat("/renamed.txt").ok());
}

TEST_F(LocalCreatesTest, AFileCreatedAndWrittenHereIsServedHereWhileTheHubIsStopped) {
  StartSpokes(/*delay_ms=*/100);
  // Lease the portal's listing first: a create learns the name is free.
  ASSERT_TRUE(a_nfs_->ListNames("/").ok());
  hub_->Signal(SIGSTOP);
  const std::string data(100'000, 'x');
  Status written = a_nfs_->WriteFile("/offline.bin", data);
  auto read = a_nfs_->ReadFile("/offline.bin");
  auto st = a_nfs_->Stat("/offline.bin");
  hub_->Signal(SIGCONT);
  ASSERT_TRUE(written.ok()) << written.ToString() << "\n" << a_->Log();
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(*read == data);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->nfs_size, data.size());
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_total"), 1);
  ASSERT_TRUE(a_->WaitJournalDrained(std::chrono::seconds(20)).ok()) << a_->Log();
  auto at_b = b_nfs_->ReadFile("/offline.bin");
  ASSERT_TRUE(at_b.ok()) << at_b.status().ToString();
  EXPECT_TRUE(*at_b == data);
  EXPECT_EQ(b_nfs_->Stat("/offline.bin")->nfs_ino, st->nfs_ino);
}

TEST_F(LocalCreatesTest, InALargeDirectoryFreeNamesAreLookedUp) {
  // More entries than the one listing page a create reads to learn names.
  hub::testing::TempDir big;
  for (int i = 0; i < 600; ++i) std::ofstream(big.path() + "/f" + std::to_string(i));
  auto imported = hub_->Ctl({"import", big.path(), "/datasets/big"});
  ASSERT_TRUE(imported.ok() && imported->exit_code == 0);
  StartSpokes(/*delay_ms=*/100);
  for (int i = 0; i < 3; ++i) Create(*a_nfs_, "/big/new" + std::to_string(i));
  Create(*a_nfs_, "/big/f7");  // exists: the hub answers (UNCHECKED)
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_total"), 3);
  ASSERT_TRUE(a_->WaitJournalDrained(std::chrono::seconds(10)).ok());
  auto names = b_nfs_->ListNames("/big");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 603u + 2u);  // with "." and ".."
}

TEST_F(LocalCreatesTest, AnotherSitesChangeToTheDirectorySendsTheCreatesFirst) {
  StartSpokes(kLongDelayMs);
  Create(*a_nfs_, "/first.txt");
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_pending"), 1);
  // B's create in the same directory invalidates A's lease on it; A sends
  // its create before it acknowledges, so it commits first.
  Create(*b_nfs_, "/second.txt");
  auto first = hub_nfs_->Stat("/datasets/first.txt");
  ASSERT_TRUE(first.ok()) << "A's create was not sent before B's change committed\n"
                          << a_->Log() << "\n"
                          << b_->Log();
  auto second = hub_nfs_->Stat("/datasets/second.txt");
  ASSERT_TRUE(second.ok());
  EXPECT_LE(first->nfs_ctime, second->nfs_ctime);
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_pending"), 0);
}

TEST_F(LocalCreatesTest, ASpokeKilledAfterAnsweringSendsTheCreateAfterItsRestart) {
  StartSpokes(kLongDelayMs);
  Create(*a_nfs_, "/survivor.txt", 0600);
  auto answered = a_nfs_->Stat("/survivor.txt");
  ASSERT_TRUE(answered.ok());
  Create(*a_nfs_, "/gone.txt");
  ASSERT_EQ(nfs_unlink(a_nfs_->ctx(), "/gone.txt"), 0) << a_nfs_->Error();
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_total"), 2);
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_creates_pending"), 1);
  a_nfs_.reset();
  a_->Kill();
  EXPECT_FALSE(hub_nfs_->Stat("/datasets/survivor.txt").ok());
  ASSERT_TRUE(a_->Start().ok()) << a_->Log();
  auto at_hub = AtHub("/survivor.txt", std::chrono::seconds(10));
  ASSERT_TRUE(at_hub.ok()) << "the answered create was lost in the crash\n" << a_->Log();
  EXPECT_EQ(at_hub->nfs_ino, answered->nfs_ino);
  EXPECT_EQ(at_hub->nfs_mode & 07777, 0600u);
  EXPECT_FALSE(hub_nfs_->Stat("/datasets/gone.txt").ok()) << "a removed create came back";
  MountA();
  auto after = a_nfs_->Stat("/survivor.txt");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->nfs_ino, answered->nfs_ino);
}

TEST_F(LocalCreatesTest, ANameTakenWhileTheSpokeWasCutOffKeepsBothFiles) {
  StartSpokes(kLongDelayMs);
  Create(*a_nfs_, "/clash.txt", 0600);
  auto ours = a_nfs_->Stat("/clash.txt");
  ASSERT_TRUE(ours.ok());
  // A cannot acknowledge the invalidation: the hub waits out its lease and
  // then lets the hub-side create of the same name through.
  a_->Signal(SIGSTOP);
  ASSERT_TRUE(hub_nfs_->WriteFile("/datasets/clash.txt", "theirs").ok()) << hub_nfs_->Error();
  a_->Signal(SIGCONT);
  const std::string kept = "/clash.txt.geofs-conflict-" + std::to_string(ours->nfs_ino);
  auto conflict = AtHub(kept, std::chrono::seconds(10));
  ASSERT_TRUE(conflict.ok()) << "A's answered create was dropped\n" << a_->Log();
  EXPECT_EQ(conflict->nfs_ino, ours->nfs_ino);
  auto theirs = hub_nfs_->ReadFile("/datasets/clash.txt");
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(*theirs, "theirs");
  EXPECT_EQ(Metric(*a_, "geofs_spoke_local_create_conflicts_total"), 1);
}

}  // namespace
}  // namespace geofs::spoke::testing
