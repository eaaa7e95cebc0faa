// CreateLog (the durable log of creates answered by a spoke) on a real file,
// and LocalCreates (when and how they are sent) over a scripted hub.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "spoke/create_log.h"
#include "spoke/hub_convert.h"
#include "spoke/local_creates.h"
#include "tools/temp_dir.h"

namespace geofs::spoke {
namespace {

using testutil::TempDir;

LoggedCreate Logged(uint64_t ino, const std::string& name) {
  v1::CreateRequest req;
  req.set_name(name);
  req.set_reserved_ino(ino);
  std::string bytes;
  req.SerializeToString(&bytes);
  return LoggedCreate{ino, ino * 7, bytes};
}

std::string NameOf(const LoggedCreate& c) {
  v1::CreateRequest req;
  EXPECT_TRUE(req.ParseFromString(c.request));
  return req.name();
}

std::unique_ptr<CreateLog> OpenLog(const std::string& path, std::vector<LoggedCreate>* open,
                                   uint64_t compact_bytes = 4 << 20) {
  auto log = CreateLog::Open(CreateLogOptions{path, compact_bytes}, open);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

TEST(CreateLogTest, ReopeningFoldsPutsAndDrops) {
  TempDir dir;
  const std::string path = dir.path() + "/log";
  std::vector<LoggedCreate> open;
  {
    auto log = OpenLog(path, &open);
    ASSERT_TRUE(log);
    EXPECT_TRUE(open.empty());
    ASSERT_TRUE(log->Put(Logged(10, "a")).ok());
    ASSERT_TRUE(log->Put(Logged(11, "b")).ok());
    ASSERT_TRUE(log->Put(Logged(12, "c")).ok());
    ASSERT_TRUE(log->Drop(11).ok());
    ASSERT_TRUE(log->Put(Logged(12, "c-amended")).ok());
    ASSERT_TRUE(log->Sync().ok());
    EXPECT_EQ(log->open_creates(), 2u);
  }
  auto log = OpenLog(path, &open);
  ASSERT_TRUE(log);
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].ino, 10u);
  EXPECT_EQ(open[0].gen, 70u);
  EXPECT_EQ(NameOf(open[0]), "a");
  EXPECT_EQ(open[1].ino, 12u);
  EXPECT_EQ(NameOf(open[1]), "c-amended");
}

TEST(CreateLogTest, ATornTailIsCutOffAndTheLogGoesOn) {
  TempDir dir;
  const std::string path = dir.path() + "/log";
  std::vector<LoggedCreate> open;
  uint64_t good = 0;
  {
    auto log = OpenLog(path, &open);
    ASSERT_TRUE(log->Put(Logged(1, "kept")).ok());
    ASSERT_TRUE(log->Sync().ok());
    good = log->bytes();
    ASSERT_TRUE(log->Put(Logged(2, "torn")).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  // The second record half written; then a flipped byte in a third.
  std::filesystem::resize_file(path, good + 10);
  {
    auto log = OpenLog(path, &open);
    ASSERT_EQ(open.size(), 1u);
    EXPECT_EQ(NameOf(open[0]), "kept");
    EXPECT_EQ(log->bytes(), good);
    ASSERT_TRUE(log->Put(Logged(3, "after")).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(good + 12));
    f.put('\x5a');
  }
  auto log = OpenLog(path, &open);
  ASSERT_EQ(open.size(), 1u) << "a corrupt record was believed";
  EXPECT_EQ(NameOf(open[0]), "kept");
}

TEST(CreateLogTest, CompactionKeepsExactlyTheOpenCreates) {
  TempDir dir;
  const std::string path = dir.path() + "/log";
  std::vector<LoggedCreate> open;
  {
    auto log = OpenLog(path, &open, /*compact_bytes=*/2048);
    for (uint64_t ino = 1; ino <= 500; ++ino) {
      ASSERT_TRUE(log->Put(Logged(ino, "f" + std::to_string(ino))).ok());
      if (ino % 100 != 0) {
        ASSERT_TRUE(log->Drop(ino).ok());
      }
      if (ino % 50 == 0) {
        ASSERT_TRUE(log->Sync().ok());
      }
    }
    ASSERT_TRUE(log->Sync().ok());
    EXPECT_LT(log->bytes(), 4096u) << "the log was not compacted";
    // Appends after a compaction land in the new file.
    ASSERT_TRUE(log->Put(Logged(1000, "late")).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".new"));
  auto log = OpenLog(path, &open);
  ASSERT_EQ(open.size(), 6u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(open[i].ino, (i + 1) * 100);
  EXPECT_EQ(NameOf(open[5]), "late");
}

TEST(CreateLogTest, ConcurrentSyncsAllReturn) {
  TempDir dir;
  std::vector<LoggedCreate> open;
  auto log = OpenLog(dir.path() + "/log", &open);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const uint64_t ino = static_cast<uint64_t>(t * 100 + i + 1);
        if (log->Put(Logged(ino, "x")).ok() && log->Sync().ok()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 160);
  EXPECT_EQ(log->open_creates(), 160u);
}

// ---- LocalCreates over a scripted hub ----------------------------------------

constexpr FileKey kDir{5, 55};

class LocalCreatesSendTest : public ::testing::Test {
 protected:
  struct Sent {
    v1::CreateRequest request;
    std::function<void(Result<v1::CreateResponse>)> done;
  };

  void Start(std::vector<LoggedCreate> recovered = {}) {
    log_ = OpenLog(dir_.path() + "/log", &open_);
    LocalCreatesHooks hooks;
    hooks.send = [this](const v1::CreateRequest& req,
                        std::function<void(Result<v1::CreateResponse>)> done) {
      std::lock_guard lock(mu_);
      sent_.push_back(Sent{req, std::move(done)});
      cv_.notify_all();
    };
    hooks.reserve = [](uint32_t count,
                       std::function<void(Result<v1::ReserveInodesResponse>)> done) {
      v1::ReserveInodesResponse r;
      r.set_first(1000);
      for (uint32_t i = 0; i < count; ++i) r.add_generations(9000 + i);
      done(r);
    };
    hooks.committed = [this](const FileKey& dir, uint64_t ino) {
      std::lock_guard lock(mu_);
      committed_.push_back(ino);
      EXPECT_EQ(dir, kDir);
    };
    hooks.run = [](std::function<void()> task) { task(); };
    LocalCreatesOptions options;
    options.delay = std::chrono::milliseconds(100);
    options.retry = std::chrono::milliseconds(400);
    options.reserve_batch = 16;
    options.clock = &clock_;
    local_ = std::make_unique<LocalCreates>(log_.get(), std::move(hooks), options, recovered);
  }

  LocalFile File(const std::string& name) {
    auto key = local_->TakeNumber();
    EXPECT_TRUE(key);
    LocalFile f;
    f.key = *key;
    f.dir = kDir;
    f.name = name;
    f.attr.fileid = key->ino;
    *f.request.mutable_dir() = ToProto(kDir);
    f.request.set_name(name);
    f.request.set_reserved_ino(key->ino);
    return f;
  }
  uint64_t Add(const std::string& name) {
    LocalFile f = File(name);
    EXPECT_TRUE(local_->Add(f, [] { return true; }).ok());
    return f.key.ino;
  }

  // Waits (bounded) until `n` sends were made; returns how many there were.
  size_t WaitSent(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return sent_.size() >= n; });
    return sent_.size();
  }
  Sent TakeSent(size_t i) {
    std::lock_guard lock(mu_);
    return sent_.at(i);
  }

  TempDir dir_;
  ManualClock clock_;
  std::vector<LoggedCreate> open_;
  std::unique_ptr<CreateLog> log_;
  std::unique_ptr<LocalCreates> local_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Sent> sent_;
  std::vector<uint64_t> committed_;
};

TEST_F(LocalCreatesSendTest, FilesGoAfterTheDelayAndACancelledOneNever) {
  Start();
  const uint64_t kept = Add("kept");
  const uint64_t removed = Add("removed");
  EXPECT_EQ(kept, 1000u);
  EXPECT_EQ(local_->Find(kept)->key.gen, 9000u);
  ASSERT_TRUE(local_->Cancel(removed, [](const LocalFile&) { return Status::Ok(); }).ok());
  EXPECT_FALSE(local_->FindName(kDir.ino, "removed"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(WaitSent(0), 0u) << "sent before its delay";
  clock_.Advance(std::chrono::milliseconds(150));
  ASSERT_EQ(WaitSent(1), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(WaitSent(1), 1u) << "the cancelled create was sent";
  Sent s = TakeSent(0);
  EXPECT_EQ(s.request.name(), "kept");
  EXPECT_TRUE(local_->Find(kept)->in_flight);
  EXPECT_EQ(local_->Update(kept, [](LocalFile&) { return Status::Ok(); }).code(),
            StatusCode::kAborted);
  s.done(v1::CreateResponse{});
  EXPECT_FALSE(local_->Find(kept));
  EXPECT_EQ(committed_, std::vector<uint64_t>{kept});
  EXPECT_EQ(log_->open_creates(), 0u);
  const LocalCreatesStats stats = local_->Stats();
  EXPECT_EQ(stats.created, 2u);
  EXPECT_EQ(stats.cancelled, 1u);
  EXPECT_EQ(stats.committed, 1u);
  EXPECT_EQ(stats.pending, 0u);
}

TEST_F(LocalCreatesSendTest, FlushSendsAtOnceAndContinuesOnceTheHubHasThem) {
  Start();
  Add("a");
  Add("b");
  EXPECT_TRUE(local_->HasDir(kDir.ino));
  std::atomic<int> calls{0};
  Status got = Status::Internal("not called");
  local_->Flush(LocalScope::kDir, kDir.ino, [&](Status s) {
    got = s;
    ++calls;
  });
  ASSERT_EQ(WaitSent(2), 2u);
  TakeSent(0).done(v1::CreateResponse{});
  EXPECT_EQ(calls.load(), 0) << "continued before every file was at the hub";
  TakeSent(1).done(v1::CreateResponse{});
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(got.ok());
  EXPECT_FALSE(local_->HasDir(kDir.ino));
  // Nothing left: the continuation runs at once.
  local_->Flush(LocalScope::kAll, 0, [&](Status) { ++calls; });
  EXPECT_EQ(calls.load(), 2);
}

TEST_F(LocalCreatesSendTest, AnUnreachableHubMeansRetryLaterAndJukeboxMeanwhile) {
  Start();
  const uint64_t ino = Add("a");
  Status got;
  local_->Flush(LocalScope::kFile, ino, [&](Status s) { got = s; });
  ASSERT_EQ(WaitSent(1), 1u);
  TakeSent(0).done(Status::Unavailable("hub down"));
  EXPECT_EQ(got.code(), StatusCode::kUnavailable);
  ASSERT_TRUE(local_->Find(ino));
  EXPECT_FALSE(local_->Find(ino)->in_flight);
  clock_.Advance(std::chrono::milliseconds(500));
  ASSERT_EQ(WaitSent(2), 2u);
  TakeSent(1).done(v1::CreateResponse{});
  EXPECT_FALSE(local_->Find(ino));
}

TEST_F(LocalCreatesSendTest, ANameTakenAtTheHubKeepsTheFileUnderAnother) {
  Start();
  const uint64_t ino = Add("clash");
  local_->Flush(LocalScope::kFile, ino, [](Status) {});
  ASSERT_EQ(WaitSent(1), 1u);
  TakeSent(0).done(Status::AlreadyExists("clash"));
  ASSERT_EQ(WaitSent(2), 2u);
  Sent again = TakeSent(1);
  EXPECT_EQ(again.request.name(), "clash.geofs-conflict-" + std::to_string(ino));
  EXPECT_EQ(again.request.reserved_ino(), ino);
  EXPECT_FALSE(local_->FindName(kDir.ino, "clash"));
  // The renamed request is what a restart would send.
  std::vector<LoggedCreate> open;
  auto reread = OpenLog(dir_.path() + "/log", &open);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(NameOf(open[0]), again.request.name());
  again.done(v1::CreateResponse{});
  EXPECT_EQ(local_->Stats().conflicts, 1u);
  EXPECT_EQ(local_->Stats().committed, 1u);
}

TEST_F(LocalCreatesSendTest, RecoveredCreatesAreSentAtOnceAndAUsedNumberMeansDone) {
  v1::CreateRequest req;
  *req.mutable_dir() = ToProto(kDir);
  req.set_name("from-before");
  req.set_reserved_ino(77);
  std::string bytes;
  req.SerializeToString(&bytes);
  Start({LoggedCreate{77, 7, bytes}});
  ASSERT_EQ(WaitSent(1), 1u);
  EXPECT_TRUE(local_->Find(77)->in_flight);
  EXPECT_FALSE(local_->Find(77)->attr_known) << "answered from memory without attributes";
  TakeSent(0).done(Status::InvalidArgument("inode 77 is not a reserved number still unused"));
  EXPECT_FALSE(local_->Find(77));
  EXPECT_EQ(local_->Stats().lost, 0u);
}

TEST_F(LocalCreatesSendTest, AddRefusesOurOwnNamesAndANameNoLongerKnownFree) {
  Start();
  Add("a");
  EXPECT_EQ(local_->Add(File("a"), [] { return true; }).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(local_->Add(File("b"), [] { return false; }).code(), StatusCode::kAborted);
  EXPECT_FALSE(local_->FindName(kDir.ino, "b"));
  EXPECT_EQ(log_->open_creates(), 1u);
}

TEST_F(LocalCreatesSendTest, DirectoryTimesChangeWithEveryLocalChangeUntilTheHubsDo) {
  Start();
  const WallTime hub_ctime{100, 0};
  EXPECT_FALSE(local_->DirTime(kDir.ino, hub_ctime));
  const WallTime t1 = local_->TouchDir(kDir.ino, hub_ctime);
  const WallTime t2 = local_->TouchDir(kDir.ino, hub_ctime);
  EXPECT_LT(t1, t2) << "two changes in one clock tick must look different";
  EXPECT_EQ(local_->DirTime(kDir.ino, hub_ctime), t2);
  EXPECT_FALSE(local_->DirTime(kDir.ino, WallTime{101, 0})) << "the hub's own change wins";
}

}  // namespace
}  // namespace geofs::spoke
