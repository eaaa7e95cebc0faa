// ChunkFetcher against an in-process hub that serves ReadChunks from a map
// and can hold calls: misses are fetched once, verified and cached; joiners
// share a fetch; a corrupt chunk is an error and not cached; a burst of
// misses never opens more calls than the cap, and READs queued behind it
// leave before prefetches.
#include "spoke/chunk_fetcher.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "call_gate.h"
#include "chunk/chunk_codec.h"
#include "chunk/chunk_id.h"
#include "hub.grpc.pb.h"
#include "memory_chunk_cache.h"
#include "spoke/hub_link.h"
#include "test_bytes.h"
#include "tools/temp_dir.h"

namespace geofs::spoke {
namespace {

using namespace std::chrono_literals;

constexpr size_t kChunkBytes = 64 << 10;

// Serves the chunks it was given (stored form). Calls pass `gate` before
// answering; the hub records the ids of every call in arrival order.
class ChunkHub final : public v1::Hub::Service {
 public:
  void Add(const chunk::ChunkId& id, std::string stored) {
    std::lock_guard lock(mu_);
    chunks_[Key(id)] = std::move(stored);
  }
  // Forgets the call log and the peak of open calls.
  void Reset() {
    std::lock_guard lock(mu_);
    calls_.clear();
    gate.ResetMaxOpen();
  }

  grpc::Status ReadChunks(grpc::ServerContext*, const v1::ReadChunksRequest* req,
                          grpc::ServerWriter<v1::ChunkData>* writer) override {
    {
      std::lock_guard lock(mu_);
      calls_.emplace_back(req->chunk_ids().begin(), req->chunk_ids().end());
    }
    gate.Pass();
    for (const std::string& id : req->chunk_ids()) {
      v1::ChunkData data;
      {
        std::lock_guard lock(mu_);
        auto it = chunks_.find(id);
        if (it == chunks_.end()) continue;
        data.set_data(it->second);
      }
      data.set_chunk_id(id);
      writer->Write(data);
    }
    return grpc::Status::OK;
  }

  std::vector<std::vector<std::string>> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

  testing::CallGate gate;

  static std::string Key(const chunk::ChunkId& id) {
    return std::string(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> chunks_;    // guarded by mu_
  std::vector<std::vector<std::string>> calls_;  // guarded by mu_
};

// A cache whose next range reads miss, as if the chunk arrived in it just
// after the lookup (another fetch of it ended in between).
class LateArrivalCache : public MemoryChunkCache {
 public:
  using MemoryChunkCache::MemoryChunkCache;
  void GetRange(const chunk::ChunkId& id, uint64_t offset, uint64_t length,
                GetCallback cb) override {
    if (misses_left_ > 0) {
      --misses_left_;
      return cb(Status::NotFound("not cached yet"));
    }
    MemoryChunkCache::GetRange(id, offset, length, std::move(cb));
  }
  std::atomic<int> misses_left_{0};
};

// One hub and one link for the whole suite: gRPC 1.51 can abort in a
// callback thread when the last channel and server go away while that
// thread winds down, so they are created once and left to process exit.
// Each test uses its own chunks (distinct seeds), so tests share no state
// but the hub's call log, which SetUp clears.
class ChunkFetcherTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    hub_ = new ChunkHub();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(hub_);
    server_ = builder.BuildAndStart().release();
    ASSERT_TRUE(server_ != nullptr);
    ASSERT_GT(port, 0);
    state_dir_ = new testutil::TempDir();
    HubLinkOptions o;
    o.address = "127.0.0.1:" + std::to_string(port);
    o.portal = "/";
    o.state_dir = state_dir_->path();
    link_ = new HubLink(o);
  }

  void SetUp() override { hub_->Reset(); }
  void TearDown() override {
    hub_->gate.Release();
    fetcher_.reset();  // waits for its calls
  }

  // `count` chunks of kChunkBytes, distinct from every other test's; chunk
  // `corrupt_index` (if any) is served with one payload byte flipped.
  void MakeChunks(int count, int corrupt_index = -1) {
    static int next_seed = 1000;
    for (int i = 0; i < count; ++i) {
      std::string raw = RandomBytes(kChunkBytes, next_seed++);
      chunk::ChunkId id = chunk::ChunkId::Of(Bytes(raw));
      chunk::EncodedChunk stored = chunk::EncodeChunk(Bytes(raw), chunk::ChunkCodecOptions{});
      std::string wire(reinterpret_cast<const char*>(stored.bytes.data()), stored.bytes.size());
      if (i == corrupt_index) wire.back() ^= 0x01;
      hub_->Add(id, std::move(wire));
      ids_.push_back(id);
      raws_.push_back(std::move(raw));
    }
  }

  void StartFetcher(size_t max_calls = ChunkFetcher::kDefaultMaxCalls) {
    fetcher_ = std::make_unique<ChunkFetcher>(link_, &cache_, max_calls);
  }

  // Reads chunk `i` whole; the future holds its bytes or the error.
  std::future<Result<std::string>> Read(int i) {
    auto done = std::make_shared<std::promise<Result<std::string>>>();
    auto f = done->get_future();
    fetcher_->GetRange(ids_[i], 0, kChunkBytes, [done](Result<Buffer> got) {
      if (!got.ok()) return done->set_value(got.status());
      done->set_value(std::string(reinterpret_cast<const char*>(got->data()), got->size()));
    });
    return f;
  }

  static Result<std::string> Get(std::future<Result<std::string>>& f) {
    if (f.wait_for(10s) != std::future_status::ready) return Status::IoError("no answer");
    return f.get();
  }

