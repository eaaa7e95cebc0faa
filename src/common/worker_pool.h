// WorkerPool: a fixed set of threads running submitted tasks in FIFO order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace geofs {

// Thread-safe. Destruction runs the tasks already queued, then joins.
class WorkerPool {
 public:
  explicit WorkerPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { Loop(); });
    }
  }
  // Runs the tasks already queued, then joins the threads.
  ~WorkerPool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    threads_.clear();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

  size_t size() const { return threads_.size(); }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::jthread> threads_;        // last: started after the rest
};

}  // namespace geofs
