// kill -9 of the hub at random moments during an import and during NFS
// FILE_SYNC writes: after a restart fsck is clean, everything acknowledged
// is intact, and no file is torn (each holds its old or its new content).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "hub_process.h"
#include "hub_test_tree.h"
#include "tools/nfs_client.h"

namespace geofs::hub::testing {
namespace {

using geofs::testing::NfsClient;

constexpr size_t kKiB = 1 << 10;

void ExpectFsckClean(const HubProcess& hub) {
  auto r = hub.Ctl({"fsck", "--verify-data"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
}

std::unique_ptr<HubProcess> StartHub() {
  HubOptions options;
  options.nfs = true;
  auto hub = HubProcess::Create(options);
  EXPECT_TRUE(hub.ok()) << hub.status().ToString();
  if (!hub.ok()) return nullptr;
  Status started = (*hub)->Start();
  EXPECT_TRUE(started.ok()) << started.ToString();
  return started.ok() ? std::move(hub).value() : nullptr;
}

TEST(HubCrashTest, KillDuringImportLeavesNoTornFile) {
  TempDir dir;
  SourceTree tree(dir.path() + "/src");
  const int seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed) + " (--gtest_random_seed)");
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 48; ++i) {
    const size_t size = rng() % (3 << 20);
    const std::string content = i % 3 == 0 ? SourceTree::Text(size, i) : RandomBytes(size, i);
    tree.File("d" + std::to_string(i % 5) + "/f" + std::to_string(i), content);
  }
  // Three batches, uploaded while the file is still being read: a kill may
  // land between them.
  tree.File("large.bin", RandomBytes(40 << 20, 99));
  auto hub = StartHub();
  ASSERT_TRUE(hub);

  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Child::Options ctl;
    ctl.argv = {GeofsctlPath(), "--hub", hub->grpc_address(), "import", tree.root(), "/set"};
    ctl.stdout_path = dir.path() + "/ctl.out";
    ctl.stderr_path = dir.path() + "/ctl.err";
    auto import = Child::Start(ctl);
    ASSERT_TRUE(import.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 700));
    hub->Kill();
    (*import)->Kill();
    ASSERT_TRUE(hub->Start().ok()) << hub->Log();
    ExpectFsckClean(*hub);

    // Each file the hub has is empty (created, never committed) or whole.
    auto nfs = NfsClient::Mount(hub->NfsUrl());
    ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
    int whole = 0;
    for (const auto& [rel, content] : tree.files()) {
      auto back = (*nfs)->ReadFile("/set/" + rel);
      if (!back.ok()) continue;  // not created yet
      if (back->empty() && !content.empty()) continue;
      EXPECT_TRUE(*back == content)
          << rel << " is torn: " << back->size() << " of " << content.size() << " bytes";
      ++whole;
    }
    RecordProperty("whole_after_round_" + std::to_string(round), whole);
  }

  // Finishing the import brings everything in.
  auto done = hub->Ctl({"import", tree.root(), "/set"});
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->exit_code, 0) << done->out << done->err;
  auto nfs = NfsClient::Mount(hub->NfsUrl());
  ASSERT_TRUE(nfs.ok());
  for (const auto& [rel, content] : tree.files()) {
    auto back = (*nfs)->ReadFile("/set/" + rel);
    ASSERT_TRUE(back.ok()) << rel;
    EXPECT_TRUE(*back == content) << rel;
  }
  ExpectFsckClean(*hub);
}

// Content of version `v` of file `i`: the same size for every version, so an
// overwrite is a single FILE_SYNC write of the whole file.
std::string Version(int i, int v) {
  const size_t size = (64 + 37 * i % 400) * kKiB;
  return RandomBytes(size, 1000 * i + v);
}

TEST(HubCrashTest, KillDuringNfsFileSyncWritesKeepsEveryAcknowledgedWrite) {
  constexpr int kFiles = 12;
  const int seed = ::testing::UnitTest::GetInstance()->random_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed) + " (--gtest_random_seed)");
  std::mt19937_64 rng(seed);
  auto hub = StartHub();
  ASSERT_TRUE(hub);
  {
    auto nfs = NfsClient::Mount(hub->NfsUrl());
    ASSERT_TRUE(nfs.ok());
    ASSERT_EQ(nfs_mkdir((*nfs)->ctx(), "/w"), 0);
  }
  // acked[i]: the last version of file i whose write was acknowledged (0:
  // none); Stored versions are acked[i] or acked[i] + 1 (in flight).
  std::vector<int> acked(kFiles, 0);

  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::mutex mu;
    std::atomic<bool> stop{false};
    std::jthread writer([&] {
      auto nfs = NfsClient::Mount(hub->NfsUrl());
      if (!nfs.ok()) return;
      for (int n = 0; !stop; ++n) {
        const int i = n % kFiles;
        int next;
        {
          std::lock_guard lock(mu);
          next = acked[i] + 1;
        }
        const std::string path = "/w/f" + std::to_string(i);
        const std::string data = Version(i, next);
        nfsfh* fh = nullptr;
        // No O_TRUNC: the one FILE_SYNC write replaces the old content.
        if (nfs_open2((*nfs)->ctx(), path.c_str(), O_WRONLY | O_CREAT | O_SYNC, 0644, &fh) != 0) {
          return;
        }
        const int written = nfs_pwrite((*nfs)->ctx(), fh, 0, data.size(), data.data());
        const int closed = nfs_close((*nfs)->ctx(), fh);
        if (written != static_cast<int>(data.size()) || closed != 0) return;
        std::lock_guard lock(mu);
        acked[i] = next;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 1200));
    hub->Kill();
    stop = true;
    writer.join();
    ASSERT_TRUE(hub->Start().ok()) << hub->Log();
    ExpectFsckClean(*hub);

    auto nfs = NfsClient::Mount(hub->NfsUrl());
    ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
    for (int i = 0; i < kFiles; ++i) {
      auto back = (*nfs)->ReadFile("/w/f" + std::to_string(i));
      if (acked[i] == 0 && (!back.ok() || back->empty())) continue;  // never acknowledged
      ASSERT_TRUE(back.ok()) << "f" << i << " acknowledged at v" << acked[i];
      if (*back == Version(i, acked[i])) continue;
      // The write in flight at the kill may have been committed, whole.
      EXPECT_TRUE(*back == Version(i, acked[i] + 1))
          << "f" << i << " holds neither v" << acked[i] << " nor v" << acked[i] + 1;
      acked[i] += 1;
    }
  }
}

}  // namespace
}  // namespace geofs::hub::testing
