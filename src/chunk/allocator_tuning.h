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
//
// And one arena for all threads: a chunk's buffers are allocated on one
// thread and freed on another (gRPC's receive thread, the handler threads,
// the worker pools), and with glibc's default of an arena per thread (up to
// 8 per core) each arena grew its own copy of the working set, all of it
// first-touched. A hub importing 200 MiB faulted 25,000 pages and spent
// 0.46 s of CPU; with one arena, 10,500 and 0.40 s. Small allocations go
// through each thread's tcache without the arena's lock; the large ones are
// few and dominated by the copies into them.
#pragma once

#include <malloc.h>

namespace geofs::chunk {

inline void TuneAllocatorForChunkTraffic() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  ::mallopt(M_ARENA_MAX, 1);
}

}  // namespace geofs::chunk
