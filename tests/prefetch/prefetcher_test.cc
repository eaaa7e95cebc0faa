// The Prefetcher over an in-memory source whose fetches complete when the
// test says so, on a manual clock.
#include "prefetch/prefetcher.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "prefetch/sequential_predictor.h"
#include "prefetch/tree_predictor.h"

namespace geofs::prefetch {
namespace {

constexpr uint64_t kChunk = 256 << 10;

chunk::ChunkId IdOf(uint64_t n) {
  std::string bytes(32, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
  return *chunk::ChunkId::FromBytes(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

// A namespace of directories of files, each file `chunks` chunks of kChunk.
class FakeSource : public PrefetchSource {
 public:
  void AddFile(uint64_t dir, uint64_t ino, int chunks) {
    FileChunks f{{ino, 1}, kChunk * chunks, {}};
    for (int c = 0; c < chunks; ++c) {
      f.chunks.push_back(ChunkSpan{IdOf(ino * 1000 + c), kChunk * c, kChunk, kChunk});
    }
    dirs_[dir].files.push_back(f);
    files_[ino] = f;
  }
  void AddDir(uint64_t parent, uint64_t dir) {
    dirs_[parent].subdirs.push_back({dir, 1});
    dirs_[dir];
  }

  void DescribeDir(const FileId& dir, uint64_t, std::function<void(Result<DirPage>)> cb) override {
    ++describes;
    auto it = dirs_.find(dir.ino);
    if (it == dirs_.end() || fail_describes) return cb(Status::Unavailable("hub away"));
    cb(it->second);
  }
  void ChunksOf(const FileId& file, std::function<void(Result<FileChunks>)> cb) override {
    auto it = files_.find(file.ino);
    if (it == files_.end()) return cb(Status::NotFound());
    cb(it->second);
  }
  std::vector<chunk::ChunkId> Fetch(const std::vector<chunk::ChunkId>& ids,
                                    ChunkDone done) override {
    std::lock_guard lock(mu_);
    std::vector<chunk::ChunkId> started;
    for (const chunk::ChunkId& id : ids) {
      if (cached_.contains(id) || pending_.contains(id)) continue;
      pending_[id] = done;
      started.push_back(id);
      ++fetched;
    }
    inflight_peak = std::max(inflight_peak, pending_.size() * kChunk);
    return started;
  }
  uint64_t CacheBudget() const override { return budget; }

  // Completes every fetch in flight (ok, or failed with `status`).
  size_t LandAll(Status status = Status::Ok()) {
    std::map<chunk::ChunkId, ChunkDone, std::less<>> done;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, cb] : pending_) {
        done.emplace(id, cb);
        if (status.ok()) cached_.insert(id);
      }
      pending_.clear();
    }
    for (auto& [id, cb] : done) cb(id, status);
    return done.size();
  }
  bool Cached(const chunk::ChunkId& id) {
    std::lock_guard lock(mu_);
    return cached_.contains(id);
  }
  void Cache(const chunk::ChunkId& id) {
    std::lock_guard lock(mu_);
    cached_.insert(id);
  }
  size_t Pending() {
    std::lock_guard lock(mu_);
    return pending_.size();
  }
  bool IsPending(const chunk::ChunkId& id) {
    std::lock_guard lock(mu_);
    return pending_.contains(id);
  }

  uint64_t budget = 1ull << 40;
  bool fail_describes = false;
  int describes = 0;
  uint64_t fetched = 0;
  uint64_t inflight_peak = 0;

 private:
  std::map<uint64_t, DirPage> dirs_;
  std::map<uint64_t, FileChunks> files_;
  std::mutex mu_;
  std::map<chunk::ChunkId, ChunkDone, std::less<>> pending_;
  std::set<chunk::ChunkId, std::less<>> cached_;
};

class PrefetcherTest : public ::testing::Test {
 protected:
  void Make(PrefetcherOptions options = {}) {
    options.clock = &clock_;
    std::vector<std::unique_ptr<Predictor>> predictors;
    predictors.push_back(std::make_unique<SequentialPredictor>());
    predictors.push_back(std::make_unique<TreePredictor>());
    prefetcher_ = std::make_unique<Prefetcher>(&source_, &ring_, std::move(predictors), options);
  }
  int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now().time_since_epoch())
        .count();
  }
  void Lookup(uint64_t dir, uint64_t child, bool is_dir = false) {
    AccessEvent e;
    e.op = AccessOp::kLookup;
    e.parent = {dir, 1};
    e.file = {child, 1};
    e.is_dir = is_dir;
    e.time_ns = Now();
    ring_.Record(e);
  }
  // Three files of `dir` opened: an epoch of it, to the tree predictor.
  void OpenThree(uint64_t dir) {
    for (uint64_t f = 1; f <= 3; ++f) Lookup(dir, f);
  }
  void Read(uint64_t ino, uint64_t offset, uint32_t length, AccessOutcome outcome) {
    AccessEvent e;
    e.op = AccessOp::kRead;
    e.file = {ino, 1};
    e.offset = offset;
    e.length = length;
    e.outcome = outcome;
    e.time_ns = Now();
    ring_.Record(e);
  }
  // Runs the engine and lands what it fetched until it fetches no more.
  void RunToIdle() {
    for (int i = 0; i < 1000; ++i) {
      prefetcher_->RunOnce();
      if (source_.LandAll() == 0) {
        prefetcher_->RunOnce();
        if (source_.Pending() == 0) return;
      }
    }
    FAIL() << "the prefetcher never went idle";
  }
  const PredictorStats& Of(const PrefetchStats& s, std::string_view name) {
    for (const PredictorStats& p : s.predictors) {
      if (p.name == name) return p;
    }
    ADD_FAILURE() << "no predictor " << name;
    return s.predictors.front();
  }

