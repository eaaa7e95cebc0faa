// Clock: the one source of time for code that reasons about time (leases,
// timeouts, file times), so tests can substitute a manual clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

namespace geofs {

// Wall time split the way file systems and NFS carry it.
struct WallTime {
  int64_t sec = 0;
  uint32_t nsec = 0;
  auto operator<=>(const WallTime&) const = default;
};

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time for durations and deadlines.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  // Wall-clock time for timestamps stored in file attributes.
  virtual WallTime WallNow() const = 0;

  // The process-wide real clock. Thread-safe; never null.
  static Clock* Real();
};

// A clock that moves only when told to. Thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(WallTime start = {1'700'000'000, 0});
  std::chrono::steady_clock::time_point Now() const override;
  WallTime WallNow() const override;
  void Advance(std::chrono::nanoseconds d);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace geofs
