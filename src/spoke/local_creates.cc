#include "spoke/local_creates.h"

#include <algorithm>
#include <future>

#include "common/logging.h"
#include "spoke/hub_convert.h"
#include "vfs/access.h"

namespace geofs::spoke {
namespace {

// The name a file whose name was taken at the hub is made under instead.
std::string ConflictName(const std::string& name, uint64_t ino) {
  const std::string suffix = ".geofs-conflict-" + std::to_string(ino);
  const size_t keep = std::min(name.size(), vfs::kMaxNameBytes - suffix.size());
  return name.substr(0, keep) + suffix;
}

// Directories whose times this spoke answered are kept at most this many.
constexpr size_t kMaxDirTimes = 65536;

// How long after a failed ReserveInodes the next is asked.
constexpr std::chrono::seconds kReserveBackoff{10};

// Errors after which a send is tried again later.
bool Transient(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kNoSpace ||
         code == StatusCode::kAborted || code == StatusCode::kIoError;
}

}  // namespace

LocalCreates::LocalCreates(CreateLog* log, LocalCreatesHooks hooks, LocalCreatesOptions options,
                           const std::vector<LoggedCreate>& recovered)
    : log_(log), hooks_(std::move(hooks)), options_(options) {
  std::vector<v1::CreateRequest> to_send;
  for (const LoggedCreate& c : recovered) {
    Entry e;
    if (!e.file.request.ParseFromString(c.request)) {
      GetLogger("local_creates")->error("create log: unreadable request for inode {}", c.ino);
      continue;
    }
    e.file.key = FileKey{c.ino, c.gen};
    e.file.dir = FromProto(e.file.request.dir());
    e.file.name = e.file.request.name();
    e.file.attr_known = false;
    // Their attributes are not known here: sent at once, and until the
    // hub has them every operation on them waits.
    names_[e.file.dir.ino][e.file.name] = c.ino;
    auto [it, added] = files_.emplace(c.ino, std::move(e));
    StartSendLocked(it->second, &to_send);
  }
  if (!files_.empty()) {
    GetLogger("local_creates")
        ->info("{} creates from before the restart go to the hub", files_.size());
  }
  sender_ = std::thread([this] { SendLoop(); });
  Send(to_send);
  {
    std::lock_guard lock(mu_);
    if (!ShouldReserveLocked()) return;
  }
  Reserve();
}

LocalCreates::~LocalCreates() {
  {
    std::unique_lock lock(mu_);
    stop_ = true;
    cv_.notify_all();
    // Sends still out call back into this object: wait for them (a hub
    // that never answers is cut off by the link's deadlines).
    if (!cv_.wait_for(lock, std::chrono::seconds(30),
                      [this] { return in_flight_ == 0 && !reserving_; })) {
      GetLogger("local_creates")->error("{} creates still being sent at shutdown", in_flight_);
    }
  }
  sender_.join();
}

bool LocalCreates::ShouldReserveLocked() {
  if (options_.reserve_batch == 0 || reserving_ || stop_ ||
      numbers_.size() >= options_.reserve_batch / 4 || options_.clock->Now() < reserve_after_) {
    return false;
  }
  reserving_ = true;
  return true;
}

void LocalCreates::Reserve() {
  hooks_.reserve(options_.reserve_batch, [this](Result<v1::ReserveInodesResponse> r) {
    std::lock_guard lock(mu_);
    reserving_ = false;
    cv_.notify_all();
    if (!r.ok()) {
      // Creates go to the hub meanwhile (an old hub may lack the call).
      GetLogger("local_creates")->warn("reserving inode numbers: {}", r.status().ToString());
      reserve_after_ = options_.clock->Now() + kReserveBackoff;
      return;
    }
    for (int i = 0; i < r->generations_size(); ++i) {
      numbers_.push_back(FileKey{r->first() + static_cast<uint64_t>(i), r->generations(i)});
    }
  });
}

std::optional<FileKey> LocalCreates::TakeNumber() {
  std::optional<FileKey> key;
  bool reserve;
  {
    std::lock_guard lock(mu_);
    if (!numbers_.empty()) {
      key = numbers_.front();
      numbers_.pop_front();
    }
    reserve = ShouldReserveLocked();
  }
  if (reserve) Reserve();
  return key;
}

Status LocalCreates::Add(LocalFile file, const std::function<bool()>& name_free) {
  std::lock_guard lock(mu_);
  auto& names = names_[file.dir.ino];
  if (names.count(file.name) != 0) return Status::AlreadyExists(file.name);
  if (!name_free()) {
    if (names.empty()) names_.erase(file.dir.ino);
    return Status::Aborted("the directory changed");
  }
  std::string request;
  file.request.SerializeToString(&request);
  if (Status s = log_->Put(LoggedCreate{file.key.ino, file.key.gen, request}); !s.ok()) {
    if (names.empty()) names_.erase(file.dir.ino);
    return s;
  }
  names[file.name] = file.key.ino;
  const bool was_empty = files_.empty();
  Entry e;
  e.due = options_.clock->Now() + options_.delay;
  const uint64_t ino = file.key.ino;
  e.file = std::move(file);
  files_.emplace(ino, std::move(e));
  ++stats_.created;
  if (was_empty) cv_.notify_all();
  return Status::Ok();
}

Status LocalCreates::Update(uint64_t ino, const std::function<Status(LocalFile&)>& change) {
  std::lock_guard lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end() || it->second.sending) return Status::Aborted("not a local file");
  LocalFile changed = it->second.file;
  GEOFS_RETURN_IF_ERROR(change(changed));
  std::string request;
  changed.request.SerializeToString(&request);
  GEOFS_RETURN_IF_ERROR(log_->Put(LoggedCreate{ino, changed.key.gen, request}));
  it->second.file = std::move(changed);
  return Status::Ok();
}

