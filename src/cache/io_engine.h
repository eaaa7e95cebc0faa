// IoEngine: asynchronous positional reads and writes on open descriptors.
//
// The cache opens, renames and closes files with plain system calls (they are
// short metadata operations on a warm dentry cache) and moves the data through
// an IoEngine, so the engine stays a small seam: io_uring in production, a
// thread pool where io_uring is unavailable, and wrappers that inject faults
// in tests.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "geofs/status.h"

namespace geofs::cache {

class IoEngine {
 public:
  // `result` is the number of bytes transferred (possibly fewer than asked,
  // as with pread/pwritev) or -errno.
  using Completion = std::function<void(int64_t result)>;

  virtual ~IoEngine() = default;

  // Reads into the buffers of `iov` in order (preadv). `iov` (at most
  // kMaxIovecs entries) is copied; `fd` and the memory it points to must
  // stay valid until `done` has run. `done` runs exactly once, on an engine
  // thread (never inside the call), and must not block. Thread-safe.
  virtual void Read(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) = 0;
  // Writes the buffers of `iov` (pwritev); as for Read.
  virtual void Write(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) = 0;
  // Reads on the calling thread only what the page cache holds, without
  // blocking (preadv2 with RWF_NOWAIT): the bytes read (possibly fewer than
  // asked), or -EAGAIN when the data is not cached (then use Read), or
  // -errno. A cache hit then costs one copy and no hand-off to another
  // thread, which is most of the cost of a small read. Thread-safe.
  virtual int64_t ReadNow(int fd, const iovec* iov, int iovcnt, uint64_t offset);

  virtual bool is_io_uring() const = 0;

  static constexpr int kMaxIovecs = 4;
};

// One io_uring with `entries` submission slots, reaped by one internal
// thread that runs the completions. kUnavailable when the kernel refuses the
// ring (old kernel, seccomp, io_uring_disabled).
Result<std::unique_ptr<IoEngine>> NewIoUringEngine(unsigned entries = 256);

// `threads` workers doing pread/pwritev.
std::unique_ptr<IoEngine> NewThreadPoolEngine(int threads = 4);

// Forwards every call to `base`; tests override what they want to break.
class IoEngineWrapper : public IoEngine {
 public:
  explicit IoEngineWrapper(std::unique_ptr<IoEngine> base) : base_(std::move(base)) {}
  void Read(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    base_->Read(fd, iov, iovcnt, offset, std::move(done));
  }
  void Write(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    base_->Write(fd, iov, iovcnt, offset, std::move(done));
  }
  int64_t ReadNow(int fd, const iovec* iov, int iovcnt, uint64_t offset) override {
    return base_->ReadNow(fd, iov, iovcnt, offset);
  }
  bool is_io_uring() const override { return base_->is_io_uring(); }

 protected:
  IoEngine& base() { return *base_; }

 private:
  std::unique_ptr<IoEngine> base_;
};

}  // namespace geofs::cache
