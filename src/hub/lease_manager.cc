#include "hub/lease_manager.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <utility>

#include "common/logging.h"

namespace geofs::hub {

namespace {

std::vector<uint64_t> Distinct(std::span<const uint64_t> inos) {
  std::vector<uint64_t> out(inos.begin(), inos.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t WallMillis(const WallTime& t) { return t.sec * 1000 + t.nsec / 1'000'000; }

// The horizon file: "<wall-clock ms> <ttl ms>\n", fixed width so that each
// update overwrites the whole record in place.
constexpr int kHorizonRecordBytes = 42;

uint64_t RandomSessionBase() {
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  // Leaves room for 2^62 sessions before wrapping, and is never 0.
  return (r >> 2) | 1;
}

}  // namespace

LeaseManager::LeaseManager(LeaseManagerOptions options)
    : options_(std::move(options)),
      max_busy_wait_(options_.max_busy_wait.count() > 0
                         ? options_.max_busy_wait
                         : 2 * options_.lease_ttl + std::chrono::milliseconds(5000)),
      next_session_(RandomSessionBase()) {
  const auto now = Now();
  horizon_ = now;
  grace_until_ = now + LoadHorizon();
  maintenance_ = std::jthread([this](std::stop_token stop) { Maintenance(stop); });
}

LeaseManager::~LeaseManager() {
  maintenance_.request_stop();
  maintenance_cv_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
  if (horizon_fd_ >= 0) ::close(horizon_fd_);
}

std::chrono::milliseconds LeaseManager::LoadHorizon() {
  using std::chrono::milliseconds;
  if (options_.horizon_path.empty()) return milliseconds(0);
  auto log = GetLogger("lease_manager");
  std::ifstream in(options_.horizon_path);
  if (!in) return milliseconds(0);  // no predecessor ever granted a lease
  int64_t horizon_ms = 0, ttl_ms = 0;
  milliseconds grace;
  if (in >> horizon_ms >> ttl_ms && ttl_ms > 0) {
    // A wall clock set back must not hold changes for longer than a
    // predecessor could have covered.
    const int64_t left = horizon_ms - WallMillis(options_.clock->WallNow());
    grace = milliseconds(std::clamp<int64_t>(left, 0, ttl_ms + ttl_ms / 2));
  } else {
    // A record torn by a crash: assume the worst this TTL allows.
    grace = options_.lease_ttl + options_.lease_ttl / 2;
  }
  if (grace.count() > 0) {
    log->info("holding changes for {} ms: leases granted before this start may still be live",
              grace.count());
  }
  return grace;
}

bool LeaseManager::CoverLocked(TimePoint now) {
  if (options_.horizon_path.empty() || now + options_.lease_ttl <= horizon_) return true;
  // Covering 1.5 TTL ahead writes at most twice per TTL and costs a
  // successor at most that long a wait.
  const auto next = now + options_.lease_ttl + options_.lease_ttl / 2;
  if (horizon_fd_ < 0) {
    horizon_fd_ = ::open(options_.horizon_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  }
  const int64_t wall_ms = WallMillis(options_.clock->WallNow()) +
                          std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
  char record[kHorizonRecordBytes + 1];
  std::snprintf(record, sizeof(record), "%20" PRId64 " %20" PRId64 "\n", wall_ms,
                static_cast<int64_t>(options_.lease_ttl.count()));
  if (horizon_fd_ < 0 ||
      ::pwrite(horizon_fd_, record, kHorizonRecordBytes, 0) != kHorizonRecordBytes ||
      ::fdatasync(horizon_fd_) != 0) {
    GetLogger("lease_manager")
        ->error("cannot record the lease horizon in {}: {}; granting no leases",
                options_.horizon_path, std::strerror(errno));
    return false;
  }
  horizon_ = next;
  return true;
}

// --- Sessions.

uint64_t LeaseManager::OpenSession(const std::string& spoke_id, const std::string& portal,
                                   uint64_t previous_session, InvalidateFn invalidate) {
  Deferred deferred;
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    auto prev = sessions_.find(previous_session);
    if (previous_session != 0 && prev != sessions_.end() && prev->second.spoke_id == spoke_id) {
      // The spoke started over: it no longer serves anything it held under
      // the old session, so nothing need wait for that session's leases.
      DropAllLeases(previous_session, prev->second);
      std::erase_if(outstanding_,
                    [&](const auto& entry) { return entry.second.session == previous_session; });
      FailQueuedWrites(previous_session, &deferred);
      for (auto& [ino, w] : writes_) {
        if (w.holder == previous_session) w.holder = 0;
      }
      sessions_.erase(prev);
      MaintainLocked(&deferred);
      cv_.notify_all();
    }
    id = next_session_++;
    Session& s = sessions_[id];
    s.spoke_id = spoke_id;
    s.portal = portal;
    s.invalidate = std::move(invalidate);
  }
  for (auto& fn : deferred) fn();
  return id;
}

void LeaseManager::DetachSession(uint64_t session) {
  Deferred deferred;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end() || !it->second.attached) return;
    it->second.attached = false;
    it->second.invalidate = nullptr;
    FailQueuedWrites(session, &deferred);
    cv_.notify_all();
  }
  for (auto& fn : deferred) fn();
}

bool LeaseManager::IsOpen(uint64_t session) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(session);
  return it != sessions_.end() && it->second.attached;
}