Status LocalCreates::Cancel(uint64_t ino, const std::function<Status(const LocalFile&)>& check) {
  std::lock_guard lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end() || it->second.sending) return Status::Aborted("not a local file");
  GEOFS_RETURN_IF_ERROR(check(it->second.file));
  GEOFS_RETURN_IF_ERROR(log_->Drop(ino));
  // Nobody waits on a file not being sent.
  EraseLocked(ino);
  ++stats_.cancelled;
  return Status::Ok();
}

std::vector<std::function<void(Status)>> LocalCreates::EraseLocked(uint64_t ino) {
  auto it = files_.find(ino);
  if (it == files_.end()) return {};
  auto waiters = std::move(it->second.waiters);
  if (it->second.conflicted) --renamed_;
  auto dir = names_.find(it->second.file.dir.ino);
  if (dir != names_.end()) {
    auto name = dir->second.find(it->second.file.name);
    if (name != dir->second.end() && name->second == ino) dir->second.erase(name);
    if (dir->second.empty()) names_.erase(dir);
  }
  files_.erase(it);
  return waiters;
}

bool LocalCreates::Holds(uint64_t ino) const {
  std::lock_guard lock(mu_);
  return files_.count(ino) != 0;
}

std::optional<LocalFile> LocalCreates::Find(uint64_t ino) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end()) return std::nullopt;
  LocalFile f = it->second.file;
  f.in_flight = it->second.sending;
  return f;
}

std::optional<LocalFile> LocalCreates::FindName(uint64_t dir, std::string_view name) const {
  std::lock_guard lock(mu_);
  auto d = names_.find(dir);
  if (d == names_.end()) return std::nullopt;
  auto n = d->second.find(name);
  if (n == d->second.end()) return std::nullopt;
  const Entry& e = files_.at(n->second);
  LocalFile f = e.file;
  f.in_flight = e.sending;
  return f;
}

