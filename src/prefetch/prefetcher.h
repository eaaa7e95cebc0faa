// Prefetcher: keeps the spoke's cache ahead of the job.
//
// It drains the access ring, shows every event to every predictor, and
// turns what they want into chunk fetches through a PrefetchSource:
//  - Wants become per-file tasks (a file's chunks in offset order), queued
//    per predictor; a directory or tree want is first described by the hub
//    (DescribeDir: a page of files with their chunk maps in one round trip).
//    A READ of a queued file moves its task to the front: the job is
//    reading it now. Demand READs never queue here: they fetch on their
//    own, and the chunk fetcher shares a chunk in flight between a READ
//    and a prefetch.
//  - Budget: bytes in flight stay below a window sized to the link's
//    measured bandwidth x round-trip time (grown when a READ catches up
//    with a prefetch), and prefetched bytes not read yet stay below the
//    cache's budget (PrefetchSource::CacheBudget), so prefetch cannot push
//    out what it fetched before the job reads it.
//  - Ensemble: every prefetched chunk carries the tag of the predictor
//    that asked for it. Per predictor, decayed counters of bytes issued,
//    used (read after it landed), late (read while on its way) and wasted
//    (not read within `horizon`). Bytes go to predictors in proportion to
//    their precision; one whose precision falls below `min_precision`
//    keeps only a probing share, and earns its share back by being right.
//
// Thread-safe. Runs on its own thread after Start(); tests drive it with
// RunOnce() and a manual clock instead.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "geofs/clock.h"
#include "prefetch/access_ring.h"
#include "prefetch/predictor.h"
#include "prefetch/prefetch_source.h"

namespace geofs::prefetch {

struct PrefetcherOptions {
  // Bytes in flight: starts at `initial_window`, follows 2 x bandwidth x
  // RTT as measured, within [min_window, max_window].
  uint64_t initial_window = 8 << 20;
  uint64_t min_window = 2 << 20;
  uint64_t max_window = 256 << 20;
  uint32_t max_batch_chunks = 256;  // chunks per Fetch call
  uint32_t max_describes = 4;       // DescribeDir calls at once
  uint32_t max_tree_depth = 8;
  size_t max_queued_files = 1 << 20;
  std::chrono::nanoseconds horizon = std::chrono::minutes(5);
  // How long a directory described stays described (the next epoch may
  // describe it again).
  std::chrono::nanoseconds describe_again_after = std::chrono::minutes(5);
  double min_precision = 0.25;
  double probe_share = 0.05;
  uint64_t judge_after_bytes = 16 << 20;  // resolved bytes before precision counts
  // How often the thread reads the access ring: while events arrive, and
  // once they stopped.
  std::chrono::milliseconds poll_interval{1};
  std::chrono::milliseconds idle_poll_interval{20};
  Clock* clock = Clock::Real();  // REQUIRES: outlives the prefetcher
};

struct PredictorStats {
  std::string name;
  uint64_t issued_bytes = 0;  // lifetime counters
  uint64_t used_bytes = 0;
  uint64_t late_bytes = 0;
  uint64_t wasted_bytes = 0;
  double precision = 1.0;  // decayed (used + late) / resolved
  double share = 0.0;      // of the bytes issued lately
  bool probing = false;
};

struct PrefetchStats {
  uint64_t events = 0;
  uint64_t events_dropped = 0;
  uint64_t reads = 0;
  uint64_t read_hits = 0;  // READs whose chunks were all cached
  uint64_t read_joined = 0;
  uint64_t read_stall_us = 0;  // READs' waits when not all cached
  uint64_t inflight_bytes = 0;
  uint64_t window_bytes = 0;
  uint64_t unread_bytes = 0;  // prefetched, not read yet
  uint64_t queued_files = 0;
  uint64_t dirs_described = 0;
  uint64_t describe_errors = 0;
  uint64_t fetch_errors = 0;
  double bandwidth_bps = 0;  // measured, bytes/s
  double rtt_ms = 0;         // measured
  std::vector<PredictorStats> predictors;
};

class Prefetcher {
 public:
  // REQUIRES: `source` and `ring` outlive the prefetcher; at most 255
  // predictors.
  Prefetcher(PrefetchSource* source, AccessRing* ring,
             std::vector<std::unique_ptr<Predictor>> predictors, PrefetcherOptions options = {});
  ~Prefetcher();  // Stop(); waits for callbacks in flight
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  void Start();
  void Stop();
  // One step of the thread: Sync(), then send what the budget allows.
  // True if the ring held events.
  bool RunOnce();
  // Reads the ring and shows its events to the predictors, so that Stats()
  // counts every event recorded before the call. Any thread.
  bool Sync();
  PrefetchStats Stats() const;