  static inline ChunkHub* hub_ = nullptr;
  static inline grpc::Server* server_ = nullptr;
  static inline testutil::TempDir* state_dir_ = nullptr;
  static inline HubLink* link_ = nullptr;
  LateArrivalCache cache_{64 << 20};
  std::unique_ptr<ChunkFetcher> fetcher_;
  std::vector<chunk::ChunkId> ids_;
  std::vector<std::string> raws_;
};

TEST_F(ChunkFetcherTest, MissIsFetchedOnceVerifiedAndCachedThenHits) {
  MakeChunks(1);
  StartFetcher();
  auto first = Read(0);
  auto got = Get(first);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, raws_[0]);
  // The cache write finishes after the answer: wait for it before reading
  // again, so that the second read is a cache hit, not a join.
  for (int i = 0; i < 500 && !cache_.Contains(ids_[0]); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(cache_.Contains(ids_[0]));

  auto second = Read(0);
  got = Get(second);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, raws_[0]);
  FetchStats s = fetcher_->Stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(hub_->calls().size(), 1u);
}

TEST_F(ChunkFetcherTest, ChunkCachedBetweenTheMissAndTheFetchIsNotFetchedAgain) {
  MakeChunks(1);
  StartFetcher();
  std::promise<Status> put;
  cache_.Put(ids_[0], Buffer::CopyOf(Bytes(raws_[0])), [&](Status s) { put.set_value(s); });
  ASSERT_TRUE(put.get_future().get().ok());
  cache_.misses_left_ = 1;
  auto read = Read(0);
  auto got = Get(read);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, raws_[0]);
  EXPECT_TRUE(hub_->calls().empty());
  EXPECT_EQ(fetcher_->Stats().misses, 0u);
}

TEST_F(ChunkFetcherTest, ConcurrentReadsOfOneChunkShareOneFetch) {
  MakeChunks(1);
  StartFetcher();
  hub_->gate.Hold();
  std::vector<std::future<Result<std::string>>> reads;
  for (int i = 0; i < 5; ++i) reads.push_back(Read(0));
  ASSERT_TRUE(hub_->gate.WaitOpen(1));
  hub_->gate.Release();
  for (auto& f : reads) {
    auto got = Get(f);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, raws_[0]);
  }
  EXPECT_EQ(hub_->calls().size(), 1u);
  EXPECT_EQ(fetcher_->Stats().shared_fetches, 4u);
}

TEST_F(ChunkFetcherTest, CorruptChunkFromTheHubIsAnErrorAndNotCached) {
  MakeChunks(2, /*corrupt_index=*/1);
  StartFetcher();
  auto bad = Read(1);
  auto got = Get(bad);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << got.status().ToString();
  EXPECT_FALSE(cache_.Contains(ids_[1]));
  EXPECT_EQ(fetcher_->Stats().corrupt, 1u);
  // Not remembered either: the next read asks the hub again.
  auto again = Read(1);
  EXPECT_FALSE(Get(again).ok());
  EXPECT_EQ(hub_->calls().size(), 2u);
}

TEST_F(ChunkFetcherTest, BurstOfMissesStaysUnderTheCallCapAndEveryReadGetsItsBytes) {
  constexpr int kChunks = 60;
  constexpr size_t kCap = 4;
  MakeChunks(kChunks);
  StartFetcher(kCap);
  hub_->gate.Hold();
  std::vector<std::future<Result<std::string>>> reads;
  for (int i = 0; i < kChunks; ++i) reads.push_back(Read(i));
  ASSERT_TRUE(hub_->gate.WaitOpen(kCap));
  // Held calls cannot finish, so anything past the cap would be open now.
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(hub_->gate.max_open(), static_cast<int>(kCap));
  hub_->gate.Release();
  for (int i = 0; i < kChunks; ++i) {
    auto got = Get(reads[i]);
    ASSERT_TRUE(got.ok()) << i << ": " << got.status().ToString();
    EXPECT_EQ(*got, raws_[i]) << i;
  }
  EXPECT_LE(hub_->gate.max_open(), static_cast<int>(kCap));
  FetchStats s = fetcher_->Stats();
  EXPECT_EQ(s.queued, kChunks - kCap);
  // The queue left in batches: fewer calls than chunks.
  EXPECT_LT(hub_->calls().size(), static_cast<size_t>(kChunks));
}

TEST_F(ChunkFetcherTest, QueuedReadsLeaveBeforeQueuedPrefetches) {
  constexpr int kChunks = 12;
  MakeChunks(kChunks);
  StartFetcher(/*max_calls=*/1);
  hub_->gate.Hold();
  auto blocker = Read(0);  // takes the only call
  ASSERT_TRUE(hub_->gate.WaitOpen(1));
  // Chunks 1..10 queued as prefetches, then a READ of chunk 11 and one that
  // joins the queued prefetch of chunk 10.
  fetcher_->Prefetch(std::vector<chunk::ChunkId>(ids_.begin() + 1, ids_.begin() + 11));
  auto late = Read(11);
  auto joined = Read(10);
  hub_->gate.Release();
  for (auto* f : {&blocker, &late, &joined}) ASSERT_TRUE(Get(*f).ok());
  auto calls = hub_->calls();
  ASSERT_GE(calls.size(), 2u);
  // The call after the blocker carries the two READs' chunks first.
  ASSERT_GE(calls[1].size(), 2u);
  EXPECT_EQ(calls[1][0], ChunkHub::Key(ids_[11]));
  EXPECT_EQ(calls[1][1], ChunkHub::Key(ids_[10]));
}

}  // namespace
}  // namespace geofs::spoke
