// ParallelFor: runs fn(0..n-1) on up to `threads` threads (the caller's
// included) and returns the first error; after an error no new item starts.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "geofs/status.h"

namespace geofs::hub {

template <typename Fn>
Status ParallelFor(size_t n, int threads, Fn fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status error;
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      Status s = fn(i);
      if (!s.ok()) {
        std::lock_guard lock(error_mu);
        if (!failed.exchange(true)) error = std::move(s);
        return;
      }
    }
  };
  const size_t workers = std::min(n, static_cast<size_t>(std::max(threads, 1)));
  {
    std::vector<std::jthread> helpers;
    for (size_t t = 1; t < workers; ++t) helpers.emplace_back(work);
    work();
  }
  return error;
}

}  // namespace geofs::hub