  ManualClock clock_;
  FakeSource source_;
  AccessRing ring_{1024};
  std::unique_ptr<Prefetcher> prefetcher_;
};

TEST_F(PrefetcherTest, AnEpochOverADirectoryFetchesTheRestOfIt) {
  for (uint64_t f = 1; f <= 50; ++f) source_.AddFile(100, f, 2);
  Make();
  Lookup(100, 7);
  Lookup(100, 31);
  Lookup(100, 2);
  RunToIdle();
  EXPECT_EQ(source_.describes, 1);
  for (uint64_t f = 1; f <= 50; ++f) {
    EXPECT_TRUE(source_.Cached(IdOf(f * 1000))) << f;
    EXPECT_TRUE(source_.Cached(IdOf(f * 1000 + 1))) << f;
  }
  // The job now reads every file: all of it was prefetched in time.
  for (uint64_t f = 1; f <= 50; ++f) Read(f, 0, 2 * kChunk, AccessOutcome::kHit);
  prefetcher_->RunOnce();
  PrefetchStats s = prefetcher_->Stats();
  EXPECT_EQ(Of(s, "tree").issued_bytes, 100 * kChunk);
  EXPECT_EQ(Of(s, "tree").used_bytes, 100 * kChunk);
  EXPECT_EQ(Of(s, "tree").wasted_bytes, 0u);
  EXPECT_EQ(s.unread_bytes, 0u);
  EXPECT_EQ(s.read_hits, 50u);
}

TEST_F(PrefetcherTest, BytesInFlightStayWithinTheWindow) {
  for (uint64_t f = 1; f <= 100; ++f) source_.AddFile(100, f, 4);
  PrefetcherOptions options;
  options.initial_window = 8 * kChunk;
  options.min_window = 8 * kChunk;
  Make(options);
  OpenThree(100);
  prefetcher_->RunOnce();
  EXPECT_EQ(source_.Pending(), 8u);
  prefetcher_->RunOnce();  // nothing landed: nothing more goes out
  EXPECT_EQ(source_.Pending(), 8u);
  RunToIdle();
  EXPECT_LE(source_.inflight_peak, 8 * kChunk + kChunk);
  EXPECT_EQ(source_.fetched, 400u);
}

