#include "prefetch/prefetcher.h"

#include <algorithm>
#include <cmath>

namespace geofs::prefetch {
namespace {

// Decay of the ensemble's counters, per second: a predictor's record of
// the last minute or so is what counts.
constexpr double kDecayPerSecond = 0.97;
// A bandwidth sample covers at least this long.
constexpr int64_t kSampleNs = 100'000'000;
constexpr int64_t kSweepNs = 1'000'000'000;

bool Overlaps(uint64_t a_off, uint64_t a_len, uint64_t b_off, uint64_t b_len) {
  return a_off < b_off + b_len && b_off < a_off + a_len;
}

}  // namespace

Prefetcher::Prefetcher(PrefetchSource* source, AccessRing* ring,
                       std::vector<std::unique_ptr<Predictor>> predictors, PrefetcherOptions options)
    : source_(source),
      ring_(ring),
      predictors_(std::move(predictors)),
      options_(options),
      scores_(predictors_.size()),
      queues_(predictors_.size()),
      window_(options.initial_window) {
  for (size_t i = 0; i < predictors_.size(); ++i) {
    scores_[i].totals.name = std::string(predictors_[i]->name());
  }
  last_sweep_ns_ = NowNs();
}

Prefetcher::~Prefetcher() {
  Stop();
  std::unique_lock lock(mu_);
  stopping_ = true;
  idle_.wait(lock, [&] { return callbacks_ == 0; });
}

void Prefetcher::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void Prefetcher::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void Prefetcher::Loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    const bool busy = RunOnce();
    // Answers from the source wake the loop at once; the ring is polled,
    // often while the job reads, rarely while it does not.
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, stop, busy ? options_.poll_interval : options_.idle_poll_interval,
                   [this] { return kicked_; });
    kicked_ = false;
  }
}

int64_t Prefetcher::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             options_.clock->Now().time_since_epoch())
      .count();
}

bool Prefetcher::RunOnce() {
  const bool busy = Sync();
  StartDescribes();
  Dispatch();
  return busy;
}

bool Prefetcher::Sync() {
  std::vector<std::pair<Want, uint8_t>> ranges;
  size_t drained;
  {
    std::lock_guard reader(reader_mu_);
    events_.clear();
    drained = ring_->Drain(&events_);
    std::lock_guard lock(mu_);
    counters_.events += drained;
    counters_.events_dropped = ring_->dropped();
    for (const AccessEvent& e : events_) {
      if (e.op == AccessOp::kRead) NoteRead(e);
      for (size_t tag = 0; tag < predictors_.size(); ++tag) {
        wants_.clear();
        predictors_[tag]->Observe(e, &wants_);
        for (const Want& w : wants_) {
          if (w.kind == WantKind::kFileRange) {
            if (!task_of_.contains(w.target.ino)) ranges.emplace_back(w, tag);
          } else {
            Plan(w, static_cast<uint8_t>(tag));
          }
        }
      }
    }
    const int64_t now = NowNs();
    if (now - last_sweep_ns_ >= kSweepNs) SweepLocked(now);
    UpdateWindowLocked(now);
  }
  // File ranges need the file's chunks first (the cache answers at once,
  // the hub later).
  for (auto& [want, tag] : ranges) {
    {
      std::lock_guard lock(mu_);
      ++callbacks_;
    }
    source_->ChunksOf(want.target, [this, want, tag](Result<FileChunks> f) {
      std::lock_guard lock(mu_);
      --callbacks_;
      if (f.ok() && !stopping_) {
        const uint64_t to = want.length == 0 ? f->size : want.offset + want.length;
        Enqueue(*f, tag, want.offset, to);
      }
      Kick();
      if (callbacks_ == 0) idle_.notify_all();
    });
  }
  return drained > 0;
}

