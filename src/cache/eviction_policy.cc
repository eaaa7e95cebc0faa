#include "cache/eviction_policy.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace geofs::cache {
namespace {

constexpr uint64_t kMinExpectedEntries = 4096;
constexpr uint64_t kMaxExpectedEntries = 1ull << 22;
// Chunks are 256 KiB..4 MiB (1 MiB on average); sizing the sketch for 64 KiB
// entries leaves room for the short tail chunks of small files.
constexpr uint64_t kSketchBytesPerEntry = 64u << 10;

}  // namespace

FrequencySketch::FrequencySketch(uint64_t expected_entries) {
  expected_entries_ = std::clamp(expected_entries, kMinExpectedEntries, kMaxExpectedEntries);
  counters_.assign(std::bit_ceil(expected_entries_ * 4), 0);
  mask_ = counters_.size() - 1;
  sample_period_ = expected_entries_ * 10;
}

size_t FrequencySketch::Index(const chunk::ChunkId& id, int row) const {
  uint64_t word;
  std::memcpy(&word, id.bytes().data() + row * sizeof(word), sizeof(word));
  // Ids are SHA-256 digests, already uniform; the multiply only guards
  // against structured ids in tests and tools.
  word = (word ^ (word >> 31)) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(word >> 20) & mask_;
}

void FrequencySketch::Increment(const chunk::ChunkId& id) {
  // Conservative update: raise only the counters at the minimum, which keeps
  // collisions from inflating the estimate.
  uint32_t min = Estimate(id);
  if (min < kMaxCount) {
    for (int r = 0; r < kDepth; ++r) {
      uint8_t& c = counters_[Index(id, r)];
      if (c == min) ++c;
    }
  }
  if (++samples_ >= sample_period_) Age();
}

uint32_t FrequencySketch::Estimate(const chunk::ChunkId& id) const {
  uint32_t min = kMaxCount;
  for (int r = 0; r < kDepth; ++r) min = std::min<uint32_t>(min, counters_[Index(id, r)]);
  return min;
}

void FrequencySketch::Age() {
  for (uint8_t& c : counters_) c >>= 1;
  samples_ /= 2;
}

EvictionPolicy::EvictionPolicy(uint64_t capacity_bytes)
    : sketch_(capacity_bytes / kSketchBytesPerEntry) {
  SetCapacity(capacity_bytes);
}

void EvictionPolicy::SetCapacity(uint64_t capacity_bytes) {
  window_budget_ = capacity_bytes / 10;
  protected_budget_ = (capacity_bytes - window_budget_) / 10 * 8;
  ShrinkWindow();
  DemoteProtectedOverflow();
}

void EvictionPolicy::RecordAccess(const chunk::ChunkId& id) { sketch_.Increment(id); }

void EvictionPolicy::Insert(const chunk::ChunkId& id, uint64_t bytes, bool pinned) {
  Place(id, bytes, pinned, Segment::kWindow);
  ShrinkWindow();
}

void EvictionPolicy::Restore(const chunk::ChunkId& id, uint64_t bytes, bool pinned) {
  Place(id, bytes, pinned, Segment::kProbation);
}

void EvictionPolicy::Touch(const chunk::ChunkId& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  Segment to = e.segment == Segment::kWindow ? Segment::kWindow : Segment::kProtected;
  if (e.pinned) {
    e.segment = to;
    return;
  }
  Unlink(e);
  Link(id, e, to);
  if (to == Segment::kProtected) DemoteProtectedOverflow();
}

void EvictionPolicy::Remove(const chunk::ChunkId& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (!it->second.pinned) Unlink(it->second);
  entries_.erase(it);
}

void EvictionPolicy::SetPinned(const chunk::ChunkId& id, bool pinned) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.pinned == pinned) return;
  Entry& e = it->second;
  if (pinned) {
    Unlink(e);
    e.pinned = true;
  } else {
    e.pinned = false;
    Link(id, e, e.segment);
    if (e.segment == Segment::kWindow) ShrinkWindow();
    if (e.segment == Segment::kProtected) DemoteProtectedOverflow();
  }
}

std::optional<chunk::ChunkId> EvictionPolicy::Victim(uint64_t incoming_bytes) {
  if (!window_.empty() && window_bytes_ + incoming_bytes > window_budget_) {
    chunk::ChunkId candidate = window_.back();
    std::optional<chunk::ChunkId> victim = MainVictim();
    if (!victim) return candidate;
    if (sketch_.Estimate(candidate) <= sketch_.Estimate(*victim)) return candidate;
    Entry& e = entries_.at(candidate);
    Unlink(e);
    Link(candidate, e, Segment::kProbation);
    return victim;
  }
  if (auto victim = MainVictim()) return victim;
  if (!window_.empty()) return window_.back();
  return std::nullopt;
}

EvictionPolicy::List& EvictionPolicy::ListOf(Segment s) {
  switch (s) {
    case Segment::kWindow:
      return window_;
    case Segment::kProbation:
      return probation_;
    case Segment::kProtected:
      break;
  }
  return protected_;
}

uint64_t& EvictionPolicy::BytesOf(Segment s) {
  switch (s) {
    case Segment::kWindow:
      return window_bytes_;
    case Segment::kProbation:
      return probation_bytes_;
    case Segment::kProtected:
      break;
  }
  return protected_bytes_;
}

void EvictionPolicy::Link(const chunk::ChunkId& id, Entry& e, Segment s) {
  List& list = ListOf(s);
  list.push_front(id);
  e.pos = list.begin();
  e.segment = s;
  BytesOf(s) += e.bytes;
}

void EvictionPolicy::Unlink(Entry& e) {
  ListOf(e.segment).erase(e.pos);
  BytesOf(e.segment) -= e.bytes;
}

void EvictionPolicy::Place(const chunk::ChunkId& id, uint64_t bytes, bool pinned, Segment s) {
  if (entries_.size() >= sketch_.expected_entries() &&
      sketch_.expected_entries() < kMaxExpectedEntries) {
    // More (smaller) chunks than the capacity suggested: a sketch this small
    // would let collisions decide admissions. Growing it forgets the counts,
    // which only delays admissions for a while.
    sketch_ = FrequencySketch(entries_.size() * 2);
  }
  Entry& e = entries_[id];
  e.bytes = bytes;
  e.segment = s;
  e.pinned = pinned;
  if (!pinned) Link(id, e, s);
}

void EvictionPolicy::DemoteProtectedOverflow() {
  while (protected_bytes_ > protected_budget_ && protected_.size() > 1) {
    chunk::ChunkId id = protected_.back();
    Entry& e = entries_.at(id);
    Unlink(e);
    Link(id, e, Segment::kProbation);
  }
}

void EvictionPolicy::ShrinkWindow() {
  while (window_bytes_ > window_budget_ && window_.size() > 1) {
    chunk::ChunkId id = window_.back();
    Entry& e = entries_.at(id);
    Unlink(e);
    Link(id, e, Segment::kProbation);
  }
}

std::optional<chunk::ChunkId> EvictionPolicy::MainVictim() const {
  if (!probation_.empty()) return probation_.back();
  if (!protected_.empty()) return protected_.back();
  return std::nullopt;
}

}  // namespace geofs::cache
