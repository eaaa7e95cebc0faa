// CreateLog: the durable record of the creates a spoke answered itself and
// the hub has not yet committed (docs/coherence.md, "Write-behind of
// creates").
//
// One append-only file. Each record: crc32c of the rest, the body's length,
// then the body: kind, inode number, generation and, for a Put, the
// serialized v1::CreateRequest. Put records a create, or its amended form
// (the last Put of a number wins); Drop ends it (committed at the hub, or
// removed before it was sent). Open() folds the file into the creates still
// open and cuts off a torn or corrupt tail.
//
// Durability: Sync() (or SyncThen) makes every record appended before it
// durable with one fdatasync shared by all callers waiting at the time.
// A Drop need not be synced: replaying a create the hub already has is
// harmless (reserved numbers make it a replay), while a Drop of a create
// removed before it was sent is synced by the REMOVE that caused it.
// Once the file outgrows `compact_bytes`, a sync rewrites it with only the
// open creates (a new file, synced, renamed over the old; the directory
// synced).
//
// Thread-safe. SyncThen callbacks run on the log's sync thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "geofs/status.h"

namespace geofs::spoke {

// What LocalCreates::Flush sends: one file, a directory's files, or all.
enum class LocalScope : uint8_t { kFile, kDir, kAll };

struct LoggedCreate {
  uint64_t ino = 0;
  uint64_t gen = 0;
  std::string request;  // a serialized v1::CreateRequest
};

struct CreateLogOptions {
  std::string path;  // the log file; its directory must exist
  uint64_t compact_bytes = 4 << 20;
};

class CreateLog {
 public:
  // Opens (or creates) the log; `open` receives the creates still open,
  // ordered by inode number.
  static Result<std::unique_ptr<CreateLog>> Open(const CreateLogOptions& options,
                                                 std::vector<LoggedCreate>* open);
  ~CreateLog();
  CreateLog(const CreateLog&) = delete;
  CreateLog& operator=(const CreateLog&) = delete;

  // Appends a record (not yet durable). kNoSpace and other I/O errors
  // leave nothing of it in the log.
  Status Put(const LoggedCreate& create);
  Status Drop(uint64_t ino);
  // Makes every record appended so far durable. After a failed sync every
  // later one fails too: what was answered may not be on disk.
  Status Sync();
  // Sync, then `done` on the sync thread.
  void SyncThen(std::function<void(Status)> done);

  size_t open_creates() const;
  uint64_t bytes() const;

 private:
  CreateLog(CreateLogOptions options, int fd);

  Status AppendLocked(uint8_t kind, uint64_t ino, uint64_t gen, std::string_view request);
  // Rewrites the log with the open creates only. REQUIRES: mu_ held, the
  // caller is the one syncer.
  Status CompactLocked();
  void SyncLoop();

  const CreateLogOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int fd_;                                            // guarded by mu_
  uint64_t end_ = 0;                                  // guarded by mu_: bytes in the file
  std::map<uint64_t, LoggedCreate> open_;             // guarded by mu_
  uint64_t appended_ = 0;                             // guarded by mu_: records appended
  Status error_;                                      // guarded by mu_: the first failed sync
  std::vector<std::function<void(Status)>> waiting_;  // guarded by mu_
  bool stop_ = false;                                 // guarded by mu_
  std::thread syncer_;
};

}  // namespace geofs::spoke
