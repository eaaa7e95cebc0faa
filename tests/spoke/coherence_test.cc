// Coherence across a hub and two spokes, all processes: every change type
// made through spoke A, spoke B or the hub's own NFS export is seen by the
// other two on their next read, while they hold leases on what changed (so
// it is the hub's invalidation that makes them see it, not lease expiry).
// And a FILE_SYNC write acknowledged by a spoke that is then killed -9
// reaches the hub once the spoke restarts.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
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
using Clock = std::chrono::steady_clock;

// Far below the lease TTL: a reader that sees a change within it was
// invalidated, its lease had not run out.
constexpr std::chrono::seconds kLeaseTtl{2};
constexpr std::chrono::seconds kUploadWait{10};

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// One way into the portal: a spoke's export (the portal is its root) or the
// hub's (the portal is /datasets).
struct Site {
  std::string name;
  SpokeProcess* spoke = nullptr;  // null: the hub
  std::unique_ptr<NfsClient> nfs;
  std::string prefix;
  std::string Path(const std::string& rel) const { return prefix + "/" + rel; }
};

enum class Writer { kSpokeA, kSpokeB, kHub };

// A hub (serving NFS too) and spokes A and B over its portal /datasets, each
// mounted with libnfs.
class ThreeSitesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HubOptions hub_options;
    hub_options.nfs = true;
    hub_options.extra_args = {"--lease-ttl", std::to_string(kLeaseTtl.count())};
    auto hub = HubProcess::Create(hub_options);
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
    ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();
    // The portal, with one file in it.
    std::ofstream(src_.path() + "/readme.txt") << "portal\n";
    auto imported = hub_->Ctl({"import", src_.path(), "/datasets"});
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_EQ(imported->exit_code, 0) << imported->err;

    for (auto* spoke : {&spoke_a_, &spoke_b_}) {
      SpokeProcessOptions options;
      options.hub_address = hub_->grpc_address();
      options.extra_args = {"--squash", "none"};
      auto created = SpokeProcess::Create(options);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      *spoke = std::move(created).value();
      ASSERT_TRUE((*spoke)->Start().ok()) << (*spoke)->Log();
    }
    a_ = MakeSite("spoke A", spoke_a_.get());
    b_ = MakeSite("spoke B", spoke_b_.get());
    hub_site_ = MakeSite("hub", nullptr);
    ASSERT_TRUE(a_.nfs && b_.nfs && hub_site_.nfs);
  }

  void TearDown() override {
    for (auto* spoke : {&spoke_a_, &spoke_b_}) {
      if (*spoke) {
        EXPECT_TRUE((*spoke)->Stop().ok()) << (*spoke)->Log();
      }
    }
    if (hub_ && hub_->running()) {
      EXPECT_TRUE(hub_->Stop().ok()) << hub_->Log();
    }
  }

  Site MakeSite(std::string name, SpokeProcess* spoke) {
    Site site;
    site.name = std::move(name);
    site.spoke = spoke;
    site.prefix = spoke ? "" : "/datasets";
    auto nfs = NfsClient::Mount(spoke ? spoke->NfsUrl() : hub_->NfsUrl());
    EXPECT_TRUE(nfs.ok()) << site.name << ": " << nfs.status().ToString();
    if (nfs.ok()) site.nfs = std::move(nfs).value();
    return site;
  }

  static double Metric(const SpokeProcess& spoke, const std::string& name) {
    auto m = spoke.Metrics();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return -1;
    auto it = m->find(name);
    EXPECT_NE(it, m->end()) << name;
    return it == m->end() ? -1 : it->second;
  }

  // Waits (bounded) until `site`'s journal is committed at the hub.
  static void WaitUploaded(const Site& site) {
    if (!site.spoke) return;
    Status drained = site.spoke->WaitJournalDrained(kUploadWait);
    ASSERT_TRUE(drained.ok()) << site.name << " did not upload: " << drained.ToString() << "\n"
                              << site.spoke->Log();
  }

  Site& WriterSite() {
    switch (writer_) {
      case Writer::kSpokeA:
        return a_;
      case Writer::kSpokeB:
        return b_;
      case Writer::kHub:
        return hub_site_;
    }
    return hub_site_;
  }
  std::vector<Site*> Readers() {
    std::vector<Site*> out;
    for (Site* s : {&a_, &b_, &hub_site_}) {
      if (s != &WriterSite()) out.push_back(s);
    }
    return out;
  }
  // The spokes among the readers: those that hold leases.
  std::vector<SpokeProcess*> ReaderSpokes() {
    std::vector<SpokeProcess*> out;
    for (Site* s : Readers()) {
      if (s->spoke) out.push_back(s->spoke);
    }
    return out;
  }

  // Makes one change through the writer: `prime` runs on every reader
  // first (so it caches and leases the old state), then `change` on the
  // writer, then (once a spoke writer's journal is at the hub) `check` on
  // every reader at once. Records how long the change took (it includes
  // the hub's invalidation round trips) and how soon after it the readers
  // were checked.
  void Change(const std::string& what, const std::function<void(Site&)>& prime,
              const std::function<void(Site&)>& change, const std::function<void(Site&)>& check) {
    SCOPED_TRACE(what + " through " + WriterSite().name);
    for (Site* r : Readers()) prime(*r);
    for (SpokeProcess* s : ReaderSpokes()) {
      EXPECT_GT(Metric(*s, "geofs_spoke_leases_held"), 0) << what;
    }
    auto start = Clock::now();
    change(WriterSite());
    auto changed = Clock::now();
    WaitUploaded(WriterSite());
    auto visible = Clock::now();
    for (Site* r : Readers()) {
      SCOPED_TRACE("read through " + r->name);
      check(*r);
    }
    EXPECT_LT(Clock::now() - changed, kLeaseTtl) << "too slow to prove invalidation";
    change_ms_.push_back(std::chrono::duration<double, std::milli>(changed - start).count());
    upload_ms_.push_back(std::chrono::duration<double, std::milli>(visible - changed).count());
  }

  static void ExpectContent(Site& s, const std::string& rel, const std::string& data) {
    auto back = s.nfs->ReadFile(s.Path(rel));
    ASSERT_TRUE(back.ok()) << rel << ": " << back.status().ToString();
    EXPECT_TRUE(*back == data) << rel << ": " << back->size() << " bytes vs " << data.size();
  }
  // `rel` does not exist, and a spoke knows it: asked again, it answers
  // from its cache (the hub leased the directory with the first answer, so
  // a later create there must invalidate it).
  static void ExpectMissing(Site& s, const std::string& rel) {
    EXPECT_FALSE(s.nfs->Stat(s.Path(rel)).ok()) << rel;
    const double misses = s.spoke ? Metric(*s.spoke, "geofs_spoke_metadata_misses_total") : 0;
    EXPECT_FALSE(s.nfs->Stat(s.Path(rel)).ok()) << rel;
    if (s.spoke) {
      EXPECT_EQ(Metric(*s.spoke, "geofs_spoke_metadata_misses_total"), misses)
          << rel << ": the second lookup went to the hub";
    }
  }
  static bool Listed(Site& s, const std::string& name) {
    auto names = s.nfs->ListNames(s.prefix.empty() ? "/" : s.prefix);
    EXPECT_TRUE(names.ok()) << names.status().ToString();
    return names.ok() && std::find(names->begin(), names->end(), name) != names->end();
  }
  void Put(const std::string& rel, const std::string& data) {
    Site& w = WriterSite();
    ASSERT_TRUE(w.nfs->WriteFile(w.Path(rel), data).ok()) << w.nfs->Error();
    WaitUploaded(w);
  }

  static std::string Percentiles(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) { return ms[static_cast<size_t>(q * (ms.size() - 1))]; };
    char buf[96];
    std::snprintf(buf, sizeof(buf), "p50 %.1f ms, p99 %.1f ms, max %.1f ms", at(0.5), at(0.99),
                  ms.back());
    return buf;
  }

  hub::testing::TempDir src_;
  std::unique_ptr<HubProcess> hub_;
  std::unique_ptr<SpokeProcess> spoke_a_, spoke_b_;
  Site a_, b_, hub_site_;
  Writer writer_ = Writer::kHub;  // whose changes Change() makes
  std::vector<double> change_ms_, upload_ms_;
};

