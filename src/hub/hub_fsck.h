// Whole-hub consistency check: the namespace's own invariants
// (Namespace::Fsck) plus the link between the namespace and the chunk
// store: every chunk a file references exists in the object store and, with
// verify_chunk_data, decodes to bytes of the recorded size that hash to its
// name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chunk/chunk_store.h"
#include "geofs/status.h"
#include "meta/namespace.h"

namespace geofs::hub {

struct FsckOptions {
  bool verify_chunk_data = false;
  // Chunks read and verified at once.
  int parallelism = 8;
  // Polled between steps; returning true stops the check with
  // kDeadlineExceeded (the caller went away or ran out of time).
  std::function<bool()> cancelled = [] { return false; };
};

struct FsckReport {
  std::vector<std::string> problems;  // empty: consistent
  uint64_t inodes_checked = 0;        // objects reached from the root
  uint64_t chunks_checked = 0;        // distinct chunks referenced
};

// Walks the tree from the root (O(objects + extents) time, memory for the
// distinct chunks). Runs beside normal traffic: a file rewritten during the
// walk is checked as it was when its chunk map was read.
Result<FsckReport> CheckHub(meta::Namespace& ns, chunk::ChunkStore& chunks,
                            const FsckOptions& options = {});

}  // namespace geofs::hub