 private:
  struct Span {
    chunk::ChunkId id;
    uint64_t offset;
    uint64_t length;
    uint64_t size;
  };
  // A file's chunks still to fetch for one predictor.
  struct FileTask {
    FileId file;
    uint8_t tag;
    std::deque<Span> chunks;
  };
  struct Outstanding {
    uint8_t tag;
    uint64_t size;
    int64_t issued_ns;
    bool landed = false;    // in the cache (or failed)
    bool resolved = false;  // read, or written off as wasted
  };
  struct Score {
    PredictorStats totals;
    double used = 0, resolved = 0, issued_recent = 0;  // decayed
  };
  struct Describe {
    FileId dir;
    uint8_t tag;
    uint32_t depth;  // > 0: a tree; describe its subdirectories too
    uint64_t cookie = 0;
  };

  int64_t NowNs() const;
  void Observe(const AccessEvent& e);           // REQUIRES: mu_
  void NoteRead(const AccessEvent& e);          // REQUIRES: mu_
  void Resolve(const chunk::ChunkId& id, bool read, int64_t now);  // REQUIRES: mu_
  void Plan(const Want& w, uint8_t tag);        // REQUIRES: mu_
  void Enqueue(const FileChunks& f, uint8_t tag, uint64_t from, uint64_t to);  // REQUIRES: mu_
  void SweepLocked(int64_t now);                // REQUIRES: mu_
  // The predictor whose queue goes next, or -1. REQUIRES: mu_
  int PickTagLocked();
  bool Probing(const Score& s) const;
  // Sends waiting DescribeDir calls while fewer than max_describes are open.
  void StartDescribes();
  // Sends queued chunks while the window and the cache budget allow.
  void Dispatch();
  void Landed(const chunk::ChunkId& id, const Status& s);
  // Wakes the thread: an answer from the source may let more go out.
  // REQUIRES: mu_.
  void Kick();
  void UpdateWindowLocked(int64_t now);
  void Loop(std::stop_token stop);

  PrefetchSource* const source_;
  AccessRing* const ring_;
  const std::vector<std::unique_ptr<Predictor>> predictors_;
  const PrefetcherOptions options_;
  // The ring's one reader at a time, and what only that reader touches:
  // the scratch vectors and the predictors.
  std::mutex reader_mu_;
  std::vector<AccessEvent> events_;  // guarded by reader_mu_
  std::vector<Want> wants_;          // guarded by reader_mu_

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::condition_variable idle_;  // callbacks_ reached 0
  uint32_t callbacks_ = 0;        // guarded by mu_: source calls not answered yet
  bool stopping_ = false;         // guarded by mu_
  bool kicked_ = false;           // guarded by mu_: Kick() since the thread last woke
  std::vector<Score> scores_;     // guarded by mu_: per predictor
  std::deque<std::shared_ptr<FileTask>> urgent_;                 // guarded by mu_
  std::vector<std::deque<std::shared_ptr<FileTask>>> queues_;    // guarded by mu_: per tag
  std::unordered_map<uint64_t, std::shared_ptr<FileTask>> task_of_;  // guarded by mu_: by ino
  // Spans of files with prefetched chunks, to credit READs to them.
  std::unordered_map<uint64_t, std::vector<Span>> spans_of_;  // guarded by mu_: by ino
  std::unordered_map<chunk::ChunkId, Outstanding, chunk::ChunkIdHash> outstanding_;  // guarded by mu_
  std::deque<Describe> describes_;  // guarded by mu_: waiting
  uint32_t describing_ = 0;         // guarded by mu_
  std::unordered_map<uint64_t, int64_t> described_at_;  // guarded by mu_: dir ino -> ns
  uint64_t inflight_bytes_ = 0;     // guarded by mu_
  uint64_t unread_bytes_ = 0;       // guarded by mu_
  uint64_t window_ = 0;             // guarded by mu_
  int64_t last_grow_ns_ = INT64_MIN / 2;  // guarded by mu_
  // Bandwidth: bytes landed in the current sample while busy.
  int64_t sample_start_ns_ = 0;     // guarded by mu_
  uint64_t sample_bytes_ = 0;       // guarded by mu_
  double bandwidth_ = 0;            // guarded by mu_: bytes/s
  double rtt_ns_ = 0;               // guarded by mu_: smallest first-chunk latency
  std::unordered_map<chunk::ChunkId, int64_t, chunk::ChunkIdHash> batch_probe_;  // guarded by mu_
  int64_t last_sweep_ns_ = 0;       // guarded by mu_
  uint64_t dispatches_ = 0;         // guarded by mu_
  PrefetchStats counters_;          // guarded by mu_: the plain counters

  std::jthread thread_;  // last: stopped first
};

}  // namespace geofs::prefetch
