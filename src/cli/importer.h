// Importer: `geofsctl import SRC_DIR HUB_PATH` — brings the hub directory
// HUB_PATH to the content of the local tree SRC_DIR, sending only the chunks
// the hub lacks.
//
// What "the content" means (rsync -a --delete, without hard links):
//  - Directories, regular files and symbolic links are copied with their
//    mode, owner and modification time; symlinks are copied as links, never
//    followed. Hard links in the source become independent files (whose
//    chunks deduplicate, so they cost no extra storage).
//  - Entries of HUB_PATH that the source no longer has are removed, except
//    names whose source entry was skipped (their hub copy is kept).
//  - A regular file whose hub copy has the same size and modification time
//    is taken as unchanged and not read (like rsync's quick check). Any other
//    file is read and cut with the hub's content-defined chunker; the hub is
//    asked which chunks it lacks, only those are compressed and uploaded,
//    and the file's chunk map is replaced in one atomic commit checked
//    against the version read. An interrupted import therefore leaves every
//    file either as it was or complete, and running it again sends only what
//    is still missing.
//  - Skipped and reported, while the rest goes on: entries that cannot be
//    read (permissions, I/O errors), sockets, FIFOs and devices, symlinks
//    whose resolution loops (ELOOP), entries that vanish during the walk, and
//    files that change while being read (size or mtime moved: read again
//    once, then skipped).
//  - The hub being unreachable (after a few retries) or HUB_PATH not being a
//    directory stops the import with an error.
//
// Pipelining: the walk runs on the calling thread; regular files go to a
// pool of workers, each reading, chunking and hashing a file, asking the hub
// about a batch of chunks at a time, and compressing and uploading the
// missing ones on a few threads. A large file's batches upload in the
// background (up to batches_in_flight) while its next block is read. New files smaller than a
// batch travel in groups: their chunks go up together, then one ApplyChanges creates each file
// (with an inode number reserved beforehand) and commits its chunk map, made durable with one sync.
// A file of a group whose change does not go through (a deferred change, a name taken meanwhile, an
// older hub) is committed on its own, as any other file.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "chunk/chunk_codec.h"
#include "chunk/chunker.h"
#include "cli/hub_client.h"
#include "geofs/status.h"

namespace geofs::cli {

struct ImportOptions {
  // Must match the hub's (and other writers') for their data to dedupe.
  chunk::ChunkerOptions chunker;
  // zstd level 1: most of level 3's ratio on data sets at twice the speed.
  chunk::ChunkCodecOptions codec = [] {
    chunk::ChunkCodecOptions c;
    c.zstd_level = 1;
    return c;
  }();
  // Files imported at once.
  int workers = 6;
  // Threads compressing one file's missing chunks.
  int compress_threads = 2;
  // Chunk bytes a worker gathers before asking the hub which it lacks.
  size_t batch_bytes = size_t{16} << 20;
  // Batches of one file uploading while its worker reads the next block:
  // a file larger than batch_bytes does not wait for each upload. 0: each
  // batch is stored before the next block is read.
  int batches_in_flight = 2;
  // New files up to this size and smaller than batch_bytes are imported in
  // groups that fit one batch (up to 256 files): one chunk upload, and one
  // batch that creates and commits them all, instead of five calls and a
  // synced commit per file. 0: every file on its own.
  size_t small_file_bytes = size_t{16} << 20;
  // Remove hub entries the source does not have.
  bool delete_extraneous = true;

  Status Validate() const;
};

// Counters of an import, current while it runs.
struct ImportStats {
  uint64_t files = 0;            // regular files found in the source
  uint64_t files_sent = 0;       // read and committed (new or changed)
  uint64_t files_unchanged = 0;  // same size and mtime on the hub: not read
  uint64_t files_grouped = 0;    // of files_sent: created and committed in a group
  uint64_t directories = 0;
  uint64_t symlinks = 0;
  uint64_t logical_bytes = 0;  // sizes of the source's regular files
  uint64_t read_bytes = 0;     // bytes read from new or changed files
  uint64_t chunks = 0;         // chunks cut from them
  uint64_t new_chunks = 0;     // chunks the hub lacked and stored
  uint64_t new_raw_bytes = 0;
  uint64_t new_stored_bytes = 0;  // their stored (compressed) size
  uint64_t removed = 0;           // hub entries removed (gone from the source)
};

struct ImportReport {
  ImportStats stats;
  // "PATH: reason" for each source entry skipped.
  std::vector<std::string> skipped;
  std::chrono::duration<double> elapsed{};
};

class Importer {
 public:
  // REQUIRES: `hub` outlives the importer; options.Validate().ok().
  Importer(const HubClient* hub, ImportOptions options);
  ~Importer();
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  // Runs one import (see above). Returns the report unless something fatal
  // happened. Call once.
  Result<ImportReport> Run(const std::string& src_dir, const std::string& hub_path);

  // The counters so far. Thread-safe: call while Run is running.
  ImportStats Progress() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace geofs::cli
