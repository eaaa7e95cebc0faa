#include "hub/lease_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>

namespace geofs::hub {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kTtl = seconds(10);
// Long enough that a call that should block has had every chance not to.
constexpr auto kStillBlocked = milliseconds(100);
constexpr auto kPrompt = seconds(5);

// What one spoke session received.
class Inbox {
 public:
  LeaseManager::InvalidateFn Fn() {
    return [this](const Invalidation& inv) {
      std::lock_guard lock(mu_);
      received_.push_back(inv);
      cv_.notify_all();
    };
  }
  // The `n`-th invalidation (0-based), waiting for it; nullopt on timeout.
  std::optional<Invalidation> Get(size_t n, milliseconds timeout = kPrompt) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return received_.size() > n; })) return std::nullopt;
    return received_[n];
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return received_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Invalidation> received_;
};

// A write grant outcome delivered to a callback.
struct WriteOutcome {
  std::promise<Status> promise;
  std::future<Status> future = promise.get_future();
  LeaseManager::WriteGrantFn Fn() {
    return [this](const Status& s) { promise.set_value(s); };
  }
  bool Ready(milliseconds timeout) { return future.wait_for(timeout) == std::future_status::ready; }
};

template <typename T>
bool Ready(std::future<T>& f, milliseconds timeout) {
  return f.wait_for(timeout) == std::future_status::ready;
}

class LeaseManagerTest : public ::testing::Test {
 protected:
  LeaseManagerTest() : leases_(Options()) {}
  LeaseManagerOptions Options() {
    LeaseManagerOptions options;
    options.lease_ttl = kTtl;
    options.max_busy_wait = seconds(60);
    options.wait_slice = milliseconds(2);
    options.clock = &clock_;
    return options;
  }
  uint64_t Open(Inbox& inbox, const std::string& spoke = "spoke", uint64_t previous = 0) {
    return leases_.OpenSession(spoke, "/data", previous, inbox.Fn());
  }
  std::future<Result<LeaseManager::ChangeGuard>> BeginAsync(std::vector<uint64_t> inos,
                                                            uint64_t origin = 0,
                                                            std::vector<std::string> names = {}) {
    return std::async(std::launch::async, [this, inos, origin, names] {
      return leases_.BeginChange(inos, origin, names);
    });
  }

  ManualClock clock_;
  LeaseManager leases_;
};

TEST_F(LeaseManagerTest, GrantRenewAndExpiry) {
  Inbox a;
  const uint64_t s = Open(a);
  EXPECT_NE(s, 0u);
  ASSERT_TRUE(leases_.Grant(s, std::vector<uint64_t>{1, 2}).ok());
  EXPECT_EQ(leases_.Stats().read_leases, 2u);

  // A renewal extends from its own time, not the grant's.
  clock_.Advance(seconds(8));
  EXPECT_TRUE(leases_.Renew(s, std::vector<uint64_t>{1}, {}).empty());
  clock_.Advance(seconds(5));  // 13 s after the grant, 5 after the renewal
  EXPECT_EQ(leases_.Renew(s, std::vector<uint64_t>{1, 2, 3}, {}), (std::vector<uint64_t>{2, 3}))
      << "2 expired, 3 was never granted";
  clock_.Advance(kTtl);
  EXPECT_EQ(leases_.Renew(s, std::vector<uint64_t>{1}, {}), (std::vector<uint64_t>{1}));
  EXPECT_EQ(leases_.Stats().read_leases, 0u);
}

TEST_F(LeaseManagerTest, UnknownOrDetachedSessionGetsNoLease) {
  Inbox a;
  EXPECT_EQ(leases_.Grant(12345, std::vector<uint64_t>{1}).code(), StatusCode::kNotFound);
  const uint64_t s = Open(a);
  leases_.DetachSession(s);
  EXPECT_FALSE(leases_.IsOpen(s));
  EXPECT_EQ(leases_.Grant(s, std::vector<uint64_t>{1}).code(), StatusCode::kNotFound);
  EXPECT_EQ(leases_.Renew(s, std::vector<uint64_t>{1}, std::vector<uint64_t>{2}),
            (std::vector<uint64_t>{1, 2}));
}

