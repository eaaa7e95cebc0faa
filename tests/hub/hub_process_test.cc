// geofs-hubd and geofsctl as processes: import, stats, fsck, re-import, and
// the hub's NFS export read and written with libnfs.
#include "hub_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "common/mounted_tmpfs.h"
#include "hub_test_tree.h"
#include "tools/nfs_client.h"

namespace geofs::hub::testing {
namespace {

using geofs::testing::NfsClient;

constexpr size_t kMiB = 1 << 20;
constexpr uid_t kNobody = 65534;

// The number in "new bytes stored: 1.0 MiB (1048576; ...".
uint64_t NewBytesStored(const std::string& out) {
  std::smatch m;
  static const std::regex kLine(R"(new bytes stored: [^(]*\((\d+);)");
  if (!std::regex_search(out, m, kLine)) return UINT64_MAX;
  return std::stoull(m[1]);
}

nlohmann::json Stats(const HubProcess& hub, bool list_store = false) {
  std::vector<std::string> args = {"stats", "--json"};
  if (list_store) args.push_back("--list-store");
  auto r = hub.Ctl(args);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  EXPECT_EQ(r->exit_code, 0) << r->err;
  return nlohmann::json::parse(r->out, nullptr, /*allow_exceptions=*/false);
}

void ExpectFsckClean(const HubProcess& hub) {
  auto r = hub.Ctl({"fsck", "--verify-data"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("clean"), std::string::npos) << r->out;
}

// Every source file is in the hub under `hub_dir`, byte for byte (via NFS).
void ExpectHubHolds(const HubProcess& hub, const SourceTree& tree, const std::string& hub_dir) {
  auto nfs = NfsClient::Mount(hub.NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
  for (const auto& [rel, content] : tree.files()) {
    auto back = (*nfs)->ReadFile(hub_dir + "/" + rel);
    ASSERT_TRUE(back.ok()) << rel << ": " << back.status().ToString();
    EXPECT_TRUE(*back == content) << rel << " differs (" << back->size() << " vs " << content.size()
                                  << " bytes)";
  }
}

class HubProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HubOptions options;
    options.nfs = true;
    auto hub = HubProcess::Create(options);
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
    ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();
  }
  void TearDown() override {
    if (hub_ && hub_->running()) {
      EXPECT_TRUE(hub_->Stop().ok()) << hub_->Log();
    }
  }

  TempDir dir_;
  std::unique_ptr<HubProcess> hub_;
};

TEST_F(HubProcessTest, ImportDedupesSkipsWhatItCannotReadAndReimportsOnlyChanges) {
  SourceTree tree(dir_.path() + "/src");
  const std::string one = RandomBytes(3 * kMiB, 1);
  tree.File("a/one.bin", one);
  tree.File("a/dup.bin", one);
  tree.File("b/text.txt", SourceTree::Text(2 * kMiB, 2));
  tree.File("b/c/big.bin", RandomBytes(20 * kMiB, 3));
  tree.File("empty", "");
  tree.File("secret", "only root reads this", 0600);
  tree.Symlink("link", "a/one.bin");
  tree.Symlink("loop1", "loop2");
  tree.Symlink("loop2", "loop1");
  tree.Fifo("fifo");
  tree.Socket("sock");
  uint64_t logical = 0;
  for (const auto& [rel, content] : tree.files()) logical += content.size();
  const uint64_t secret_size = tree.files().at("secret").size();

  // As an ordinary user, so that "secret" is unreadable.
  auto first = hub_->Ctl({"import", tree.root(), "/sets/one"}, kNobody);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->exit_code, 3) << first->out << first->err;
  for (const char* skipped : {"secret: access denied", "fifo: FIFO", "sock: socket",
                              "loop1: symlink loop", "loop2: symlink loop"}) {
    EXPECT_NE(first->err.find(skipped), std::string::npos) << skipped << " in\n" << first->err;
  }
  EXPECT_NE(first->out.find("files:            6 (5 new or changed"), std::string::npos)
      << first->out;
  const uint64_t stored_first = NewBytesStored(first->out);
  EXPECT_NE(stored_first, UINT64_MAX) << first->out;
  // The duplicate and the text cost (almost) nothing.
  EXPECT_LT(stored_first, 3 * kMiB + 20 * kMiB + kMiB) << first->out;
  EXPECT_NE(first->out.find("dedup ratio:"), std::string::npos);
  EXPECT_NE(first->out.find("compression:"), std::string::npos);

