#include "spoke/journal_uploader.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chunk/chunk_id.h"
#include "common/logging.h"
#include "common/parallel.h"
#include "hub/chunk_upload.h"
#include "hub/grpc_status.h"
#include "hub/proto_convert.h"

namespace geofs::spoke {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxFindMissing = 65536;  // ids per FindMissingChunks (hub.proto)

std::string BytesOf(const chunk::ChunkId& id) {
  return std::string(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
}

std::string Name(const FileKey& f) {
  return "file " + std::to_string(f.ino) + "/" + std::to_string(f.gen);
}

bool Transient(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
}

int64_t Millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

bool Gone(const Status& s) {
  return s.code() == StatusCode::kStale || s.code() == StatusCode::kNotFound;
}

Clock::time_point DeadlineAfter(std::chrono::milliseconds timeout) {
  const auto now = Clock::now();
  if (timeout >=
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + timeout;
}

// A byte range of a file, committed in one CommitFile.
struct CommitPart {
  uint64_t offset = 0;
  uint64_t length = 0;
  std::vector<v1::Extent> extents;
};

// One window read from the journal and cut into chunks, ready to upload.
struct Prepared {
  std::vector<CommitPart> parts;
  std::vector<std::pair<chunk::ChunkId, Buffer>> chunks;  // slices of the window's data
};

// A window of a file and the newest write its release may drop.
struct Window {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t upto_seq = 0;
};

struct FileVersion {
  uint64_t version = 0;
  uint64_t size = 0;
  WallTime mtime;  // what the writes' replies told clients; zero: the hub's clock
};

// Reused storage for windows read from the journal. Fresh memory is what
// made reading a window expensive: every new page faults and is zeroed (and
// on a VM that hands freed pages back to its host, faults there as well),
// which cost more than the read, the chunking and the hashing together;
// a reused block is mapped already. One block holds a whole window, however
// many ranges the journal returns for it, so memory stays bounded by the
// windows in flight. Thread-safe; a block lives on (and comes back here)
// while any slice of it does, even after the pool is gone.
class WindowPool {
 public:
  WindowPool(size_t block_bytes, size_t max_idle)
      : shelf_(std::make_shared<Shelf>(block_bytes, max_idle)) {}

  // A block of block_bytes, writable through `*out` until it is shared.
  Buffer Take(uint8_t** out) {
    std::unique_ptr<uint8_t[]> block;
    {
      std::lock_guard lock(shelf_->mu);
      if (!shelf_->idle.empty()) {
        block = std::move(shelf_->idle.back());
        shelf_->idle.pop_back();
      }
    }
    if (!block) block.reset(new uint8_t[shelf_->block_bytes]);
    uint8_t* p = block.release();
    *out = p;
    std::shared_ptr<const void> owner(
        p, [shelf = shelf_](const void* q) { shelf->Return(static_cast<const uint8_t*>(q)); });
    return Buffer(std::move(owner), p, shelf_->block_bytes);
  }

  // Frees the idle blocks (nothing to upload for now).
  void Trim() {
    std::vector<std::unique_ptr<uint8_t[]>> idle;
    std::lock_guard lock(shelf_->mu);
    idle.swap(shelf_->idle);
  }

 private:
  struct Shelf {
    Shelf(size_t block, size_t max) : block_bytes(block), max_idle(max) {}
    void Return(const uint8_t* q) {
      std::unique_ptr<uint8_t[]> block(const_cast<uint8_t*>(q));
      std::lock_guard lock(mu);
      if (idle.size() < max_idle) idle.push_back(std::move(block));
    }

    const size_t block_bytes;
    const size_t max_idle;
    std::mutex mu;
    std::vector<std::unique_ptr<uint8_t[]>> idle;  // guarded by mu
  };
  std::shared_ptr<Shelf> shelf_;
};

}  // namespace

Status JournalUploaderOptions::Validate() const {
  GEOFS_RETURN_IF_ERROR(chunker.Validate());
  GEOFS_RETURN_IF_ERROR(codec.Validate());
  if (window_bytes == 0) return Status::InvalidArgument("uploader: window_bytes must be positive");
  if (workers < 1 || compress_threads < 1 || windows_in_flight < 1) {
    return Status::InvalidArgument(
        "uploader: workers, compress_threads and windows_in_flight must be at least 1");
  }
  if (poll_interval.count() <= 0 || first_backoff.count() <= 0 || max_backoff < first_backoff ||
      call_timeout.count() <= 0) {
    return Status::InvalidArgument("uploader: intervals must be positive");
  }
  return Status::Ok();
}

class JournalUploader::Impl {
 public:
  Impl(WriteJournal* journal, std::shared_ptr<grpc::ChannelInterface> hub, UploaderHooks hooks,
       JournalUploaderOptions options)
      : journal_(journal),
        channel_(std::move(hub)),
        hub_(v1::Hub::NewStub(channel_)),
        hooks_(std::move(hooks)),
        options_(std::move(options)),
        windows_(options_.window_bytes, options_.windows_in_flight) {
    for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Loop(); });
  }
  ~Impl() { Stop(); }

