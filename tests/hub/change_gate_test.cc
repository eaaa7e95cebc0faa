// ChangeGate over a real LeaseManager and an in-memory namespace whose
// syncs are slow: changes of different names in one directory commit
// together, and still only after every other session dropped the directory.
#include "hub/change_gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "meta/kv_store.h"
#include "meta/memory_kv_store.h"

namespace geofs::hub {
namespace {

using std::chrono::milliseconds;

constexpr auto kSyncTime = milliseconds(60);
constexpr auto kStillBlocked = milliseconds(150);
constexpr auto kPrompt = std::chrono::seconds(10);
constexpr int kWriters = 6;

// Each Sync takes kSyncTime; records how many ran at once at most.
class SlowSyncKvStore : public meta::KvStoreWrapper {
 public:
  using KvStoreWrapper::KvStoreWrapper;
  Status Sync() override {
    const int now = ++in_sync_;
    int seen = max_in_sync_.load();
    while (now > seen && !max_in_sync_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(kSyncTime);
    --in_sync_;
    ++syncs_;
    return target()->Sync();
  }
  int max_in_sync() const { return max_in_sync_; }
  int syncs() const { return syncs_; }

 private:
  std::atomic<int> in_sync_{0}, max_in_sync_{0}, syncs_{0};
};

class ChangeGateTest : public ::testing::Test {
 protected:
  ChangeGateTest() : slow_(&kv_) {
    auto ns = meta::Namespace::Open(&slow_);
    EXPECT_TRUE(ns.ok()) << ns.status().ToString();
    ns_ = std::move(ns).value();
    LeaseManagerOptions options;
    options.wait_slice = milliseconds(2);
    leases_ = std::make_unique<LeaseManager>(options);
    gate_ = std::make_unique<ChangeGate>(ns_.get(), leases_.get());
    cred_.uid = cred_.gid = 0;
  }

  // Creates name-0 .. name-(n-1) in the root at once; their results.
  std::vector<std::future<Result<vfs::CreateReply>>> CreateAll(int n) {
    std::vector<std::future<Result<vfs::CreateReply>>> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(std::async(std::launch::async, [this, i] {
        return gate_->Create(kNoSession, cred_, ns_->RootHandle(), "name-" + std::to_string(i),
                             vfs::CreateRequest{});
      }));
    }
    return out;
  }

  uint64_t RootIno() { return meta::Namespace::ParseHandle(ns_->RootHandle())->ino; }

  // A session holding a lease on the root; the invalidations it is sent
  // gather in received_.
  uint64_t RootHolder() {
    const uint64_t session = leases_->OpenSession("a", "/", 0, [this](const Invalidation& inv) {
      std::lock_guard lock(received_mu_);
      received_.push_back(inv);
    });
    EXPECT_TRUE(leases_->Grant(session, std::vector<uint64_t>{RootIno()}).ok());
    return session;
  }

