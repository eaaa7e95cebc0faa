// CallGate: lets a test hold the calls of an in-process hub. A call that
// passes the gate while it is held waits (at most 10 s) until released;
// the gate counts the calls waiting in it and the most at once.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace geofs::spoke::testing {

class CallGate {
 public:
  void Hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      held_ = false;
    }
    cv_.notify_all();
  }
  // Called by the hub's handler before it answers.
  void Pass() {
    std::unique_lock lock(mu_);
    ++open_;
    max_open_ = std::max(max_open_, open_);
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !held_; });
    --open_;
  }
  // Waits until `n` calls are in the gate; false after 5 s.
  bool WaitOpen(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return open_ >= n; });
  }
  int max_open() {
    std::lock_guard lock(mu_);
    return max_open_;
  }
  void ResetMaxOpen() {
    std::lock_guard lock(mu_);
    max_open_ = 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;  // guarded by mu_
  int open_ = 0;       // guarded by mu_
  int max_open_ = 0;   // guarded by mu_
};

}  // namespace geofs::spoke::testing