class CoherenceTest : public ThreeSitesTest, public ::testing::WithParamInterface<Writer> {
 protected:
  void SetUp() override {
    writer_ = GetParam();
    ThreeSitesTest::SetUp();
  }
};

TEST_P(CoherenceTest, EveryChangeIsSeenByTheOtherTwoWhileTheyHoldLeases) {
  std::vector<double> invalidations_before;
  for (SpokeProcess* s : ReaderSpokes()) {
    invalidations_before.push_back(Metric(*s, "geofs_spoke_invalidations_total"));
  }
  SpokeProcess* writer_spoke = WriterSite().spoke;
  const double deferred_before =
      writer_spoke ? Metric(*writer_spoke, "geofs_spoke_changes_deferred_total") : 0;

  const std::string old_data = RandomBytes(200 << 10, 1);
  const std::string new_data = RandomBytes(300 << 10, 2) + "new";
  Put("written.bin", old_data);
  Change(
      "write+commit", [&](Site& r) { ExpectContent(r, "written.bin", old_data); },
      [&](Site& w) { ASSERT_TRUE(w.nfs->WriteFile(w.Path("written.bin"), new_data).ok()); },
      [&](Site& r) { ExpectContent(r, "written.bin", new_data); });

  Change(
      "create",
      [&](Site& r) {
        ExpectMissing(r, "created.txt");
        EXPECT_FALSE(Listed(r, "created.txt"));
      },
      [&](Site& w) { ASSERT_TRUE(w.nfs->WriteFile(w.Path("created.txt"), "created").ok()); },
      [&](Site& r) {
        EXPECT_TRUE(Listed(r, "created.txt"));
        ExpectContent(r, "created.txt", "created");
      });

  Put("removed.txt", "to be removed");
  Change(
      "remove",
      [&](Site& r) {
        ExpectContent(r, "removed.txt", "to be removed");
        EXPECT_TRUE(Listed(r, "removed.txt"));
      },
      [&](Site& w) { ASSERT_EQ(nfs_unlink(w.nfs->ctx(), w.Path("removed.txt").c_str()), 0); },
      [&](Site& r) {
        EXPECT_FALSE(r.nfs->Stat(r.Path("removed.txt")).ok());
        EXPECT_FALSE(Listed(r, "removed.txt"));
      });

  Put("renamed.txt", "moving");
  Change(
      "rename",
      [&](Site& r) {
        ExpectContent(r, "renamed.txt", "moving");
        ExpectMissing(r, "moved.txt");
      },
      [&](Site& w) {
        ASSERT_EQ(
            nfs_rename(w.nfs->ctx(), w.Path("renamed.txt").c_str(), w.Path("moved.txt").c_str()), 0)
            << w.nfs->Error();
      },
      [&](Site& r) {
        EXPECT_FALSE(r.nfs->Stat(r.Path("renamed.txt")).ok());
        ExpectContent(r, "moved.txt", "moving");
      });

  Put("mode.txt", "mode");
  Change(
      "setattr(mode)",
      [&](Site& r) {
        auto st = r.nfs->Stat(r.Path("mode.txt"));
        ASSERT_TRUE(st.ok());
        EXPECT_EQ(st->nfs_mode & 0777, 0644u);
      },
      [&](Site& w) { ASSERT_EQ(nfs_chmod(w.nfs->ctx(), w.Path("mode.txt").c_str(), 0600), 0); },
      [&](Site& r) {
        auto st = r.nfs->Stat(r.Path("mode.txt"));
        ASSERT_TRUE(st.ok());
        EXPECT_EQ(st->nfs_mode & 0777, 0600u);
      });

  Change(
      "mkdir",
      [&](Site& r) {
        ExpectMissing(r, "dir");
        EXPECT_FALSE(Listed(r, "dir"));
      },
      [&](Site& w) { ASSERT_EQ(nfs_mkdir(w.nfs->ctx(), w.Path("dir").c_str()), 0); },
      [&](Site& r) {
        EXPECT_TRUE(Listed(r, "dir"));
        auto st = r.nfs->Stat(r.Path("dir"));
        ASSERT_TRUE(st.ok());
        EXPECT_TRUE(S_ISDIR(st->nfs_mode));
      });

  Change(
      "symlink",
      [&](Site& r) {
        ExpectMissing(r, "sym");
        EXPECT_FALSE(Listed(r, "sym"));
      },
      [&](Site& w) {
        ASSERT_EQ(nfs_symlink(w.nfs->ctx(), "moved.txt", w.Path("sym").c_str()), 0)
            << w.nfs->Error();
      },
      [&](Site& r) {
        char target[64] = {};
        ASSERT_EQ(nfs_readlink(r.nfs->ctx(), r.Path("sym").c_str(), target, sizeof(target)), 0);
        EXPECT_STREQ(target, "moved.txt");
      });

  Put("linked.txt", "linked");
  Change(
      "link",
      [&](Site& r) {
        auto st = r.nfs->Stat(r.Path("linked.txt"));
        ASSERT_TRUE(st.ok());
        EXPECT_EQ(st->nfs_nlink, 1u);
        ExpectMissing(r, "hard.txt");
      },
      [&](Site& w) {
        ASSERT_EQ(nfs_link(w.nfs->ctx(), w.Path("linked.txt").c_str(), w.Path("hard.txt").c_str()),
                  0)
            << w.nfs->Error();
      },
      [&](Site& r) {
        auto st = r.nfs->Stat(r.Path("linked.txt"));
        ASSERT_TRUE(st.ok());
        EXPECT_EQ(st->nfs_nlink, 2u);
        ExpectContent(r, "hard.txt", "linked");
      });

  // The readers' leases were broken by the hub, not waited out.
  auto spokes = ReaderSpokes();
  for (size_t i = 0; i < spokes.size(); ++i) {
    EXPECT_GT(Metric(*spokes[i], "geofs_spoke_invalidations_total"), invalidations_before[i]);
  }
  // A spoke's change that had to wait for the readers came back deferred
  // from its batch and went again as a call of its own.
  if (writer_spoke) {
    EXPECT_GT(Metric(*writer_spoke, "geofs_spoke_changes_deferred_total"), deferred_before);
  }
  std::printf("[ coherence ] through %s: change (with invalidations) %s; upload wait %s\n",
              WriterSite().name.c_str(), Percentiles(change_ms_).c_str(),
              Percentiles(upload_ms_).c_str());
}