  meta::MemoryKvStore kv_;
  SlowSyncKvStore slow_;
  std::unique_ptr<meta::Namespace> ns_;
  // Before leases_: its sessions' callbacks write here until it is gone.
  std::mutex received_mu_;
  std::vector<Invalidation> received_;  // guarded by received_mu_
  std::unique_ptr<LeaseManager> leases_;
  std::unique_ptr<ChangeGate> gate_;
  vfs::Credentials cred_;
};

TEST_F(ChangeGateTest, CreatesInOneDirectoryCommitTogether) {
  const int syncs_before = slow_.syncs();
  for (auto& f : CreateAll(kWriters)) {
    ASSERT_EQ(f.wait_for(kPrompt), std::future_status::ready);
    auto r = f.get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  EXPECT_EQ(slow_.syncs() - syncs_before, kWriters);
  // Serialised per directory, no two syncs would overlap.
  EXPECT_GT(slow_.max_in_sync(), 1);
  for (int i = 0; i < kWriters; ++i) {
    EXPECT_TRUE(ns_->Lookup(cred_, ns_->RootHandle(), "name-" + std::to_string(i)).ok());
  }
}

TEST_F(ChangeGateTest, ChangesOfOneNameStaySerialised) {
  ASSERT_TRUE(gate_->Create(kNoSession, cred_, ns_->RootHandle(), "x", {}).ok());
  std::vector<std::future<Result<vfs::Wcc>>> removes;
  for (int i = 0; i < kWriters; ++i) {
    removes.push_back(std::async(std::launch::async, [this] {
      return gate_->Remove(kNoSession, cred_, ns_->RootHandle(), "x");
    }));
  }
  int removed = 0;
  for (auto& f : removes) {
    auto r = f.get();
    if (r.ok()) {
      ++removed;
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
    }
  }
  EXPECT_EQ(removed, 1);
}

TEST_F(ChangeGateTest, ConcurrentCreatesWaitForTheDirectoryHolderToDropIt) {
  const uint64_t session = RootHolder();

  auto creates = CreateAll(kWriters);
  for (auto& f : creates) {
    EXPECT_EQ(f.wait_for(kStillBlocked), std::future_status::timeout);
  }
  {
    // Nothing committed while the session may still serve the old listing.
    auto missing = ns_->Lookup(cred_, ns_->RootHandle(), "name-0");
    EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
    std::lock_guard lock(received_mu_);
    ASSERT_EQ(received_.size(), 1u) << "the directory's holder is told once";
    EXPECT_EQ(received_[0].inos, std::vector<uint64_t>{RootIno()});
    leases_->Ack(session, received_[0].seq);
  }
  for (auto& f : creates) {
    ASSERT_EQ(f.wait_for(kPrompt), std::future_status::ready);
    EXPECT_TRUE(f.get().ok());
  }
}

TEST_F(ChangeGateTest, NoWaitChangeIsWrittenUnsyncedAndHandsOverItsGuard) {
  const int syncs_before = slow_.syncs();
  NoWaitChange create;
  {
    meta::Namespace::UnsyncedScope unsynced;
    auto r = gate_->Create(kNoSession, cred_, ns_->RootHandle(), "x", {}, &create);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  EXPECT_FALSE(create.would_wait);
  EXPECT_EQ(slow_.syncs(), syncs_before) << "the caller syncs";
  EXPECT_TRUE(ns_->Lookup(cred_, ns_->RootHandle(), "x").ok()) << "written, visible";

  // The guard still holds the name: a change of it cannot go ahead now.
  NoWaitChange remove;
  auto early = gate_->Remove(kNoSession, cred_, ns_->RootHandle(), "x", &remove);
  EXPECT_TRUE(remove.would_wait);
  EXPECT_FALSE(early.ok());
  EXPECT_TRUE(ns_->Lookup(cred_, ns_->RootHandle(), "x").ok()) << "a refused change does nothing";

  ASSERT_TRUE(ns_->Sync().ok());
  EXPECT_EQ(slow_.syncs(), syncs_before + 1);
  create.guard.End();
  NoWaitChange again;
  EXPECT_TRUE(gate_->Remove(kNoSession, cred_, ns_->RootHandle(), "x", &again).ok());
  EXPECT_FALSE(again.would_wait);
  EXPECT_EQ(slow_.syncs(), syncs_before + 2) << "outside an UnsyncedScope a change syncs";
}

TEST_F(ChangeGateTest, NoWaitChangeNeverWaitsForAnotherSessionsLease) {
  const uint64_t holder = RootHolder();

  NoWaitChange other;
  auto refused = gate_->Create(kNoSession, cred_, ns_->RootHandle(), "y", {}, &other);
  EXPECT_TRUE(other.would_wait);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(ns_->Lookup(cred_, ns_->RootHandle(), "y").status().code(), StatusCode::kNotFound);
  {
    std::lock_guard lock(received_mu_);
    EXPECT_TRUE(received_.empty()) << "nothing is invalidated by a change that did not go ahead";
  }

  // The lease holder's own change needs no invalidation.
  NoWaitChange own;
  auto created = gate_->Create(holder, cred_, ns_->RootHandle(), "y", {}, &own);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE(own.would_wait);
  own.guard.End();

  // Without NoWaitChange the same change waits for the holder instead.
  auto blocking = std::async(std::launch::async, [this] {
    return gate_->Create(kNoSession, cred_, ns_->RootHandle(), "z", {});
  });
  EXPECT_EQ(blocking.wait_for(kStillBlocked), std::future_status::timeout);
  {
    std::lock_guard lock(received_mu_);
    ASSERT_EQ(received_.size(), 1u);
    leases_->Ack(holder, received_[0].seq);
  }
  ASSERT_EQ(blocking.wait_for(kPrompt), std::future_status::ready);
  EXPECT_TRUE(blocking.get().ok());
}

}  // namespace
}  // namespace geofs::hub
