// AccessRing: a bounded ring of AccessEvents written by many threads (the
// NFS front end's) and read by one (the prefetcher's).
//
// A writer claims a slot with one atomic increment and publishes it with a
// per-slot sequence number: no lock, no allocation, never blocks. When the
// reader falls a whole ring behind, the oldest events are overwritten and
// counted as dropped: prediction is best effort, serving is not.
//
// Thread-safe for any number of writers and ONE reader.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "prefetch/access_event.h"

namespace geofs::prefetch {

class AccessRing {
 public:
  // REQUIRES: capacity is a power of two.
  explicit AccessRing(size_t capacity = 1 << 16);
  AccessRing(const AccessRing&) = delete;
  AccessRing& operator=(const AccessRing&) = delete;

  void Record(const AccessEvent& event);
  // Appends the events published since the last call to `out` (in order of
  // their slots) and returns how many. Reader thread only.
  size_t Drain(std::vector<AccessEvent>* out);

  uint64_t recorded() const { return head_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_; }

 private:
  struct Slot {
    // 2 * position + 1 while being written, 2 * position + 2 once published.
    std::atomic<uint64_t> seq{0};
    AccessEvent event;
  };
  const size_t mask_;
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};  // next position to claim
  alignas(64) uint64_t tail_ = 0;              // reader: next position to read
  uint64_t dropped_ = 0;                       // reader's count
};

}  // namespace geofs::prefetch
