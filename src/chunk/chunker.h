// Content-defined chunking (FastCDC-style), so that an insertion or deletion
// in a file changes only the chunks around it and the rest deduplicate.
//
// A boundary is placed after byte i when the gear hash of the bytes before it
// has zero bits under a mask. The gear hash is fp = (fp << 1) + kGear[byte]
// over a window of at most 64 bytes (older bytes are shifted out), and the
// masks test its top bits, which depend on the whole window. Normalized
// chunking: before `avg_size` the mask has log2(avg) + level bits (cuts are
// rarer), from `avg_size` on log2(avg) - level bits (cuts are likelier),
// which narrows the spread of chunk sizes around the average. The first
// `min_size` bytes of a chunk are never a boundary and are not hashed; a
// chunk reaching `max_size` is cut there. The last chunk of a stream may be
// shorter than `min_size`.
//
// Boundaries depend only on the content and the options, never on how the
// stream was split into Scan calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "geofs/status.h"

namespace geofs::chunk {

// No chunker produces chunks larger than this (a bound for buffers and for
// the chunk codec's length field).
inline constexpr size_t kMaxChunkSizeLimit = 64u << 20;

struct ChunkerOptions {
  size_t min_size = 256u << 10;
  // The target average; must be a power of two.
  size_t avg_size = 1u << 20;
  size_t max_size = 4u << 20;
  // Normalized-chunking level, 0 (plain) to 3; FastCDC's recommended 2.
  int normalization = 2;

  // OK when 64 <= min_size < avg_size < max_size <= kMaxChunkSizeLimit,
  // avg_size is a power of two and normalization is in [0, 3].
  Status Validate() const;
};

// Finds chunk boundaries in a byte stream fed in pieces of any size.
// Not thread-safe; one Chunker per stream.
class Chunker {
 public:
  // REQUIRES: options.Validate().ok().
  explicit Chunker(const ChunkerOptions& options);

  // Consumes `data` up to the end of the current chunk. Returns how many
  // bytes were consumed and sets `*boundary` when a chunk ends right after
  // them (the next byte starts a new chunk). Call again with the rest.
  size_t Scan(std::span<const uint8_t> data, bool* boundary);

  // Bytes of the current, unfinished chunk seen so far.
  size_t pending() const { return length_; }
  // Starts a new stream.
  void Reset();

 private:
  const size_t min_size_;
  const size_t avg_size_;
  const size_t max_size_;
  const uint64_t mask_small_;  // used while length < avg_size
  const uint64_t mask_large_;  // used from avg_size on
  size_t length_ = 0;
  uint64_t fp_ = 0;
};

// Lengths of the chunks of a whole in-memory buffer, in order.
// REQUIRES: options.Validate().ok().
std::vector<size_t> ChunkLengths(std::span<const uint8_t> data, const ChunkerOptions& options);

// Cuts a stream into whole chunks, buffering at most max_size bytes. A chunk
// that lies entirely inside one Write's data is passed on without a copy.
// Not thread-safe.
class ChunkSplitter {
 public:
  // Receives each chunk; the span is valid only during the call. A non-OK
  // status stops the Write or Finish that made the call and is returned.
  using Sink = std::function<Status(std::span<const uint8_t> chunk)>;

  // REQUIRES: options.Validate().ok().
  ChunkSplitter(const ChunkerOptions& options, Sink sink);

  // Feeds the next bytes of the stream.
  Status Write(std::span<const uint8_t> data);
  // Ends the stream: emits the last, possibly short, chunk (if any bytes are
  // pending). The splitter is then ready for a new stream.
  Status Finish();
  // Write(data) then Finish(), except that a last chunk lying entirely
  // inside `data` is passed on from it rather than copied: the common case
  // of a file read in one block.
  Status WriteLast(std::span<const uint8_t> data);

 private:
  // Write's loop; with `last`, the tail of `data` ends the stream.
  Status Split(std::span<const uint8_t> data, bool last);

  Chunker chunker_;
  Sink sink_;
  std::vector<uint8_t> pending_;  // bytes of the current chunk from earlier Writes
};

}  // namespace geofs::chunk
