// WriteJournal: NFS writes a spoke has accepted but not yet committed at the
// hub, kept on the spoke's disk so that an acknowledged write survives a
// crash of the spoke or the hub.
//
// Writes are appended to a log in the journal directory. Sync() makes every
// write appended so far durable (the spoke calls it before it answers
// FILE_SYNC or COMMIT). After a restart, Open() replays the log, so the
// pending writes are exactly the synced ones (plus possibly some unsynced
// ones that happened to reach the disk; a torn tail record is ignored).
// The JournalUploader (journal_uploader.h) turns pending writes into hub
// commits and then calls Release(), which lets the log space be reused.
//
// Log format (write_journal.cc): segment files "seg-<16 hex digits>.log",
// each a sequence of records: a 56-byte header (magic, CRC32C of the rest of
// the header and the payload, type, seq, file, offset, length) and, for a
// write, its payload. A release is a record too, synced before Release()
// returns, so a restart does not upload committed writes again (that would
// be harmless for the data but could undo a later writer's commit at the
// hub). Segments are deleted oldest first, once nothing in them is pending
// (a pending write in an old segment keeps newer segments too: their release
// records may still be needed to replay it correctly).
//
// Thread-safe.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "geofs/buffer.h"
#include "geofs/clock.h"
#include "geofs/status.h"

namespace geofs::spoke {

// A hub file: inode and generation (never reused).
struct FileKey {
  uint64_t ino = 0;
  uint64_t gen = 0;
  bool operator==(const FileKey&) const = default;
};

struct FileKeyHash {
  size_t operator()(const FileKey& k) const {
    return static_cast<size_t>(k.ino * 0x9e3779b97f4a7c15ull ^ k.gen);
  }
};

// The file operations of the log's writes and syncs, so that tests can
// inject ENOSPC or EIO (STYLE.md habit 3). The defaults are the system calls;
// both return -1 with errno set on failure. Must be thread-safe.
class JournalIo {
 public:
  virtual ~JournalIo() = default;
  virtual ssize_t Pwritev(int fd, const struct iovec* iov, int count, off_t offset);
  virtual int Fdatasync(int fd);
  // Starts writeback of a byte range without waiting for it (a hint;
  // durability comes from Fdatasync alone).
  virtual int StartWriteback(int fd, off_t offset, off_t length);
  static std::shared_ptr<JournalIo> Default();
};

struct WriteJournalOptions {
  std::string dir;                  // created if missing
  uint64_t max_bytes = 8ull << 30;  // log space; Append answers kNoSpace beyond it
  // A new segment starts once the active one reaches this size; space is
  // reclaimed a whole segment at a time.
  uint64_t segment_bytes = 64ull << 20;
  // Disk space held back (a preallocated file) for release records, so that
  // a journal that filled its disk can still record what was committed and
  // free it. 0: none.
  uint64_t reserve_bytes = 1 << 20;
  // Writeback of a segment is started (not waited for) each time this much
  // was appended to it, so that dirty data does not pile up between syncs:
  // a Sync() after a long run of unsynced writes (a checkpoint written
  // UNSTABLE) then has little left to write, instead of stalling its caller
  // (an uploader releasing a window, a COMMIT) for seconds. 0: never.
  uint64_t bytes_per_sync = 8ull << 20;
  std::shared_ptr<JournalIo> io;  // null: JournalIo::Default()
};

// A contiguous stretch of a file's pending bytes.
struct PendingSpan {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// One contiguous range of pending data of a file, newest write wins.
struct PendingRange {
  uint64_t offset = 0;
  Buffer data;
};

struct FilePending {
  FileKey file;
  // The file size the pending writes imply (max end of any write; 0 if none
  // extends it) — the spoke reports max(hub size, this).
  uint64_t end = 0;
  uint64_t upto_seq = 0;  // the newest write included
  uint64_t bytes = 0;     // pending payload bytes (after newest-wins merging)
  // The latest mtime any pending write was appended with, so the file's
  // modification time does not move when the writes reach the hub. Zero
  // when unknown (writes replayed after a restart: the hub's clock then).
  WallTime mtime;
};

struct WriteJournalStats {
  uint64_t pending_files = 0;
  uint64_t pending_bytes = 0;  // payload bytes not yet released
  uint64_t log_bytes = 0;      // bytes the log occupies on disk
  uint64_t appends = 0;
  uint64_t syncs = 0;
};

class WriteJournal {
 public:
  static Result<std::unique_ptr<WriteJournal>> Open(const WriteJournalOptions& options);
  virtual ~WriteJournal() = default;

  // Records a write made at `mtime` (the modification time the client was
  // told; kept in memory only, see FilePending::mtime); returns its sequence
  // number (increasing). Not durable until Sync(). kNoSpace when the log is
  // full or the disk is; nothing of the write is recorded then.
  virtual Result<uint64_t> Append(const FileKey& file, uint64_t offset,
                                  std::span<const uint8_t> data, WallTime mtime = {}) = 0;
  // Makes every write appended so far durable. Concurrent callers share one
  // fdatasync. After a failed sync every later Sync and Append fails too
  // (after fsync reports an error, the kernel's page state cannot be
  // trusted; reopen the journal to replay what did reach the disk).
  virtual Status Sync() = 0;

  // Storage for Read(): a Buffer of `size` bytes whose memory the caller
  // may fill through `*out` (contract of Buffer::Allocate). Called from the
  // reading thread, at most once per returned range.
  using Allocator = std::function<Buffer(size_t size, uint8_t** out)>;

  // The pending bytes of `file` within [offset, offset + length), merged
  // (newest write wins), sorted by offset, non-overlapping. Empty when none.
  std::vector<PendingRange> Read(const FileKey& file, uint64_t offset, uint64_t length) const {
    return Read(file, offset, length, &Buffer::Allocate);
  }
  // The same, read into storage from `allocate` (e.g. reused memory: fresh
  // pages cost a fault and zeroing each, more than the read itself).
  virtual std::vector<PendingRange> Read(const FileKey& file, uint64_t offset, uint64_t length,
                                         const Allocator& allocate) const = 0;
  // Files with pending writes, oldest first.
  virtual std::vector<FilePending> PendingFiles() const = 0;
  virtual std::optional<FilePending> Pending(const FileKey& file) const = 0;
  // Where `file` has pending bytes: sorted, non-overlapping, adjacent ones
  // merged. Call Pending() first: its upto_seq then covers every byte here.
  virtual std::vector<PendingSpan> Spans(const FileKey& file) const = 0;
  // Forgets the writes of `file` with seq <= upto_seq (they are committed
  // at the hub). Writes appended later stay pending. Durable when it
  // returns (release records skip the max_bytes check so a full log can
  // always drain).
  virtual Status Release(const FileKey& file, uint64_t upto_seq) = 0;
  // Release() restricted to the bytes in [offset, offset + length): parts
  // of those writes outside the range stay pending.
  virtual Status ReleaseRange(const FileKey& file, uint64_t upto_seq, uint64_t offset,
                              uint64_t length) = 0;
  // Drops every pending write of `file` (the file was removed at the hub).
  virtual Status Discard(const FileKey& file) = 0;

  virtual WriteJournalStats Stats() const = 0;
};

}  // namespace geofs::spoke
