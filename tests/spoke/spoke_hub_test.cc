// geofs-hubd and geofs-spoked --hub as processes: reads through the spoke
// match the hub, repeated reads come from the spoke's cache, changes made at
// the hub are seen by the spoke, and changes made through the spoke reach the
// hub.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "hub_process.h"
#include "spoke_process.h"
#include "tools/nfs_client.h"

namespace geofs::spoke::testing {
namespace {

using geofs::testing::NfsClient;
using hub::testing::HubOptions;
using hub::testing::HubProcess;
using hub::testing::TempDir;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

void WriteLocal(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

class SpokeHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HubOptions hub_options;
    hub_options.nfs = true;
    // Short leases, so that renewals run and expiry can be waited for.
    hub_options.extra_args = {"--lease-ttl", "2"};
    auto hub = HubProcess::Create(hub_options);
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
    ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();

    files_["small.txt"] = "hello from the hub\n";
    files_["sub/big.bin"] = RandomBytes(3 << 20, 1);  // several chunks
    files_["sub/mid.bin"] = RandomBytes(300 << 10, 2);
    for (const auto& [rel, data] : files_) WriteLocal(src_.path() + "/" + rel, data);
    auto imported = hub_->Ctl({"import", src_.path(), "/datasets"});
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_EQ(imported->exit_code, 0) << imported->err;

    SpokeProcessOptions options;
    options.hub_address = hub_->grpc_address();
    options.extra_args = {"--squash", "none"};
    auto spoke = SpokeProcess::Create(options);
    ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
    spoke_ = std::move(spoke).value();
    ASSERT_TRUE(spoke_->Start().ok()) << spoke_->Log();
  }

  void TearDown() override {
    if (spoke_) {
      EXPECT_TRUE(spoke_->Stop().ok()) << spoke_->Log();
    }
    if (hub_ && hub_->running()) {
      EXPECT_TRUE(hub_->Stop().ok()) << hub_->Log();
    }
  }

  double Metric(const std::string& name) {
    auto m = spoke_->Metrics();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return -1;
    auto it = m->find(name);
    EXPECT_NE(it, m->end()) << name;
    return it == m->end() ? -1 : it->second;
  }

  // Waits (bounded) until the spoke's journal is committed at the hub: the
  // spoke answers COMMIT once the journal is synced and uploads after.
  void WaitUploaded() {
    Status drained = spoke_->WaitJournalDrained(std::chrono::seconds(10));
    ASSERT_TRUE(drained.ok()) << drained.ToString() << "\n" << spoke_->Log();
  }

  std::unique_ptr<NfsClient> MountSpoke() {
    auto nfs = NfsClient::Mount(spoke_->NfsUrl());
    EXPECT_TRUE(nfs.ok()) << nfs.status().ToString() << "\n" << spoke_->Log();
    return nfs.ok() ? std::move(nfs).value() : nullptr;
  }
  std::unique_ptr<NfsClient> MountHub() {
    auto nfs = NfsClient::Mount(hub_->NfsUrl());
    EXPECT_TRUE(nfs.ok()) << nfs.status().ToString();
    return nfs.ok() ? std::move(nfs).value() : nullptr;
  }

