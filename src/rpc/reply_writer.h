// ReplyWriter: puts reply records on a non-blocking stream socket, in-memory
// segments with gather sendmsg and file ranges with sendfile, so READ data
// goes from the page cache to the socket without a copy in between.
//
// It never blocks: WriteSome writes what the socket takes and says whether
// the batch is finished; the caller waits for the socket to be writable and
// calls again. A file that ends before its range does (it shrank after the
// reply was built) is made up with zeros, because the record's length was
// already promised; the connection stays framed.
//
// Not thread-safe; one per connection. The replies passed to Reset must stay
// alive and unchanged until the batch is finished or abandoned.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "geofs/status.h"
#include "rpc/message.h"

namespace geofs::rpc {

class ReplyWriter {
 public:
  // Starts a new batch. REQUIRES: the previous batch is finished (or the
  // connection is being abandoned).
  void Reset(std::span<const OutgoingReply> replies);

  // Writes as much of the batch as `socket_fd` accepts now. Returns true
  // once everything is written, false if the socket is full (wait until it
  // is writable, then call again). An error (the peer went away, the file
  // could not be read) means the connection cannot be kept in step.
  Result<bool> WriteSome(int socket_fd);

  bool finished() const { return index_ == segments_.size(); }

 private:
  struct Segment {
    const uint8_t* data;     // nullptr: a file range, or zeros once it ran short
    uint64_t size;
    const FileRange* file;   // nullptr for memory segments
    bool zero_fill = false;  // the file ended early: send zeros instead
  };
  bool IsMemory(const Segment& s) const { return s.file == nullptr || s.zero_fill; }
  // One sendmsg over the memory segments starting at the cursor.
  Result<bool> SendMemory(int socket_fd);
  // One sendfile of the file segment at the cursor.
  Result<bool> SendFile(int socket_fd);
  void Advance(uint64_t n);

  std::vector<Segment> segments_;
  size_t index_ = 0;       // the segment being written
  uint64_t offset_ = 0;    // bytes of segments_[index_] already written
  std::vector<iovec> iov_;
};

}  // namespace geofs::rpc
