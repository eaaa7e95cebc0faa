// WriteOverlay: the bytes written to one file and not yet committed to the
// namespace, as non-overlapping pieces over the committed contents.
//
// Each piece remembers the sequence number of the write that produced it, so
// a flush that committed a snapshot can release exactly what it committed
// while newer writes to the same range stay (Release with max_seq).
//
// Not thread-safe: the owner serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "geofs/buffer.h"

namespace geofs::hub {

class WriteOverlay {
 public:
  struct Piece {
    uint64_t offset = 0;
    Buffer data;
    uint64_t seq = 0;
    uint64_t end() const { return offset + data.size(); }
  };
  struct Range {
    uint64_t begin = 0;
    uint64_t end = 0;
    bool operator==(const Range&) const = default;
  };

  // Records `data` at `offset`, replacing older bytes where they overlap.
  // Returns the write's sequence number (increasing, from 1).
  // REQUIRES: offset + data.size() does not overflow.
  uint64_t Write(uint64_t offset, Buffer data);

  // The pieces overlapping [begin, end), clipped to it, in offset order.
  std::vector<Piece> Pieces(uint64_t begin, uint64_t end) const;
  // Copies the overlay's bytes in [offset, offset + out.size()) over `out`.
  void ApplyTo(uint64_t offset, std::span<uint8_t> out) const;
  // Maximal runs of contiguous bytes, in order.
  std::vector<Range> Runs() const;

  // Forgets the bytes in [begin, end) written by writes numbered <= max_seq.
  void Release(uint64_t begin, uint64_t end, uint64_t max_seq);

  bool empty() const { return pieces_.empty(); }
  // Bytes held.
  uint64_t bytes() const { return bytes_; }
  // One past the last byte held; 0 when empty.
  uint64_t end() const;
  // The number of the latest write (0 before any).
  uint64_t last_seq() const { return next_seq_ - 1; }

 private:
  // Cuts the pieces so that none crosses `at`.
  void SplitAt(uint64_t at);
  // Removes the pieces inside [begin, end) that `remove` selects.
  template <typename Pred>
  void EraseInside(uint64_t begin, uint64_t end, Pred remove);

  std::map<uint64_t, Piece> pieces_;  // by offset; non-overlapping
  uint64_t bytes_ = 0;
  uint64_t next_seq_ = 1;
};

}  // namespace geofs::hub