void LeaseManager::DropLease(uint64_t session, Session& s, uint64_t ino) {
  s.leases.erase(ino);
  auto h = holders_.find(ino);
  if (h == holders_.end()) return;
  h->second.erase(session);
  if (h->second.empty()) holders_.erase(h);
}

void LeaseManager::DropAllLeases(uint64_t session, Session& s) {
  for (const auto& [ino, expiry] : s.leases) {
    auto h = holders_.find(ino);
    if (h == holders_.end()) continue;
    h->second.erase(session);
    if (h->second.empty()) holders_.erase(h);
  }
  s.leases.clear();
}

void LeaseManager::FailQueuedWrites(uint64_t session, Deferred* deferred) {
  for (auto& [ino, w] : writes_) {
    for (auto it = w.queue.begin(); it != w.queue.end();) {
      if (it->session != session) {
        ++it;
        continue;
      }
      deferred->push_back([done = std::move(it->done), session] {
        done(Status::Unavailable("session " + std::to_string(session) + " ended"));
      });
      it = w.queue.erase(it);
    }
  }
}

// --- Read leases.

void LeaseManager::WaitSlice(std::unique_lock<std::mutex>& lock, TimePoint deadline) {
  const auto now = Now();
  if (deadline <= now) return;
  cv_.wait_for(lock, std::min<std::chrono::nanoseconds>(deadline - now, options_.wait_slice));
}

bool LeaseManager::AnyBusy(std::span<const uint64_t> inos) const {
  return std::any_of(inos.begin(), inos.end(), [&](uint64_t ino) {
    auto it = busy_.find(ino);
    return it != busy_.end() && !it->second.origins.empty();
  });
}

bool LeaseManager::ChangeMustWait(std::span<const uint64_t> inos,
                                  std::span<const std::string> names) const {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return names_.contains(name); }) ||
         std::any_of(inos.begin(), inos.end(), [&](uint64_t ino) {
           auto it = busy_.find(ino);
           return it != busy_.end() && it->second.waiting_grants > 0;
         });
}

void LeaseManager::CountWaitingGrant(std::span<const uint64_t> inos, int delta) {
  for (uint64_t ino : inos) {
    Busy& b = busy_[ino];
    b.waiting_grants += delta;
    if (b.waiting_grants == 0 && b.origins.empty()) busy_.erase(ino);
  }
}

Status LeaseManager::Grant(uint64_t session, std::span<const uint64_t> inos) {
  std::unique_lock lock(mu_);
  const auto give_up = Now() + max_busy_wait_;
  const std::vector<uint64_t> distinct = Distinct(inos);
  bool counted = false;  // as waiting on `distinct`
  for (;;) {
    auto it = sessions_.find(session);
    Status refused = Status::Ok();
    if (it == sessions_.end() || !it->second.attached) {
      refused = Status::NotFound("session " + std::to_string(session) + " is not open");
    } else if (!AnyBusy(distinct)) {
      break;
    } else if (Now() >= give_up) {
      refused = Status::Unavailable("a change to a leased inode is still pending; retry");
    }
    if (!refused.ok()) {
      if (counted) {
        CountWaitingGrant(distinct, -1);
        cv_.notify_all();
      }
      return refused;
    }
    if (!counted) {
      CountWaitingGrant(distinct, +1);
      counted = true;
    }
    WaitSlice(lock, give_up);
  }
  if (counted) {
    CountWaitingGrant(distinct, -1);
    cv_.notify_all();
  }
  Session& s = sessions_[session];
  const auto now = Now();
  if (!CoverLocked(now)) return Status::Unavailable("cannot record the lease horizon");
  const auto expiry = now + options_.lease_ttl;
  for (uint64_t ino : inos) {
    s.leases[ino] = expiry;
    holders_[ino].insert(session);
  }
  return Status::Ok();
}

