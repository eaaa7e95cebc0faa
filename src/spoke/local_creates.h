// LocalCreates: the files this spoke created itself, until the hub has them
// (docs/coherence.md, "Write-behind of creates").
//
// The SpokeBackend answers a CREATE itself when it holds a live lease on
// the directory and knows the name is free there. The file then exists only
// here: its CreateRequest (carrying a number the hub reserved for us, so the
// handle answered is the one the file will have) in the CreateLog, and its
// attributes in memory. A SETATTR of it amends the request; a REMOVE before
// it was sent drops it, and it is never sent.
//
// Sending: each file goes to the hub `delay` after it was made (so a
// create-and-remove pair usually costs the hub nothing); Flush() sends some
// at once and continues once they are at the hub. Every other operation on
// such a file or its name, and every invalidation of its directory (before
// the acknowledgement), goes through Flush, so those files commit at the
// hub first, in the order this spoke answered them.
//
// What the hub answers a send:
//  - the file (also for a replay): committed, dropped from the log;
//  - unreachable, busy, out of space: sent again after `retry`, and the
//    operations waiting for it get kUnavailable (NFS3ERR_JUKEBOX: retried);
//  - the name taken (only possible after our lease on the directory
//    lapsed): the file is made as "<name>.geofs-conflict-<ino>" instead and
//    counted, so nothing answered is lost;
//  - the number already used (a replay after a crash of a create the hub
//    had and that was since renamed or removed): done;
//  - anything else (the directory removed, permission taken away while we
//    were cut off): logged, counted as lost, dropped.
//
// Thread-safe. Hooks are called without the lock held, except `committed`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "geofs/clock.h"
#include "geofs/status.h"
#include "geofs/vfs.h"
#include "hub.pb.h"
#include "spoke/create_log.h"
#include "spoke/write_journal.h"

namespace geofs::spoke {

using SteadyTime = std::chrono::steady_clock::time_point;

// A file created here that the hub does not have yet.
struct LocalFile {
  FileKey key;
  FileKey dir;
  std::string name;
  vfs::Attr attr;             // as answered to clients
  v1::CreateRequest request;  // what will be sent (reserved_ino set)
  // Being sent (set by Find and FindName): changes to it wait for the hub
  // (Flush); reads may still be answered from `attr`.
  bool in_flight = false;
  // False for a create recovered from the log after a restart: `attr` is
  // not known here, every operation on it waits for the hub.
  bool attr_known = true;
};

struct LocalCreatesOptions {
  // How long a file stays here before it is sent.
  std::chrono::milliseconds delay{250};
  // After a send the hub could not take.
  std::chrono::milliseconds retry{1000};
  // Numbers reserved per ReserveInodes call; more are asked for once fewer
  // than a quarter are left. 0: none (creates are not answered here; only
  // the recovered ones are sent).
  uint32_t reserve_batch = 4096;
  Clock* clock = Clock::Real();  // REQUIRES: outlives this
};

struct LocalCreatesHooks {
  // Sends one create to the hub; `done` may run on any thread.
  std::function<void(const v1::CreateRequest&, std::function<void(Result<v1::CreateResponse>)>)>
      send;
  // Asks the hub for `count` reserved numbers.
  std::function<void(uint32_t count, std::function<void(Result<v1::ReserveInodesResponse>)>)>
      reserve;
  // The file `ino` in `dir` is at the hub now (or refused): what is cached
  // of both is out of date. Called with the lock held, before the name
  // stops being one of ours; must not call back into LocalCreates.
  std::function<void(const FileKey& dir, uint64_t ino)> committed;
  // Runs a continuation that may block (Flush's `then`).
  std::function<void(std::function<void()>)> run;
};

struct LocalCreatesStats {
  uint64_t pending = 0;    // made here, not yet at the hub
  uint64_t created = 0;    // CREATEs answered here
  uint64_t cancelled = 0;  // removed before they were sent
  uint64_t committed = 0;  // sent and committed at the hub
  uint64_t conflicts = 0;  // committed under another name
  uint64_t lost = 0;       // refused by the hub
};

class LocalCreates {
 public:
  using Scope = LocalScope;

  // `recovered`: the creates the log still held at start; they are sent at
  // once. REQUIRES: `log` outlives this.
  LocalCreates(CreateLog* log, LocalCreatesHooks hooks, LocalCreatesOptions options,
               const std::vector<LoggedCreate>& recovered);
  // Stops sending; what is not at the hub stays in the log.
  ~LocalCreates();
  LocalCreates(const LocalCreates&) = delete;
  LocalCreates& operator=(const LocalCreates&) = delete;