TEST_F(LeaseManagerTest, InvalidatesEveryOtherHolderAndWaitsForEachAck) {
  Inbox a, b, c, d;
  const uint64_t sa = Open(a, "a"), sb = Open(b, "b"), sc = Open(c, "c");
  Open(d, "d");  // holds nothing
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{5, 6}).ok());
  ASSERT_TRUE(leases_.Grant(sb, std::vector<uint64_t>{6}).ok());
  ASSERT_TRUE(leases_.Grant(sc, std::vector<uint64_t>{5, 6}).ok());

  auto change = BeginAsync({5, 6, 7}, /*origin=*/sc);
  auto inv_a = a.Get(0);
  auto inv_b = b.Get(0);
  ASSERT_TRUE(inv_a && inv_b);
  EXPECT_EQ(inv_a->inos, (std::vector<uint64_t>{5, 6}));
  EXPECT_EQ(inv_b->inos, (std::vector<uint64_t>{6}));
  EXPECT_NE(inv_a->seq, inv_b->seq);

  EXPECT_FALSE(Ready(change, kStillBlocked));
  leases_.Ack(sb, inv_a->seq);  // another session's seq: ignored
  leases_.Ack(sa, inv_a->seq);
  EXPECT_FALSE(Ready(change, kStillBlocked)) << "b has not acknowledged";
  leases_.Ack(sb, inv_b->seq);
  ASSERT_TRUE(Ready(change, kPrompt));
  auto guard = change.get();
  ASSERT_TRUE(guard.ok()) << guard.status().ToString();
  EXPECT_EQ(c.count(), 0u) << "the changer is not invalidated";
  EXPECT_EQ(d.count(), 0u) << "a session without leases is not invalidated";
  EXPECT_EQ(leases_.Stats().invalidations_sent, 2u);

  // The revoked leases are gone; the changer's stand.
  EXPECT_EQ(leases_.Renew(sa, std::vector<uint64_t>{5, 6}, {}), (std::vector<uint64_t>{5, 6}));
  guard->End();
  EXPECT_TRUE(leases_.Renew(sc, std::vector<uint64_t>{5, 6}, {}).empty());
}

TEST_F(LeaseManagerTest, SilentHolderDelaysChangeUntilItsLeaseExpires) {
  Inbox a;
  const uint64_t sa = Open(a);
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{5}).ok());
  clock_.Advance(seconds(4));
  auto change = BeginAsync({5});
  ASSERT_TRUE(a.Get(0));
  clock_.Advance(seconds(5));  // 9 s after the grant
  EXPECT_FALSE(Ready(change, kStillBlocked));
  clock_.Advance(seconds(1) + milliseconds(1));
  ASSERT_TRUE(Ready(change, kPrompt));
  EXPECT_TRUE(change.get().ok());
  EXPECT_EQ(leases_.Stats().changes_waited, 1u);
}

TEST_F(LeaseManagerTest, ExpiredLeasesAreNotInvalidated) {
  Inbox a;
  const uint64_t sa = Open(a);
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{5}).ok());
  clock_.Advance(kTtl + milliseconds(1));
  auto guard = leases_.BeginChange(std::vector<uint64_t>{5}, 0);
  ASSERT_TRUE(guard.ok());
  EXPECT_EQ(a.count(), 0u);
}

TEST_F(LeaseManagerTest, DetachedSessionKeepsLeasesUntilTheyExpire) {
  Inbox a;
  const uint64_t sa = Open(a);
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{5}).ok());
  leases_.DetachSession(sa);
  EXPECT_EQ(leases_.Stats().detached_sessions, 1u);
  auto change = BeginAsync({5});
  EXPECT_FALSE(Ready(change, kStillBlocked)) << "its spoke may still serve under the lease";
  EXPECT_EQ(a.count(), 0u) << "nothing is sent to a detached session";
  clock_.Advance(kTtl);
  ASSERT_TRUE(Ready(change, kPrompt));
  EXPECT_TRUE(change.get().ok());
}