std::vector<uint64_t> LeaseManager::Renew(uint64_t session, std::span<const uint64_t> inos,
                                          std::span<const uint64_t> write_inos) {
  std::lock_guard lock(mu_);
  std::vector<uint64_t> lost;
  auto it = sessions_.find(session);
  const auto now = Now();
  if (it == sessions_.end() || !it->second.attached || !CoverLocked(now)) {
    lost.assign(inos.begin(), inos.end());
    lost.insert(lost.end(), write_inos.begin(), write_inos.end());
    return lost;
  }
  Session& s = it->second;
  for (uint64_t ino : inos) {
    auto lease = s.leases.find(ino);
    if (lease == s.leases.end() || lease->second <= now || AnyBusy({&ino, 1})) {
      if (lease != s.leases.end()) DropLease(session, s, ino);
      lost.push_back(ino);
    } else {
      lease->second = now + options_.lease_ttl;
    }
  }
  for (uint64_t ino : write_inos) {
    auto w = writes_.find(ino);
    if (w == writes_.end() || w->second.holder != session || w->second.expiry <= now) {
      lost.push_back(ino);
    } else {
      w->second.expiry = now + options_.lease_ttl;
    }
  }
  return lost;
}

void LeaseManager::Ack(uint64_t session, uint64_t seq) {
  std::lock_guard lock(mu_);
  auto it = outstanding_.find(seq);
  if (it == outstanding_.end() || it->second.session != session) return;
  outstanding_.erase(it);
  cv_.notify_all();
}

// --- Changes.

Result<LeaseManager::ChangeGuard> LeaseManager::BeginChange(std::span<const uint64_t> inos,
                                                            uint64_t origin_session,
                                                            std::span<const std::string> names) {
  std::vector<uint64_t> change = Distinct(inos);
  std::vector<std::string> held(names.begin(), names.end());
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  std::vector<std::pair<InvalidateFn, Invalidation>> sends;
  std::unique_lock lock(mu_);
  // A predecessor's leases are unknown, so every change could conflict.
  while (Now() < grace_until_) WaitSlice(lock, grace_until_);
  const auto give_up = Now() + max_busy_wait_;
  while (ChangeMustWait(change, held)) {
    if (Now() >= give_up) {
      return Status::Unavailable("another change to these names is still pending; retry");
    }
    WaitSlice(lock, give_up);
  }
  for (uint64_t ino : change) busy_[ino].origins.push_back(origin_session);
  names_.insert(held.begin(), held.end());
  ++changes_;

  // Revoke every other session's live leases on the inodes, one
  // invalidation per session naming the inodes it held.
  const auto now = Now();
  std::unordered_map<uint64_t, Invalidation> per_session;
  std::unordered_map<uint64_t, TimePoint> deadline_of;
  for (uint64_t ino : change) {
    auto h = holders_.find(ino);
    if (h == holders_.end()) continue;
    const std::vector<uint64_t> sessions(h->second.begin(), h->second.end());
    for (uint64_t sid : sessions) {
      if (sid == origin_session) continue;
      Session& s = sessions_[sid];
      const TimePoint expiry = s.leases[ino];
      DropLease(sid, s, ino);
      if (expiry <= now) continue;
      per_session[sid].inos.push_back(ino);
      auto& deadline = deadline_of[sid];
      deadline = std::max(deadline, expiry);
    }
  }
  for (auto& [sid, inv] : per_session) {
    inv.seq = next_seq_++;
    outstanding_[inv.seq] = Outstanding{sid, deadline_of[sid], inv.inos};
    Session& s = sessions_[sid];
    if (s.attached && s.invalidate) {
      sends.emplace_back(s.invalidate, std::move(inv));
      ++invalidations_sent_;
    }
  }
  ChangeGuard guard(this, change, std::move(held), origin_session);

  lock.unlock();
  for (auto& [send, inv] : sends) send(inv);
  lock.lock();

  // Until every invalidation of these inodes (ours, and those of earlier
  // changes still pending on them, which revoked leases this change then
  // did not find) was acknowledged, its session replaced, or its revoked
  // leases expired.
  bool waited = false;
  for (;;) {
    const auto t = Now();
    TimePoint next = TimePoint::max();
    for (auto it = outstanding_.begin(); it != outstanding_.end();) {
      const std::vector<uint64_t>& revoked = it->second.inos;
      // The changing session is not waited for: it knows of its own change,
      // and a spoke sends what it journalled before it acknowledges.
      const bool ours = it->second.session != origin_session &&
                        std::any_of(revoked.begin(), revoked.end(), [&](uint64_t ino) {
                          return std::binary_search(change.begin(), change.end(), ino);
                        });
      if (ours && it->second.deadline <= t) {
        it = outstanding_.erase(it);
        continue;
      }
      if (ours) next = std::min(next, it->second.deadline);
      ++it;
    }
    if (next == TimePoint::max()) break;
    waited = true;
    WaitSlice(lock, next);
  }
  if (waited) ++changes_waited_;
  return guard;
}

