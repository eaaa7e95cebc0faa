// MetadataCache: what the spoke knows of the hub's namespace, per inode,
// valid while the inode's lease lives.
//
// Per inode: attributes, the names looked up in it (name -> child), the
// names found missing in it (the hub leases the directory with a lookup that
// finds nothing, so a create there invalidates them like any other name), its
// directory pages, its symlink target and its chunk map. A lease on an inode
// covers all of them (proto/hub.proto, coherence). An entry is served when
// its inode's lease has not expired; with `allow_expired` (an immutable
// portal cut off from its hub) also after.
//
// Races with invalidations: a caller takes Epoch() before it sends a request
// and passes it to Put*; a Put whose inode was invalidated after that epoch
// is ignored, so a reply that left the hub before a change never overwrites
// the invalidation. Entries fetched without a lease are stored already
// expired: they serve only an immutable portal during a partition.
//
// Bounded: beyond `max_inodes` the records with expired leases go first.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chunk/chunk_id.h"
#include "geofs/clock.h"
#include "geofs/vfs.h"
#include "spoke/write_journal.h"

namespace geofs::spoke {

using SteadyTime = std::chrono::steady_clock::time_point;

// `length` bytes at `offset` in the file are bytes [chunk_offset,
// chunk_offset + length) of chunk `id` (whose raw size is chunk_length).
struct MapExtent {
  uint64_t offset = 0;
  uint64_t length = 0;
  chunk::ChunkId id;
  uint64_t chunk_offset = 0;
  uint64_t chunk_length = 0;
};

// A file's whole chunk map at one version, extents sorted by offset.
struct ChunkMap {
  uint64_t version = 0;
  vfs::Attr attr;
  std::vector<MapExtent> extents;
};

struct CachedDirEntry {
  std::string name;
  uint64_t fileid = 0;
  uint64_t cookie = 0;
  FileKey child;
};

// One ReadDir answer (without attributes: those live with each child).
struct CachedDirPage {
  std::vector<CachedDirEntry> entries;
  bool eof = false;
  uint64_t verifier = 0;
};

class MetadataCache {
 public:
  // REQUIRES: `clock` outlives the cache.
  explicit MetadataCache(Clock* clock, size_t max_inodes = 1 << 20);

  // Take before sending a request whose reply will be Put.
  uint64_t Epoch() const;

  std::optional<vfs::Attr> GetAttr(uint64_t ino, bool allow_expired) const;
  std::optional<FileKey> Lookup(uint64_t dir, std::string_view name, bool allow_expired) const;
  // True if `name` is not in `dir`, under the lease: a lookup found nothing,
  // or the cached listing is complete (every page from the first to the
  // last, one page size) and does not hold it.
  bool KnownMissing(uint64_t dir, std::string_view name, bool allow_expired) const;
  std::optional<CachedDirPage> ReadDir(uint64_t dir, uint64_t cookie, uint32_t max_entries,
                                       bool allow_expired) const;
  std::optional<std::string> ReadLink(uint64_t ino, bool allow_expired) const;
  std::shared_ptr<const ChunkMap> GetChunkMap(uint64_t ino, bool allow_expired) const;

  // `expiry`: the lease's end (Grant::expiry), or the time the request was
  // sent when it came without a lease.
  void PutAttr(const FileKey& key, const vfs::Attr& attr, SteadyTime expiry, uint64_t epoch);
  void PutLookup(const FileKey& dir, std::string_view name, const FileKey& child, SteadyTime expiry,
                 uint64_t epoch);
  // Keeps at most kMaxMissingNames names in all (then no more until some
  // go): a client probing random names must not grow the cache unbounded.
  void PutMissing(const FileKey& dir, std::string_view name, SteadyTime expiry, uint64_t epoch);
  static constexpr size_t kMaxMissingNames = 65536;
  void PutDirPage(const FileKey& dir, uint64_t cookie, uint32_t max_entries, CachedDirPage page,
                  SteadyTime expiry, uint64_t epoch);
  void PutLink(const FileKey& key, std::string target, SteadyTime expiry, uint64_t epoch);
  void PutChunkMap(const FileKey& key, std::shared_ptr<const ChunkMap> map, SteadyTime expiry,
                   uint64_t epoch);

  // Drops everything known of `ino` (a hub invalidation, or our own change).
  void Invalidate(uint64_t ino);
  // Drops everything (a new session: the old one's leases are gone).
  void Clear();
  // Inodes whose lease is live now (to renew).
  std::vector<uint64_t> Held() const;
  // Extends the leases of `inos` to `expiry` (never shortens one).
  void Renew(const std::vector<uint64_t>& inos, SteadyTime expiry);

  size_t size() const;

 private:
  struct PageKey {
    uint64_t cookie;
    uint32_t max_entries;
    auto operator<=>(const PageKey&) const = default;
  };
  struct Record {
    uint64_t gen = 0;
    SteadyTime expiry{};
    uint64_t invalidated_at = 0;  // the epoch of the last invalidation
    std::optional<vfs::Attr> attr;
    std::map<std::string, FileKey, std::less<>> names;
    std::set<std::string, std::less<>> missing;
    bool complete_listing = false;  // `pages` hold the whole directory
    std::map<PageKey, CachedDirPage> pages;
    std::optional<std::string> link;
    std::shared_ptr<const ChunkMap> map;
  };

  // The live record for `ino`, or null. REQUIRES: mu_ held.
  const Record* FindLocked(uint64_t ino, bool allow_expired) const;
  // The record to fill, or null when the Put must be ignored. REQUIRES: mu_.
  Record* ForPutLocked(const FileKey& key, SteadyTime expiry, uint64_t epoch);
  void EvictLocked();
  // True if `rec`'s pages of `max_entries` chain from cookie 0 to an eof page.
  static bool ListingCompleteLocked(const Record& rec, uint32_t max_entries);
  // Drop `rec`'s missing names (all, or `name`), keeping missing_names_.
  // REQUIRES: mu_ held.
  void ForgetMissingLocked(Record& rec);
  void ForgetMissingLocked(Record& rec, std::string_view name);

  Clock* const clock_;
  const size_t max_inodes_;
  mutable std::mutex mu_;
  uint64_t epoch_ = 0;          // guarded by mu_
  uint64_t evicted_floor_ = 0;  // guarded by mu_: newest invalidation among evicted records
  size_t missing_names_ = 0;    // guarded by mu_: in every record's `missing`
  std::unordered_map<uint64_t, Record> records_;  // guarded by mu_
};

}  // namespace geofs::spoke