  Status Flush(const FileKey& file, Clock::time_point deadline);
  Status FlushAll(std::chrono::milliseconds timeout);
  void Kick() { cv_.notify_all(); }
  void Stop();
  UploaderStats Stats() const;

 private:
  // What the workers remember of a pending file.
  struct Watch {
    uint64_t upto = 0;             // the newest write seen
    Clock::time_point changed{};   // when `upto` last moved
    bool no_full_window = false;   // a partial pass at `upto` found nothing to do
    Clock::time_point retry_at{};  // after a failed pass
    std::chrono::milliseconds backoff{0};
  };
  struct Done {
    uint64_t upto = 0;  // every write up to this seq is committed (or discarded)
    bool discarded = false;
  };
  struct Job {
    FileKey file;
    bool whole = false;
  };
  struct Outcome {
    Status status;
    uint64_t upto = 0;
    bool any_window = false;
    bool discarded = false;
  };

  void Loop();
  // The next file to upload, marked busy. REQUIRES: mu_ held.
  std::optional<Job> NextJob(Clock::time_point now);
  Outcome UploadFile(const FileKey& file, bool whole);
  Outcome DiscardFile(const FileKey& file, const Status& why, Outcome out);
  // The windows of `file`'s pending bytes that start at or after `from`:
  // all of them if `whole`, else only full ones.
  std::vector<Window> CutWindows(const FileKey& file, bool whole, uint64_t from) const;
  // Prepare() and UploadChunks(): the window's commit parts, once every
  // chunk they name is at the hub. Skipped (kAborted) once `abandon` is set.
  Result<std::vector<CommitPart>> Stage(const FileKey& file, const Window& window,
                                        const std::atomic<bool>& abandon);
  Result<Prepared> Prepare(const FileKey& file, uint64_t offset, uint64_t length) const;
  Status UploadChunks(const Prepared& prepared);
  // Commits `part`; on ABORTED re-commits `history` (this pass's earlier
  // parts) and `part` on top of the other writer's change. Appends `part`
  // to `history` when done.
  Status Commit(const FileKey& file, const CommitPart& part, FileVersion* fv,
                std::vector<CommitPart>* history);
  Status CommitOnce(const FileKey& file, const CommitPart& part, FileVersion* fv);
  Status FetchVersion(const FileKey& file, FileVersion* fv);

  template <typename Req, typename Resp>
  Status Call(grpc::Status (v1::Hub::StubInterface::*method)(grpc::ClientContext*, const Req&,
                                                             Resp*),
              const Req& req, Resp* resp) const {
    grpc::ClientContext ctx;
    Decorate(&ctx);
    return hub::FromGrpcStatus(((*hub_).*method)(&ctx, req, resp), &ctx);
  }
  Status PutChunks(std::span<const hub::StoredChunk> uploads, v1::PutChunksResponse* resp) const;
  void Decorate(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
    if (hooks_.decorate) hooks_.decorate(ctx);
  }
  // Runs `fn` until it succeeds or fails for good; transient failures are
  // retried with backoff until Stop() gives up.
  template <typename Fn>
  Status Retry(Fn&& fn);
  // Sleeps `d`, less if Stop()'s deadline comes first. False if it has.
  bool Sleep(std::chrono::milliseconds d);
  bool Quitting() const { return stopping_.load() && Clock::now() >= stop_deadline_.load(); }

