#include "vfs/page_cache.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace geofs::vfs {
namespace {

// From linux/mman.h (uapi); Debian 12's headers predate cachestat.
struct CachestatRange {
  uint64_t off;
  uint64_t len;
};
struct Cachestat {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};
constexpr long kCachestatSyscall = 451;  // the unified number (x86-64, arm64, ...)

std::atomic<bool> unsupported{false};

}  // namespace

bool RangeInPageCache(int fd, uint64_t offset, uint64_t length) {
  if (length == 0 || unsupported.load(std::memory_order_relaxed)) return false;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  CachestatRange range{offset, length};
  Cachestat stat{};
  if (::syscall(kCachestatSyscall, fd, &range, &stat, 0) != 0) {
    if (errno == ENOSYS) unsupported.store(true, std::memory_order_relaxed);
    return false;
  }
  const uint64_t pages = (offset + length - 1) / page - offset / page + 1;
  return stat.nr_cache >= pages;
}

}  // namespace geofs::vfs
