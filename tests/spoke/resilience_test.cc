// A spoke over a hub when things go wrong, with real geofs-hubd and
// geofs-spoked processes and libnfs clients: the hub stopped (SIGSTOP) or
// killed and restarted, the spoke cut off, the hub killed during spoke
// writes, a working set larger than the cache, a corrupt cache file, the
// cache file system full, and a change right after a hub restart.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nfsc/libnfs.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "common/mounted_tmpfs.h"
#include "pinned_hub.h"
#include "spoke_process.h"
#include "tools/nfs_client.h"
#include "tools/raw_nfs.h"

namespace geofs::spoke::testing {
namespace {

using geofs::testing::NfsClient;
using hub::testing::TempDir;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kTtl = std::chrono::seconds(2);

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Bytes the files under `dir` occupy on disk.
uint64_t DiskUse(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return total;
}

// Polls `done` every 20 ms for at most `timeout`.
bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

class ResilienceTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto& spoke : spokes_) {
      spoke->Signal(SIGCONT);
      spoke->Kill();
    }
    if (hub_) hub_->Kill();
  }

  void StartHub(const std::string& ttl_seconds = "2") {
    hub_ = std::make_unique<PinnedHub>(std::vector<std::string>{"--lease-ttl", ttl_seconds});
    Status started = hub_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  // Imports `files` (relative name -> bytes) under /datasets at the hub.
  void Import(const std::map<std::string, std::string>& files) {
    TempDir src;
    for (const auto& [rel, data] : files) {
      std::filesystem::create_directories(
          std::filesystem::path(src.path() + "/" + rel).parent_path());
      std::ofstream(src.path() + "/" + rel, std::ios::binary) << data;
    }
    auto imported = hub_->Ctl({"import", src.path(), "/datasets"});
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_EQ(imported->exit_code, 0) << imported->err;
  }

  SpokeProcess* StartSpoke(std::vector<std::string> extra_args, std::string cache_dir = "") {
    SpokeProcessOptions options;
    options.hub_address = hub_->grpc_address();
    // Trust the test's uid 0 (the default squashes root).
    options.extra_args = {"--squash", "none"};
    options.extra_args.insert(options.extra_args.end(), extra_args.begin(), extra_args.end());
    options.cache_dir = std::move(cache_dir);
    auto spoke = SpokeProcess::Create(options);
    EXPECT_TRUE(spoke.ok()) << spoke.status().ToString();
    if (!spoke.ok()) return nullptr;
    Status started = (*spoke)->Start();
    EXPECT_TRUE(started.ok()) << started.ToString() << "\n" << (*spoke)->Log();
    if (!started.ok()) return nullptr;
    spokes_.push_back(std::move(spoke).value());
    return spokes_.back().get();
  }

  static std::unique_ptr<NfsClient> Mount(const std::string& url) {
    auto nfs = NfsClient::Mount(url);
    EXPECT_TRUE(nfs.ok()) << nfs.status().ToString();
    return nfs.ok() ? std::move(nfs).value() : nullptr;
  }

  static double Metric(SpokeProcess& spoke, const std::string& name) {
    auto m = spoke.Metrics();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return -1;
    auto it = m->find(name);
    EXPECT_NE(it, m->end()) << name;
    return it == m->end() ? -1 : it->second;
  }

  static bool Connected(SpokeProcess& spoke) {
    auto m = spoke.Metrics();
    return m.ok() && (*m)["geofs_spoke_hub_connected"] == 1 && (*m)["geofs_spoke_session"] != 0;
  }

  // Until everything the spoke journalled is committed at the hub.
  static void WaitUploaded(SpokeProcess& spoke, milliseconds timeout = milliseconds(30'000)) {
    Status drained = spoke.WaitJournalDrained(timeout);
    ASSERT_TRUE(drained.ok()) << drained.ToString() << "\n" << spoke.Log();
  }

  static void ExpectFile(NfsClient& nfs, const std::string& path, const std::string& data) {
    auto back = nfs.ReadFile(path);
    ASSERT_TRUE(back.ok()) << path << ": " << back.status().ToString();
    EXPECT_EQ(back->size(), data.size()) << path;
    EXPECT_TRUE(*back == data) << path << ": content differs";
  }

  std::unique_ptr<PinnedHub> hub_;
  std::vector<std::unique_ptr<SpokeProcess>> spokes_;
};

// --- Partition: the hub stopped or killed, then back.

enum class Cut { kStop, kKill };

class PartitionTest : public ResilienceTest, public ::testing::WithParamInterface<Cut> {};

TEST_P(PartitionTest, LeasesThenJukeboxOrReadOnlyThenResumeWithoutRefetch) {
  StartHub();
  std::map<std::string, std::string> files = {{"a.bin", RandomBytes(3 << 20, 1)},
                                              {"b.bin", RandomBytes(700 << 10, 2)},
                                              {"c.txt", "before the partition\n"}};
  Import(files);
  SpokeProcess* strict = StartSpoke({});
  SpokeProcess* immutable = StartSpoke({"--immutable"});
  ASSERT_TRUE(strict && immutable);
  auto s = Mount(strict->NfsUrl());
  auto i = Mount(immutable->NfsUrl());
  ASSERT_TRUE(s && i);
  for (const auto& [rel, data] : files) {
    ExpectFile(*s, "/" + rel, data);
    ExpectFile(*i, "/" + rel, data);
  }
  const double strict_from_hub = Metric(*strict, "geofs_spoke_bytes_from_hub_total");
  const double strict_misses = Metric(*strict, "geofs_spoke_chunk_misses_total");
  const double strict_meta_misses = Metric(*strict, "geofs_spoke_metadata_misses_total");
  const double immutable_from_hub = Metric(*immutable, "geofs_spoke_bytes_from_hub_total");
  ASSERT_GT(strict_from_hub, 3 << 20);

  const auto cut_at = Clock::now();
  if (GetParam() == Cut::kStop) {
    hub_->Signal(SIGSTOP);
  } else {
    hub_->Kill();
  }
  // Within the lease the strict portal serves what it holds.
  ExpectFile(*s, "/a.bin", files["a.bin"]);
  ASSERT_LT(Clock::now() - cut_at, kTtl - milliseconds(500)) << "the machine is too slow";

  // After it, once the links noticed the hub is gone (for SIGSTOP: the
  // keepalive pings go unanswered): JUKEBOX, or read-only service.
  std::this_thread::sleep_until(cut_at + kTtl + milliseconds(500));
  for (SpokeProcess* spoke : {strict, immutable}) {
    ASSERT_TRUE(WaitFor([&] { return Metric(*spoke, "geofs_spoke_hub_connected") == 0; },
                        milliseconds(10'000)))
        << spoke->Log();
  }
  nfs_stat_64 st;
  const int rc = nfs_stat64(s->ctx(), "/a.bin", &st);
  EXPECT_EQ(rc, -EAGAIN) << s->Error() << "\n" << strict->Log();
  EXPECT_NE(s->Error().find("JUKEBOX"), std::string::npos) << s->Error();
  // The immutable portal serves its cached data, read-only, and says so.
  ExpectFile(*i, "/a.bin", files["a.bin"]);
  ExpectFile(*i, "/c.txt", files["c.txt"]);
  nfsfh* fh = nullptr;
  EXPECT_FALSE(i->WriteFile("/b.bin", "x").ok());
  EXPECT_EQ(nfs_creat(i->ctx(), "/new.txt", 0644, &fh), -EROFS) << i->Error();
  EXPECT_EQ(Metric(*immutable, "geofs_spoke_immutable"), 1);

  // The hub comes back; the spokes reconnect by themselves.
  if (GetParam() == Cut::kStop) {
    hub_->Signal(SIGCONT);
  } else {
    Status started = hub_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  ASSERT_TRUE(WaitFor([&] { return Connected(*strict); }, milliseconds(15'000))) << strict->Log();
  ASSERT_TRUE(WaitFor([&] { return Connected(*immutable); }, milliseconds(15'000)))
      << immutable->Log();

  // A file changed at the hub while the spokes were cut off from it.
  auto hub_nfs = Mount(hub_->NfsUrl());
  ASSERT_TRUE(hub_nfs);
  files["c.txt"] = "changed after the partition\n";
  ASSERT_TRUE(hub_nfs->WriteFile("/datasets/c.txt", files["c.txt"]).ok()) << hub_->Log();

  // Unchanged chunks are revalidated, not fetched again.
  for (const auto& [rel, data] : files) {
    ExpectFile(*s, "/" + rel, data);
    ExpectFile(*i, "/" + rel, data);
  }
  const double refetched = Metric(*strict, "geofs_spoke_bytes_from_hub_total") - strict_from_hub;
  std::printf("[ partition ] bytes from the hub after resuming: strict %.0f, immutable %.0f\n",
              refetched,
              Metric(*immutable, "geofs_spoke_bytes_from_hub_total") - immutable_from_hub);
  // Only c.txt changed (its new chunk, a few dozen bytes stored) may come again.
  EXPECT_LT(refetched, 4096);
  EXPECT_LE(Metric(*strict, "geofs_spoke_chunk_misses_total") - strict_misses, 1);
  EXPECT_LT(Metric(*immutable, "geofs_spoke_bytes_from_hub_total") - immutable_from_hub, 4096);
  EXPECT_GT(Metric(*strict, "geofs_spoke_metadata_misses_total"), strict_meta_misses);
  // And writes work again through the strict portal.
  EXPECT_TRUE(s->WriteFile("/after.txt", "after").ok()) << strict->Log();
}

INSTANTIATE_TEST_SUITE_P(HubCut, PartitionTest, ::testing::Values(Cut::kStop, Cut::kKill),
                         [](const ::testing::TestParamInfo<Cut>& info) {
                           return info.param == Cut::kStop ? "Sigstop" : "Kill9AndRestart";
                         });

TEST_F(ResilienceTest, AChangeWhileTheSpokeIsCutOffIsSeenOnceItIsBack) {
  StartHub();
  const std::string big = RandomBytes(2 << 20, 3);
  Import({{"big.bin", big}, {"c.txt", "old"}});
  SpokeProcess* spoke = StartSpoke({});
  ASSERT_TRUE(spoke);
  auto s = Mount(spoke->NfsUrl());
  auto h = Mount(hub_->NfsUrl());
  ASSERT_TRUE(s && h);
  ExpectFile(*s, "/c.txt", "old");
  ExpectFile(*s, "/big.bin", big);
  const double from_hub = Metric(*spoke, "geofs_spoke_bytes_from_hub_total");

  spoke->Signal(SIGSTOP);
  // The hub cannot reach the spoke: the change waits out its lease.
  const auto t0 = Clock::now();
  ASSERT_TRUE(h->WriteFile("/datasets/c.txt", "new").ok());
  std::printf(
      "[ cut off ] change waited %lld ms for the silent spoke's lease\n",
      static_cast<long long>(std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count()));
  spoke->Signal(SIGCONT);

  ExpectFile(*s, "/c.txt", "new");
  ExpectFile(*s, "/big.bin", big);
  // Only the new content of c.txt (a few bytes) came again.
  EXPECT_LT(Metric(*spoke, "geofs_spoke_bytes_from_hub_total") - from_hub, 4096);
}

// --- Crash: the hub killed -9 during a stream of stable spoke writes.

TEST_F(ResilienceTest, StableWritesSurviveAHubKilledDuringThem) {
  StartHub();
  Import({{"keep.txt", "keep"}});
  SpokeProcess* spoke = StartSpoke({});
  ASSERT_TRUE(spoke);
  auto s = Mount(spoke->NfsUrl());
  ASSERT_TRUE(s);

  // Files 0 and 1 are written FILE_SYNC (O_SYNC), 2 and 3 UNSTABLE and
  // then COMMITted (fsync); acked[f] is how far each is acknowledged.
  constexpr int kFiles = 4;
  constexpr size_t kBlock = 96 << 10;
  constexpr size_t kMax = 16 << 20;
  std::vector<std::string> data;
  std::vector<nfsfh*> fhs(kFiles);
  std::vector<size_t> acked(kFiles, 0);
  for (int f = 0; f < kFiles; ++f) {
    data.push_back(RandomBytes(kMax, 100 + f));
    const std::string path = "/w" + std::to_string(f) + ".bin";
    const int flags = O_WRONLY | O_CREAT | O_TRUNC | (f < 2 ? O_SYNC : 0);
    ASSERT_EQ(nfs_open2(s->ctx(), path.c_str(), flags, 0644, &fhs[f]), 0) << s->Error();
  }

  // The writer runs on a thread of its own: the hub must be restarted by the
  // main thread, since a child dies with the thread that forked it
  // (PR_SET_PDEATHSIG).
  std::atomic<bool> hub_down{false}, stop{false};
  std::atomic<int> acked_while_down{0};
  int failures = 0;
  std::thread writer([&] {
    while (!stop) {
      for (int f = 0; f < kFiles && !stop; ++f) {
        if (acked[f] + kBlock > kMax) continue;
        int rc = nfs_pwrite(s->ctx(), fhs[f], acked[f], kBlock, data[f].data() + acked[f]);
        if (rc == static_cast<int>(kBlock) && f >= 2) {
          rc = nfs_fsync(s->ctx(), fhs[f]) == 0 ? rc : -1;
        }
        if (rc != static_cast<int>(kBlock)) {
          // Not acknowledged: written again (same bytes) on the next round.
          ++failures;
          std::this_thread::sleep_for(milliseconds(20));
          continue;
        }
        acked[f] += kBlock;
        if (hub_down) ++acked_while_down;
      }
      // A steady stream, spread over the whole crash and restart.
      std::this_thread::sleep_for(milliseconds(25));
    }
  });
  std::this_thread::sleep_for(milliseconds(700));
  hub_->Kill();
  hub_down = true;
  std::this_thread::sleep_for(milliseconds(700));
  Status restarted = hub_->Start();
  hub_down = false;
  std::this_thread::sleep_for(milliseconds(1500));
  stop = true;
  writer.join();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  for (int f = 0; f < kFiles; ++f) nfs_close(s->ctx(), fhs[f]);
  std::printf(
      "[ hub crash ] acknowledged %zu %zu %zu %zu bytes; %d while the hub was down, %d "
      "refused\n",
      acked[0], acked[1], acked[2], acked[3], acked_while_down.load(), failures);
  EXPECT_GT(acked_while_down.load(), 0);

  WaitUploaded(*spoke, milliseconds(60'000));
  auto h = Mount(hub_->NfsUrl());
  ASSERT_TRUE(h);
  for (int f = 0; f < kFiles; ++f) {
    ASSERT_GT(acked[f], 0u);
    ExpectFile(*h, "/datasets/w" + std::to_string(f) + ".bin", data[f].substr(0, acked[f]));
  }
  auto fsck = hub_->Ctl({"fsck"});
  ASSERT_TRUE(fsck.ok()) << fsck.status().ToString();
  EXPECT_EQ(fsck->exit_code, 0) << fsck->out << fsck->err;
  EXPECT_NE(fsck->out.find("clean"), std::string::npos) << fsck->out;
}

// --- Cache.

TEST_F(ResilienceTest, AWorkingSetTwiceTheCacheStaysWithinItsSize) {
  StartHub();
  constexpr uint64_t kCache = 8 << 20;
  std::map<std::string, std::string> files;
  for (int f = 0; f < 8; ++f) files["set/f" + std::to_string(f)] = RandomBytes(2 << 20, 200 + f);
  Import(files);
  SpokeProcess* spoke = StartSpoke({"--cache-size", "8M"});
  ASSERT_TRUE(spoke);
  auto s = Mount(spoke->NfsUrl());
  ASSERT_TRUE(s);

  uint64_t peak = 0;
  double hits = Metric(*spoke, "geofs_spoke_chunk_hits_total");
  double misses = Metric(*spoke, "geofs_spoke_chunk_misses_total");
  for (int pass = 1; pass <= 2; ++pass) {
    for (const auto& [rel, data] : files) {
      ExpectFile(*s, "/" + rel, data);
      peak = std::max(peak, DiskUse(spoke->cache_dir() + "/chunks"));
    }
    const double h = Metric(*spoke, "geofs_spoke_chunk_hits_total");
    const double m = Metric(*spoke, "geofs_spoke_chunk_misses_total");
    std::printf("[ cache ] pass %d over 2x the cache: hit ratio %.1f%% (%.0f hits, %.0f misses)\n",
                pass, 100 * (h - hits) / std::max(1.0, h - hits + m - misses), h - hits,
                m - misses);
    hits = h;
    misses = m;
  }
  std::printf("[ cache ] peak disk use %.2f MiB for an 8 MiB cache\n", peak / 1048576.0);
  // Slack: each file's 64-byte header and block rounding.
  EXPECT_LE(peak, kCache + (1 << 20));
  EXPECT_TRUE(spoke->Alive());
}

TEST_F(ResilienceTest, ACorruptCacheFileIsDetectedAndRefetched) {
  StartHub();
  const std::string big = RandomBytes(3 << 20, 4);
  Import({{"big.bin", big}});
  SpokeProcess* spoke = StartSpoke({});
  ASSERT_TRUE(spoke);
  {
    auto s = Mount(spoke->NfsUrl());
    ASSERT_TRUE(s);
    ExpectFile(*s, "/big.bin", big);
  }
  ASSERT_TRUE(spoke->Stop().ok()) << spoke->Log();

  // Flip one payload byte of the largest cached chunk.
  std::string victim;
  uintmax_t victim_size = 0;
  size_t chunks = 0;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(spoke->cache_dir() + "/chunks")) {
    if (!e.is_regular_file()) continue;
    ++chunks;
    if (e.file_size() > victim_size) {
      victim_size = e.file_size();
      victim = e.path();
    }
  }
  ASSERT_GT(chunks, 1u);
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(victim_size / 2));
    char c;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(victim_size / 2));
    f.put(static_cast<char>(c ^ 0x5a));
  }

  // After a restart the memory tier is empty: the read hits the disk.
  ASSERT_TRUE(spoke->Start().ok()) << spoke->Log();
  auto s = Mount(spoke->NfsUrl());
  ASSERT_TRUE(s);
  ExpectFile(*s, "/big.bin", big);
  EXPECT_EQ(Metric(*spoke, "geofs_spoke_chunk_misses_total"), 1);
  const double refetched = Metric(*spoke, "geofs_spoke_bytes_from_hub_total");
  EXPECT_GT(refetched, 0);
  EXPECT_LT(refetched, big.size());
  ASSERT_TRUE(std::filesystem::exists(victim));
  // Read again: served from the repaired cache file.
  ExpectFile(*s, "/big.bin", big);
  EXPECT_EQ(Metric(*spoke, "geofs_spoke_bytes_from_hub_total"), refetched);
}

// --- ENOSPC: the cache directory on a small tmpfs.

TEST_F(ResilienceTest, AFullCacheFileSystemEvictsRefusesWritesAndLosesNothing) {
  geofs::testing::MountedTmpfs fs("16m");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << fs.error();
  // A long lease: the stopped hub below must not make writes wait for it.
  StartHub("30");
  std::map<std::string, std::string> files;
  for (int f = 0; f < 6; ++f) files["r" + std::to_string(f)] = RandomBytes(4 << 20, 300 + f);
  Import(files);
  SpokeProcess* spoke = StartSpoke({}, fs.path() + "/cache");
  ASSERT_TRUE(spoke);
  auto s = Mount(spoke->NfsUrl());
  ASSERT_TRUE(s);

  // Reads of 24 MiB through 16 MiB of file system: the cache evicts.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [rel, data] : files) ExpectFile(*s, "/" + rel, data);
  }
  struct statvfs vfs;
  ASSERT_EQ(::statvfs(fs.path().c_str(), &vfs), 0);
  std::printf("[ enospc ] after reads: %.2f MiB free of 16, cache %.2f MiB\n",
              vfs.f_bavail * vfs.f_frsize / 1048576.0,
              DiskUse(spoke->cache_dir() + "/chunks") / 1048576.0);
  EXPECT_GT(vfs.f_bavail, 0u);

  // With the hub stopped the journal cannot drain: it fills the disk. Raw
  // FILE_SYNC WRITEs, so that the test sees the NFS status itself.
  nfsfh* fh = nullptr;
  ASSERT_EQ(nfs_creat(s->ctx(), "/journalled.bin", 0644, &fh), 0) << s->Error();
  ASSERT_EQ(nfs_close(s->ctx(), fh), 0);
  geofs::testing::RawOptions raw_options;
  raw_options.nfs_port = spoke->nfs_port();
  raw_options.mount_port = spoke->mount_port();
  raw_options.export_path = "/datasets";
  auto raw = geofs::testing::RawNfs::Connect(raw_options);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  auto file = (*raw)->Lookup((*raw)->root(), "journalled.bin");
  ASSERT_TRUE(file.ok() && file->status == NFS3_OK);
  hub_->Signal(SIGSTOP);
  constexpr size_t kBlock = 256 << 10;
  const std::string data = RandomBytes(32 << 20, 5);
  size_t acked = 0;
  nfsstat3 status = NFS3_OK;
  while (acked + kBlock <= data.size()) {
    auto w =
        (*raw)->Write(file->fh, acked, std::string_view(data).substr(acked, kBlock), FILE_SYNC);
    ASSERT_TRUE(w.ok()) << w.status().ToString() << "\n" << spoke->Log();
    status = w->status;
    if (status != NFS3_OK) break;
    ASSERT_EQ(w->count, kBlock);
    acked += kBlock;
  }
  EXPECT_EQ(status, NFS3ERR_NOSPC) << spoke->Log();
  // Still refused, still alive.
  auto again =
      (*raw)->Write(file->fh, acked, std::string_view(data).substr(acked, kBlock), FILE_SYNC);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, NFS3ERR_NOSPC);
  EXPECT_TRUE(spoke->Alive());
  std::printf("[ enospc ] %zu bytes journalled before NFS3ERR_NOSPC\n", acked);
  EXPECT_GT(acked, 0u);

  // The hub is back: the journal drains, every acknowledged byte reaches it.
  hub_->Signal(SIGCONT);
  WaitUploaded(*spoke, milliseconds(60'000));
  auto h = Mount(hub_->NfsUrl());
  ASSERT_TRUE(h);
  ExpectFile(*h, "/datasets/journalled.bin", data.substr(0, acked));
  // And there is room for writes again.
  Status later = s->WriteFile("/later.bin", data.substr(0, kBlock));
  EXPECT_TRUE(later.ok()) << later.ToString() << "\n" << spoke->Log();
  EXPECT_TRUE(spoke->Alive());
}

// --- Hub restart: it no longer knows the leases it granted.

TEST_F(ResilienceTest, AfterAHubRestartChangesWaitForLeasesGrantedBefore) {
  StartHub();
  Import({{"d.txt", "before the restart"}});
  SpokeProcess* spoke = StartSpoke({});
  ASSERT_TRUE(spoke);
  auto s = Mount(spoke->NfsUrl());
  ASSERT_TRUE(s);
  // A fresh lease on d.txt, granted no earlier than `leased_at`.
  const auto leased_at = Clock::now();
  ExpectFile(*s, "/d.txt", "before the restart");

  hub_->Kill();
  Status started = hub_->Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  auto h = Mount(hub_->NfsUrl());
  ASSERT_TRUE(h);
  ASSERT_TRUE(h->WriteFile("/datasets/d.txt", "after the restart").ok()) << hub_->Log();
  const auto committed_at = Clock::now();
  const auto waited = std::chrono::duration_cast<milliseconds>(committed_at - leased_at);
  std::printf("[ hub restart ] change committed %lld ms after the spoke's lease began\n",
              static_cast<long long>(waited.count()));
  // The spoke may trust its lease until leased_at + ttl - margin (0.5 s).
  EXPECT_GE(committed_at, leased_at + kTtl - milliseconds(400)) << hub_->Log();
  EXPECT_NE(hub_->Log().find("holding changes"), std::string::npos) << hub_->Log();

  ASSERT_TRUE(WaitFor([&] { return Connected(*spoke); }, milliseconds(15'000))) << spoke->Log();
  ExpectFile(*s, "/d.txt", "after the restart");
}

}  // namespace
}  // namespace geofs::spoke::testing
