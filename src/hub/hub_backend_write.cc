// HubBackend: WRITE, COMMIT and flushing buffered writes into chunks.
#include <algorithm>
#include <cstring>

#include "common/logging.h"
#include "common/parallel.h"
#include "hub/chunk_ids.h"
#include "hub/hub_backend.h"
#include "hub/hub_backend_internal.h"
#include "vfs/access.h"

namespace geofs::hub {
namespace {

// Internal reads of committed data (a flush widens a write to whole chunks,
// which the writer may lack read permission for): root reads anything.
const vfs::Credentials kInternalReader{};

// Re-reads after another writer committed in between, before giving up.
constexpr int kMaxFlushAttempts = 16;

// The widened range of one run: the run plus the whole extents it touches.
WriteOverlay::Range Widen(const WriteOverlay::Range& run,
                          const std::vector<meta::Extent>& extents) {
  WriteOverlay::Range out = run;
  auto it = std::upper_bound(extents.begin(), extents.end(), run.begin,
                             [](uint64_t at, const meta::Extent& e) { return at < e.end(); });
  for (; it != extents.end() && it->offset < run.end; ++it) {
    out.begin = std::min(out.begin, it->offset);
    out.end = std::max(out.end, it->end());
  }
  return out;
}

// Groups the runs from runs[first] on whose widened ranges overlap or touch
// (so every byte of the span is written or committed: no holes inside);
// `*next` is set past the last run taken. `extents` are the committed
// extents overlapping the runs, ordered by offset.
DirtySpan GroupRuns(const std::vector<WriteOverlay::Range>& runs, size_t first,
                    const std::vector<meta::Extent>& extents, size_t* next) {
  WriteOverlay::Range widened = Widen(runs[first], extents);
  DirtySpan span{widened.begin, widened.end, runs[first].begin, runs[first].end};
  size_t i = first + 1;
  for (; i < runs.size(); ++i) {
    WriteOverlay::Range w = Widen(runs[i], extents);
    if (w.begin > span.end) break;
    span.end = std::max(span.end, w.end);
    span.dirty_end = runs[i].end;
  }
  *next = i;
  return span;
}

}  // namespace

void HubBackend::Write(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset,
                       Buffer data, vfs::Stability stability, vfs::Callback<vfs::WriteReply> cb) {
  auto parts = meta::Namespace::ParseHandle(h);
  if (!parts.ok()) return cb(parts.status());
  const uint64_t max_size = GetCapabilities().max_file_size;
  if (offset > max_size || data.size() > max_size - offset) return cb(Status::FileTooLarge());
  auto attr = ns_->GetAttr(h);
  if (!attr.ok()) return cb(attr.status());
  if (Status s = vfs::CheckWrite(*attr, cred); !s.ok()) return cb(s);

  vfs::WriteReply reply;
  reply.count = static_cast<uint32_t>(data.size());
  reply.committed = vfs::Stability::kUnstable;
  std::shared_ptr<FileState> state;
  uint64_t file_dirty = 0;
  for (;;) {
    state = GetOrCreateState(parts->ino, h);
    std::lock_guard lock(state->mu);
    if (state->forgotten) continue;
    reply.wcc.before = vfs::ToWcc(PatchedLocked(*attr, state->overlay, state->mtime));
    const uint64_t before = state->overlay.bytes();
    if (state->overlay.empty()) state->dirty_since = std::chrono::steady_clock::now();
    state->overlay.Write(offset, std::move(data));
    file_dirty = state->overlay.bytes();
    dirty_bytes_ += file_dirty - before;  // modular: also right when it shrinks
    state->writer = cred;
    state->mtime = std::max(options_.clock->WallNow(), state->mtime);
    reply.wcc.after = PatchedLocked(*attr, state->overlay, state->mtime);
    break;
  }

  if (stability != vfs::Stability::kUnstable) {
    if (Status s = Flush(state, FlushMode::kAll); !s.ok()) return cb(s);
    auto now = ns_->GetAttr(h);
    if (!now.ok()) return cb(now.status());
    reply.wcc.after = Patched(*now);
    reply.committed = vfs::Stability::kFileSync;
  } else if (file_dirty > options_.max_dirty_bytes_per_file ||
             dirty_bytes_.load() > options_.max_dirty_bytes) {
    // The writer pays for the memory it fills: this is the backpressure.
    if (Status s = Flush(state, FlushMode::kStablePrefix); !s.ok()) return cb(s);
  }
  cb(std::move(reply));
}

void HubBackend::Commit(const vfs::Credentials&, const vfs::Handle& h, uint64_t, uint32_t,
                        vfs::Callback<vfs::Wcc> cb) {
  // The whole file is flushed whatever the range: ranges would save little
  // and complicate the bookkeeping.
  auto before = ns_->GetAttr(h);
  if (!before.ok()) {
    // A removed file's buffered bytes have nowhere to go: the flush drops them.
    if (before.status() == StatusCode::kStale) (void)FlushIfDirty(h);
    return cb(before.status());
  }
  vfs::Wcc wcc;
  wcc.before = vfs::ToWcc(Patched(*before));
  if (Status s = FlushIfDirty(h); !s.ok()) return cb(s);
  auto after = ns_->GetAttr(h);
  if (!after.ok()) return cb(after.status());
  wcc.after = Patched(*after);
  cb(std::move(wcc));
}

Status HubBackend::FlushIfDirty(const vfs::Handle& h) {
  GEOFS_ASSIGN_OR_RETURN(meta::Namespace::HandleParts parts, meta::Namespace::ParseHandle(h));
  std::shared_ptr<FileState> state = FindState(parts.ino);
  return state ? Flush(state, FlushMode::kAll) : Status::Ok();
}

Status HubBackend::FlushAll() {
  std::vector<std::shared_ptr<FileState>> states;
  {
    std::lock_guard lock(files_mu_);
    for (const auto& [ino, state] : files_) states.push_back(state);
  }
  Status first;
  for (const auto& state : states) {
    Status s = Flush(state, FlushMode::kAll);
    // kStale: the file was removed; its bytes were dropped, as they must be.
    if (!s.ok() && s.code() != StatusCode::kStale && first.ok()) first = s;
  }
  return first;
}

Status HubBackend::Flush(const std::shared_ptr<FileState>& state, FlushMode mode) {
  std::lock_guard flush_lock(state->flush_mu);
  WriteOverlay snapshot;
  vfs::Credentials cred;
  WallTime mtime;
  {
    std::lock_guard lock(state->mu);
    snapshot = state->overlay;
    cred = state->writer;
    mtime = state->mtime;
  }
  auto release = [&](uint64_t begin, uint64_t end) {
    std::lock_guard lock(state->mu);
    const uint64_t before = state->overlay.bytes();
    state->overlay.Release(begin, end, snapshot.last_seq());
    dirty_bytes_ -= before - state->overlay.bytes();
  };

  const std::vector<WriteOverlay::Range> runs = snapshot.Runs();
  size_t next = 0;
  int attempts = 0;
  while (next < runs.size()) {
    const uint64_t begin = runs[next].begin;
    auto map = ns_->GetChunkMap(kInternalReader, state->handle, begin, runs.back().end - begin);
    if (!map.ok()) {
      if (map.status() == StatusCode::kStale) {
        // The file is gone: its buffered bytes have nowhere to go.
        release(0, UINT64_MAX);
        MaybeForget(state);
      }
      return map.status();
    }
    size_t after_group;
    const DirtySpan span = GroupRuns(runs, next, map->extents, &after_group);
    auto committed_end = FlushSpan(*state, snapshot, *map, span, mode, cred, mtime);
    if (!committed_end.ok()) {
      if (committed_end.status() == StatusCode::kAborted && ++attempts < kMaxFlushAttempts) {
        continue;  // someone else committed to the file: re-read and redo
      }
      if (committed_end.status() == StatusCode::kStale) {
        release(0, UINT64_MAX);
        MaybeForget(state);
      }
      return committed_end.status();
    }
    release(span.begin, *committed_end);
    // A held-back tail (kStablePrefix) stays buffered for a later flush.
    next = after_group;
  }
  MaybeForget(state);
  return Status::Ok();
}

Result<uint64_t> HubBackend::FlushSpan(FileState& state, const WriteOverlay& snapshot,
                                       const meta::ChunkMap& map, const DirtySpan& span,
                                       FlushMode mode, const vfs::Credentials& cred,
                                       WallTime mtime) {
  const uint64_t len = span.end - span.begin;
  uint8_t* p;
  Buffer bytes = Buffer::Allocate(len, &p);
  GEOFS_RETURN_IF_ERROR(ReadCommitted(map.extents, span.begin, {p, len}));
  snapshot.ApplyTo(span.begin, {p, len});

  const std::vector<size_t> lengths = chunk::ChunkLengths({p, len}, options_.chunker);
  uint64_t commit_end = span.end;
  if (mode == FlushMode::kStablePrefix) {
    // Cut at the last content-defined boundary inside the written bytes;
    // the span's own end is not one (the chunker stopped there because the
    // data did), so it is skipped. No boundary there: commit it all.
    uint64_t at = span.begin;
    uint64_t best = 0;
    for (size_t i = 0; i + 1 < lengths.size(); ++i) {
      at += lengths[i];
      if (at > span.dirty_begin && at <= span.dirty_end) best = at;
    }
    if (best != 0) commit_end = best;
  }

  std::vector<meta::Extent> extents;
  uint64_t at = span.begin;
  for (size_t l : lengths) {
    if (at >= commit_end) break;
    meta::Extent e;
    e.offset = at;
    e.length = l;
    e.chunk_offset = 0;
    e.chunk_size = l;
    extents.push_back(e);
    at += l;
  }
  GEOFS_RETURN_IF_ERROR(StoreChunks({p, commit_end - span.begin}, span.begin, &extents));

  meta::ChunkMapUpdate update;
  update.expected_version = map.version;
  update.offset = span.begin;
  update.length = commit_end - span.begin;
  update.extents = extents;
  update.new_size = std::max(map.attr.size, commit_end);
  update.mtime = mtime;
  GEOFS_RETURN_IF_ERROR(gate_.CommitChunkMap(kNoSession, cred, state.handle, update).status());

  // A sequential writer's next flush starts by re-reading this span's last
  // chunk: keep a copy of it.
  if (!extents.empty()) {
    const meta::Extent& last = extents.back();
    cache_.Insert(ToChunkId(last.chunk), Buffer::CopyOf(std::span<const uint8_t>(
                                             p + (last.offset - span.begin), last.length)));
  }
  return commit_end;
}

Status HubBackend::StoreChunks(std::span<const uint8_t> data, uint64_t data_offset,
                               std::vector<meta::Extent>* extents) {
  auto bytes_of = [&](const meta::Extent& e) {
    return data.subspan(e.offset - data_offset, e.length);
  };
  const int threads = options_.upload_parallelism;
  GEOFS_RETURN_IF_ERROR(ParallelFor(extents->size(), threads, [&](size_t i) {
    (*extents)[i].chunk = ToMetaId(chunk::ChunkId::Of(bytes_of((*extents)[i])));
    return Status::Ok();
  }));
  // Register before storing, so a stored chunk is always known to GC
  // (namespace.h's writer protocol).
  std::vector<meta::ChunkRef> refs;
  refs.reserve(extents->size());
  for (const meta::Extent& e : *extents) refs.push_back({e.chunk, e.chunk_size});
  GEOFS_RETURN_IF_ERROR(ns_->RegisterChunks(refs));
  std::vector<chunk::NamedChunk> named;
  named.reserve(extents->size());
  for (const meta::Extent& e : *extents) named.push_back({ToChunkId(e.chunk), bytes_of(e)});
  // Compressed in parallel, then stored together: the local store makes the
  // whole flush durable with two barriers.
  const auto puts = chunks_->PutNamedMany(named, threads);
  std::vector<meta::StoredChunkSize> sizes(extents->size());  // 0 where not stored
  Status stored = Status::Ok();
  for (size_t i = 0; i < puts.size(); ++i) {
    if (!puts[i].ok()) {
      if (stored.ok()) stored = puts[i].status();
      continue;
    }
    sizes[i] = {(*extents)[i].chunk, puts[i]->stored_size};
  }
  // For Stats, including what was stored before a failure; durable with
  // the commit that follows.
  const Status recorded = ns_->RecordStoredSizes(sizes, /*sync=*/false);
  GEOFS_RETURN_IF_ERROR(stored);
  return recorded;
}

void HubBackend::BackgroundFlusher(std::stop_token stop) {
  auto log = GetLogger("hub.backend");
  const auto period = std::max(options_.dirty_expire / 4, std::chrono::milliseconds(10));
  std::unique_lock lock(flusher_mu_);
  while (!stop.stop_requested()) {
    flusher_cv_.wait_for(lock, stop, period, [] { return false; });
    if (stop.stop_requested()) break;
    lock.unlock();
    const auto expired_before = std::chrono::steady_clock::now() - options_.dirty_expire;
    std::vector<std::shared_ptr<FileState>> expired;
    {
      std::lock_guard table_lock(files_mu_);
      for (const auto& [ino, state] : files_) {
        std::lock_guard state_lock(state->mu);
        if (!state->overlay.empty() && state->dirty_since <= expired_before) {
          expired.push_back(state);
        }
      }
    }
    for (const auto& state : expired) {
      Status s = Flush(state, FlushMode::kAll);
      if (!s.ok() && s.code() != StatusCode::kStale) {
        log->warn("background flush failed (kept buffered, will retry): {}", s.ToString());
      }
    }
    lock.lock();
  }
}

}  // namespace geofs::hub
