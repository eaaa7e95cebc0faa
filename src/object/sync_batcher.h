// SyncBatcher: group commit for file-system-wide durability barriers.
//
// A LocalObjectStore::Put needs two barriers: the temp file's data must be
// durable before its rename, and the new name durable before Put returns.
// Per-file barriers (fdatasync of the file, fsync of its fan-out directory)
// cost one journal commit and device cache flush each, and the directory
// fsyncs of chunks spread over 256 directories cannot be shared. Instead, a
// barrier here is one syncfs(2) of the whole file system: it writes back
// every dirty file and directory on it and commits the journal once, so a
// single call covers every Put in flight, whatever its directory.
//
// Concurrent callers are batched: a caller that finds no barrier running
// becomes the leader and runs one barrier for everyone queued; callers that
// arrive meanwhile queue for the next round. So the rounds of concurrent
// Puts pipeline: one stream's "data before rename" barrier and another's
// "name before return" barrier are the same syncfs.
//
// Contract: Barrier returns only after a barrier that started after Barrier
// was entered (so it covers everything the caller wrote before entering)
// has finished, with that barrier's outcome. syncfs reports a write-back
// error of any file on the file system since the previous barrier (Linux
// >= 5.8); every caller of that round gets it (conservative: the round's
// callers cannot tell whose data failed). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "geofs/status.h"

namespace geofs::object {

class SyncBatcher {
 public:
  // Makes everything written to the file system that holds `fd` durable:
  // 0 or an errno. The default is syncfs(fd); tests pass one that records
  // what the file system held at each barrier.
  using BarrierFn = std::function<int(int fd)>;

  // REQUIRES: `fd` (any open file or directory on the file system) stays
  // open for the batcher's lifetime.
  explicit SyncBatcher(int fd, BarrierFn barrier = nullptr);
  ~SyncBatcher();
  SyncBatcher(const SyncBatcher&) = delete;
  SyncBatcher& operator=(const SyncBatcher&) = delete;

  // Makes everything the caller wrote to the file system before the call
  // durable. Errors carry `context`.
  Status Barrier(std::string_view context);

  // Barriers run so far (one per round, however many callers it served).
  uint64_t rounds() const;
  // Callers waiting for a round to take them.
  size_t pending() const;

 private:
  struct Request;
  struct Shared;

  const int fd_;
  const BarrierFn barrier_;
  std::unique_ptr<Shared> shared_;
};

}  // namespace geofs::object
