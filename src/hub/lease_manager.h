// LeaseManager: the hub's side of the coherence protocol (docs/coherence.md).
//
// Sessions are spokes' Session streams. A session holds read leases
// (inode -> expiry) on what it caches, and at most one session at a time
// holds a file's write lease. A change to inodes runs under a ChangeGuard:
// BeginChange marks the inodes busy (new grants on them wait), revokes every
// other session's leases on them, sends each such session an Invalidation,
// and returns once each has acknowledged or its revoked leases have expired
// (its own and those of earlier changes still pending on the same inodes),
// except invalidations sent to the changing session itself: a spoke that
// was asked to drop an inode may first send the changes it journalled for
// it (write-behind, docs/coherence.md) and must not wait for itself.
// The change is committed while the guard lives; destroying the guard ends
// it.
//
// Several changes may hold one inode at once (creates and removes of
// different names in one directory commit together, sharing the store's
// synced group commit); what they must not share are the directory entries
// they add, remove or replace, named by opaque `names` keys that are
// exclusive among changes. The namespace serialises the records' read-
// modify-write itself. A grant waiting on an inode holds off changes that
// would begin on it, so that a stream of changes cannot starve readers.
//
// Restarts: a new hub process knows nothing of the leases its predecessor
// granted, yet spokes may still serve under them. With `horizon_path` set,
// the manager keeps on disk a wall-clock bound on every expiry it granted
// (extended by 1.5 TTL at a time, synced before the grant is answered), and
// a new manager reading an unexpired bound holds every change until it
// passes (docs/coherence.md, "Hub restart").
//
// Time comes from a Clock, so tests drive expiry with a ManualClock: waits
// re-read the clock at least every `wait_slice`, and a background thread
// expires write leases (granting queued writers) at that pace.
//
// Thread-safe. Callbacks (InvalidateFn, WriteGrantFn) run without the
// manager's lock held and must not block; they may run on any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "geofs/clock.h"
#include "geofs/status.h"

namespace geofs::hub {

struct LeaseManagerOptions {
  // How long a grant or renewal lasts.
  std::chrono::milliseconds lease_ttl{30'000};
  // Longest a Grant or BeginChange waits for a busy inode before it fails with kUnavailable. A
  // change holds its inodes for at most about one TTL plus its commit, so the default (zero) means
  // 2 * lease_ttl + 5 s.
  std::chrono::milliseconds max_busy_wait{0};
  // Waits re-read the clock at least this often (ManualClock tests).
  std::chrono::milliseconds wait_slice{20};
  // REQUIRES: outlives the manager.
  Clock* clock = Clock::Real();
  // File holding the lease horizon (see above); empty: none is kept, and
  // changes never wait for a predecessor's leases.
  std::string horizon_path;
};

struct Invalidation {
  uint64_t seq = 0;
  std::vector<uint64_t> inos;
};

struct LeaseStats {
  uint64_t sessions = 0;            // sessions with an open stream
  uint64_t detached_sessions = 0;   // streams gone, leases not yet expired
  uint64_t read_leases = 0;         // live read leases over all sessions
  uint64_t write_leases = 0;        // live write leases
  uint64_t invalidations_sent = 0;  // since start
  uint64_t changes = 0;             // BeginChange calls that went ahead
  uint64_t changes_waited = 0;      // ... of which waited for an ack or expiry
};

class LeaseManager {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Delivers an invalidation to a session's spoke. Must not block.
  using InvalidateFn = std::function<void(const Invalidation&)>;
  // Tells a waiting AcquireWrite the outcome: OK (granted) or the reason
  // it never will be (kUnavailable: the session ended first).
  using WriteGrantFn = std::function<void(const Status&)>;

  explicit LeaseManager(LeaseManagerOptions options = {});
  ~LeaseManager();
  LeaseManager(const LeaseManager&) = delete;
  LeaseManager& operator=(const LeaseManager&) = delete;

  std::chrono::milliseconds lease_ttl() const { return options_.lease_ttl; }