std::optional<LeaseManager::ChangeGuard> LeaseManager::TryBeginChange(
    std::span<const uint64_t> inos, uint64_t origin_session, std::span<const std::string> names) {
  std::vector<uint64_t> change = Distinct(inos);
  std::vector<std::string> held(names.begin(), names.end());
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  std::lock_guard lock(mu_);
  if (Now() < grace_until_ || ChangeMustWait(change, held)) return std::nullopt;
  for (uint64_t ino : change) {
    auto h = holders_.find(ino);
    if (h == holders_.end()) continue;
    for (uint64_t sid : h->second) {
      if (sid != origin_session) return std::nullopt;
    }
  }
  for (const auto& [seq, wait] : outstanding_) {
    if (wait.session == origin_session) continue;  // as in BeginChange
    for (uint64_t ino : wait.inos) {
      if (std::binary_search(change.begin(), change.end(), ino)) return std::nullopt;
    }
  }
  for (uint64_t ino : change) busy_[ino].origins.push_back(origin_session);
  names_.insert(held.begin(), held.end());
  ++changes_;
  return ChangeGuard(this, std::move(change), std::move(held), origin_session);
}

void LeaseManager::EndChange(const std::vector<uint64_t>& inos,
                             const std::vector<std::string>& names, uint64_t origin) {
  std::lock_guard lock(mu_);
  for (uint64_t ino : inos) {
    auto it = busy_.find(ino);
    if (it == busy_.end()) continue;
    std::vector<uint64_t>& origins = it->second.origins;
    auto mine = std::find(origins.begin(), origins.end(), origin);
    if (mine != origins.end()) origins.erase(mine);
    if (origins.empty() && it->second.waiting_grants == 0) busy_.erase(it);
  }
  for (const std::string& name : names) names_.erase(name);
  cv_.notify_all();
}

void LeaseManager::GrantToOrigin(uint64_t origin, const std::vector<uint64_t>& change,
                                 std::span<const uint64_t> inos) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(origin);
  if (it == sessions_.end() || !it->second.attached) return;
  Session& s = it->second;
  const auto now = Now();
  if (!CoverLocked(now)) return;
  const auto expiry = now + options_.lease_ttl;
  for (uint64_t ino : inos) {
    const bool ours = std::binary_search(change.begin(), change.end(), ino);
    if (ours) {
      auto b = busy_.find(ino);
      if (b != busy_.end() && std::any_of(b->second.origins.begin(), b->second.origins.end(),
                                          [&](uint64_t other) { return other != origin; })) {
        continue;
      }
    } else {
      if (AnyBusy({&ino, 1})) continue;
      auto h = holders_.find(ino);
      if (h != holders_.end() && std::any_of(h->second.begin(), h->second.end(), [&](uint64_t sid) {
            return sid != origin && sessions_[sid].leases[ino] > now;
          })) {
        continue;
      }
    }
    s.leases[ino] = expiry;
    holders_[ino].insert(origin);
  }
}

LeaseManager::ChangeGuard::ChangeGuard(ChangeGuard&& other) noexcept
    : manager_(std::exchange(other.manager_, nullptr)),
      inos_(std::move(other.inos_)),
      names_(std::move(other.names_)),
      origin_(other.origin_) {}

LeaseManager::ChangeGuard& LeaseManager::ChangeGuard::operator=(ChangeGuard&& other) noexcept {
  if (this != &other) {
    End();
    manager_ = std::exchange(other.manager_, nullptr);
    inos_ = std::move(other.inos_);
    names_ = std::move(other.names_);
    origin_ = other.origin_;
  }
  return *this;
}

LeaseManager::ChangeGuard::~ChangeGuard() { End(); }

void LeaseManager::ChangeGuard::End() {
  if (manager_ == nullptr) return;
  manager_->EndChange(inos_, names_, origin_);
  manager_ = nullptr;
}

void LeaseManager::ChangeGuard::GrantToOrigin(std::span<const uint64_t> inos) {
  if (manager_ == nullptr || origin_ == 0) return;
  manager_->GrantToOrigin(origin_, inos_, inos);
}