bool LocalCreates::HasDir(uint64_t dir) const {
  std::lock_guard lock(mu_);
  if (names_.count(dir) != 0) return true;
  if (renamed_ == 0) return false;
  // A file renamed after a name clash is no longer under a name here.
  for (const auto& [ino, e] : files_) {
    if (e.file.dir.ino == dir) return true;
  }
  return false;
}

bool LocalCreates::empty() const {
  std::lock_guard lock(mu_);
  return files_.empty();
}

std::optional<WallTime> LocalCreates::DirTime(uint64_t dir, WallTime hub_ctime) const {
  std::lock_guard lock(mu_);
  auto it = dir_times_.find(dir);
  if (it == dir_times_.end() || it->second.hub_ctime != hub_ctime) return std::nullopt;
  return it->second.local;
}

WallTime LocalCreates::TouchDir(uint64_t dir, WallTime hub_ctime) {
  WallTime now = options_.clock->WallNow();
  std::lock_guard lock(mu_);
  // Forgetting them is safe (clients see the hub's time again: a change,
  // so they revalidate); keeping all would grow without bound.
  if (dir_times_.size() >= kMaxDirTimes && dir_times_.count(dir) == 0) dir_times_.clear();
  DirTimes& t = dir_times_[dir];
  if (t.hub_ctime == hub_ctime && now <= t.local) {
    // Every change answered here shows as a new time.
    now = t.local;
    if (++now.nsec == 1'000'000'000) now = WallTime{now.sec + 1, 0};
  }
  t = DirTimes{hub_ctime, now};
  return now;
}

void LocalCreates::StartSendLocked(Entry& e, std::vector<v1::CreateRequest>* out) {
  e.sending = true;
  ++in_flight_;
  out->push_back(e.file.request);
}

void LocalCreates::Send(const std::vector<v1::CreateRequest>& requests) {
  for (const v1::CreateRequest& req : requests) {
    const uint64_t ino = req.reserved_ino();
    hooks_.send(req, [this, ino](Result<v1::CreateResponse> r) { OnSent(ino, std::move(r)); });
  }
}

void LocalCreates::Notify(std::vector<std::function<void(Status)>> waiters, const Status& s) {
  bool stopping;
  {
    std::lock_guard lock(mu_);
    stopping = stop_;
  }
  for (auto& w : waiters) {
    // Shutting down, hooks.run may be gone already.
    if (stopping) {
      w(Status::Unavailable("the spoke is shutting down"));
    } else {
      hooks_.run([w = std::move(w), s] { w(s); });
    }
  }
}

void LocalCreates::OnSent(uint64_t ino, Result<v1::CreateResponse> r) {
  auto log = GetLogger("local_creates");
  std::unique_lock lock(mu_);
  --in_flight_;
  cv_.notify_all();
  auto it = files_.find(ino);
  if (it == files_.end()) return;
  Entry& e = it->second;
  const FileKey dir = e.file.dir;
  if (!r.ok() && Transient(r.status().code())) {
    e.sending = false;
    e.due = options_.clock->Now() + options_.retry;
    auto waiters = std::move(e.waiters);
    e.waiters.clear();
    lock.unlock();
    Notify(std::move(waiters),
           Status::Unavailable("the hub has not taken a create yet: " + r.status().ToString()));
    return;
  }
  if (!r.ok() && r.status().code() == StatusCode::kAlreadyExists && !e.conflicted) {
    // Someone took the name while our lease on the directory had lapsed:
    // keep our file under another name rather than drop it.
    const std::string other = ConflictName(e.file.name, ino);
    log->warn("create of {} in directory {} clashed with a file made meanwhile; keeping it as {}",
              e.file.name, dir.ino, other);
    auto names = names_.find(dir.ino);
    if (names != names_.end()) {
      names->second.erase(e.file.name);
      if (names->second.empty()) names_.erase(names);
    }
    e.conflicted = true;
    ++renamed_;
    e.file.name = other;
    e.file.request.set_name(other);
    std::string request;
    e.file.request.SerializeToString(&request);
    if (Status s = log_->Put(LoggedCreate{ino, e.file.key.gen, request}); !s.ok()) {
      log->error("create log: {}", s.ToString());
    }
    ++stats_.conflicts;
    ++in_flight_;
    std::vector<v1::CreateRequest> resend{e.file.request};
    lock.unlock();
    Send(resend);
    return;
  }
  if (r.ok()) {
    ++stats_.committed;
  } else if (r.status().code() == StatusCode::kInvalidArgument) {
    // The number is used: the hub had this create before (a replay).
    log->info("create of {} (inode {}) went through before: {}", e.file.name, ino,
              r.status().ToString());
    ++stats_.committed;
  } else {
    log->error("the hub refused create of {} in directory {} (inode {}): {}; it is lost",
               e.file.name, dir.ino, ino, r.status().ToString());
    ++stats_.lost;
  }
  if (Status s = log_->Drop(ino); !s.ok()) log->error("create log: {}", s.ToString());
  // Before the name stops being ours: until the cache forgets the
  // directory, it may still hold the name as missing.
  hooks_.committed(dir, ino);
  auto waiters = EraseLocked(ino);
  lock.unlock();
  Notify(std::move(waiters), Status::Ok());
}

void LocalCreates::Flush(Scope scope, uint64_t ino, std::function<void(Status)> then) {
  struct Join {
    std::mutex mu;
    size_t left = 0;
    Status status;
    std::function<void(Status)> then;
  };
  auto join = std::make_shared<Join>();
  join->then = std::move(then);
  std::vector<v1::CreateRequest> to_send;
  {
    std::lock_guard lock(mu_);
    std::vector<Entry*> in_scope;
    if (scope == Scope::kFile) {
      auto it = files_.find(ino);
      if (it != files_.end()) in_scope.push_back(&it->second);
    } else {
      for (auto& [n, e] : files_) {
        if (scope == Scope::kAll || e.file.dir.ino == ino) in_scope.push_back(&e);
      }
    }
    join->left = in_scope.size();
    for (Entry* e : in_scope) {
      e->waiters.push_back([join](Status s) {
        std::unique_lock lock(join->mu);
        if (!s.ok() && join->status.ok()) join->status = s;
        if (--join->left > 0) return;
        Status result = join->status;
        lock.unlock();
        join->then(result);
      });
      if (!e->sending) StartSendLocked(*e, &to_send);
    }
  }
  if (join->left == 0) return hooks_.run([join] { join->then(Status::Ok()); });
  Send(to_send);
}

Status LocalCreates::FlushAndWait(Scope scope, uint64_t ino, std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<Status>>();
  auto future = done->get_future();
  Flush(scope, ino, [done](Status s) { done->set_value(std::move(s)); });
  if (future.wait_for(timeout) != std::future_status::ready) {
    return Status::Unavailable("creates not yet at the hub");
  }
  return future.get();
}

void LocalCreates::SendLoop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (files_.empty()) {
      cv_.wait(lock, [this] { return stop_ || !files_.empty(); });
      continue;
    }
    const SteadyTime now = options_.clock->Now();
    std::vector<v1::CreateRequest> to_send;
    for (auto& [ino, e] : files_) {
      if (!e.sending && e.due <= now) StartSendLocked(e, &to_send);
    }
    if (!to_send.empty()) {
      lock.unlock();
      Send(to_send);
      lock.lock();
      continue;
    }
    // Not a busy loop with --local-create-delay-ms 0.
    cv_.wait_for(lock, std::max<std::chrono::milliseconds>(options_.delay / 4,
                                                           std::chrono::milliseconds(1)));
  }
}

LocalCreatesStats LocalCreates::Stats() const {
  std::lock_guard lock(mu_);
  LocalCreatesStats s = stats_;
  s.pending = files_.size();
  return s;
}

}  // namespace geofs::spoke