TEST_F(LeaseManagerTest, PendingChangeBlocksGrantsUntilItEnds) {
  Inbox a;
  const uint64_t sa = Open(a);
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{8}).ok());
  auto guard = leases_.BeginChange(std::vector<uint64_t>{7}, 0);
  ASSERT_TRUE(guard.ok());
  auto grant = std::async(std::launch::async, [&] {
    return leases_.Grant(sa, std::vector<uint64_t>{7, 9});
  });
  EXPECT_FALSE(Ready(grant, kStillBlocked));
  EXPECT_EQ(leases_.Renew(sa, std::vector<uint64_t>{8}, {}), std::vector<uint64_t>{})
      << "inodes outside the change are unaffected";
  EXPECT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{8}).ok());
  auto second_change = BeginAsync({7});
  EXPECT_FALSE(Ready(second_change, kStillBlocked)) << "a waiting grant holds off new changes";
  guard->End();
  // Either the grant goes first, and the second change revokes it (waiting
  // for the ack), or the second change goes first and the grant waits for
  // it to end.
  const auto deadline = std::chrono::steady_clock::now() + kPrompt;
  while (!Ready(second_change, milliseconds(1)) && !Ready(grant, milliseconds(1)) &&
         std::chrono::steady_clock::now() < deadline) {
  }
  if (Ready(grant, milliseconds(0))) {
    auto inv = a.Get(0);
    ASSERT_TRUE(inv);
    EXPECT_EQ(inv->inos, std::vector<uint64_t>{7});
    leases_.Ack(sa, inv->seq);
    ASSERT_TRUE(Ready(second_change, kPrompt));
  } else {
    ASSERT_TRUE(Ready(second_change, milliseconds(0)));
    EXPECT_FALSE(Ready(grant, kStillBlocked));
  }
  auto second_guard = second_change.get();
  ASSERT_TRUE(second_guard.ok());
  second_guard->End();
  ASSERT_TRUE(Ready(grant, kPrompt));
  EXPECT_TRUE(grant.get().ok());
}

TEST_F(LeaseManagerTest, ChangesToOneInodeRunTogetherUnlessTheyShareAName) {
  auto first = leases_.BeginChange(std::vector<uint64_t>{7}, 0, std::vector<std::string>{"7/a"});
  ASSERT_TRUE(first.ok());
  auto other_name = BeginAsync({7}, 0, {"7/b"});
  ASSERT_TRUE(Ready(other_name, kPrompt)) << "another entry of the same directory";
  auto same_name = BeginAsync({7, 9}, 0, {"7/b", "7/a"});
  EXPECT_FALSE(Ready(same_name, kStillBlocked)) << "entry 7/a is held";
  first->End();
  EXPECT_FALSE(Ready(same_name, kStillBlocked)) << "entry 7/b is still held";
  auto second = other_name.get();
  ASSERT_TRUE(second.ok());
  second->End();
  ASSERT_TRUE(Ready(same_name, kPrompt));
  EXPECT_TRUE(same_name.get().ok());
}

TEST_F(LeaseManagerTest, ALaterChangeWaitsForTheInvalidationsOfAnEarlierOne) {
  Inbox a;
  const uint64_t sa = Open(a);
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{7}).ok());
  auto first = BeginAsync({7}, 0, {"7/a"});
  auto inv = a.Get(0);
  ASSERT_TRUE(inv);
  // The first change already revoked the lease, so the second finds no
  // holder; it must still not commit before the spoke dropped inode 7.
  auto second = BeginAsync({7}, 0, {"7/b"});
  EXPECT_FALSE(Ready(second, kStillBlocked));
  EXPECT_FALSE(Ready(first, milliseconds(0)));
  EXPECT_EQ(a.count(), 1u) << "one invalidation is enough";
  leases_.Ack(sa, inv->seq);
  ASSERT_TRUE(Ready(first, kPrompt));
  ASSERT_TRUE(Ready(second, kPrompt));
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(second.get().ok());
}

// A spoke asked to drop an inode first sends the changes it journalled for
// it, and acknowledges only then: its own changes must not wait for its ack.
TEST_F(LeaseManagerTest, ASessionsOwnChangeDoesNotWaitForTheInvalidationSentToIt) {
  Inbox a, b;
  const uint64_t sa = Open(a, "a");
  const uint64_t sb = Open(b, "b");
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{7}).ok());
  auto other = BeginAsync({7}, 0, {"7/other"});
  auto inv = a.Get(0);
  ASSERT_TRUE(inv);
  // The invalidated session's change goes ahead, both ways of beginning it.
  // (Checked before the ack, which comes last whatever happens, so that a
  // failure cannot leave a change blocked forever.)
  auto flush = leases_.TryBeginChange(std::vector<uint64_t>{7}, sa,
                                      std::vector<std::string>{"7/journalled"});
  EXPECT_TRUE(flush);
  if (flush) flush->End();
  auto blocking_flush = BeginAsync({7}, sa, {"7/journalled-2"});
  EXPECT_TRUE(Ready(blocking_flush, kPrompt));
  // Anyone else still waits for the acknowledgement.
  EXPECT_FALSE(
      leases_.TryBeginChange(std::vector<uint64_t>{7}, sb, std::vector<std::string>{"7/b"}));
  auto third = BeginAsync({7}, sb, {"7/b"});
  EXPECT_FALSE(Ready(third, kStillBlocked));
  EXPECT_FALSE(Ready(other, milliseconds(0)));
  leases_.Ack(sa, inv->seq);
  ASSERT_TRUE(Ready(other, kPrompt));
  ASSERT_TRUE(Ready(third, kPrompt));
  EXPECT_TRUE(other.get().ok());
  EXPECT_TRUE(third.get().ok());
  EXPECT_TRUE(blocking_flush.get().ok());
}

