// FdCache: a bounded LRU of open file descriptors keyed by backend handle, so
// that the local backend does not reopen a file for every READ or WRITE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "geofs/vfs.h"

namespace geofs::vfs {

// How an OpenFd was opened; a higher level serves every lower one.
enum class FdAccess : uint8_t {
  kPath,       // O_PATH: fstat, *at calls, fchownat, utimensat
  kRead,       // O_RDONLY: also pread, fsync, getdents
  kReadWrite,  // O_RDWR: also pwrite, ftruncate
};

// One open descriptor, shared by the cache and the operations using it; it
// is closed when the last of them lets go, so an operation never sees its
// descriptor closed under it.
class OpenFd {
 public:
  // Takes ownership of `fd`.
  OpenFd(int fd, FdAccess access, FileType type) : fd_(fd), access_(access), type_(type) {}
  ~OpenFd();
  OpenFd(const OpenFd&) = delete;
  OpenFd& operator=(const OpenFd&) = delete;

  int fd() const { return fd_; }
  FdAccess access() const { return access_; }
  FileType type() const { return type_; }

 private:
  const int fd_;
  const FdAccess access_;
  const FileType type_;
};

// Thread-safe.
class FdCache {
 public:
  // REQUIRES: capacity > 0.
  explicit FdCache(size_t capacity);
  FdCache(const FdCache&) = delete;
  FdCache& operator=(const FdCache&) = delete;

  // The cached descriptor for `h` (now the most recently used), or null.
  std::shared_ptr<const OpenFd> Find(const Handle& h);
  // Caches `fd` for `h` unless a descriptor with more access is cached
  // already; evicts the least recently used entries beyond the capacity.
  void Insert(const Handle& h, std::shared_ptr<const OpenFd> fd);
  void Erase(const Handle& h);
  size_t size() const;

 private:
  struct HandleHash {
    size_t operator()(const Handle& h) const;
  };
  using Lru = std::list<std::pair<Handle, std::shared_ptr<const OpenFd>>>;

  const size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;  // most recently used first
  std::unordered_map<Handle, Lru::iterator, HandleHash> index_;
};

}  // namespace geofs::vfs