TEST_F(PrefetcherTest, PrefetchStopsAtTheCacheBudgetAndGoesOnAsTheJobReads) {
  for (uint64_t f = 1; f <= 20; ++f) source_.AddFile(100, f, 1);
  source_.budget = 5 * kChunk;
  Make();
  OpenThree(100);
  RunToIdle();
  EXPECT_EQ(source_.fetched, 5u);
  EXPECT_EQ(prefetcher_->Stats().unread_bytes, 5 * kChunk);
  // Reading two of them makes room for two more.
  Read(1, 0, kChunk, AccessOutcome::kHit);
  Read(2, 0, kChunk, AccessOutcome::kHit);
  RunToIdle();
  EXPECT_EQ(source_.fetched, 7u);
  EXPECT_EQ(prefetcher_->Stats().unread_bytes, 5 * kChunk);
}

TEST_F(PrefetcherTest, ChunksCachedOrOnTheirWayAreNotFetchedAgain) {
  for (uint64_t f = 1; f <= 10; ++f) source_.AddFile(100, f, 1);
  source_.Cache(IdOf(4000));  // read before
  Make();
  OpenThree(100);
  RunToIdle();
  EXPECT_EQ(source_.fetched, 9u);
  PrefetchStats s = prefetcher_->Stats();
  EXPECT_EQ(Of(s, "tree").issued_bytes, 9 * kChunk);
  // The same epoch again asks for nothing more.
  Lookup(100, 5);
  Lookup(100, 6);
  Lookup(100, 7);
  RunToIdle();
  EXPECT_EQ(source_.fetched, 9u);
}

TEST_F(PrefetcherTest, AFileTheJobReadsGoesToTheFrontOfTheQueue) {
  for (uint64_t f = 1; f <= 100; ++f) source_.AddFile(100, f, 1);
  PrefetcherOptions options;
  options.initial_window = 2 * kChunk;
  options.min_window = 2 * kChunk;
  Make(options);
  OpenThree(100);
  prefetcher_->RunOnce();
  EXPECT_FALSE(source_.IsPending(IdOf(90000)));
  // The job opens file 90 while the queue is far from it: its chunk is
  // fetched by the READ (a miss), and the queue does not fetch it again.
  Read(90, 0, kChunk, AccessOutcome::kMiss);
  source_.Cache(IdOf(90000));
  source_.LandAll();
  RunToIdle();
  EXPECT_EQ(source_.fetched, 99u);
}

TEST_F(PrefetcherTest, TreeWantsDescribeSubdirectories) {
  source_.AddDir(1, 10);
  source_.AddDir(1, 11);
  source_.AddDir(1, 12);
  for (uint64_t d = 10; d <= 12; ++d) {
    for (uint64_t f = 0; f < 5; ++f) source_.AddFile(d, d * 100 + f, 1);
  }
  Make();
  Lookup(1, 10, true);
  Lookup(1, 11, true);
  Lookup(1, 12, true);
  for (uint64_t f = 0; f < 3; ++f) Lookup(10, 1000 + f);
  for (uint64_t f = 0; f < 3; ++f) Lookup(11, 1100 + f);
  RunToIdle();
  // Directory 12 was never opened, but it is part of the tree.
  for (uint64_t f = 0; f < 5; ++f) EXPECT_TRUE(source_.Cached(IdOf((1200 + f) * 1000))) << f;
}

