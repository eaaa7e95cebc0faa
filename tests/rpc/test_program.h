// A Program for RPC tests: echo (zero-copy), a delayed reply, an echo of the
// caller's identity, a procedure that loses its Responder, and large replies.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "rpc/program.h"

namespace geofs::testing {

class TestProgram : public rpc::Program {
 public:
  static constexpr uint32_t kNumber = 400000;
  static constexpr uint32_t kMinVersion = 1;
  static constexpr uint32_t kMaxVersion = 3;

  enum Proc : uint32_t {
    kNull = 0,
    kEcho = 1,      // opaque<> -> the same opaque, referencing the call's record
    kDelayed = 2,   // (u32 delay_ms, u32 value) -> value, after sleeping
    kWhoAmI = 3,    // void -> flavor, uid, gid, number of gids, peer port
    kLoseCall = 4,  // void -> never responds (drops its Responder)
    kFill = 5,      // u32 n (at most 1 MiB) -> opaque of n bytes, like a READ
  };

  uint32_t program() const override { return kNumber; }
  uint32_t min_version() const override { return kMinVersion; }
  uint32_t max_version() const override { return kMaxVersion; }
  void Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                rpc::Responder respond) override;

  // The most procedures ever running at once.
  int max_concurrency() const { return max_running_.load(); }

 private:
  std::atomic<int> running_{0};
  std::atomic<int> max_running_{0};
};

}  // namespace geofs::testing