void Prefetcher::NoteRead(const AccessEvent& e) {
  ++counters_.reads;
  if (e.outcome == AccessOutcome::kHit) {
    ++counters_.read_hits;
  } else {
    if (e.outcome == AccessOutcome::kJoined) ++counters_.read_joined;
    counters_.read_stall_us += e.wait_us;
  }
  auto spans = spans_of_.find(e.file.ino);
  if (spans != spans_of_.end()) {
    for (const Span& s : spans->second) {
      if (Overlaps(s.offset, s.length, e.offset, e.length)) Resolve(s.id, true, e.time_ns);
    }
  }
  // The job reads this file now: the rest of it goes first.
  auto task = task_of_.find(e.file.ino);
  if (task != task_of_.end() && !task->second->chunks.empty()) {
    urgent_.push_back(task->second);
    task_of_.erase(task);
  }
}

void Prefetcher::Resolve(const chunk::ChunkId& id, bool read, int64_t now) {
  auto it = outstanding_.find(id);
  if (it == outstanding_.end() || it->second.resolved) return;
  Outstanding& o = it->second;
  o.resolved = true;
  unread_bytes_ -= o.size;
  Score& s = scores_[o.tag];
  s.resolved += static_cast<double>(o.size);
  if (read) {
    s.used += static_cast<double>(o.size);
    if (o.landed) {
      s.totals.used_bytes += o.size;
    } else {
      s.totals.late_bytes += o.size;
      // The job caught up with the prefetch: fetch further ahead, at most
      // once per round trip.
      if (now - last_grow_ns_ > static_cast<int64_t>(rtt_ns_)) {
        window_ = std::min<uint64_t>(options_.max_window, window_ + window_ / 4);
        last_grow_ns_ = now;
      }
    }
  } else {
    s.totals.wasted_bytes += o.size;
  }
  if (o.landed) outstanding_.erase(it);
}

void Prefetcher::Plan(const Want& w, uint8_t tag) {
  const int64_t now = NowNs();
  auto it = described_at_.find(w.target.ino);
  if (it != described_at_.end() && now - it->second < options_.describe_again_after.count()) {
    // Described lately; a tree want still reaches directories below it.
    if (w.kind != WantKind::kTree) return;
  }
  described_at_[w.target.ino] = now;
  describes_.push_back(
      Describe{w.target, tag, w.kind == WantKind::kTree ? options_.max_tree_depth : 0, 0});
}

void Prefetcher::Enqueue(const FileChunks& f, uint8_t tag, uint64_t from, uint64_t to) {
  std::shared_ptr<FileTask>& task = task_of_[f.file.ino];
  const bool fresh = task == nullptr;
  if (fresh) {
    if (task_of_.size() > options_.max_queued_files) {
      task_of_.erase(f.file.ino);
      return;
    }
    task = std::make_shared<FileTask>(FileTask{f.file, tag, {}});
    std::vector<Span>& spans = spans_of_[f.file.ino];
    spans.clear();
    for (const ChunkSpan& c : f.chunks) spans.push_back(Span{c.id, c.file_offset, c.length, c.chunk_size});
  }
  // A task holds its chunks in file order: a later want of the same file
  // (a sequential window moving on) adds what lies beyond them.
  const bool requeue = fresh || task->chunks.empty();  // its queue may have let it go
  const uint64_t after = task->chunks.empty() ? 0 : task->chunks.back().offset + 1;
  for (const ChunkSpan& c : f.chunks) {
    if (c.file_offset < after) continue;
    if (!Overlaps(c.file_offset, c.length, from, to > from ? to - from : 0)) continue;
    if (outstanding_.contains(c.id)) continue;
    if (!task->chunks.empty() && task->chunks.back().id == c.id) continue;
    task->chunks.push_back(Span{c.id, c.file_offset, c.length, c.chunk_size});
  }
  if (task->chunks.empty()) {
    task_of_.erase(f.file.ino);
    return;
  }
  if (requeue) queues_[task->tag].push_back(task);
}

void Prefetcher::SweepLocked(int64_t now) {
  const double decay =
      std::pow(kDecayPerSecond, static_cast<double>(now - last_sweep_ns_) / 1e9);
  last_sweep_ns_ = now;
  for (Score& s : scores_) {
    s.used *= decay;
    s.resolved *= decay;
    s.issued_recent *= decay;
  }
  std::vector<chunk::ChunkId> expired;
  for (const auto& [id, o] : outstanding_) {
    if (!o.resolved && now - o.issued_ns > options_.horizon.count()) expired.push_back(id);
  }
  for (const chunk::ChunkId& id : expired) Resolve(id, false, now);
  // Spans of files with nothing outstanding are no longer needed to credit
  // READs; a bounded table suffices.
  if (spans_of_.size() > options_.max_queued_files) spans_of_.clear();
}

