// Memory for reading several files one after another into one block: each
// read takes the next piece of the block, so a group of files costs one
// (pooled) block and no fresh pages. A read that does not fit what is left
// (its file grew since its size was counted) gets memory of its own.
// Pieces share the block's owner: the block lives while any piece does.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "geofs/buffer.h"

namespace geofs::cli {

class ReadArena {
 public:
  // `block` is writable at `data`.
  ReadArena(Buffer block, uint8_t* data) : block_(std::move(block)), data_(data) {}

  // `capacity` writable bytes at `*out` for the next read.
  Buffer Reserve(size_t capacity, uint8_t** out) {
    in_block_ = block_.size() - used_ >= capacity;
    if (!in_block_) return Buffer::Allocate(capacity, out);
    *out = data_ + used_;
    return block_.Slice(used_, capacity);
  }

  // The last reservation's read filled its first `filled` bytes: they stay
  // taken, the rest goes to the next reservation.
  void Filled(size_t filled) {
    if (in_block_) used_ += filled;
    in_block_ = false;
  }

  // Bytes of the block taken so far.
  size_t used() const { return used_; }

 private:
  const Buffer block_;
  uint8_t* const data_;
  size_t used_ = 0;
  bool in_block_ = false;  // whether the last reservation is in the block
};

}  // namespace geofs::cli