TEST_F(LeaseManagerTest, TryBeginChangeGoesAheadOnlyWhenNothingNeedsWaitingFor) {
  Inbox a;
  const uint64_t sa = Open(a);
  // Free inodes, and inodes only the changing session holds: at once.
  auto free = leases_.TryBeginChange(std::vector<uint64_t>{3}, 0, std::vector<std::string>{"3/x"});
  ASSERT_TRUE(free);
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{7}).ok());
  auto own = leases_.TryBeginChange(std::vector<uint64_t>{7}, sa, std::vector<std::string>{"7/a"});
  ASSERT_TRUE(own);
  // A name another change holds: refused, without side effects.
  EXPECT_FALSE(
      leases_.TryBeginChange(std::vector<uint64_t>{3}, 0, std::vector<std::string>{"3/x"}));
  free->End();
  own->End();
  EXPECT_TRUE(leases_.TryBeginChange(std::vector<uint64_t>{3}, 0, std::vector<std::string>{"3/x"}));

  // Another session's lease would need an invalidation: refused, none sent.
  EXPECT_FALSE(leases_.TryBeginChange(std::vector<uint64_t>{7}, 0));
  EXPECT_EQ(a.count(), 0u);
  // While an invalidation of the inode is outstanding: refused as well.
  auto blocking = BeginAsync({7}, 0, {"7/b"});
  auto inv = a.Get(0);
  ASSERT_TRUE(inv);
  EXPECT_FALSE(
      leases_.TryBeginChange(std::vector<uint64_t>{7}, 0, std::vector<std::string>{"7/c"}));
  leases_.Ack(sa, inv->seq);
  ASSERT_TRUE(Ready(blocking, kPrompt));
  auto guard = blocking.get();
  ASSERT_TRUE(guard.ok());
  guard->End();
  EXPECT_TRUE(leases_.TryBeginChange(std::vector<uint64_t>{7}, 0, std::vector<std::string>{"7/c"}));
}

TEST_F(LeaseManagerTest, AWaitingGrantHoldsOffNewChangesOfItsInodes) {
  Inbox a;
  const uint64_t sa = Open(a);
  auto change = leases_.BeginChange(std::vector<uint64_t>{7}, 0, std::vector<std::string>{"7/a"});
  ASSERT_TRUE(change.ok());
  auto grant =
      std::async(std::launch::async, [&] { return leases_.Grant(sa, std::vector<uint64_t>{7}); });
  EXPECT_FALSE(Ready(grant, kStillBlocked));
  auto later = BeginAsync({7}, 0, {"7/b"});
  EXPECT_FALSE(Ready(later, kStillBlocked)) << "else a stream of changes starves the grant";
  auto unrelated = BeginAsync({8}, 0, {"8/b"});
  ASSERT_TRUE(Ready(unrelated, kPrompt));
  change->End();
  ASSERT_TRUE(Ready(grant, kPrompt));
  EXPECT_TRUE(grant.get().ok());
  // The later change now revokes the lease just granted.
  auto inv = a.Get(0);
  ASSERT_TRUE(inv);
  EXPECT_EQ(inv->inos, std::vector<uint64_t>{7});
  EXPECT_FALSE(Ready(later, kStillBlocked));
  leases_.Ack(sa, inv->seq);
  ASSERT_TRUE(Ready(later, kPrompt));
  EXPECT_TRUE(later.get().ok());
}

