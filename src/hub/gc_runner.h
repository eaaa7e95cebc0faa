// GcRunner: the hub's background garbage collection. Every `interval` it
// deletes chunks that have been unreferenced for `grace` or longer
// (Namespace::CollectGarbage, which never passes a referenced chunk on),
// then, when one is due, sweeps orphans: stored chunks at least `grace`
// old of which the namespace has no record (Namespace::CollectOrphan).
// Orphans arise when a registration made without its own sync
// (RegisterChunks with sync false, as PutChunks does) is lost in a crash
// after the chunk was stored, so a sweep is due only after a run that did
// not stop cleanly (Namespace::MarkRunning). It lists the whole object
// store, O(stored chunks), once the grace has passed since that start, and
// records the stored sizes of known chunks that lack one
// (Namespace::RecordStoredSizes), for a store from before they were kept.
//
// The grace period is what makes the writer protocol safe (register, upload,
// commit): it must be longer than any writer takes between registering a
// chunk and committing a reference to it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "chunk/chunk_store.h"
#include "geofs/clock.h"
#include "meta/namespace.h"

namespace geofs::hub {

struct GcOptions {
  std::chrono::seconds grace{3600};
  std::chrono::seconds interval{600};
  // Source of "now" for the grace period. REQUIRES: outlives the runner.
  Clock* clock = Clock::Real();
};

class GcRunner {
 public:
  // Starts the background thread; the first pass runs after one interval.
  // REQUIRES: `ns` and `chunks` outlive the runner.
  GcRunner(meta::Namespace* ns, chunk::ChunkStore* chunks, GcOptions options);
  // Stops the thread, waiting for a pass in progress.
  ~GcRunner();
  GcRunner(const GcRunner&) = delete;
  GcRunner& operator=(const GcRunner&) = delete;

  // One pass now, on the caller's thread.
  Result<meta::GcResult> RunOnce();

 private:
  void Loop(std::stop_token stop);
  // Deletes the orphans stored before `cutoff`, counting them in `result`.
  Status SweepOrphans(WallTime cutoff, meta::GcResult* result);

  meta::Namespace* const ns_;
  chunk::ChunkStore* const chunks_;
  const GcOptions options_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::jthread thread_;  // last: started after everything it uses
};

}  // namespace geofs::hub