  WriteJournal* const journal_;
  const std::shared_ptr<grpc::ChannelInterface> channel_;  // PutChunks goes on it directly
  const std::unique_ptr<v1::Hub::StubInterface> hub_;
  const UploaderHooks hooks_;
  const JournalUploaderOptions options_;
  std::shared_ptr<spdlog::logger> log_ = GetLogger("spoke.uploader");
  mutable WindowPool windows_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_set<FileKey, FileKeyHash> busy_;             // guarded by mu_
  std::unordered_map<FileKey, Watch, FileKeyHash> watch_;     // guarded by mu_
  std::unordered_map<FileKey, uint64_t, FileKeyHash> flush_;  // flush targets; guarded by mu_
  std::unordered_map<FileKey, Done, FileKeyHash> done_;       // guarded by mu_
  std::atomic<bool> stopping_{false};
  std::atomic<Clock::time_point> stop_deadline_{Clock::time_point::max()};
  std::once_flag stop_once_;

  std::atomic<uint64_t> commits_{0}, aborted_{0}, retries_{0}, chunks_{0}, uploaded_chunks_{0},
      uploaded_bytes_{0}, committed_bytes_{0}, discarded_{0};

  std::vector<std::thread> workers_;
};

void JournalUploader::Impl::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (Quitting()) return;
    std::optional<Job> job = NextJob(Clock::now());
    if (!job) {
      if (stopping_) return;  // nothing left that can be uploaded now
      if (watch_.empty()) windows_.Trim();
      cv_.wait_for(lock, options_.poll_interval);
      continue;
    }
    lock.unlock();
    Outcome out = UploadFile(job->file, job->whole);
    lock.lock();
    busy_.erase(job->file);
    Watch& w = watch_[job->file];
    if (out.status.ok()) {
      w.backoff = std::chrono::milliseconds(0);
      if (out.discarded) {
        done_[job->file] = {UINT64_MAX, true};
      } else if (job->whole) {
        Done& d = done_[job->file];
        d.upto = std::max(d.upto, out.upto);
      } else if (!out.any_window && w.upto == out.upto) {
        w.no_full_window = true;
      }
    } else {
      w.backoff = std::clamp(w.backoff * 2, options_.first_backoff, options_.max_backoff);
      w.retry_at = Clock::now() + w.backoff;
      log_->warn("uploading {}: {}; retrying in {} ms", Name(job->file), out.status.ToString(),
                 w.backoff.count());
    }
    cv_.notify_all();
  }
}

std::optional<JournalUploader::Impl::Job> JournalUploader::Impl::NextJob(Clock::time_point now) {
  const std::vector<FilePending> files = journal_->PendingFiles();
  std::unordered_map<FileKey, Watch, FileKeyHash> watch;
  std::optional<Job> job;
  for (const FilePending& p : files) {
    Watch w;
    if (auto it = watch_.find(p.file); it != watch_.end()) w = it->second;
    if (w.upto != p.upto_seq) {
      w.upto = p.upto_seq;
      w.changed = now;
      w.no_full_window = false;
    }
    watch[p.file] = w;
    if (job || busy_.contains(p.file) || w.retry_at > now) continue;
    auto flush = flush_.find(p.file);
    const bool flushed = flush != flush_.end() && done_[p.file].upto < flush->second;
    if (stopping_ || flushed || now - w.changed >= options_.quiet_delay) {
      job = Job{p.file, true};
    } else if (p.bytes >= options_.window_bytes && !w.no_full_window) {
      job = Job{p.file, false};
    }
  }
  watch_ = std::move(watch);
  std::erase_if(done_, [&](const auto& entry) {
    return !watch_.contains(entry.first) && !flush_.contains(entry.first);
  });
  if (job) busy_.insert(job->file);
  return job;
}

JournalUploader::Impl::Outcome JournalUploader::Impl::DiscardFile(const FileKey& file,
                                                                  const Status& why, Outcome out) {
  log_->warn("{} is gone at the hub ({}); discarding its journalled writes", Name(file),
             why.ToString());
  out.status = journal_->Discard(file);
  out.discarded = out.status.ok();
  if (out.discarded) ++discarded_;
  return out;
}

