// FileRange: bytes of an open file that a reply sends from the page cache
// with sendfile(2), instead of reading them into memory and copying them
// again into the socket.
//
// A backend hands one out only for data already in the page cache (so the
// network thread that sends it does not wait on a disk) and the sender pads
// with zeros if the file shrank in between (the reply already promised the
// length); see src/rpc/server.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace geofs {

struct FileRange {
  std::shared_ptr<const void> owner;  // keeps `fd` open until the bytes are sent
  int fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Appends the range's bytes to `out` with pread, zeros past the file's end
// (what the sender transmits); for tests and for flattening a message.
void AppendFileRange(const FileRange& range, std::vector<uint8_t>& out);

}  // namespace geofs