TEST_F(LeaseManagerTest, GrantToOriginSkipsAnInodeAnotherOriginIsChanging) {
  Inbox a, b;
  const uint64_t sa = Open(a, "a"), sb = Open(b, "b");
  {
    auto mine = leases_.BeginChange(std::vector<uint64_t>{10}, sa, std::vector<std::string>{"x"});
    auto theirs = leases_.BeginChange(std::vector<uint64_t>{10}, sb, std::vector<std::string>{"y"});
    ASSERT_TRUE(mine.ok() && theirs.ok());
    // b's change commits after a's reply: a's lease would miss it.
    mine->GrantToOrigin(std::vector<uint64_t>{10});
  }
  EXPECT_EQ(leases_.Renew(sa, std::vector<uint64_t>{10}, {}), std::vector<uint64_t>{10});
  {
    auto one = leases_.BeginChange(std::vector<uint64_t>{10}, sa, std::vector<std::string>{"x"});
    auto two = leases_.BeginChange(std::vector<uint64_t>{10}, sa, std::vector<std::string>{"y"});
    ASSERT_TRUE(one.ok() && two.ok());
    one->GrantToOrigin(std::vector<uint64_t>{10});  // only a's own changes are pending
  }
  EXPECT_TRUE(leases_.Renew(sa, std::vector<uint64_t>{10}, {}).empty());
}

TEST_F(LeaseManagerTest, GrantWaitIsBounded) {
  LeaseManagerOptions options = Options();
  options.max_busy_wait = seconds(3);
  LeaseManager leases(options);
  Inbox a;
  const uint64_t sa = leases.OpenSession("a", "/", 0, a.Fn());
  auto guard = leases.BeginChange(std::vector<uint64_t>{7}, 0);
  ASSERT_TRUE(guard.ok());
  auto grant =
      std::async(std::launch::async, [&] { return leases.Grant(sa, std::vector<uint64_t>{7}); });
  EXPECT_FALSE(Ready(grant, kStillBlocked));
  clock_.Advance(seconds(4));
  ASSERT_TRUE(Ready(grant, kPrompt));
  EXPECT_EQ(grant.get().code(), StatusCode::kUnavailable);
}

TEST_F(LeaseManagerTest, RenewalReportsBusyInodesLost) {
  Inbox a, b;
  const uint64_t sa = Open(a, "a"), sb = Open(b, "b");
  ASSERT_TRUE(leases_.Grant(sa, std::vector<uint64_t>{3, 4}).ok());
  auto guard = leases_.BeginChange(std::vector<uint64_t>{4}, sa);
  ASSERT_TRUE(guard.ok());
  EXPECT_EQ(leases_.Renew(sa, std::vector<uint64_t>{3, 4}, {}), std::vector<uint64_t>{4});
  EXPECT_EQ(leases_.Renew(sb, std::vector<uint64_t>{4}, {}), std::vector<uint64_t>{4});
}

TEST_F(LeaseManagerTest, NewSessionOfTheSameSpokeDropsThePreviousAtOnce) {
  Inbox old_inbox, other, fresh;
  const uint64_t old_session = Open(old_inbox, "spoke-1");
  const uint64_t other_session = Open(other, "spoke-2");
  ASSERT_TRUE(leases_.Grant(old_session, std::vector<uint64_t>{5}).ok());
  ASSERT_TRUE(leases_.Grant(other_session, std::vector<uint64_t>{6}).ok());
  leases_.DetachSession(old_session);
  leases_.DetachSession(other_session);

  auto change = BeginAsync({5});
  EXPECT_FALSE(Ready(change, kStillBlocked));
  // Another spoke cannot drop the session.
  Inbox impostor;
  Open(impostor, "spoke-2", old_session);
  EXPECT_FALSE(Ready(change, kStillBlocked));

  const uint64_t new_session = Open(fresh, "spoke-1", old_session);
  EXPECT_NE(new_session, old_session);
  ASSERT_TRUE(Ready(change, kPrompt)) << "without waiting for the lease to expire";
  EXPECT_TRUE(change.get().ok());
  EXPECT_EQ(leases_.Stats().detached_sessions, 1u) << "spoke-2's detached session remains";
}

TEST_F(LeaseManagerTest, PreviousSessionStopsAPendingWaitOnItsAck) {
  Inbox old_inbox, fresh;
  const uint64_t old_session = Open(old_inbox, "spoke-1");
  ASSERT_TRUE(leases_.Grant(old_session, std::vector<uint64_t>{5}).ok());
  auto change = BeginAsync({5});
  ASSERT_TRUE(old_inbox.Get(0));
  EXPECT_FALSE(Ready(change, kStillBlocked));
  Open(fresh, "spoke-1", old_session);
  ASSERT_TRUE(Ready(change, kPrompt));
}