// --- Write leases.

void LeaseManager::AcquireWrite(uint64_t session, uint64_t ino, WriteGrantFn done) {
  Deferred deferred;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end() || !it->second.attached) {
      deferred.push_back([done = std::move(done), session] {
        done(Status::Unavailable("session " + std::to_string(session) + " is not open"));
      });
    } else {
      WriteLease& w = writes_[ino];
      const auto now = Now();
      if (w.holder == session && w.expiry > now && CoverLocked(now)) {
        w.expiry = now + options_.lease_ttl;
        deferred.push_back([done = std::move(done)] { done(Status::Ok()); });
      } else {
        w.queue.push_back(WriteWaiter{session, std::move(done)});
        MaintainLocked(&deferred);
      }
    }
  }
  for (auto& fn : deferred) fn();
}

void LeaseManager::ReleaseWrite(uint64_t session, uint64_t ino) {
  Deferred deferred;
  {
    std::lock_guard lock(mu_);
    auto w = writes_.find(ino);
    if (w == writes_.end() || w->second.holder != session) return;
    w->second.holder = 0;
    MaintainLocked(&deferred);
  }
  for (auto& fn : deferred) fn();
}

// --- Upkeep.

void LeaseManager::MaintainLocked(Deferred* deferred) {
  const auto now = Now();
  for (auto it = writes_.begin(); it != writes_.end();) {
    WriteLease& w = it->second;
    if (w.holder != 0 && w.expiry <= now) w.holder = 0;
    if (w.holder == 0 && !w.queue.empty() && CoverLocked(now)) {
      WriteWaiter next = std::move(w.queue.front());
      w.queue.pop_front();
      w.holder = next.session;
      w.expiry = now + options_.lease_ttl;
      deferred->push_back([done = std::move(next.done)] { done(Status::Ok()); });
    }
    if (w.holder == 0 && w.queue.empty()) {
      it = writes_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Session& s = it->second;
    if (s.attached) {
      ++it;
      continue;
    }
    std::erase_if(s.leases, [&](const auto& lease) {
      if (lease.second > now) return false;
      auto h = holders_.find(lease.first);
      if (h != holders_.end()) {
        h->second.erase(it->first);
        if (h->second.empty()) holders_.erase(h);
      }
      return true;
    });
    // Kept while something still waits on it, so that a successor naming
    // it as previous_session can end that wait.
    const uint64_t id = it->first;
    const bool writes = std::any_of(writes_.begin(), writes_.end(),
                                    [&](const auto& w) { return w.second.holder == id; });
    const bool awaited = std::any_of(outstanding_.begin(), outstanding_.end(),
                                     [&](const auto& o) { return o.second.session == id; });
    if (s.leases.empty() && !writes && !awaited) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

void LeaseManager::Maintenance(std::stop_token stop) {
  auto last_prune = Now();
  while (!stop.stop_requested()) {
    Deferred deferred;
    {
      std::lock_guard lock(mu_);
      MaintainLocked(&deferred);
      // Expired leases of attached sessions are also dropped lazily (by
      // Renew and BeginChange); this bounds the memory of ones never seen
      // again, once per TTL.
      const auto now = Now();
      if (now - last_prune >= options_.lease_ttl) {
        last_prune = now;
        for (auto& [sid, s] : sessions_) {
          std::vector<uint64_t> expired;
          for (const auto& [ino, expiry] : s.leases) {
            if (expiry <= now) expired.push_back(ino);
          }
          for (uint64_t ino : expired) DropLease(sid, s, ino);
        }
      }
    }
    for (auto& fn : deferred) fn();
    std::unique_lock lock(maintenance_mu_);
    maintenance_cv_.wait_for(lock, stop, options_.wait_slice, [] { return false; });
  }
}

LeaseStats LeaseManager::Stats() const {
  std::lock_guard lock(mu_);
  LeaseStats stats;
  const auto now = Now();
  for (const auto& [sid, s] : sessions_) {
    if (s.attached) {
      ++stats.sessions;
    } else {
      ++stats.detached_sessions;
    }
    for (const auto& [ino, expiry] : s.leases) stats.read_leases += expiry > now;
  }
  for (const auto& [ino, w] : writes_) stats.write_leases += w.holder != 0 && w.expiry > now;
  stats.invalidations_sent = invalidations_sent_;
  stats.changes = changes_;
  stats.changes_waited = changes_waited_;
  return stats;
}

}  // namespace geofs::hub