  nlohmann::json stats = Stats(*hub_);
  EXPECT_EQ(stats["logical_bytes"], logical - secret_size);
  EXPECT_EQ(stats["files"], 5u);
  EXPECT_EQ(stats["symlinks"], 1u);
  EXPECT_LE(stats["referenced_raw_bytes"].get<uint64_t>(), logical - secret_size - 3 * kMiB);
  EXPECT_LT(stats["stored_bytes"].get<uint64_t>(), stats["referenced_raw_bytes"].get<uint64_t>());
  EXPECT_EQ(stats["stored_bytes"].get<uint64_t>(), stored_first);
  ExpectFsckClean(*hub_);

  SourceTree imported = tree;
  imported.Forget("secret");
  ExpectHubHolds(*hub_, imported, "/sets/one");
  {
    auto nfs = NfsClient::Mount(hub_->NfsUrl());
    ASSERT_TRUE(nfs.ok());
    char target[256] = {};
    ASSERT_EQ(nfs_readlink((*nfs)->ctx(), "/sets/one/link", target, sizeof(target) - 1), 0);
    EXPECT_STREQ(target, "a/one.bin");
    EXPECT_FALSE((*nfs)->Stat("/sets/one/fifo").ok());
    EXPECT_FALSE((*nfs)->Stat("/sets/one/loop1").ok());
  }

  // Again: nothing changed, nothing is sent.
  auto again = hub_->Ctl({"import", tree.root(), "/sets/one"}, kNobody);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->exit_code, 3) << again->err;
  EXPECT_EQ(NewBytesStored(again->out), 0u) << again->out;
  EXPECT_NE(again->out.find("(0 new or changed, 5 unchanged)"), std::string::npos) << again->out;

  // One byte changes in the big file, a file goes: only that is sent.
  std::string big = tree.files().at("b/c/big.bin");
  big[11 * kMiB] ^= 0x55;
  tree.File("b/c/big.bin", big);
  tree.Remove("b/text.txt");
  auto edited = hub_->Ctl({"import", tree.root(), "/sets/one"}, kNobody);
  ASSERT_TRUE(edited.ok());
  EXPECT_EQ(edited->exit_code, 3) << edited->err;
  EXPECT_NE(edited->out.find("(1 new or changed, 3 unchanged)"), std::string::npos) << edited->out;
  EXPECT_GT(NewBytesStored(edited->out), 0u);
  EXPECT_LE(NewBytesStored(edited->out), 2 * 4 * kMiB) << edited->out;
  EXPECT_NE(edited->out.find("removed:          1 hub entries"), std::string::npos) << edited->out;
  imported = tree;
  imported.Forget("secret");
  ExpectHubHolds(*hub_, imported, "/sets/one");
  {
    auto nfs = NfsClient::Mount(hub_->NfsUrl());
    ASSERT_TRUE(nfs.ok());
    EXPECT_FALSE((*nfs)->Stat("/sets/one/b/text.txt").ok());
  }
  ExpectFsckClean(*hub_);
}

