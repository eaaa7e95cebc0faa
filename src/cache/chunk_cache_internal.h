// Construction seam of ChunkCache for tests: Open() with a given IoEngine, so
// a wrapper can inject I/O faults (ENOSPC, short transfers).
#pragma once

#include <memory>

#include "cache/chunk_cache.h"
#include "cache/io_engine.h"

namespace geofs::cache {

// Like ChunkCache::Open(), but moves the data through `engine` whatever
// `options.use_io_uring` says.
Result<std::unique_ptr<ChunkCache>> OpenChunkCacheWithEngine(const ChunkCacheOptions& options,
                                                             std::unique_ptr<IoEngine> engine);

}  // namespace geofs::cache