std::vector<Window> JournalUploader::Impl::CutWindows(const FileKey& file, bool whole,
                                                      uint64_t from) const {
  const std::optional<FilePending> pending = journal_->Pending(file);
  if (!pending) return {};
  std::vector<Window> windows;
  const uint64_t wb = options_.window_bytes;
  for (const PendingSpan& span : journal_->Spans(file)) {
    for (uint64_t at = std::max(span.offset, from); at < span.offset + span.length;) {
      const uint64_t window_end = std::min(at / wb * wb + wb, span.offset + span.length);
      if (whole || window_end - at == wb) {
        windows.push_back({at, window_end - at, pending->upto_seq});
      }
      at = window_end;
    }
  }
  return windows;
}

JournalUploader::Impl::Outcome JournalUploader::Impl::UploadFile(const FileKey& file, bool whole) {
  Outcome out;
  const std::optional<FilePending> pending = journal_->Pending(file);
  if (!pending) return out;
  out.upto = pending->upto_seq;
  std::vector<Window> windows = CutWindows(file, whole, 0);
  if (windows.empty()) return out;
  out.any_window = true;

  Status s = Retry([&] { return hooks_.acquire_write ? hooks_.acquire_write(file) : Status(); });
  if (Gone(s)) return DiscardFile(file, s, out);
  if (!s.ok()) {
    out.status = s;
    return out;
  }
  struct LeaseReleaser {
    const UploaderHooks& hooks;
    const FileKey& file;
    ~LeaseReleaser() {
      if (hooks.release_write) hooks.release_write(file);
    }
  } releaser{hooks_, file};

  FileVersion fv;
  fv.mtime = pending->mtime;
  s = FetchVersion(file, &fv);
  if (Gone(s)) return DiscardFile(file, s, out);
  if (!s.ok()) {
    out.status = s;
    return out;
  }

  struct Staging {
    Window window;
    std::future<Result<std::vector<CommitPart>>> parts;
  };
  std::deque<Staging> staging;  // in window order
  std::atomic<bool> abandon{false};
  size_t next = 0;
  std::vector<CommitPart> history;
  // Windows still staging hold their data; staged ones wait for their
  // commit with only their extents. Only the former count against
  // windows_in_flight: windows staged together share the link and finish
  // together, so if the staged ones counted, the link would idle during
  // every commit.
  const auto wif = static_cast<size_t>(options_.windows_in_flight);
  auto room = [&] {
    size_t busy = 0;
    for (const Staging& st : staging) {
      if (st.parts.wait_for(std::chrono::seconds(0)) == std::future_status::timeout) ++busy;
    }
    return busy < wif && staging.size() < 2 * wif;
  };
  while (s.ok()) {
    // A stream that keeps writing: its windows filled since the pass began
    // join the pass, so the pipeline does not drain between passes.
    if (!whole && next == windows.size() && room()) {
      const Window& last = windows.back();
      for (const Window& w : CutWindows(file, false, last.offset + last.length)) {
        windows.push_back(w);
      }
    }
    while (next < windows.size() && room()) {
      const Window w = windows[next++];
      staging.push_back({w, std::async(std::launch::async, [this, &file, w, &abandon] {
                           return Stage(file, w, abandon);
                         })});
    }
    if (staging.empty()) break;
    // While the oldest window stages, keep launching windows as others
    // finish staging or as the stream fills them.
    const bool more = !whole || next < windows.size();
    if (more &&
        staging.front().parts.wait_for(options_.poll_interval) == std::future_status::timeout) {
      continue;
    }
    Result<std::vector<CommitPart>> parts = staging.front().parts.get();
    s = parts.status();
    if (s.ok() && Quitting()) s = Status::Unavailable("uploader stopping");
    const auto commit_start = Clock::now();
    for (size_t k = 0; s.ok() && k < parts->size(); ++k) {
      s = Commit(file, (*parts)[k], &fv, &history);
    }
    const auto committed_at = Clock::now();
    const Window& w = staging.front().window;
    if (s.ok()) s = journal_->ReleaseRange(file, w.upto_seq, w.offset, w.length);
    log_->debug("{} window at {}: committed in {} ms, released in {} ms ({} windows staged)",
                Name(file), w.offset, Millis(committed_at - commit_start),
                Millis(Clock::now() - committed_at), staging.size());
    staging.pop_front();
  }
  if (!s.ok()) {
    // Later windows may be uploaded but are never committed out of order.
    abandon = true;
    for (Staging& st : staging) st.parts.wait();
    if (Gone(s)) return DiscardFile(file, s, out);
    out.status = s;
  }
  return out;
}