TEST_F(PrefetcherTest, UnreadPrefetchesPastTheHorizonAreWasteAndCostTheirPredictorItsShare) {
  for (uint64_t f = 1; f <= 200; ++f) source_.AddFile(100, f, 1);
  PrefetcherOptions options;
  options.horizon = std::chrono::seconds(10);
  options.judge_after_bytes = 10 * kChunk;
  Make(options);
  OpenThree(100);
  RunToIdle();
  clock_.Advance(std::chrono::seconds(11));
  prefetcher_->RunOnce();
  PrefetchStats s = prefetcher_->Stats();
  EXPECT_EQ(Of(s, "tree").wasted_bytes, 200 * kChunk);
  EXPECT_LT(Of(s, "tree").precision, 0.01);
  EXPECT_TRUE(Of(s, "tree").probing);
  EXPECT_EQ(s.unread_bytes, 0u);
}

TEST_F(PrefetcherTest, ReadsWhileAPrefetchIsOnItsWayAreLateAndGrowTheWindow) {
  for (uint64_t f = 1; f <= 10; ++f) source_.AddFile(100, f, 1);
  Make();
  const uint64_t window = prefetcher_->Stats().window_bytes;
  OpenThree(100);
  prefetcher_->RunOnce();
  ASSERT_TRUE(source_.IsPending(IdOf(5000)));
  Read(5, 0, kChunk, AccessOutcome::kJoined);
  prefetcher_->RunOnce();
  PrefetchStats s = prefetcher_->Stats();
  EXPECT_EQ(Of(s, "tree").late_bytes, kChunk);
  EXPECT_EQ(s.read_joined, 1u);
  EXPECT_GT(s.window_bytes, window);
  source_.LandAll();
}

TEST_F(PrefetcherTest, ASequentialReaderGetsTheFileAheadOfIt) {
  source_.AddFile(100, 1, 64);
  Make();
  Read(1, 0, kChunk, AccessOutcome::kMiss);
  RunToIdle();
  // The first window (1 MiB) beyond the first READ.
  EXPECT_TRUE(source_.Cached(IdOf(1001)));
  EXPECT_TRUE(source_.Cached(IdOf(1004)));
  EXPECT_FALSE(source_.Cached(IdOf(1010)));
  for (uint64_t c = 1; c < 20; ++c) Read(1, c * kChunk, kChunk, AccessOutcome::kHit);
  RunToIdle();
  EXPECT_TRUE(source_.Cached(IdOf(1030)));
  PrefetchStats s = prefetcher_->Stats();
  EXPECT_GT(Of(s, "sequential").used_bytes, 0u);
}

TEST_F(PrefetcherTest, AHubThatCannotDescribeOrFetchLeavesNothingBehind) {
  for (uint64_t f = 1; f <= 10; ++f) source_.AddFile(100, f, 1);
  source_.fail_describes = true;
  Make();
  OpenThree(100);
  RunToIdle();
  EXPECT_EQ(prefetcher_->Stats().describe_errors, 1u);
  EXPECT_EQ(source_.fetched, 0u);
  // A sequential prefetch whose fetch fails is forgotten, not retried forever.
  source_.AddFile(100, 50, 16);
  Read(50, 0, kChunk, AccessOutcome::kMiss);
  prefetcher_->RunOnce();
  source_.LandAll(Status::Unavailable("hub away"));
  prefetcher_->RunOnce();
  PrefetchStats s = prefetcher_->Stats();
  EXPECT_GT(s.fetch_errors, 0u);
  EXPECT_EQ(s.inflight_bytes, 0u);
  EXPECT_EQ(s.unread_bytes, 0u);
}

TEST_F(PrefetcherTest, StopsWithFetchesInFlight) {
  for (uint64_t f = 1; f <= 10; ++f) source_.AddFile(100, f, 1);
  Make();
  prefetcher_->Start();
  OpenThree(100);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (source_.Pending() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_GT(source_.Pending(), 0u);
  std::thread lander([&] {
    while (source_.LandAll() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  });
  prefetcher_.reset();  // waits for the fetches it started
  lander.join();
  EXPECT_EQ(source_.Pending(), 0u);
}

}  // namespace
}  // namespace geofs::prefetch
