// ONC RPC record marking over a byte stream (RFC 5531 section 11).
//
// Each record is sent as one or more fragments; each fragment starts with a
// 4-byte big-endian mark: the top bit flags the last fragment of the record,
// the low 31 bits give the fragment's length.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "geofs/status.h"

namespace geofs::rpc {

inline constexpr uint32_t kLastFragmentFlag = 0x80000000u;
inline constexpr uint32_t kMaxFragmentBytes = 0x7fffffffu;

// One complete record: its bytes, and the storage that keeps them alive.
struct Record {
  std::shared_ptr<const void> owner;
  std::span<const uint8_t> bytes;
};

// The mark that frames `size` bytes as a whole record in a single fragment.
// Replies always go out this way: the Linux client and libnfs 4.0 expect it.
// REQUIRES: size <= kMaxFragmentBytes.
std::array<uint8_t, 4> SingleFragmentMark(uint32_t size);

// Reassembles records from a stream, possibly split into many fragments.
//
// Reads land either in a reusable staging buffer (small records are copied
// out of it, so many can arrive in one read) or, for the bulk of a large
// fragment, straight into the record's own storage (no copy of WRITE data).
// Parsing is separate from reading so that a caller can take only as many
// records as it has room for and leave the rest staged (backpressure).
//
// Memory: a record's storage is allocated only after its running length has
// been checked against the maximum, so an instance never holds more than
// max_record_bytes plus the staging buffer, whatever the peer claims.
//
// Not thread-safe; one instance per connection.
class RecordReader {
 public:
  static constexpr size_t kDefaultStagingBytes = 64 * 1024;

  explicit RecordReader(size_t max_record_bytes, size_t staging_bytes = kDefaultStagingBytes);

  // Where the next bytes read from the stream should be stored. Never empty.
  // Valid until the next call of Commit() or Take().
  // REQUIRES: the last Take() stopped short of its limit (every complete
  // record staged so far has been taken).
  std::span<uint8_t> ReadTarget();

  // Accepts `n` bytes just stored at ReadTarget().
  // REQUIRES: n <= ReadTarget().size().
  void Commit(size_t n);

  // Appends up to `max_records` complete records, in order, to `out`. Fails
  // with kInvalidArgument once a record would exceed the maximum; the stream
  // cannot be resynchronised then, and every later call fails too: close
  // the connection.
  Status Take(size_t max_records, std::vector<Record>* out);

  // ReadTarget(), Commit() and Take() over `bytes` (tests, fuzzing).
  Status Feed(std::span<const uint8_t> bytes, std::vector<Record>* out);

  // True when no part of a record is buffered: the peer stopping here lost
  // nothing.
  bool AtRecordBoundary() const { return !in_fragment_ && begin_ == end_ && record_len_ == 0; }

 private:
  Status StartFragment(uint32_t mark);

  const size_t max_record_bytes_;
  const size_t staging_bytes_;
  std::unique_ptr<uint8_t[]> staging_;
  size_t begin_ = 0;  // staging_[begin_, end_) is received but not parsed
  size_t end_ = 0;

  std::shared_ptr<uint8_t[]> record_;
  size_t record_capacity_ = 0;
  size_t record_len_ = 0;
  bool in_fragment_ = false;
  bool last_fragment_ = false;
  size_t fragment_left_ = 0;

  bool direct_read_ = false;  // ReadTarget() pointed into record_
  Status failure_;
};

}  // namespace geofs::rpc