Result<std::vector<CommitPart>> JournalUploader::Impl::Stage(const FileKey& file,
                                                             const Window& window,
                                                             const std::atomic<bool>& abandon) {
  const Status abandoned = Status::Aborted("an earlier window of " + Name(file) + " failed");
  if (abandon) return abandoned;
  const auto start = Clock::now();
  GEOFS_ASSIGN_OR_RETURN(Prepared prepared, Prepare(file, window.offset, window.length));
  const auto prepared_at = Clock::now();
  if (abandon) return abandoned;
  GEOFS_RETURN_IF_ERROR(UploadChunks(prepared));
  log_->debug("{} window at {}: read and hashed in {} ms, uploaded in {} ms", Name(file),
              window.offset, Millis(prepared_at - start), Millis(Clock::now() - prepared_at));
  return std::move(prepared.parts);
}

Result<Prepared> JournalUploader::Impl::Prepare(const FileKey& file, uint64_t offset,
                                                uint64_t length) const {
  Prepared out;
  // The window's ranges are carved from one pooled block (length <=
  // window_bytes, the block's size).
  uint8_t* base;
  const Buffer block = windows_.Take(&base);
  size_t used = 0;
  auto carve = [&](size_t n, uint8_t** p) {
    if (used + n > block.size()) return Buffer::Allocate(n, p);
    *p = base + used;
    used += n;
    return block.Slice(used - n, n);
  };
  for (PendingRange& range : journal_->Read(file, offset, length, carve)) {
    const std::vector<size_t> lengths = chunk::ChunkLengths(range.data.span(), options_.chunker);
    std::vector<uint64_t> starts(lengths.size());
    for (size_t i = 1; i < lengths.size(); ++i) starts[i] = starts[i - 1] + lengths[i - 1];
    std::vector<chunk::ChunkId> ids(lengths.size());
    GEOFS_RETURN_IF_ERROR(ParallelFor(lengths.size(), options_.compress_threads, [&](size_t i) {
      ids[i] = chunk::ChunkId::Of(range.data.span().subspan(starts[i], lengths[i]));
      return Status::Ok();
    }));
    CommitPart part;
    part.offset = range.offset;
    part.length = range.data.size();
    part.extents.reserve(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      v1::Extent& e = part.extents.emplace_back();
      e.set_offset(range.offset + starts[i]);
      e.set_length(lengths[i]);
      e.set_chunk_id(BytesOf(ids[i]));
      e.set_chunk_offset(0);
      e.set_chunk_length(lengths[i]);
      out.chunks.emplace_back(ids[i], range.data.Slice(starts[i], lengths[i]));
    }
    out.parts.push_back(std::move(part));
  }
  uint64_t covered = 0;
  for (const CommitPart& part : out.parts) covered += part.length;
  if (covered != length) {
    // Releasing the window would drop bytes that were never committed.
    return Status::IoError("journal returned " + std::to_string(covered) + " of " +
                           std::to_string(length) + " pending bytes of " + Name(file));
  }
  return out;
}

