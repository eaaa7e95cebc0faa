// JournalUploader: commits a spoke's journalled writes at the hub, in the
// background, and then releases them from the journal.
//
// For each file with pending writes: take the file's write lease (hook),
// cut its pending bytes into windows aligned to multiples of window_bytes
// (so that the same data cuts the same way however it was written), and
// stage each window: read it from the journal, cut it with the
// content-defined chunker, hash the chunks, ask the hub which it lacks
// (FindMissingChunks), compress and upload only those (PutChunks). Up to
// windows_in_flight windows stage at once, so the link stays busy across
// the round trips of each window's calls and of the commits; a staged
// window waiting for its commit holds no data and no slot (at most twice
// windows_in_flight are open). Each window is read into a reused block of
// window_bytes. Commits go
// strictly in window order: window i's byte range is replaced in one
// CommitFile checked against the file's version, and ReleaseRange()d, only
// after windows 0..i-1 are committed and window i's chunks are all at the
// hub (a later window whose upload finishes first waits). A window that
// fails ends the pass: no later window is committed, and the journal keeps
// everything not committed yet.
//
// When to upload: a file whose writes stopped `quiet_delay` ago, or that
// is flushed, or everything while stopping, is uploaded whole; while writes
// keep coming only full windows are, so a sequential stream goes up in big
// batches and the tail waits for more data.
//
// Failures: UNAVAILABLE and DEADLINE_EXCEEDED are retried with backoff until
// Stop() gives up (the journal keeps the data). ABORTED (another writer
// committed in between) re-reads the version and commits again every range
// committed so far in this pass, so the file ends with this pass's writes
// applied after the other writer's, never interleaved with them. A file gone
// at the hub (kStale/kNotFound) is discarded from the journal and logged.
// Other errors (e.g. permission) are logged and the file is retried later.
//
// Commits are made without credentials (the hub treats them as root): the
// spoke checked the writer's permission when it accepted the NFS WRITE.
//
// Thread-safe. Hooks run on the uploader's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "chunk/chunk_codec.h"
#include "chunk/chunker.h"
#include "geofs/status.h"
#include "hub.grpc.pb.h"
#include "spoke/write_journal.h"

namespace geofs::spoke {

struct UploaderHooks {
  // Takes the file's write lease before its writes are committed; kStale or
  // kNotFound mean the file is gone (its writes are discarded), kUnavailable
  // is retried. Null: no lease.
  std::function<Status(const FileKey&)> acquire_write;
  // Gives it back after a pass over the file (also after failures).
  std::function<void(const FileKey&)> release_write;
  // After each successful CommitFile: the file's new version and attributes.
  std::function<void(const FileKey&, uint64_t new_version, const v1::Attr& attr)> committed;
  // Adds metadata (geofs-session) to every hub call.
  std::function<void(grpc::ClientContext*)> decorate;
};

struct JournalUploaderOptions {
  // Must match the hub's and the importer's for data to deduplicate.
  chunk::ChunkerOptions chunker;
  // zstd level 1, like the importer: most of level 3's ratio at twice the
  // speed.
  chunk::ChunkCodecOptions codec = [] {
    chunk::ChunkCodecOptions c;
    c.zstd_level = 1;
    return c;
  }();
  // Pending bytes are committed in windows of this size (aligned to
  // multiples of it in the file): one CommitFile and one journal release
  // each, and the unit of pipelining.
  uint64_t window_bytes = 32ull << 20;
  // Windows of one file staged (read, hashed, compressed, uploaded) at
  // once; memory is bounded by about twice windows_in_flight x window_bytes
  // (the journal's data and its compressed form), and up to
  // windows_in_flight blocks of window_bytes stay allocated for reuse while
  // anything is pending. The bytes in flight must
  // cover the link's bandwidth-delay product several times over, and each
  // window's round trips (FindMissingChunks, the end of PutChunks,
  // CommitFile) must hide behind the other windows' transfers: 4 x 32 MiB
  // keeps a 1 Gbit/s, 20 ms link busy (docs/benchmarks.md).
  int windows_in_flight = 4;
  // Files uploaded at once.
  int workers = 2;
  // Threads hashing and compressing one window's chunks.
  int compress_threads = 2;
  // A file's writes must have stopped for this long before its last,
  // partial window is uploaded (unless flushed).
  std::chrono::milliseconds quiet_delay{200};
  // How often the journal is looked at without a Kick().
  std::chrono::milliseconds poll_interval{50};
  std::chrono::milliseconds call_timeout{60000};
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  // Stop() keeps uploading for at most this long.
  std::chrono::milliseconds stop_timeout{10000};

  Status Validate() const;
};

struct UploaderStats {
  uint64_t commits = 0;          // successful CommitFile calls
  uint64_t aborted_commits = 0;  // ABORTED answers (another writer committed)
  uint64_t retries = 0;          // calls retried after UNAVAILABLE or a deadline
  uint64_t chunks = 0;           // chunks cut from pending data
  uint64_t uploaded_chunks = 0;  // chunks sent with PutChunks (the hub lacked them)
  uint64_t uploaded_bytes = 0;   // their stored (compressed) bytes
  uint64_t committed_bytes = 0;  // raw bytes of committed ranges
  uint64_t discarded_files = 0;  // files gone at the hub
};

class JournalUploader {
 public:
  // Starts the worker threads.
  // `hub`: the channel to the hub (PutChunks frames chunks onto it without
  // copying them). REQUIRES: journal outlives the uploader;
  // options.Validate().ok().
  JournalUploader(WriteJournal* journal, std::shared_ptr<grpc::ChannelInterface> hub,
                  UploaderHooks hooks, JournalUploaderOptions options = {});
  // Stop().
  ~JournalUploader();
  JournalUploader(const JournalUploader&) = delete;
  JournalUploader& operator=(const JournalUploader&) = delete;

  // Commits every write of `file` pending now and waits until they are
  // committed: OK; kStale if the file turned out to be gone (its writes were
  // discarded); kUnavailable if `timeout` passed first or the uploader
  // stopped.
  Status Flush(const FileKey& file,
               std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  // Flush() for every file pending now; the first error.
  Status FlushAll(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  // Looks at the journal now (after an Append) instead of at the next poll.
  void Kick();
  // Uploads what is pending for at most options.stop_timeout, then stops
  // the threads; what is left stays in the journal. Idempotent.
  void Stop();

  UploaderStats Stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace geofs::spoke
