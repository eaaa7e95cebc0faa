// EvictionPolicy: which cached chunks to drop, W-TinyLFU style.
//
// Entries live in three LRU segments: a small admission window (10% of the
// capacity, at least one entry) and a main area split into probation and
// protected (80% of main). New chunks enter the window, so a chunk read right
// after it was stored (readahead) is still there. When room is needed and the
// window is full, the window's oldest entry (the candidate) competes with the
// main area's oldest (the victim): the candidate is admitted only if it was
// requested more often, as estimated by a count-min sketch of recent
// accesses; on a tie the incumbent stays. That admission test is what makes
// the policy resist scans and loops: a one-time scan cannot push out chunks
// that are used repeatedly, and a cyclic working set larger than the cache
// keeps the main area resident instead of cycling through it (LRU, 2Q and
// ARC all drop to 0% hits there). See docs/spoke-cache.md.
//
// Pinned entries leave their segment until unpinned and are never victims.
// Not thread-safe: the cache calls it under its lock.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "chunk/chunk_id.h"

namespace geofs::cache {

// Approximate access counts of chunk ids (count-min, 4 counters per id, 4 x
// expected entries counters), saturating at 15 and halved after every
// 10 x (expected entries) accesses so that old popularity fades.
class FrequencySketch {
 public:
  explicit FrequencySketch(uint64_t expected_entries);
  void Increment(const chunk::ChunkId& id);
  uint32_t Estimate(const chunk::ChunkId& id) const;
  uint64_t expected_entries() const { return expected_entries_; }

 private:
  static constexpr int kDepth = 4;
  static constexpr uint8_t kMaxCount = 15;
  size_t Index(const chunk::ChunkId& id, int row) const;
  void Age();

  uint64_t expected_entries_;
  std::vector<uint8_t> counters_;
  size_t mask_;
  uint64_t samples_ = 0;
  uint64_t sample_period_;
};

class EvictionPolicy {
 public:
  // `capacity_bytes` sizes the segments; the policy itself never evicts, it
  // only names victims.
  explicit EvictionPolicy(uint64_t capacity_bytes);

  void SetCapacity(uint64_t capacity_bytes);

  // Counts one request for `id` (present or not) for the admission test.
  void RecordAccess(const chunk::ChunkId& id);
  // A new entry, in the window. REQUIRES: !Contains(id).
  void Insert(const chunk::ChunkId& id, uint64_t bytes, bool pinned);
  // An entry found on disk at start-up: in probation, in the order given
  // (the last one inserted is the most recent). REQUIRES: !Contains(id).
  void Restore(const chunk::ChunkId& id, uint64_t bytes, bool pinned);
  // A hit: moves the entry towards protected. No-op if absent.
  void Touch(const chunk::ChunkId& id);
  void Remove(const chunk::ChunkId& id);
  void SetPinned(const chunk::ChunkId& id, bool pinned);
  bool Contains(const chunk::ChunkId& id) const { return entries_.count(id) != 0; }
  // The recent request count of `id` (saturating, aged), as the admission
  // test sees it.
  uint32_t Frequency(const chunk::ChunkId& id) const { return sketch_.Estimate(id); }

  // The entry to evict next so that a new entry of `incoming_bytes` fits, or
  // nothing if every entry is pinned. May admit the window's candidate into
  // probation as a side effect. The caller removes the victim.
  std::optional<chunk::ChunkId> Victim(uint64_t incoming_bytes);

 private:
  enum class Segment : uint8_t { kWindow, kProbation, kProtected };
  using List = std::list<chunk::ChunkId>;  // front: most recent
  struct Entry {
    uint64_t bytes;
    Segment segment;
    bool pinned;
    List::iterator pos;  // valid only when !pinned
  };

  List& ListOf(Segment s);
  uint64_t& BytesOf(Segment s);
  void Link(const chunk::ChunkId& id, Entry& e, Segment s);  // at the front of `s`
  void Unlink(Entry& e);
  void Place(const chunk::ChunkId& id, uint64_t bytes, bool pinned, Segment s);
  void DemoteProtectedOverflow();
  void ShrinkWindow();  // moves window overflow into probation, keeping one entry
  std::optional<chunk::ChunkId> MainVictim() const;

  uint64_t window_budget_ = 0;
  uint64_t protected_budget_ = 0;
  List window_, probation_, protected_;
  // Bytes of unpinned entries per segment (pinned ones do not compete).
  uint64_t window_bytes_ = 0, probation_bytes_ = 0, protected_bytes_ = 0;
  std::unordered_map<chunk::ChunkId, Entry, chunk::ChunkIdHash> entries_;
  FrequencySketch sketch_;
};

}  // namespace geofs::cache