Status JournalUploader::Impl::UploadChunks(const Prepared& prepared) {
  chunks_ += prepared.chunks.size();
  // Each distinct chunk once.
  std::vector<const std::pair<chunk::ChunkId, Buffer>*> unique;
  {
    std::unordered_set<chunk::ChunkId, chunk::ChunkIdHash> seen;
    for (const auto& c : prepared.chunks) {
      if (seen.insert(c.first).second) unique.push_back(&c);
    }
  }
  std::unordered_set<std::string> missing;
  for (size_t begin = 0; begin < unique.size(); begin += kMaxFindMissing) {
    v1::FindMissingChunksRequest req;
    for (size_t i = begin; i < std::min(unique.size(), begin + kMaxFindMissing); ++i) {
      v1::ChunkRef* ref = req.add_chunks();
      ref->set_chunk_id(BytesOf(unique[i]->first));
      ref->set_raw_length(unique[i]->second.size());
    }
    v1::FindMissingChunksResponse resp;
    GEOFS_RETURN_IF_ERROR(Retry([&] {
      resp.Clear();
      return Call(&v1::Hub::StubInterface::FindMissingChunks, req, &resp);
    }));
    missing.insert(resp.missing().begin(), resp.missing().end());
  }
  std::vector<const std::pair<chunk::ChunkId, Buffer>*> to_send;
  for (const auto* c : unique) {
    if (missing.contains(BytesOf(c->first))) to_send.push_back(c);
  }
  if (to_send.empty()) return Status::Ok();
  std::vector<hub::StoredChunk> uploads(to_send.size());
  GEOFS_RETURN_IF_ERROR(ParallelFor(to_send.size(), options_.compress_threads, [&](size_t i) {
    chunk::EncodedParts parts = chunk::EncodeChunkParts(to_send[i]->second, options_.codec);
    uploads[i] = {BytesOf(to_send[i]->first), std::move(parts.header), std::move(parts.payload)};
    return Status::Ok();
  }));
  v1::PutChunksResponse resp;
  GEOFS_RETURN_IF_ERROR(Retry([&] { return PutChunks(uploads, &resp); }));
  uploaded_chunks_ += uploads.size();
  for (const auto& u : uploads) uploaded_bytes_ += u.head.size() + u.body.size();
  return Status::Ok();
}

Status JournalUploader::Impl::PutChunks(std::span<const hub::StoredChunk> uploads,
                                        v1::PutChunksResponse* resp) const {
  grpc::ClientContext ctx;
  Decorate(&ctx);
  return hub::UploadChunks(channel_, &ctx, uploads, resp);
}

Status JournalUploader::Impl::FetchVersion(const FileKey& file, FileVersion* fv) {
  v1::GetChunkMapRequest req;
  req.mutable_ref()->set_ino(file.ino);
  req.mutable_ref()->set_gen(file.gen);
  req.set_offset(0);
  req.set_length(1);  // the version and size are wanted, not the extents
  v1::GetChunkMapResponse resp;
  GEOFS_RETURN_IF_ERROR(Retry([&] {
    resp.Clear();
    return Call(&v1::Hub::StubInterface::GetChunkMap, req, &resp);
  }));
  fv->version = resp.version();
  fv->size = resp.attr().size();
  return Status::Ok();
}

Status JournalUploader::Impl::CommitOnce(const FileKey& file, const CommitPart& part,
                                         FileVersion* fv) {
  v1::CommitFileRequest req;
  req.mutable_ref()->set_ino(file.ino);
  req.mutable_ref()->set_gen(file.gen);
  req.set_expected_version(fv->version);
  req.set_offset(part.offset);
  req.set_length(part.length);
  for (const v1::Extent& e : part.extents) *req.add_extents() = e;
  req.set_new_size(std::max(fv->size, part.offset + part.length));
  if (fv->mtime != WallTime{}) *req.mutable_mtime() = hub::ToProto(fv->mtime);
  v1::CommitFileResponse resp;
  GEOFS_RETURN_IF_ERROR(Call(&v1::Hub::StubInterface::CommitFile, req, &resp));
  fv->version = resp.version();
  fv->size = resp.wcc().after().size();
  ++commits_;
  committed_bytes_ += part.length;
  if (hooks_.committed) hooks_.committed(file, resp.version(), resp.wcc().after());
  return Status::Ok();
}