bool Prefetcher::Probing(const Score& s) const {
  if (s.resolved < static_cast<double>(options_.judge_after_bytes)) return false;
  return s.used / s.resolved < options_.min_precision;
}

int Prefetcher::PickTagLocked() {
  int best = -1, probe = -1;
  double best_cost = 0;
  for (size_t tag = 0; tag < queues_.size(); ++tag) {
    auto& q = queues_[tag];
    while (!q.empty() && q.front()->chunks.empty()) q.pop_front();
    if (q.empty()) continue;
    const Score& s = scores_[tag];
    if (Probing(s)) {
      if (probe < 0) probe = static_cast<int>(tag);
      continue;
    }
    // Bytes lately issued per unit of precision: the more useful a
    // predictor, the larger its share.
    const double precision = s.resolved > 0 ? std::max(0.01, s.used / s.resolved) : 1.0;
    const double cost = s.issued_recent / precision;
    if (best < 0 || cost < best_cost) {
      best = static_cast<int>(tag);
      best_cost = cost;
    }
  }
  if (probe >= 0 &&
      (best < 0 || dispatches_ % static_cast<uint64_t>(1.0 / options_.probe_share) == 0)) {
    return probe;
  }
  return best;
}

void Prefetcher::StartDescribes() {
  for (;;) {
    Describe d;
    {
      std::lock_guard lock(mu_);
      if (stopping_ || describes_.empty() || describing_ >= options_.max_describes) return;
      d = describes_.front();
      describes_.pop_front();
      ++describing_;
      ++callbacks_;
    }
    source_->DescribeDir(d.dir, d.cookie, [this, d](Result<DirPage> page) {
      std::lock_guard lock(mu_);
      --describing_;
      --callbacks_;
      if (!page.ok()) {
        ++counters_.describe_errors;
      } else if (!stopping_) {
        ++counters_.dirs_described;
        for (const FileChunks& f : page->files) Enqueue(f, d.tag, 0, f.size);
        if (!page->eof) describes_.push_front(Describe{d.dir, d.tag, d.depth, page->next_cookie});
        if (d.depth > 0) {
          const int64_t now = NowNs();
          for (const FileId& sub : page->subdirs) {
            auto at = described_at_.find(sub.ino);
            if (at != described_at_.end() &&
                now - at->second < options_.describe_again_after.count()) {
              continue;
            }
            described_at_[sub.ino] = now;
            describes_.push_back(Describe{sub, d.tag, d.depth - 1, 0});
          }
        }
      }
      Kick();
      if (callbacks_ == 0) idle_.notify_all();
    });
  }
}

void Prefetcher::Dispatch() {
  const uint64_t budget = source_->CacheBudget();
  for (;;) {
    std::vector<chunk::ChunkId> ids;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      const int64_t now = NowNs();
      while (ids.size() < options_.max_batch_chunks) {
        std::shared_ptr<FileTask> task;
        while (!urgent_.empty() && urgent_.front()->chunks.empty()) urgent_.pop_front();
        if (!urgent_.empty()) {
          task = urgent_.front();
        } else {
          int tag = PickTagLocked();
          if (tag < 0) break;
          task = queues_[tag].front();
        }
        const Span span = task->chunks.front();
        if (outstanding_.contains(span.id)) {
          task->chunks.pop_front();
          if (task->chunks.empty()) task_of_.erase(task->file.ino);
          continue;
        }
        if (inflight_bytes_ > 0 && inflight_bytes_ + span.size > window_) break;
        if (unread_bytes_ + span.size > budget) break;
        task->chunks.pop_front();
        if (task->chunks.empty()) task_of_.erase(task->file.ino);
        outstanding_.emplace(span.id, Outstanding{task->tag, span.size, now});
        inflight_bytes_ += span.size;
        unread_bytes_ += span.size;
        Score& s = scores_[task->tag];
        s.totals.issued_bytes += span.size;
        s.issued_recent += static_cast<double>(span.size);
        ids.push_back(span.id);
      }
      if (ids.empty()) return;
      ++dispatches_;
      if (rtt_ns_ == 0 || inflight_bytes_ == 0) batch_probe_[ids.front()] = now;
      callbacks_ += static_cast<uint32_t>(ids.size());
    }
    std::vector<chunk::ChunkId> started =
        source_->Fetch(ids, [this](const chunk::ChunkId& id, Status s) { Landed(id, s); });
    std::unordered_set<chunk::ChunkId, chunk::ChunkIdHash> ours(started.begin(), started.end());
    std::lock_guard lock(mu_);
    for (const chunk::ChunkId& id : ids) {
      if (ours.contains(id)) continue;
      // Cached already, or on its way for a READ: not a prefetch of ours.
      --callbacks_;
      batch_probe_.erase(id);
      auto it = outstanding_.find(id);
      if (it == outstanding_.end()) continue;
      inflight_bytes_ -= it->second.size;
      if (!it->second.resolved) unread_bytes_ -= it->second.size;
      Score& s = scores_[it->second.tag];
      s.totals.issued_bytes -= it->second.size;
      s.issued_recent -= static_cast<double>(it->second.size);
      outstanding_.erase(it);
    }
    if (callbacks_ == 0) idle_.notify_all();
  }
}

