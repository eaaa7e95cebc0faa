// PrefetchSource: what the Prefetcher needs from the spoke, and nothing
// else — namespace descriptions and chunk fetches into the cache. The spoke
// implements it over its metadata cache, chunk fetcher and hub link
// (src/spoke/spoke_prefetch_source.cc); tests and the replay tool implement
// it in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "chunk/chunk_id.h"
#include "geofs/status.h"
#include "prefetch/access_event.h"

namespace geofs::prefetch {

// `length` bytes at `file_offset` of a file are bytes of chunk `id`
// (whose whole raw size is `chunk_size`: what a fetch of it moves).
struct ChunkSpan {
  chunk::ChunkId id;
  uint64_t file_offset = 0;
  uint64_t length = 0;
  uint64_t chunk_size = 0;
};

// A regular file and its chunks, sorted by offset.
struct FileChunks {
  FileId file;
  uint64_t size = 0;
  std::vector<ChunkSpan> chunks;
};

// One page of a directory: its readable regular files (with their chunk
// maps, now cached by the spoke so that LOOKUP, GETATTR and READ of them
// need no round trip) and its subdirectories.
struct DirPage {
  std::vector<FileChunks> files;
  std::vector<FileId> subdirs;
  uint64_t next_cookie = 0;
  bool eof = true;
};

class PrefetchSource {
 public:
  using ChunkDone = std::function<void(const chunk::ChunkId&, Status)>;

  virtual ~PrefetchSource() = default;
  // A page of `dir` from `cookie` (0: the start). Callbacks may run on any
  // thread and must not block.
  virtual void DescribeDir(const FileId& dir, uint64_t cookie,
                           std::function<void(Result<DirPage>)> cb) = 0;
  // The chunks of a file.
  virtual void ChunksOf(const FileId& file, std::function<void(Result<FileChunks>)> cb) = 0;
  // Starts fetching those of `ids` that are neither cached nor on their way,
  // and answers which; `done` runs once for each of those when it is in the
  // cache (or failed).
  virtual std::vector<chunk::ChunkId> Fetch(const std::vector<chunk::ChunkId>& ids,
                                            ChunkDone done) = 0;
  // Bytes the cache may give to prefetched chunks not read yet.
  virtual uint64_t CacheBudget() const = 0;
};

}  // namespace geofs::prefetch
