// ChangeBatcher against an in-process hub that answers ApplyChanges from
// the names of the changes (and can hold calls): changes submitted while a
// call is open leave together in the next one; each answer reaches its own
// change; a deferred change is sent again alone; a failed change keeps its
// code; a reply of the wrong kind is an error; a hub without ApplyChanges
// gets every change as its own call.
#include "spoke/change_batcher.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "call_gate.h"
#include "hub.grpc.pb.h"
#include "spoke/hub_link.h"
#include "tools/temp_dir.h"

namespace geofs::spoke {
namespace {

using namespace std::chrono_literals;

// The inode a created name gets: its number ("f17" -> 17), plus 1000 when
// created by a Create call of its own rather than in a batch.
uint64_t InoFor(const std::string& name, bool alone) {
  return std::stoull(name.substr(name.find_first_of("0123456789"))) + (alone ? 1000 : 0);
}

// Creates answer with InoFor; names starting "defer" are deferred in a
// batch, names starting "missing" fail with not_found, names starting
// "wrongkind" get a Remove's reply. Removes always succeed. ApplyChanges
// calls pass `gate` before answering.
class ChangeHub final : public v1::Hub::Service {
 public:
  explicit ChangeHub(bool batches) : batches_(batches) {}

  grpc::Status ApplyChanges(grpc::ServerContext*, const v1::ApplyChangesRequest* req,
                            v1::ApplyChangesResponse* resp) override {
    if (!batches_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "");
    {
      std::lock_guard lock(mu_);
      batch_sizes_.push_back(req->changes_size());
    }
    gate.Pass();
    for (const v1::Change& change : req->changes()) {
      v1::ChangeResult* result = resp->add_results();
      if (change.has_remove()) {
        result->mutable_remove();
        continue;
      }
      const std::string& name = change.create().name();
      if (name.starts_with("defer")) {
        result->set_deferred(true);
      } else if (name.starts_with("wrongkind")) {
        result->mutable_remove();
      } else if (name.starts_with("missing")) {
        result->set_code("not_found");
        result->set_message("no such thing: " + name);
      } else {
        result->mutable_create()->mutable_object()->mutable_ref()->set_ino(InoFor(name, false));
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Create(grpc::ServerContext*, const v1::CreateRequest* req,
                      v1::CreateResponse* resp) override {
    {
      std::lock_guard lock(mu_);
      alone_.push_back(req->name());
    }
    resp->mutable_object()->mutable_ref()->set_ino(InoFor(req->name(), true));
    return grpc::Status::OK;
  }
  grpc::Status Remove(grpc::ServerContext*, const v1::RemoveRequest* req,
                      v1::RemoveResponse*) override {
    std::lock_guard lock(mu_);
    alone_.push_back(req->name());
    return grpc::Status::OK;
  }

  void Reset() {
    std::lock_guard lock(mu_);
    batch_sizes_.clear();
    alone_.clear();
  }
  std::vector<int> batch_sizes() {
    std::lock_guard lock(mu_);
    return batch_sizes_;
  }
  std::vector<std::string> alone() {
    std::lock_guard lock(mu_);
    return alone_;
  }

  testing::CallGate gate;

 private:
  const bool batches_;
  std::mutex mu_;
  std::vector<int> batch_sizes_;    // guarded by mu_
  std::vector<std::string> alone_;  // guarded by mu_: names sent as their own calls
};

struct HubAndLink {
  ChangeHub* hub;
  grpc::Server* server;
  HubLink* link;
};

// Two hubs (with and without ApplyChanges) and their links for the whole
// suite: gRPC 1.51 can abort in a callback thread when the last channel and
// server go away while that thread winds down, so they are created once and
// left to process exit.
class ChangeBatcherTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    state_dir_ = new testutil::TempDir();
    batching_ = Start(true, "batching");
    old_ = Start(false, "old");
  }

  static HubAndLink Start(bool batches, const std::string& name) {
    HubAndLink out{new ChangeHub(batches), nullptr, nullptr};
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(out.hub);
    out.server = builder.BuildAndStart().release();
    EXPECT_TRUE(out.server != nullptr);
    EXPECT_GT(port, 0);
    HubLinkOptions o;
    o.address = "127.0.0.1:" + std::to_string(port);
    o.portal = "/";
    o.state_dir = state_dir_->path() + "/" + name;
    out.link = new HubLink(o);
    return out;
  }

  void SetUp() override {
    batching_.hub->Reset();
    old_.hub->Reset();
  }
  void TearDown() override { batching_.hub->gate.Release(); }

  static v1::Change CreateOf(const std::string& name) {
    v1::Change change;
    change.mutable_create()->set_name(name);
    return change;
  }

  // Submits a change; the future holds its result or error.
  static std::future<Result<v1::ChangeResult>> Submit(ChangeBatcher& batcher, v1::Change change) {
    auto done = std::make_shared<std::promise<Result<v1::ChangeResult>>>();
    auto f = done->get_future();
    batcher.Submit(std::move(change),
                   [done](Result<v1::ChangeResult> r) { done->set_value(std::move(r)); });
    return f;
  }
  static Result<v1::ChangeResult> Get(std::future<Result<v1::ChangeResult>>& f) {
    if (f.wait_for(10s) != std::future_status::ready) return Status::IoError("no answer");
    return f.get();
  }

  static inline testutil::TempDir* state_dir_ = nullptr;
  static inline HubAndLink batching_{};
  static inline HubAndLink old_{};
};

TEST_F(ChangeBatcherTest, ChangesSubmittedDuringACallLeaveTogetherInTheNext) {
  ChangeBatcher batcher(batching_.link, ChangeBatcherOptions{.max_calls = 1, .max_batch = 16});
  batching_.hub->gate.Hold();
  auto first = Submit(batcher, CreateOf("f0"));
  ASSERT_TRUE(batching_.hub->gate.WaitOpen(1)) << "a lone change leaves at once";
  std::vector<std::future<Result<v1::ChangeResult>>> later;
  for (int i = 1; i <= 40; ++i) later.push_back(Submit(batcher, CreateOf("f" + std::to_string(i))));
  batching_.hub->gate.Release();

  auto r0 = Get(first);
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  EXPECT_EQ(r0->create().object().ref().ino(), 0u);
  for (int i = 1; i <= 40; ++i) {
    auto r = Get(later[i - 1]);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_EQ(r->create().object().ref().ino(), static_cast<uint64_t>(i)) << "its own answer";
  }
  // The 40 queued behind the open call left in batches of at most 16.
  EXPECT_EQ(batching_.hub->batch_sizes(), (std::vector<int>{1, 16, 16, 8}));
  const ChangeBatcherStats stats = batcher.stats();
  EXPECT_EQ(stats.changes, 41u);
  EXPECT_EQ(stats.batches, 4u);
  EXPECT_EQ(stats.alone, 0u);
  EXPECT_TRUE(batching_.hub->alone().empty());
}

TEST_F(ChangeBatcherTest, NeverMoreCallsOpenThanAllowed) {
  ChangeBatcher batcher(batching_.link, ChangeBatcherOptions{.max_calls = 2, .max_batch = 256});
  batching_.hub->gate.Hold();
  std::vector<std::future<Result<v1::ChangeResult>>> results;
  for (int i = 0; i < 10; ++i)
    results.push_back(Submit(batcher, CreateOf("f" + std::to_string(i))));
  ASSERT_TRUE(batching_.hub->gate.WaitOpen(2));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(batching_.hub->batch_sizes().size(), 2u) << "the third batch waits for a call to end";
  batching_.hub->gate.Release();
  for (int i = 0; i < 10; ++i) {
    auto r = Get(results[i]);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->create().object().ref().ino(), static_cast<uint64_t>(i));
  }
  EXPECT_EQ(batching_.hub->batch_sizes(), (std::vector<int>{1, 1, 8}));
}

TEST_F(ChangeBatcherTest, DeferredChangesAreSentAloneAndFailuresKeepTheirCode) {
  ChangeBatcher batcher(batching_.link, ChangeBatcherOptions{.max_calls = 1, .max_batch = 16});
  batching_.hub->gate.Hold();
  auto opener = Submit(batcher, CreateOf("f0"));
  ASSERT_TRUE(batching_.hub->gate.WaitOpen(1));
  auto deferred = Submit(batcher, CreateOf("defer7"));
  auto missing = Submit(batcher, CreateOf("missing3"));
  v1::Change remove;
  remove.mutable_remove()->set_name("gone");
  auto removed = Submit(batcher, remove);
  auto plain = Submit(batcher, CreateOf("f9"));
  auto wrong = Submit(batcher, CreateOf("wrongkind4"));
  batching_.hub->gate.Release();

  ASSERT_TRUE(Get(opener).ok());
  auto d = Get(deferred);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->create().object().ref().ino(), 1007u) << "answered by its own Create call";
  auto m = Get(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().ToString().find("no such thing: missing3"), std::string::npos)
      << m.status().ToString();
  auto r = Get(removed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->has_remove());
  auto p = Get(plain);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->create().object().ref().ino(), 9u);
  auto w = Get(wrong);
  ASSERT_FALSE(w.ok()) << "a reply of the wrong kind is not passed on as an answer";
  EXPECT_EQ(w.status().code(), StatusCode::kInternal);