void Prefetcher::Landed(const chunk::ChunkId& id, const Status& status) {
  std::lock_guard lock(mu_);
  --callbacks_;
  const int64_t now = NowNs();
  auto probe = batch_probe_.find(id);
  if (probe != batch_probe_.end()) {
    const double latency = static_cast<double>(now - probe->second);
    rtt_ns_ = rtt_ns_ == 0 ? latency : std::min(latency, rtt_ns_ * 1.01);
    batch_probe_.erase(probe);
  }
  auto it = outstanding_.find(id);
  if (it != outstanding_.end() && !it->second.landed) {
    Outstanding& o = it->second;
    inflight_bytes_ -= o.size;
    o.landed = true;
    sample_bytes_ += o.size;
    if (!status.ok()) {
      ++counters_.fetch_errors;
      if (!o.resolved) unread_bytes_ -= o.size;
      o.resolved = true;
    }
    if (o.resolved) outstanding_.erase(it);
  }
  Kick();
  if (callbacks_ == 0) idle_.notify_all();
}

void Prefetcher::Kick() {
  kicked_ = true;
  wake_.notify_all();
}

void Prefetcher::UpdateWindowLocked(int64_t now) {
  if (sample_start_ns_ == 0 || inflight_bytes_ == 0) {
    // Only busy time measures the link.
    sample_start_ns_ = now;
    sample_bytes_ = 0;
    return;
  }
  if (now - sample_start_ns_ < kSampleNs) return;
  const double bps = static_cast<double>(sample_bytes_) * 1e9 /
                     static_cast<double>(now - sample_start_ns_);
  bandwidth_ = std::max(bps, bandwidth_ * 0.9);
  sample_start_ns_ = now;
  sample_bytes_ = 0;
  if (rtt_ns_ > 0) {
    const double bdp = bandwidth_ * rtt_ns_ / 1e9;
    window_ = std::max<uint64_t>(window_, static_cast<uint64_t>(2 * bdp));
  }
  window_ = std::clamp(window_, options_.min_window, options_.max_window);
}

PrefetchStats Prefetcher::Stats() const {
  std::lock_guard lock(mu_);
  PrefetchStats out = counters_;
  out.inflight_bytes = inflight_bytes_;
  out.window_bytes = window_;
  out.unread_bytes = unread_bytes_;
  out.queued_files = task_of_.size();
  out.bandwidth_bps = bandwidth_;
  out.rtt_ms = rtt_ns_ / 1e6;
  double recent = 0;
  for (const Score& s : scores_) recent += s.issued_recent;
  for (const Score& s : scores_) {
    PredictorStats p = s.totals;
    p.precision = s.resolved > 0 ? s.used / s.resolved : 1.0;
    p.share = recent > 0 ? s.issued_recent / recent : 0.0;
    p.probing = Probing(s);
    out.predictors.push_back(std::move(p));
  }
  return out;
}

}  // namespace geofs::prefetch
