// DirCache and AttrCache: what LocalBackend remembers about directories and
// objects between calls, so that a READDIRPLUS listing or a LOOKUP does not
// redo a getdents64 pass, a name_to_handle_at(2) and an fstatat(2) per entry.
//
// Directory contents are cached per directory under a DirStamp (the
// directory's mtime, ctime, size and inode) and trusted only while the
// directory's fresh fstat still shows that stamp: any create, remove or
// rename in a directory changes its ctime and mtime, so a change made by
// anyone (NFS clients, or local processes writing the directory on disk)
// discards the entry on the next call. Timestamps come from a coarse clock,
// so two changes within one tick may leave the same stamp; the backend
// therefore only caches a directory whose ctime is older than kRacyWindow
// when it reads it (see LocalBackend::Fs::Trusted).
//
// Attributes are cached per inode for a short time (LocalBackendOptions::
// attr_ttl), refreshed by every operation that stats or changes the object
// through the backend. Only READDIRPLUS entries are served from it, so a
// change made by another local process shows there after at most the ttl;
// GETATTR, LOOKUP and every reply's own attributes are always fresh.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "geofs/vfs.h"

namespace geofs::vfs {

// What identifies one state of a directory's contents.
struct DirStamp {
  uint64_t ino = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t size = 0;
  static DirStamp Of(const struct stat& st);
  bool operator==(const DirStamp&) const = default;
};

// A directory's complete listing in the order the file system returned it,
// with a handle memo slot beside each item, so that a READDIRPLUS page is a
// sequential walk over two arrays with no look-up by name.
//
// The items are immutable once built. Each memo slot is written at most once
// (by whichever thread memoises it first) and read without locks after that;
// a listing lives only as long as its directory's stamp, which pins every
// name to the inode listed, so a memoised handle never goes stale while the
// listing is served. Thread-safe; shared by concurrent readers.
class DirListing {
 public:
  struct Item {
    std::string name;
    uint64_t ino = 0;
    uint64_t cookie = 0;  // the file system's d_off: resumes after this item
  };

  explicit DirListing(std::vector<Item> items);
  DirListing(const DirListing&) = delete;
  DirListing& operator=(const DirListing&) = delete;

  const std::vector<Item>& items() const { return items_; }
  // Index of the first item to return for `cookie` (0: from the start;
  // items().size(): at the end), or nullopt if no item has that cookie (or
  // several have), in which case the caller asks the file system.
  std::optional<size_t> StartAfter(uint64_t cookie) const;

  // The handle memoised for items()[index], or null. The pointer stays
  // valid for the listing's lifetime. REQUIRES: index < items().size().
  const Handle* MemoisedHandle(size_t index) const;
  // Memoises the handle of items()[index] (found for that item's inode).
  // A slot already memoised keeps its first value. REQUIRES: index <
  // items().size().
  void Memoise(size_t index, const Handle& handle) const;

 private:
  struct Memo {
    enum State : uint8_t { kEmpty, kWriting, kReady };
    std::atomic<uint8_t> state{kEmpty};
    Handle handle;  // written before state becomes kReady
  };

  std::vector<Item> items_;
  std::unordered_map<uint64_t, size_t> next_;  // cookie -> index of the following item
  const std::unique_ptr<Memo[]> memo_;         // parallel to items_
};

// A name's memoised identity in its directory.
struct NameInfo {
  uint64_t ino = 0;
  FileType type = FileType::kRegular;
  Handle handle;
};

// Bounded by the number of names it holds, across directories; evicts whole
// directories, least recently used first. Thread-safe.
class DirCache {
 public:
  // REQUIRES: max_names > 0.
  explicit DirCache(size_t max_names);
  DirCache(const DirCache&) = delete;
  DirCache& operator=(const DirCache&) = delete;

  // The cached listing of `dir` if it was cached under exactly `stamp`.
  std::shared_ptr<const DirListing> FindListing(const Handle& dir, const DirStamp& stamp);
  // Caches `listing` of `dir`, read after `stamp` was taken. A listing of
  // more than half the capacity is not cached.
  void InsertListing(const Handle& dir, const DirStamp& stamp,
                     std::shared_ptr<const DirListing> listing);

  // The memoised identity of `name` in `dir` under `stamp`.
  std::optional<NameInfo> FindName(const Handle& dir, const DirStamp& stamp, std::string_view name);
  // Memoises the identity of `names[i]` (as found after `stamp` was taken).
  void InsertNames(const Handle& dir, const DirStamp& stamp,
                   std::span<const std::pair<std::string_view, NameInfo>> names);

  // Names held, across directories (at most max_names).
  size_t size() const;

 private:
  struct DirState {
    DirStamp stamp;
    std::shared_ptr<const DirListing> listing;
    std::unordered_map<std::string, NameInfo> names;
    std::list<Handle>::iterator lru;
    size_t cost() const { return (listing ? listing->items().size() : 0) + names.size(); }
  };
  struct HandleHash {
    size_t operator()(const Handle& h) const;
  };

  // The state of `dir` under `stamp`, made empty if it had another stamp;
  // null when `create` is false and there is none. REQUIRES: mu_ held.
  DirState* StateLocked(const Handle& dir, const DirStamp& stamp, bool create);
  void DropLocked(const Handle& dir);
  // Drops `keep` if it alone holds more than half the capacity, then evicts
  // least recently used directories other than `keep` while over capacity.
  // REQUIRES: mu_ held.
  void TrimLocked(const Handle& keep);

  const size_t max_names_;
  mutable std::mutex mu_;
  std::list<Handle> lru_;  // GUARDED_BY(mu_); most recently used first
  std::unordered_map<Handle, DirState, HandleHash> dirs_;  // GUARDED_BY(mu_)
  size_t names_ = 0;                                       // GUARDED_BY(mu_)
};

// Attributes by fileid (inode number), each valid for `ttl` after it was
// read. Bounded; evicts least recently stored first. Thread-safe.
class AttrCache {
 public:
  using Time = std::chrono::steady_clock::time_point;

  // A ttl of zero caches nothing. REQUIRES: capacity > 0.
  AttrCache(size_t capacity, std::chrono::nanoseconds ttl);
  AttrCache(const AttrCache&) = delete;
  AttrCache& operator=(const AttrCache&) = delete;

  // The attributes of `fileid` if read no earlier than now - ttl.
  std::optional<Attr> Find(uint64_t fileid, Time now);
  // Find for each of `fileids` under one lock: sets out[i] for fileids[i]
  // (leaves it alone on a miss). REQUIRES: out.size() == fileids.size().
  void FindMany(std::span<const uint64_t> fileids, Time now, std::span<std::optional<Attr>> out);
  // Stores `attr` as read at `now`.
  void Put(const Attr& attr, Time now);
  void Erase(uint64_t fileid);

 private:
  struct Cached {
    Attr attr;
    Time read_at;
    std::list<uint64_t>::iterator age;
  };

  const size_t capacity_;
  const std::chrono::nanoseconds ttl_;
  std::mutex mu_;
  std::list<uint64_t> ages_;                    // GUARDED_BY(mu_); newest first
  std::unordered_map<uint64_t, Cached> attrs_;  // GUARDED_BY(mu_)
};

}  // namespace geofs::vfs
