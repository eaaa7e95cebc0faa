#include "prefetch/access_ring.h"

#include <cassert>

namespace geofs::prefetch {

AccessRing::AccessRing(size_t capacity)
    : mask_(capacity - 1), slots_(std::make_unique<Slot[]>(capacity)) {
  assert(capacity > 0 && (capacity & (capacity - 1)) == 0);
}

void AccessRing::Record(const AccessEvent& event) {
  const uint64_t pos = head_.fetch_add(1, std::memory_order_relaxed);
  Slot& slot = slots_[pos & mask_];
  slot.seq.store(2 * pos + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.event = event;
  slot.seq.store(2 * pos + 2, std::memory_order_release);
}

size_t AccessRing::Drain(std::vector<AccessEvent>* out) {
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t capacity = mask_ + 1;
  if (head - tail_ > capacity) {
    dropped_ += head - tail_ - capacity;
    tail_ = head - capacity;
  }
  size_t n = 0;
  for (; tail_ < head; ++tail_) {
    Slot& slot = slots_[tail_ & mask_];
    const uint64_t want = 2 * tail_ + 2;
    uint64_t seq = slot.seq.load(std::memory_order_acquire);
    if (seq < want) break;  // claimed but not yet published: next time
    AccessEvent copy = slot.event;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.seq.load(std::memory_order_relaxed) != want) {
      ++dropped_;  // overwritten while being read
      continue;
    }
    out->push_back(copy);
    ++n;
  }
  return n;
}

}  // namespace geofs::prefetch