Status JournalUploader::Impl::Commit(const FileKey& file, const CommitPart& part, FileVersion* fv,
                                     std::vector<CommitPart>* history) {
  std::vector<const CommitPart*> todo = {&part};
  auto backoff = options_.first_backoff;
  while (!todo.empty()) {
    Status s = CommitOnce(file, *todo.front(), fv);
    if (s.ok()) {
      todo.erase(todo.begin());
      continue;
    }
    if (s.code() == StatusCode::kAborted) {
      ++aborted_;
      GEOFS_RETURN_IF_ERROR(FetchVersion(file, fv));
      // Another writer committed in between: everything of this pass goes
      // again, on top of it, so the file holds one writer's order, not a mix.
      todo.clear();
      for (const CommitPart& earlier : *history) todo.push_back(&earlier);
      todo.push_back(&part);
      continue;
    }
    if (!Transient(s) || Quitting()) return s;
    ++retries_;
    if (!Sleep(backoff)) return s;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
  history->push_back(part);
  return Status::Ok();
}

template <typename Fn>
Status JournalUploader::Impl::Retry(Fn&& fn) {
  auto backoff = options_.first_backoff;
  for (;;) {
    Status s = fn();
    if (!Transient(s) || Quitting()) return s;
    ++retries_;
    if (!Sleep(backoff)) return s;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

bool JournalUploader::Impl::Sleep(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  const auto until = std::min(Clock::now() + d, stop_deadline_.load());
  cv_.wait_until(lock, until, [&] { return Quitting(); });
  return !Quitting();
}

Status JournalUploader::Impl::Flush(const FileKey& file, Clock::time_point deadline) {
  const std::optional<FilePending> pending = journal_->Pending(file);
  if (!pending) return Status::Ok();
  const uint64_t target = pending->upto_seq;
  std::unique_lock lock(mu_);
  uint64_t& wanted = flush_[file];
  wanted = std::max(wanted, target);
  cv_.notify_all();
  for (;;) {
    const Done& d = done_[file];
    if (d.upto >= target) {
      if (flush_[file] <= d.upto) flush_.erase(file);
      return d.discarded ? Status::Stale(Name(file) + " is gone at the hub") : Status::Ok();
    }
    if (!journal_->Pending(file)) {
      if (flush_[file] <= target) flush_.erase(file);
      return Status::Ok();
    }
    if (stopping_ && workers_.empty()) return Status::Unavailable("uploader stopped");
    if (Clock::now() >= deadline) {
      return Status::Unavailable("flushing " + Name(file) + ": timed out");
    }
    cv_.wait_until(lock, std::min(deadline, Clock::now() + options_.poll_interval));
  }
}

Status JournalUploader::Impl::FlushAll(std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = DeadlineAfter(timeout);
  Status first;
  for (const FilePending& p : journal_->PendingFiles()) {
    Status s = Flush(p.file, deadline);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

void JournalUploader::Impl::Stop() {
  std::call_once(stop_once_, [&] {
    stop_deadline_ = DeadlineAfter(options_.stop_timeout);
    stopping_ = true;
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    std::lock_guard lock(mu_);
    workers_.clear();
    cv_.notify_all();
  });
}

UploaderStats JournalUploader::Impl::Stats() const {
  UploaderStats s;
  s.commits = commits_;
  s.aborted_commits = aborted_;
  s.retries = retries_;
  s.chunks = chunks_;
  s.uploaded_chunks = uploaded_chunks_;
  s.uploaded_bytes = uploaded_bytes_;
  s.committed_bytes = committed_bytes_;
  s.discarded_files = discarded_;
  return s;
}

JournalUploader::JournalUploader(WriteJournal* journal, std::shared_ptr<grpc::ChannelInterface> hub,
                                 UploaderHooks hooks, JournalUploaderOptions options)
    : impl_(std::make_unique<Impl>(journal, std::move(hub), std::move(hooks), std::move(options))) {
}
JournalUploader::~JournalUploader() = default;

Status JournalUploader::Flush(const FileKey& file, std::chrono::milliseconds timeout) {
  return impl_->Flush(file, DeadlineAfter(timeout));
}
Status JournalUploader::FlushAll(std::chrono::milliseconds timeout) {
  return impl_->FlushAll(timeout);
}
void JournalUploader::Kick() { impl_->Kick(); }
void JournalUploader::Stop() { impl_->Stop(); }
UploaderStats JournalUploader::Stats() const { return impl_->Stats(); }

}  // namespace geofs::spoke
