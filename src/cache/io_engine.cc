#include "cache/io_engine.h"

#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/logging.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace geofs::cache {
namespace {

// Reads up to this size are left to complete inline in io_uring_submit.
constexpr size_t kInlineReadLimit = 128 << 10;

// The kernel hands an operation from the submitting thread to the reaper;
// ThreadSanitizer cannot see that edge, so it is declared.
void HandOff(void* op) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(op);
#else
  (void)op;
#endif
}
void TakeOver(void* op) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(op);
#else
  (void)op;
#endif
}

class IoUringEngine final : public IoEngine {
 public:
  static Result<std::unique_ptr<IoEngine>> Create(unsigned entries) {
    auto engine = std::unique_ptr<IoUringEngine>(new IoUringEngine());
    int rc = io_uring_queue_init(entries, &engine->ring_, 0);
    if (rc < 0) return Status::FromErrno(-rc, "io_uring_queue_init");
    // The kernel sizes the completion queue (twice the submission queue by
    // default); never keep more operations in flight than it holds, so no
    // completion has to wait in the kernel's overflow list.
    engine->max_inflight_ = *engine->ring_.cq.kring_entries;
    engine->reaper_ = std::thread([e = engine.get()] { e->Reap(); });
    return std::unique_ptr<IoEngine>(std::move(engine));
  }

  ~IoUringEngine() override {
    {
      std::unique_lock lock(mu_);
      idle_.wait(lock, [this] { return inflight_ == 0; });
      io_uring_sqe* sqe = GetSqeLocked();
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, nullptr);  // the stop marker
      SubmitLocked();
    }
    reaper_.join();
    io_uring_queue_exit(&ring_);
  }

  void Read(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    auto* op = new Op{std::move(done), {}};
    size_t len = 0;
    for (int i = 0; i < iovcnt; ++i) {
      op->iov[i] = iov[i];
      len += iov[i].iov_len;
    }
    Submit(op, [&](io_uring_sqe* sqe) {
      io_uring_prep_readv(sqe, fd, op->iov, static_cast<unsigned>(iovcnt), offset);
      // A read of data the page cache holds (partly, or all of it when the
      // caller skips ReadNow) would complete inline:
      // a 1 MiB copy inside io_uring_submit, under mu_, serializing every
      // submitter. IOSQE_ASYNC moves large copies to the kernel's workers
      // (measured: 0.5 -> 1.5 GB/s at queue depth 8, docs/spoke-cache.md);
      // a small one (a ranged read of a block or two) is cheaper inline than
      // the hand-off to a worker thread.
      if (len > kInlineReadLimit) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    });
  }

  void Write(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    auto* op = new Op{std::move(done), {}};
    for (int i = 0; i < iovcnt; ++i) op->iov[i] = iov[i];
    Submit(op, [&](io_uring_sqe* sqe) {
      io_uring_prep_writev(sqe, fd, op->iov, static_cast<unsigned>(iovcnt), offset);
    });
  }

  bool is_io_uring() const override { return true; }

 private:
  struct Op {
    Completion done;
    iovec iov[kMaxIovecs];  // readv and writev read the vector at submission time
  };

  IoUringEngine() = default;

  template <typename Prep>
  void Submit(Op* op, Prep prep) {
    std::unique_lock lock(mu_);
    // A completion that resubmits (the rest of a short transfer) runs on the
    // reaper, which must never wait for a slot only it can free.
    if (std::this_thread::get_id() != reaper_.get_id()) {
      slots_.wait(lock, [this] { return inflight_ < max_inflight_; });
    }
    ++inflight_;
    io_uring_sqe* sqe = GetSqeLocked();
    prep(sqe);
    io_uring_sqe_set_data(sqe, op);
    HandOff(op);
    SubmitLocked();
  }

  // REQUIRES: mu_ held.
  io_uring_sqe* GetSqeLocked() {
    io_uring_sqe* sqe;
    while ((sqe = io_uring_get_sqe(&ring_)) == nullptr) SubmitLocked();
    return sqe;
  }

  // REQUIRES: mu_ held. An entry the kernel did not take stays queued and goes
  // with the next submission.
  void SubmitLocked() {
    int rc;
    do {
      rc = io_uring_submit(&ring_);
    } while (rc == -EINTR);
    if (rc < 0) GetLogger("cache")->warn("io_uring_submit: {}", rc);
  }

  void Reap() {
    for (;;) {
      io_uring_cqe* cqe;
      int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) {
        GetLogger("cache")->error("io_uring_wait_cqe: {}", rc);
        continue;
      }
      auto* op = static_cast<Op*>(io_uring_cqe_get_data(cqe));
      int64_t res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (op == nullptr) return;
      TakeOver(op);
      op->done(res);
      delete op;
      std::lock_guard lock(mu_);
      --inflight_;
      slots_.notify_one();
      if (inflight_ == 0) idle_.notify_all();
    }
  }

  io_uring ring_{};
  std::thread reaper_;
  std::mutex mu_;  // guards the submission queue and inflight_
  std::condition_variable slots_;
  std::condition_variable idle_;
  unsigned inflight_ = 0;  // submitted operations whose completion has not finished
  unsigned max_inflight_ = 0;
};

class ThreadPoolEngine final : public IoEngine {
 public:
  explicit ThreadPoolEngine(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }

  ~ThreadPoolEngine() override {
    {
      std::unique_lock lock(mu_);
      idle_.wait(lock, [this] { return tasks_.empty() && running_ == 0; });
      stop_ = true;
    }
    ready_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void Read(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    std::vector<iovec> v(iov, iov + iovcnt);
    Enqueue([=, v = std::move(v), done = std::move(done)] {
      ssize_t n = preadv(fd, v.data(), static_cast<int>(v.size()), static_cast<off_t>(offset));
      done(n < 0 ? -errno : n);
    });
  }

  void Write(int fd, const iovec* iov, int iovcnt, uint64_t offset, Completion done) override {
    std::vector<iovec> v(iov, iov + iovcnt);
    Enqueue([=, v = std::move(v), done = std::move(done)] {
      ssize_t n = pwritev(fd, v.data(), static_cast<int>(v.size()), static_cast<off_t>(offset));
      done(n < 0 ? -errno : n);
    });
  }

  bool is_io_uring() const override { return false; }

 private:
  void Enqueue(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
  }

  void Work() {
    std::unique_lock lock(mu_);
    for (;;) {
      ready_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stop_ and drained
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
      lock.unlock();
      task();
      lock.lock();
      --running_;
      if (tasks_.empty() && running_ == 0) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> tasks_;
  int running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

int64_t IoEngine::ReadNow(int fd, const iovec* iov, int iovcnt, uint64_t offset) {
  ssize_t n;
  do {
    n = preadv2(fd, iov, iovcnt, static_cast<off_t>(offset), RWF_NOWAIT);
  } while (n < 0 && errno == EINTR);
  // EOPNOTSUPP: a file system or kernel without non-blocking buffered reads.
  if (n < 0 && errno == EOPNOTSUPP) return -EAGAIN;
  return n < 0 ? -errno : n;
}

Result<std::unique_ptr<IoEngine>> NewIoUringEngine(unsigned entries) {
  auto engine = IoUringEngine::Create(entries);
  if (!engine.ok()) return Status::Unavailable(engine.status().ToString());
  return engine;
}

std::unique_ptr<IoEngine> NewThreadPoolEngine(int threads) {
  return std::make_unique<ThreadPoolEngine>(threads);
}

}  // namespace geofs::cache