  // --- Sessions.
  // A new session. Ids are never 0 and start from a random base, so an id
  // from before a hub restart names no session after it. If `previous_session`
  // is a session of the same `spoke_id`, its read and write leases are
  // dropped at once and changes waiting on it stop waiting.
  uint64_t OpenSession(const std::string& spoke_id, const std::string& portal,
                       uint64_t previous_session, InvalidateFn invalidate);
  // The session's stream is gone: it gets no new leases and no messages,
  // but its leases stand until they expire (its spoke may serve under them
  // while it reconnects), and changes wait for that expiry. Queued
  // AcquireWrites fail. Idempotent.
  void DetachSession(uint64_t session);
  // True if `session` is open (attached).
  bool IsOpen(uint64_t session) const;

  // --- Read leases.
  // Leases `inos` to `session` for one TTL from now, after waiting for
  // pending changes on any of them. kNotFound if the session is not open
  // (unknown, detached or replaced); kUnavailable if a change stays
  // pending longer than max_busy_wait.
  Status Grant(uint64_t session, std::span<const uint64_t> inos);
  // Extends the session's live leases on `inos` and write leases on
  // `write_inos` by one TTL from now; returns the inodes (of either list)
  // not extended: not leased to it (expired, revoked, never granted) or
  // busy with a pending change. Never waits. A session not open loses all.
  std::vector<uint64_t> Renew(uint64_t session, std::span<const uint64_t> inos,
                              std::span<const uint64_t> write_inos);
  // The spoke dropped what invalidation `seq` named.
  void Ack(uint64_t session, uint64_t seq);

  // --- Changes.
  class ChangeGuard {
   public:
    ChangeGuard() = default;
    ChangeGuard(ChangeGuard&& other) noexcept;
    ChangeGuard& operator=(ChangeGuard&& other) noexcept;
    ~ChangeGuard();  // ends the change: grants waiting on its inodes proceed

    // Leases the inodes of this change among `inos` to the changing
    // session (the one excluded from invalidations), so that the reply of
    // its own change may be cached, unless a change of another origin is
    // also pending on them (its commit would not invalidate this session).
    // Inodes outside the change are leased only if no change is pending on
    // them and nobody else holds a lease (a just-created inode); others are
    // skipped. No-op without a session.
    void GrantToOrigin(std::span<const uint64_t> inos);
    // Ends the change now (as the destructor does).
    void End();

   private:
    friend class LeaseManager;
    ChangeGuard(LeaseManager* manager, std::vector<uint64_t> inos, std::vector<std::string> names,
                uint64_t origin)
        : manager_(manager), inos_(std::move(inos)), names_(std::move(names)), origin_(origin) {}
    LeaseManager* manager_ = nullptr;
    std::vector<uint64_t> inos_;
    std::vector<std::string> names_;
    uint64_t origin_ = 0;
  };
  // Starts a change of `inos` made by `origin_session` (0: not a session), which adds, removes or
  // replaces the directory entries `names` (opaque keys; see above). Waits out the restart grace
  // (see above), then until no other change holds any of `names` and no grant waits on any of
  // `inos` (kUnavailable after max_busy_wait), then invalidates every other session's live leases
  // on `inos` and waits for the acks or the leases' expiry, including invalidations that earlier
  // changes still pending on `inos` sent (but not those sent to `origin_session`). REQUIRES: the
  // calling thread holds no other ChangeGuard (changes would deadlock) and no namespace lock.
  Result<ChangeGuard> BeginChange(std::span<const uint64_t> inos, uint64_t origin_session,
                                  std::span<const std::string> names = {});

  // BeginChange if it can go ahead at once: nothing to wait out (restart
  // grace, another change's names, waiting grants) and nobody to invalidate
  // (no other session holds a lease on `inos`, expired or not, and no
  // invalidation of them is outstanding at another session). nullopt
  // otherwise, having done
  // nothing. Never waits.
  std::optional<ChangeGuard> TryBeginChange(std::span<const uint64_t> inos, uint64_t origin_session,
                                            std::span<const std::string> names = {});

  // --- Write leases.
  // Gives `session` the write lease on `ino` for one TTL: at once if no
  // other session holds a live one (re-acquiring one's own renews it),
  // else when the holder releases it or lets it expire, in FIFO order.
  // `done` runs exactly once, possibly before this returns.
  void AcquireWrite(uint64_t session, uint64_t ino, WriteGrantFn done);
  // Frees the session's write lease on `ino` (no-op if it holds none).
  void ReleaseWrite(uint64_t session, uint64_t ino);

  LeaseStats Stats() const;

