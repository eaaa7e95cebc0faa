#include "geofs/clock.h"

#include <ctime>
#include <mutex>

namespace geofs {
namespace {

class RealClock : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
  WallTime WallNow() const override {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return {ts.tv_sec, static_cast<uint32_t>(ts.tv_nsec)};
  }
};

}  // namespace

Clock* Clock::Real() {
  static RealClock clock;
  return &clock;
}

struct ManualClock::State {
  std::mutex mu;
  std::chrono::nanoseconds elapsed{0};
  WallTime start;
};

ManualClock::ManualClock(WallTime start) : state_(std::make_shared<State>()) {
  state_->start = start;
}

std::chrono::steady_clock::time_point ManualClock::Now() const {
  std::lock_guard lock(state_->mu);
  return std::chrono::steady_clock::time_point(state_->elapsed);
}

WallTime ManualClock::WallNow() const {
  std::lock_guard lock(state_->mu);
  int64_t total = state_->start.nsec + state_->elapsed.count();
  return {state_->start.sec + total / 1'000'000'000,
          static_cast<uint32_t>(total % 1'000'000'000)};
}

void ManualClock::Advance(std::chrono::nanoseconds d) {
  std::lock_guard lock(state_->mu);
  state_->elapsed += d;
}

}  // namespace geofs
