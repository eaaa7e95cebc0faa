// Whether a file range is in the page cache, so that sending it will not
// wait on a disk (cachestat(2), Linux 6.5; older kernels always say no).
#pragma once

#include <cstdint>

namespace geofs::vfs {

// True if every page of [offset, offset + length) of the file open as `fd`
// is cached. False when it cannot tell. Thread-safe.
bool RangeInPageCache(int fd, uint64_t offset, uint64_t length);

}  // namespace geofs::vfs