// New files smaller than a batch (16 MiB) go up in groups: their chunks
// together, then one batch that creates and commits up to a few hundred
// files at a time. A group is read into one block, so it holds at most a
// batch: medium files fill groups of their own.
TEST_F(HubProcessTest, NewFilesSmallerThanABatchAreImportedInGroups) {
  SourceTree tree(dir_.path() + "/src");
  int small = 0;
  for (int i = 0; i < 600; ++i) {
    const std::string rel = "d" + std::to_string(i % 7) + "/f" + std::to_string(i);
    // Every tenth file has the same content as the one before it.
    const uint64_t seed = i % 10 == 9 ? i - 1 : i;
    tree.File(rel, RandomBytes((seed * 977) % (12 << 10), 100 + seed), i % 3 == 0 ? 0640 : 0644);
    ++small;
  }
  for (int i = 0; i < 5; ++i) {  // two or three to a group
    tree.File("medium/m" + std::to_string(i), RandomBytes(5 * kMiB + i, 20 + i));
    ++small;
  }
  tree.File("limit/fits", RandomBytes(16 * kMiB - 1, 7));  // with its end probe, one batch
  ++small;
  tree.File("limit/over", RandomBytes(16 * kMiB, 8));  // imported on its own
  auto r = hub_->Ctl({"import", tree.root(), "/many"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("files:            607 (607 new or changed"), std::string::npos) << r->out;
  EXPECT_NE(r->out.find("grouped files:    " + std::to_string(small) + " created and committed"),
            std::string::npos)
      << r->out;
  ExpectHubHolds(*hub_, tree, "/many");
  {
    auto nfs = NfsClient::Mount(hub_->NfsUrl());
    ASSERT_TRUE(nfs.ok());
    for (const char* rel : {"d0/f0", "d1/f1", "d2/f9"}) {
      struct stat local;
      ASSERT_EQ(::stat(tree.Path(rel).c_str(), &local), 0);
      auto remote = (*nfs)->Stat(std::string("/many/") + rel);
      ASSERT_TRUE(remote.ok()) << rel;
      EXPECT_EQ(remote->nfs_mode & 07777, local.st_mode & 07777) << rel;
      EXPECT_EQ(remote->nfs_mtime, static_cast<uint64_t>(local.st_mtim.tv_sec)) << rel;
      EXPECT_EQ(remote->nfs_mtime_nsec, static_cast<uint64_t>(local.st_mtim.tv_nsec)) << rel;
    }
  }
  nlohmann::json stats = Stats(*hub_);
  EXPECT_EQ(stats["files"], 607u);
  ExpectFsckClean(*hub_);

  // Nothing changed: nothing is sent. Changed small files are committed
  // one by one (they exist at the hub).
  tree.File("d3/f3", "new content");
  auto again = hub_->Ctl({"import", tree.root(), "/many"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->exit_code, 0) << again->err;
  EXPECT_NE(again->out.find("(1 new or changed, 606 unchanged)"), std::string::npos) << again->out;
  EXPECT_EQ(again->out.find("grouped files:"), std::string::npos) << again->out;
  ExpectHubHolds(*hub_, tree, "/many");
  ExpectFsckClean(*hub_);
}

// A file of several blocks is read on while its earlier batches upload (two
// at a time). Its content repeats, so batches in flight together share
// chunks: one sends them and the other waits for it.
TEST_F(HubProcessTest, ALargeFileIsReadOnWhileItsEarlierBatchesUpload) {
  SourceTree tree(dir_.path() + "/src");
  const std::string segment = RandomBytes(7 * kMiB + 12345, 70);
  std::string large;
  while (large.size() < 60 * kMiB) large += segment;
  tree.File("large.bin", large);
  auto r = hub_->Ctl({"import", tree.root(), "/large"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  ExpectHubHolds(*hub_, tree, "/large");
  // Stored about once: the repeats add a chunk or two around the first seam.
  EXPECT_LT(NewBytesStored(r->out), 2 * segment.size()) << r->out;
  ExpectFsckClean(*hub_);
}

TEST_F(HubProcessTest, FilesChangingWhileReadAreSkipped) {
  SourceTree tree(dir_.path() + "/src");
  tree.File("steady", RandomBytes(kMiB, 4));
  tree.File("growing", RandomBytes(32 * kMiB, 5));
  // A group (one 16 MiB block) whose second file grows while the import
  // runs: however much of it is read, its neighbour keeps its bytes. (A
  // read that outgrows the block is covered by ReadArenaTest.)
  tree.File("group/a-fill", RandomBytes(14 * kMiB - 1, 6));
  tree.File("group/b-growing", RandomBytes(2 * kMiB - 1, 7));
  std::atomic<bool> stop{false};
  auto append_to = [&](const std::string& rel) {
    return std::jthread([&, path = tree.Path(rel)] {
      const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
      while (!stop) {
        if (::write(fd, "x", 1) != 1) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      ::close(fd);
    });
  };
  std::jthread appenders[] = {append_to("growing"), append_to("group/b-growing")};
  auto r = hub_->Ctl({"import", tree.root(), "/live"});
  stop = true;
  for (std::jthread& t : appenders) t.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3) << r->out << r->err;
  EXPECT_NE(r->err.find("  growing: changed while being read"), std::string::npos) << r->err;
  tree.Remove("growing");
  // The small one is read too fast to be caught changing (mtimes move in
  // clock ticks): it is imported as it was when read, or skipped. Once it
  // stands still, the next import brings it to its final content.
  {
    std::ifstream in(tree.Path("group/b-growing"), std::ios::binary);
    tree.File("group/b-growing", std::string(std::istreambuf_iterator<char>(in), {}));
  }
  auto again = hub_->Ctl({"import", tree.root(), "/live"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->exit_code, 0) << again->out << again->err;
  ExpectHubHolds(*hub_, tree, "/live");
  ExpectFsckClean(*hub_);
}

TEST_F(HubProcessTest, ImportRefusesAHubPathThatIsAFile) {
  SourceTree tree(dir_.path() + "/src");
  tree.File("f", "x");
  ASSERT_EQ(hub_->Ctl({"import", tree.root(), "/target"})->exit_code, 0);
  auto r = hub_->Ctl({"import", tree.root(), "/target/f"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->err.find("/target/f is not a directory"), std::string::npos) << r->err;
}

TEST_F(HubProcessTest, NfsWritesAreServedAndSurviveRestarts) {
  const std::string unstable = RandomBytes(5 * kMiB + 17, 6);
  const std::string synced = SourceTree::Text(300000, 7);
  {
    auto nfs = NfsClient::Mount(hub_->NfsUrl());
    ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
    ASSERT_EQ(nfs_mkdir((*nfs)->ctx(), "/out"), 0) << (*nfs)->Error();
    ASSERT_TRUE((*nfs)->WriteFile("/out/committed.bin", unstable).ok());  // UNSTABLE + COMMIT
    ASSERT_TRUE((*nfs)->WriteFile("/out/synced.txt", synced, 0644, O_SYNC).ok());
    EXPECT_EQ(*(*nfs)->ReadFile("/out/committed.bin"), unstable);
    // Written and not committed: a clean stop flushes it.
    nfsfh* fh = nullptr;
    ASSERT_EQ(nfs_open2((*nfs)->ctx(), "/out/pending", O_WRONLY | O_CREAT, 0644, &fh), 0);
    ASSERT_EQ(nfs_pwrite((*nfs)->ctx(), fh, 0, 7, "pending"), 7);
    ASSERT_EQ(nfs_close((*nfs)->ctx(), fh), 0);
    auto listed = (*nfs)->ListNames("/out");
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(listed->size(), 5u);  // with "." and ".."
  }
  ASSERT_TRUE(hub_->Stop().ok()) << hub_->Log();
  ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();
  auto nfs = NfsClient::Mount(hub_->NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
  EXPECT_EQ(*(*nfs)->ReadFile("/out/committed.bin"), unstable);
  EXPECT_EQ(*(*nfs)->ReadFile("/out/synced.txt"), synced);
  EXPECT_EQ(*(*nfs)->ReadFile("/out/pending"), "pending");
  nlohmann::json stats = Stats(*hub_, /*list_store=*/true);
  EXPECT_EQ(stats["files"], 3u);
  EXPECT_EQ(stats["logical_bytes"], unstable.size() + synced.size() + 7);
  // Chunks the hub stored for NFS writes are counted without listing.
  EXPECT_GT(stats["listed_objects"].get<uint64_t>(), 0u);
  EXPECT_EQ(stats["stored_bytes"], stats["listed_bytes"]);
  EXPECT_EQ(stats["unsized_chunks"], 0u);
  ExpectFsckClean(*hub_);
}

// How many starts found that the run before did not stop cleanly.
size_t UncleanStarts(const HubProcess& hub) {
  const std::string log = hub.Log();
  const std::string line = "no clean stop recorded";
  size_t n = 0;
  for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++n;
  return n;
}

// Waits (bounded) for GC to finish the orphan sweep a start called for.
void ExpectSweepDone(const HubProcess& hub) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Stats(hub)["orphan_sweep_due"] != false && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(Stats(hub)["orphan_sweep_due"], false) << hub.Log();
}

TEST(HubProcessGcTest, TheObjectStoreIsSweptOnlyAfterAnUncleanStop) {
  HubOptions options;
  options.extra_args = {"--gc-grace", "1", "--gc-interval", "1"};
  auto hub = HubProcess::Create(options);
  ASSERT_TRUE(hub.ok()) << hub.status().ToString();
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();
  EXPECT_EQ(UncleanStarts(**hub), 1u);  // a store's first run sweeps once
  ExpectSweepDone(**hub);

  ASSERT_TRUE((*hub)->Stop().ok()) << (*hub)->Log();
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();
  EXPECT_EQ(UncleanStarts(**hub), 1u);
  EXPECT_EQ(Stats(**hub)["orphan_sweep_due"], false);

  (*hub)->Kill();
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();
  EXPECT_EQ(UncleanStarts(**hub), 2u);
  ExpectSweepDone(**hub);
  ASSERT_TRUE((*hub)->Stop().ok()) << (*hub)->Log();
}

TEST(HubProcessFullDiskTest, ChunkWritesStopShortOfAFullDiskAndTheHubGoesOn) {
  geofs::testing::MountedTmpfs fs("64m");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << fs.error();
  constexpr uint64_t kKeepFree = 8 * kMiB;
  HubOptions options;
  options.nfs = true;
  options.data_dir = fs.path() + "/hub";  // namespace and chunks on the small disk
  options.extra_args = {"--keep-free", "8M"};
  auto hub = HubProcess::Create(options);
  ASSERT_TRUE(hub.ok()) << hub.status().ToString();
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();
  // About 30 MiB free, 22 MiB of it for chunks; the import needs 30 MiB.
  // Without the ballast there is room for all of it and the NFS file.
  const std::string ballast = fs.path() + "/ballast";
  std::ofstream(ballast, std::ios::binary) << std::string(32 * kMiB, 'b');

  TempDir src;
  SourceTree big(src.path() + "/big");
  big.File("f0", RandomBytes(6 * kMiB, 40));
  // Two blocks: the first one's batch uploads while the second is read,
  // and may be the one to fail.
  big.File("large", RandomBytes(24 * kMiB, 45));
  auto full = (*hub)->Ctl({"import", big.root(), "/big"});
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_NE(full->exit_code, 0);
  EXPECT_NE(full->err.find("kept free for the namespace"), std::string::npos) << full->err;
  struct statvfs st;
  ASSERT_EQ(::statvfs(fs.path().c_str(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.f_bavail) * st.f_frsize, kKeepFree / 2);

  // The namespace still takes changes: a tree without data.
  SourceTree empty(src.path() + "/empty");
  empty.File("d/nothing", "");
  auto small = (*hub)->Ctl({"import", empty.root(), "/empty"});
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->exit_code, 0) << small->out << small->err;
  // An NFS writer is told (NFS3ERR_NOSPC) rather than acknowledged.
  const std::string nfs_data = RandomBytes(4 * kMiB, 50);
  {
    auto nfs = NfsClient::Mount((*hub)->NfsUrl());
    ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
    EXPECT_FALSE((*nfs)->WriteFile("/written.bin", nfs_data, 0644, O_SYNC).ok());
  }

  // Room again: the same import completes, sending what is missing, and
  // the NFS write goes through.
  std::filesystem::remove(ballast);
  {
    auto nfs = NfsClient::Mount((*hub)->NfsUrl());
    ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
    ASSERT_TRUE((*nfs)->WriteFile("/written.bin", nfs_data, 0644, O_SYNC).ok());
    EXPECT_TRUE(*(*nfs)->ReadFile("/written.bin") == nfs_data);
  }
  auto again = (*hub)->Ctl({"import", big.root(), "/big"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->exit_code, 0) << again->out << again->err;
  ExpectHubHolds(**hub, big, "/big");
  ExpectHubHolds(**hub, empty, "/empty");
  ExpectFsckClean(**hub);
  ASSERT_TRUE((*hub)->Stop().ok()) << (*hub)->Log();
}

TEST(HubProcessFullDiskTest, TheNamespaceResumesOnceItsDiskHasRoomWithoutARestart) {
  geofs::testing::MountedTmpfs fs("64m");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << fs.error();
  HubOptions options;
  options.nfs = true;
  options.data_dir = fs.path() + "/hub";
  auto hub = HubProcess::Create(options);
  ASSERT_TRUE(hub.ok()) << hub.status().ToString();
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();
  auto nfs = NfsClient::Mount((*hub)->NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
  ASSERT_TRUE((*nfs)->WriteFile("/before.txt", "before", 0644, O_SYNC).ok());

  // Something else fills the disk the namespace is on: the next change that
  // needs room fails (NFS3ERR_NOSPC), acknowledged as nothing else.
  const std::string ballast = fs.path() + "/ballast";
  ASSERT_TRUE(geofs::testing::FillFileSystem(ballast));
  nfs_context* ctx = (*nfs)->ctx();
  int made = 0, rc = 0;
  for (; made < 200; ++made) {
    rc = nfs_mkdir(ctx, ("/d" + std::to_string(made)).c_str());
    if (rc != 0) break;
  }
  ASSERT_NE(rc, 0) << "the namespace never ran out of room";
  EXPECT_EQ(rc, -ENOSPC) << (*nfs)->Error();
  EXPECT_EQ(*(*nfs)->ReadFile("/before.txt"), "before");  // reads go on
  EXPECT_NE(nfs_mkdir(ctx, "/later"), 0);
  EXPECT_EQ(Stats(**hub)["namespace_writes_stopped"], true);

  // Room again: changes go through without a restart (the first may be
  // asked to retry while the store reopens).
  std::filesystem::remove(ballast);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((rc = nfs_mkdir(ctx, "/later")) != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(rc, 0) << (*nfs)->Error() << (*hub)->Log();
  const std::string data = RandomBytes(kMiB, 60);
  ASSERT_TRUE((*nfs)->WriteFile("/after.bin", data, 0644, O_SYNC).ok());
  EXPECT_TRUE(*(*nfs)->ReadFile("/after.bin") == data);
  EXPECT_NE((*hub)->Log().find("has room again"), std::string::npos) << (*hub)->Log();
  EXPECT_EQ(Stats(**hub)["namespace_writes_stopped"], false);
  ExpectFsckClean(**hub);

  // Everything acknowledged, before and after, survives a restart.
  nfs->reset();
  ASSERT_TRUE((*hub)->Stop().ok()) << (*hub)->Log();
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();
  nfs = NfsClient::Mount((*hub)->NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
  EXPECT_EQ(*(*nfs)->ReadFile("/before.txt"), "before");
  EXPECT_TRUE(*(*nfs)->ReadFile("/after.bin") == data);
  EXPECT_TRUE((*nfs)->Stat("/later").ok());
  for (int i = 0; i < made; ++i) EXPECT_TRUE((*nfs)->Stat("/d" + std::to_string(i)).ok()) << i;
  ExpectFsckClean(**hub);
  ASSERT_TRUE((*hub)->Stop().ok()) << (*hub)->Log();
}

}  // namespace
}  // namespace geofs::hub::testing
