// Private parts of HubBackend shared by its .cc files.
#pragma once

#include <chrono>
#include <mutex>

#include "geofs/vfs.h"
#include "hub/hub_backend.h"
#include "hub/write_overlay.h"

namespace geofs::hub {

// Unflushed writes of one file. Lock order: flush_mu, then mu.
struct HubBackend::FileState {
  explicit FileState(const vfs::Handle& h) : handle(h) {}

  const vfs::Handle handle;
  // Held for a whole flush: one flush of a file at a time.
  std::mutex flush_mu;
  std::mutex mu;
  WriteOverlay overlay;     // guarded by mu
  vfs::Credentials writer;  // guarded by mu: the last writer, whose rights commit
  WallTime mtime;           // guarded by mu: when the last write arrived
  std::chrono::steady_clock::time_point dirty_since;  // guarded by mu
  // Set (under mu) when the state left the table; writers must then use a
  // fresh one.
  bool forgotten = false;
};

// A group of written runs and the committed bytes around them that are
// re-chunked together.
struct DirtySpan {
  uint64_t begin = 0;  // first byte re-chunked (a committed extent's start or a write's)
  uint64_t end = 0;
  uint64_t dirty_begin = 0;  // first written byte
  uint64_t dirty_end = 0;    // one past the last written byte
};

// `attr` with the buffered writes of `state` applied. REQUIRES: state.mu held.
inline vfs::Attr PatchedLocked(vfs::Attr attr, const WriteOverlay& overlay, WallTime mtime) {
  if (overlay.empty()) return attr;
  attr.size = std::max(attr.size, overlay.end());
  attr.mtime = std::max(attr.mtime, mtime);
  attr.ctime = std::max(attr.ctime, mtime);
  return attr;
}

}  // namespace geofs::hub
