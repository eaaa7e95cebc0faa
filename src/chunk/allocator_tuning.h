// Malloc settings for processes that stream chunks (the hub receiving
// uploads, geofsctl importing): call once at the start of main().
//
// Chunks of 0.25-4 MiB pass through gRPC receive buffers, protobuf strings
// and read blocks, each allocated and freed per chunk. With glibc's
// defaults such blocks come from fresh mmaps, or from arena tops that free()
// hands back to the kernel (MADV_DONTNEED) past 128 KiB-32 MiB, so every
// chunk's memory is page-faulted and zeroed again: on a 200 MiB import this
// was a quarter of the hub's CPU time. Here blocks up to 32 MiB come from the
// heap and up to 256 MiB of freed memory per arena is kept for reuse
// (the process keeps its peak footprint instead of shrinking between bursts).
#pragma once

#include <malloc.h>

namespace geofs::chunk {

inline void TuneAllocatorForChunkTraffic() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

}  // namespace geofs::chunk