INSTANTIATE_TEST_SUITE_P(Writers, CoherenceTest,
                         ::testing::Values(Writer::kSpokeA, Writer::kSpokeB, Writer::kHub),
                         [](const ::testing::TestParamInfo<Writer>& info) {
                           switch (info.param) {
                             case Writer::kSpokeA:
                               return "SpokeA";
                             case Writer::kSpokeB:
                               return "SpokeB";
                             case Writer::kHub:
                               return "Hub";
                           }
                           return "Unknown";
                         });

using ImportCoherenceTest = ThreeSitesTest;

// `geofsctl import` creates small files in batches that may not wait; in a
// directory a spoke holds a lease on, each such create is deferred and the
// importer creates the file on its own, which invalidates the spoke first.
TEST_F(ImportCoherenceTest, SmallFilesImportedIntoALeasedDirectoryReachTheSpoke) {
  auto before = a_.nfs->ListNames("/");
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_EQ(std::count(before->begin(), before->end(), "readme.txt"), 1);
  for (int i = 0; i < 20; ++i) {
    std::ofstream(src_.path() + "/shard-" + std::to_string(i)) << "sample " << i << "\n";
  }
  auto imported = hub_->Ctl({"import", src_.path(), "/datasets"});
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ(imported->exit_code, 0) << imported->out << imported->err;
  // Spoke A renews its lease on the directory, so none went in a batch.
  EXPECT_EQ(imported->out.find("grouped files:"), std::string::npos) << imported->out;

  auto after = a_.nfs->ListNames("/");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  for (int i = 0; i < 20; ++i) {
    const std::string name = "shard-" + std::to_string(i);
    EXPECT_EQ(std::count(after->begin(), after->end(), name), 1) << name;
  }
  auto content = a_.nfs->ReadFile("/shard-7");
  ASSERT_TRUE(content.ok()) << content.status().ToString();
  EXPECT_EQ(*content, "sample 7\n");

  // In a new directory no spoke has seen, new files do go in a batch.
  ASSERT_EQ(::mkdir((src_.path() + "/sub").c_str(), 0755), 0);
  for (int i = 0; i < 5; ++i) {
    std::ofstream(src_.path() + "/sub/extra-" + std::to_string(i)) << i;
  }
  auto again = hub_->Ctl({"import", src_.path(), "/datasets"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->exit_code, 0) << again->out << again->err;
  EXPECT_NE(again->out.find("grouped files:    5 created"), std::string::npos) << again->out;
  auto extra = a_.nfs->ReadFile("/sub/extra-3");
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  EXPECT_EQ(*extra, "3");
}

using CrashTest = ThreeSitesTest;

TEST_F(CrashTest, AFileSyncWriteAckedBeforeKill9ReachesTheHubAfterRestart) {
  const std::string data = RandomBytes(3 << 20, 7) + "end";
  // O_SYNC: every WRITE is FILE_SYNC, answered once the journal is synced.
  Status written = a_.nfs->WriteFile("/synced.bin", data, 0644, O_SYNC);
  ASSERT_TRUE(written.ok()) << written.ToString() << "\n" << spoke_a_->Log();
  double pending = Metric(*spoke_a_, "geofs_spoke_journal_bytes");
  spoke_a_->Kill();
  std::printf("[ crash ] journal bytes pending at kill -9: %.0f\n", pending);

  a_.nfs.reset();
  ASSERT_TRUE(spoke_a_->Start().ok()) << spoke_a_->Log();
  WaitUploaded(a_);
  ExpectContent(hub_site_, "synced.bin", data);
  // And the other spoke reads the same bytes.
  ExpectContent(b_, "synced.bin", data);
}

}  // namespace
}  // namespace geofs::spoke::testing
