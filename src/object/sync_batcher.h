// SyncBatcher: group commit for file-system durability barriers.
//
// Each LocalObjectStore::Put needs two barriers (the temp file's data before
// the rename, the directory entry after it). Done one caller at a time, every
// barrier costs a journal commit and a device cache flush; concurrent Puts
// (the hub stores a PutChunks batch on several threads, and several streams
// at once) would pay for them in series. SyncBatcher queues the barriers of
// concurrent callers and lets one of them, the leader, run the whole queue:
// it starts write-back of every queued file, then waits for each. On ext4
// and XFS the first fdatasync/fsync commits the journal transaction holding
// every queued change, so the rest find it committed and return at once.
//
// Contract: Sync* returns only after its own fd or directory was synced by
// a call that started after Sync* was entered (so everything the caller wrote
// before entering is covered), with that call's outcome. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"

namespace geofs::object {

class SyncBatcher {
 public:
  enum class Kind {
    kData,       // a regular file's data (fdatasync)
    kDirectory,  // a directory's entries (fsync of the directory)
  };
  // Performs one sync: 0 or an errno. The default calls fdatasync or fsync;
  // tests pass one that records the calls.
  using SyncFn = std::function<int(int fd, Kind kind)>;
  // Hint that `fd`'s dirty data should start going to the device now;
  // the default calls sync_file_range(SYNC_FILE_RANGE_WRITE).
  using WritebackFn = std::function<void(int fd)>;

  explicit SyncBatcher(SyncFn sync = nullptr, WritebackFn writeback = nullptr);
  ~SyncBatcher();
  SyncBatcher(const SyncBatcher&) = delete;
  SyncBatcher& operator=(const SyncBatcher&) = delete;

  // Makes the data of the regular file open as `fd` durable.
  // REQUIRES: `fd` stays open until the call returns.
  Status SyncData(int fd, std::string_view context);
  // Makes the entries of directory `path` durable. Requests for the same
  // directory in one batch share one fsync.
  Status SyncDirectory(const std::string& path, std::string_view context);

  // Batches run so far (each a round of syncs by one leader).
  uint64_t batches() const;
  // Requests waiting for a leader to take them.
  size_t pending() const;

 private:
  struct Request;
  struct Shared;

  Status Submit(Request* request, std::string_view context);
  void RunBatch(const std::vector<Request*>& batch);

  const SyncFn sync_;
  const WritebackFn writeback_;
  std::unique_ptr<Shared> shared_;
};

}  // namespace geofs::object