  TempDir src_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<HubProcess> hub_;
  std::unique_ptr<SpokeProcess> spoke_;
};

TEST_F(SpokeHubTest, ReadsMatchTheHubAndRepeatedReadsComeFromTheCache) {
  auto nfs = MountSpoke();
  ASSERT_TRUE(nfs);
  auto names = nfs->ListNames("/sub");
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_NE(std::find(names->begin(), names->end(), "big.bin"), names->end());
  EXPECT_NE(std::find(names->begin(), names->end(), "mid.bin"), names->end());

  for (const auto& [rel, data] : files_) {
    auto back = nfs->ReadFile("/" + rel);
    ASSERT_TRUE(back.ok()) << rel << ": " << back.status().ToString() << "\n" << spoke_->Log();
    EXPECT_TRUE(*back == data) << rel << ": " << back->size() << " vs " << data.size();
  }
  double from_hub = Metric("geofs_spoke_bytes_from_hub_total");
  EXPECT_GT(from_hub, 0);
  double hits = Metric("geofs_spoke_chunk_hits_total");

  for (const auto& [rel, data] : files_) {
    auto back = nfs->ReadFile("/" + rel);
    ASSERT_TRUE(back.ok()) << rel << ": " << back.status().ToString();
    EXPECT_TRUE(*back == data) << rel;
  }
  EXPECT_EQ(Metric("geofs_spoke_bytes_from_hub_total"), from_hub);
  EXPECT_GT(Metric("geofs_spoke_chunk_hits_total"), hits);
  EXPECT_EQ(Metric("geofs_spoke_hub_connected"), 1);
}

TEST_F(SpokeHubTest, ChangesAtTheHubAreSeenOnTheNextRead) {
  auto spoke = MountSpoke();
  auto hub = MountHub();
  ASSERT_TRUE(spoke && hub);
  ASSERT_EQ(*spoke->ReadFile("/small.txt"), files_["small.txt"]);

  ASSERT_TRUE(hub->WriteFile("/datasets/small.txt", "changed at the hub").ok());
  auto back = spoke->ReadFile("/small.txt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "changed at the hub");

  ASSERT_TRUE(hub->WriteFile("/datasets/new.txt", "new at the hub").ok());
  EXPECT_EQ(*spoke->ReadFile("/new.txt"), "new at the hub");
  ASSERT_EQ(nfs_unlink(hub->ctx(), "/datasets/new.txt"), 0);
  EXPECT_FALSE(spoke->Stat("/new.txt").ok());
}

TEST_F(SpokeHubTest, ChangesThroughTheSpokeReachTheHub) {
  auto spoke = MountSpoke();
  auto hub = MountHub();
  ASSERT_TRUE(spoke && hub);

  std::string data = RandomBytes(1 << 20, 3) + "tail";
  Status written = spoke->WriteFile("/written.bin", data);
  ASSERT_TRUE(written.ok()) << written.ToString() << "\n" << spoke_->Log();
  // The spoke reads its own write back before it is at the hub...
  EXPECT_TRUE(*spoke->ReadFile("/written.bin") == data);
  // ...and the hub has it once the spoke has uploaded it.
  WaitUploaded();
  auto at_hub = hub->ReadFile("/datasets/written.bin");
  ASSERT_TRUE(at_hub.ok()) << at_hub.status().ToString();
  EXPECT_TRUE(*at_hub == data) << at_hub->size() << " vs " << data.size();

  ASSERT_EQ(nfs_mkdir(spoke->ctx(), "/made"), 0) << spoke->Error();
  ASSERT_EQ(nfs_rename(spoke->ctx(), "/written.bin", "/made/moved.bin"), 0) << spoke->Error();
  EXPECT_FALSE(hub->Stat("/datasets/written.bin").ok());
  auto moved = hub->ReadFile("/datasets/made/moved.bin");
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_TRUE(*moved == data);
  ASSERT_EQ(nfs_symlink(spoke->ctx(), "made/moved.bin", "/link"), 0) << spoke->Error();
  char target[256] = {};
  ASSERT_EQ(nfs_readlink(hub->ctx(), "/datasets/link", target, sizeof(target)), 0);
  EXPECT_STREQ(target, "made/moved.bin");

  ASSERT_EQ(nfs_unlink(spoke->ctx(), "/made/moved.bin"), 0) << spoke->Error();
  ASSERT_EQ(nfs_rmdir(spoke->ctx(), "/made"), 0) << spoke->Error();
  EXPECT_FALSE(hub->Stat("/datasets/made").ok());
  EXPECT_FALSE(spoke->Stat("/made").ok());
}

TEST_F(SpokeHubTest, WithoutTheHubLeasesRunOutButImmutablePortalsServe) {
  auto strict = MountSpoke();
  ASSERT_TRUE(strict);
  ASSERT_TRUE(*strict->ReadFile("/sub/mid.bin") == files_["sub/mid.bin"]);

  SpokeProcessOptions options;
  options.hub_address = hub_->grpc_address();
  options.extra_args = {"--immutable"};
  auto immutable = SpokeProcess::Create(options);
  ASSERT_TRUE(immutable.ok());
  ASSERT_TRUE((*immutable)->Start().ok()) << (*immutable)->Log();
  auto nfs = NfsClient::Mount((*immutable)->NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
  ASSERT_TRUE(*(*nfs)->ReadFile("/sub/mid.bin") == files_["sub/mid.bin"]);
  EXPECT_FALSE((*nfs)->WriteFile("/refused.txt", "x").ok());

  hub_->Kill();
  // Strict: what is held under a live lease is served...
  auto within = strict->ReadFile("/sub/mid.bin");
  ASSERT_TRUE(within.ok()) << within.status().ToString() << "\n" << spoke_->Log();
  EXPECT_TRUE(*within == files_["sub/mid.bin"]);
  // ...and nothing once the lease is over (NFS3ERR_JUKEBOX).
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(strict->ReadFile("/sub/mid.bin").ok());
  // Immutable: served from what the spoke holds, read-only.
  auto back = (*nfs)->ReadFile("/sub/mid.bin");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << (*immutable)->Log();
  EXPECT_TRUE(*back == files_["sub/mid.bin"]);
  auto m = (*immutable)->Metrics();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)["geofs_spoke_immutable"], 1);
  EXPECT_EQ((*m)["geofs_spoke_hub_connected"], 0);
  EXPECT_TRUE((*immutable)->Stop().ok()) << (*immutable)->Log();
}

}  // namespace
}  // namespace geofs::spoke::testing
