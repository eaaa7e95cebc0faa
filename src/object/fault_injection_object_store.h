// FaultInjectionObjectStore: a wrapper that fails or stalls chosen calls, so
// tests can prove that the layers above surface backend errors cleanly and
// lose nothing.
//
// Faults are rules checked in the order they were added; the first rule that
// matches a call's kind and fires (its probability) is applied and its count
// consumed. Rules whose count is used up are dropped. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <vector>

#include "object/object_store_wrapper.h"

namespace geofs::object {

enum class ObjectOp : uint8_t { kPut, kGet, kHead, kDelete, kList };

// A set of ObjectOp kinds.
using ObjectOpMask = uint32_t;
constexpr ObjectOpMask OpBit(ObjectOp op) { return 1u << static_cast<unsigned>(op); }
constexpr ObjectOpMask kAllObjectOps = 0x1f;

struct ObjectFault {
  ObjectOpMask ops = kAllObjectOps;
  // Returned instead of the call's result. OK: the call is only stalled.
  Status status = Status::IoError("injected object store fault");
  // How many matching calls the rule affects; negative: unlimited.
  int count = -1;
  // Chance that a matching call is affected, in [0, 1].
  double probability = 1.0;
  // Delay before the call proceeds (or fails).
  std::chrono::milliseconds stall{0};
  // Run the real call first and then return `status`: the operation took
  // effect but its reply was lost (a Put that succeeded yet timed out).
  bool after_call = false;
};

class FaultInjectionObjectStore : public ObjectStoreWrapper {
 public:
  // REQUIRES: `target` outlives this store. `seed` makes probabilistic rules
  // reproducible.
  explicit FaultInjectionObjectStore(ObjectStore* target, uint64_t seed = 1);

  void AddFault(ObjectFault fault);
  // Shorthands for the common rules.
  void FailNext(ObjectOpMask ops, int n, Status status);
  void FailFraction(ObjectOpMask ops, double fraction, Status status);
  void StallNext(ObjectOpMask ops, int n, std::chrono::milliseconds stall);
  void ClearFaults();

  // Calls seen of one kind (including failed ones), and faults applied.
  uint64_t calls(ObjectOp op) const;
  uint64_t injected() const;

  Status Put(std::string_view key, std::span<const uint8_t> data) override;
  Result<Buffer> Get(std::string_view key) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<ObjectListing> List(std::string_view prefix, std::string_view page_token,
                             size_t max_keys) override;

 private:
  // What to do with one call: nothing (no rule fired), or the fired rule's
  // status, stall and timing.
  struct Decision {
    bool fired = false;
    Status status;
    std::chrono::milliseconds stall{0};
    bool after_call = false;
  };

  Decision Decide(ObjectOp op);
  template <typename R, typename Call>
  R Apply(ObjectOp op, Call&& call);

  mutable std::mutex mu_;
  std::vector<ObjectFault> faults_;  // GUARDED_BY(mu_)
  std::mt19937_64 rng_;              // GUARDED_BY(mu_)
  uint64_t calls_[5] = {};           // GUARDED_BY(mu_)
  uint64_t injected_ = 0;            // GUARDED_BY(mu_)
};

}  // namespace geofs::object