  // A reserved (number, generation), or nullopt when none is on hand (more
  // are asked for).
  std::optional<FileKey> TakeNumber();

  // Records `file` (request and all) in the log, not yet synced. Fails with
  // kAlreadyExists if its name is one of ours, with kAborted if `name_free`
  // (asked under the lock, so that an invalidation of the directory, which
  // flushes it, is either before the check or after the file is known) says
  // the name may no longer be free.
  Status Add(LocalFile file, const std::function<bool()>& name_free);
  // Changes a file not yet sent, through `change` (which may refuse), and
  // logs it. kAborted if the file is being sent or gone.
  Status Update(uint64_t ino, const std::function<Status(LocalFile&)>& change);
  // Drops a file not yet sent if `check` allows, and logs that. kAborted if
  // it is being sent or gone.
  Status Cancel(uint64_t ino, const std::function<Status(const LocalFile&)>& check);
  // Makes what was logged so far durable, then `done`.
  void SyncThen(std::function<void(Status)> done) { log_->SyncThen(std::move(done)); }

  // Whether `ino` is one of ours (Find without the copy).
  bool Holds(uint64_t ino) const;
  std::optional<LocalFile> Find(uint64_t ino) const;
  std::optional<LocalFile> FindName(uint64_t dir, std::string_view name) const;
  bool HasDir(uint64_t dir) const;
  bool empty() const;

  // The directory's mtime and ctime as answered here, if it changed here
  // since the hub's attributes with ctime `hub_ctime` (which a change at
  // the hub replaces).
  std::optional<WallTime> DirTime(uint64_t dir, WallTime hub_ctime) const;
  // Records a change here to the directory; returns its new time.
  WallTime TouchDir(uint64_t dir, WallTime hub_ctime);

  // Sends the files in scope (one file, a directory's, all) that are not
  // at the hub yet, and runs `then` once each is done with (committed,
  // conflicted or lost: Ok; a send to try again later: kUnavailable),
  // always through hooks.run.
  void Flush(Scope scope, uint64_t ino, std::function<void(Status)> then);
  // Flush, waiting at most `timeout`: what `then` would get, or
  // kUnavailable if it timed out.
  Status FlushAndWait(Scope scope, uint64_t ino, std::chrono::milliseconds timeout);

  LocalCreatesStats Stats() const;

 private:
  struct Entry {
    LocalFile file;
    SteadyTime due{};
    bool sending = false;
    bool conflicted = false;  // already renamed once after a name clash
    std::vector<std::function<void(Status)>> waiters;
  };
  struct DirTimes {
    WallTime hub_ctime;
    WallTime local;
  };

  // Marks `e` as being sent and adds its request to `out`. REQUIRES: mu_
  // held, !e.sending.
  void StartSendLocked(Entry& e, std::vector<v1::CreateRequest>* out);
  void Send(const std::vector<v1::CreateRequest>& requests);
  void OnSent(uint64_t ino, Result<v1::CreateResponse> r);
  // Forgets `ino` (committed, cancelled or lost); returns its waiters.
  // REQUIRES: mu_ held.
  std::vector<std::function<void(Status)>> EraseLocked(uint64_t ino);
  // Runs `waiters` with `s` through hooks.run.
  void Notify(std::vector<std::function<void(Status)>> waiters, const Status& s);
  // True if more numbers should be asked for (and marks the request).
  // REQUIRES: mu_ held.
  bool ShouldReserveLocked();
  void Reserve();
  void SendLoop();

  CreateLog* const log_;
  const LocalCreatesHooks hooks_;
  const LocalCreatesOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                          // guarded by mu_
  std::unordered_map<uint64_t, Entry> files_;  // guarded by mu_: by inode number
  // Guarded by mu_: directory -> name -> inode number, for files_.
  std::unordered_map<uint64_t, std::map<std::string, uint64_t, std::less<>>> names_;
  std::unordered_map<uint64_t, DirTimes> dir_times_;  // guarded by mu_
  std::deque<FileKey> numbers_;                       // guarded by mu_: reserved, unused
  bool reserving_ = false;                            // guarded by mu_
  SteadyTime reserve_after_{};                        // guarded by mu_: after a failed reservation
  size_t in_flight_ = 0;                              // guarded by mu_: sends not answered yet
  size_t renamed_ = 0;       // guarded by mu_: files_ renamed after a clash (not in names_)
  LocalCreatesStats stats_;  // guarded by mu_ (pending: computed)
  std::thread sender_;
};

}  // namespace geofs::spoke