TEST_F(LeaseManagerTest, GrantToOriginLeasesTheChangeAndNewInodes) {
  Inbox a, b;
  const uint64_t sa = Open(a, "a"), sb = Open(b, "b");
  ASSERT_TRUE(leases_.Grant(sb, std::vector<uint64_t>{30}).ok());
  {
    auto guard = leases_.BeginChange(std::vector<uint64_t>{10}, sa);
    ASSERT_TRUE(guard.ok());
    // 10: the change's; 20: new, nobody holds it; 30: b holds it.
    guard->GrantToOrigin(std::vector<uint64_t>{10, 20, 30});
  }
  EXPECT_EQ(leases_.Renew(sa, std::vector<uint64_t>{10, 20, 30}, {}), std::vector<uint64_t>{30});
}

TEST_F(LeaseManagerTest, WriteLeasesQueueInOrderAndPassOnAtReleaseOrExpiry) {
  Inbox a, b, c;
  const uint64_t sa = Open(a, "a"), sb = Open(b, "b"), sc = Open(c, "c");
  WriteOutcome wa, wb, wc, again;
  leases_.AcquireWrite(sa, 9, wa.Fn());
  ASSERT_TRUE(wa.Ready(kPrompt));
  EXPECT_TRUE(wa.future.get().ok());
  leases_.AcquireWrite(sb, 9, wb.Fn());
  leases_.AcquireWrite(sc, 9, wc.Fn());
  EXPECT_FALSE(wb.Ready(kStillBlocked));
  leases_.AcquireWrite(sa, 9, again.Fn());  // the holder re-acquires: renewed at once
  ASSERT_TRUE(again.Ready(kPrompt));
  EXPECT_TRUE(again.future.get().ok());
  EXPECT_EQ(leases_.Stats().write_leases, 1u);

  // Renewal by the holder extends it; by another session it is lost.
  clock_.Advance(seconds(8));
  EXPECT_TRUE(leases_.Renew(sa, {}, std::vector<uint64_t>{9}).empty());
  EXPECT_EQ(leases_.Renew(sb, {}, std::vector<uint64_t>{9}), std::vector<uint64_t>{9});
  clock_.Advance(seconds(8));
  EXPECT_FALSE(wb.Ready(kStillBlocked)) << "renewed 8 s ago, still held";

  leases_.ReleaseWrite(sb, 9);  // not the holder: no effect
  EXPECT_FALSE(wb.Ready(kStillBlocked));
  leases_.ReleaseWrite(sa, 9);
  ASSERT_TRUE(wb.Ready(kPrompt));
  EXPECT_TRUE(wb.future.get().ok());
  EXPECT_FALSE(wc.Ready(kStillBlocked));

  // b never renews: its lease expires and passes to c.
  clock_.Advance(kTtl + milliseconds(1));
  ASSERT_TRUE(wc.Ready(kPrompt));
  EXPECT_TRUE(wc.future.get().ok());
  EXPECT_EQ(leases_.Renew(sb, {}, std::vector<uint64_t>{9}), std::vector<uint64_t>{9});
  EXPECT_TRUE(leases_.Renew(sc, {}, std::vector<uint64_t>{9}).empty());
}

TEST_F(LeaseManagerTest, QueuedWriteFailsWhenItsSessionEnds) {
  Inbox a, b;
  const uint64_t sa = Open(a, "a"), sb = Open(b, "b");
  WriteOutcome wa, wb;
  leases_.AcquireWrite(sa, 9, wa.Fn());
  leases_.AcquireWrite(sb, 9, wb.Fn());
  EXPECT_FALSE(wb.Ready(kStillBlocked));
  leases_.DetachSession(sb);
  ASSERT_TRUE(wb.Ready(kPrompt));
  EXPECT_EQ(wb.future.get().code(), StatusCode::kUnavailable);
  WriteOutcome late;
  leases_.AcquireWrite(sb, 9, late.Fn());
  ASSERT_TRUE(late.Ready(kPrompt));
  EXPECT_FALSE(late.future.get().ok());
}

TEST_F(LeaseManagerTest, SessionIdsAreUniqueAndNeverZero) {
  Inbox a;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 100; ++i) ids.push_back(Open(a, "s" + std::to_string(i)));
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
  EXPECT_NE(ids.front(), 0u);
  EXPECT_EQ(leases_.Stats().sessions, 100u);
}

}  // namespace
}  // namespace geofs::hub