  EXPECT_EQ(batching_.hub->alone(), std::vector<std::string>{"defer7"});
  const ChangeBatcherStats stats = batcher.stats();
  EXPECT_EQ(stats.deferred, 1u);
  EXPECT_EQ(stats.alone, 1u);
}

TEST_F(ChangeBatcherTest, AHubWithoutApplyChangesGetsEachChangeAsItsOwnCallForAWhile) {
  ManualClock clock;
  ChangeBatcher batcher(old_.link, ChangeBatcherOptions{.max_calls = 1,
                                                        .max_batch = 16,
                                                        .batch_retry = std::chrono::minutes(1),
                                                        .clock = &clock});
  std::vector<std::future<Result<v1::ChangeResult>>> results;
  for (int i = 0; i < 5; ++i) results.push_back(Submit(batcher, CreateOf("f" + std::to_string(i))));
  for (int i = 0; i < 5; ++i) {
    auto r = Get(results[i]);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->create().object().ref().ino(), 1000u + i);
  }
  // Changes within the retry period do not try a batch again.
  clock.Advance(std::chrono::seconds(59));
  auto later = Submit(batcher, CreateOf("f5"));
  ASSERT_TRUE(Get(later).ok());
  ChangeBatcherStats stats = batcher.stats();
  EXPECT_EQ(stats.batches, 1u) << "only the first call found out";
  EXPECT_EQ(stats.alone, 6u);
  EXPECT_EQ(old_.hub->alone().size(), 6u);

  // After it, one batch asks again (the hub may have been upgraded).
  clock.Advance(std::chrono::seconds(2));
  auto retried = Submit(batcher, CreateOf("f6"));
  auto r = Get(retried);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->create().object().ref().ino(), 1006u);
  stats = batcher.stats();
  EXPECT_EQ(stats.batches, 2u);
  EXPECT_EQ(stats.alone, 7u);
}

}  // namespace
}  // namespace geofs::spoke