 private:
  struct Session {
    std::string spoke_id;
    std::string portal;
    bool attached = true;
    InvalidateFn invalidate;
    std::unordered_map<uint64_t, TimePoint> leases;  // ino -> expiry
  };
  // An invalidation sent and not yet acknowledged.
  struct Outstanding {
    uint64_t session = 0;
    TimePoint deadline;          // the latest expiry of the leases it revoked
    std::vector<uint64_t> inos;  // sorted
  };
  // An inode some change or grant is waiting on or working with.
  struct Busy {
    std::vector<uint64_t> origins;  // one per pending change, its origin
    uint32_t waiting_grants = 0;
  };
  struct WriteWaiter {
    uint64_t session = 0;
    WriteGrantFn done;
  };
  struct WriteLease {
    uint64_t holder = 0;  // 0: free
    TimePoint expiry;
    std::deque<WriteWaiter> queue;
  };
  using Deferred = std::vector<std::function<void()>>;

  TimePoint Now() const { return options_.clock->Now(); }
  // Reads the predecessor's horizon: how long changes must wait for it.
  std::chrono::milliseconds LoadHorizon();
  // Makes sure the persisted horizon covers leases granted at `now` for one
  // TTL; false if it could not be written (then nothing may be granted).
  // REQUIRES: mu_ held.
  bool CoverLocked(TimePoint now);
  // Waits on cv_ until `deadline` (by the clock) or a notification,
  // sleeping at most wait_slice. REQUIRES: `lock` holds mu_.
  void WaitSlice(std::unique_lock<std::mutex>& lock, TimePoint deadline);
  // True if a change is pending on any of `inos`. REQUIRES: mu_ held.
  bool AnyBusy(std::span<const uint64_t> inos) const;
  // True if a change holds any of `names` or a grant waits on any of
  // `inos`. REQUIRES: mu_ held.
  bool ChangeMustWait(std::span<const uint64_t> inos, std::span<const std::string> names) const;
  // Counts a grant waiting on `inos` (delta +1) or no longer (-1).
  // REQUIRES: mu_ held.
  void CountWaitingGrant(std::span<const uint64_t> inos, int delta);
  // Removes a lease of `session` on `ino` from both indexes.
  void DropLease(uint64_t session, Session& s, uint64_t ino);
  void DropAllLeases(uint64_t session, Session& s);
  void FailQueuedWrites(uint64_t session, Deferred* deferred);
  void EndChange(const std::vector<uint64_t>& inos, const std::vector<std::string>& names,
                 uint64_t origin);
  void GrantToOrigin(uint64_t origin, const std::vector<uint64_t>& change,
                     std::span<const uint64_t> inos);
  // Hands free or expired write leases to their next waiter; drops
  // detached sessions whose leases all expired. REQUIRES: mu_ held.
  void MaintainLocked(Deferred* deferred);
  void Maintenance(std::stop_token stop);

  const LeaseManagerOptions options_;
  const std::chrono::milliseconds max_busy_wait_;

  mutable std::mutex mu_;
  std::condition_variable cv_;                      // busy set shrank, an ack came, a session went
  uint64_t next_session_ = 1;                       // guarded by mu_
  uint64_t next_seq_ = 1;                           // guarded by mu_
  std::unordered_map<uint64_t, Session> sessions_;  // guarded by mu_
  std::unordered_map<uint64_t, std::unordered_set<uint64_t>> holders_;  // ino -> sessions
  std::unordered_map<uint64_t, Busy> busy_;                             // guarded by mu_
  std::unordered_set<std::string> names_;  // held by pending changes; guarded by mu_
  std::unordered_map<uint64_t, Outstanding> outstanding_;  // seq -> wait; guarded by mu_
  std::unordered_map<uint64_t, WriteLease> writes_;        // guarded by mu_
  uint64_t invalidations_sent_ = 0;                        // guarded by mu_
  uint64_t changes_ = 0;                                   // guarded by mu_
  uint64_t changes_waited_ = 0;                            // guarded by mu_

  int horizon_fd_ = -1;    // guarded by mu_
  TimePoint horizon_;      // guarded by mu_: what the file covers
  TimePoint grace_until_;  // changes wait until then (a predecessor's leases)

  std::mutex maintenance_mu_;
  std::condition_variable_any maintenance_cv_;
  std::jthread maintenance_;  // last: stopped first
};

}  // namespace geofs::hub
