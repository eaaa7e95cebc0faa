#include "object/fault_injection_object_store.h"

#include <thread>

namespace geofs::object {

FaultInjectionObjectStore::FaultInjectionObjectStore(ObjectStore* target, uint64_t seed)
    : ObjectStoreWrapper(target), rng_(seed) {}

void FaultInjectionObjectStore::AddFault(ObjectFault fault) {
  if (fault.count == 0) return;
  std::lock_guard lock(mu_);
  faults_.push_back(std::move(fault));
}

void FaultInjectionObjectStore::FailNext(ObjectOpMask ops, int n, Status status) {
  AddFault({.ops = ops, .status = std::move(status), .count = n});
}

void FaultInjectionObjectStore::FailFraction(ObjectOpMask ops, double fraction, Status status) {
  AddFault({.ops = ops, .status = std::move(status), .probability = fraction});
}

void FaultInjectionObjectStore::StallNext(ObjectOpMask ops, int n,
                                          std::chrono::milliseconds stall) {
  AddFault({.ops = ops, .status = Status::Ok(), .count = n, .stall = stall});
}

void FaultInjectionObjectStore::ClearFaults() {
  std::lock_guard lock(mu_);
  faults_.clear();
}

uint64_t FaultInjectionObjectStore::calls(ObjectOp op) const {
  std::lock_guard lock(mu_);
  return calls_[static_cast<size_t>(op)];
}

uint64_t FaultInjectionObjectStore::injected() const {
  std::lock_guard lock(mu_);
  return injected_;
}

FaultInjectionObjectStore::Decision FaultInjectionObjectStore::Decide(ObjectOp op) {
  std::lock_guard lock(mu_);
  ++calls_[static_cast<size_t>(op)];
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if ((it->ops & OpBit(op)) == 0) continue;
    if (it->probability < 1.0 &&
        std::uniform_real_distribution<double>(0, 1)(rng_) >= it->probability) {
      continue;
    }
    Decision d{true, it->status, it->stall, it->after_call};
    if (it->count > 0 && --it->count == 0) faults_.erase(it);
    if (!d.status.ok()) ++injected_;
    return d;
  }
  return {};
}

// Runs `call` (returning R, a Status or Result) under the decision for `op`.
template <typename R, typename Call>
R FaultInjectionObjectStore::Apply(ObjectOp op, Call&& call) {
  Decision d = Decide(op);
  if (!d.fired) return call();
  if (d.stall.count() > 0) std::this_thread::sleep_for(d.stall);
  if (d.status.ok()) return call();
  if (d.after_call) {
    R ignored = call();
    (void)ignored;
  }
  return d.status;
}

Status FaultInjectionObjectStore::Put(std::string_view key, std::span<const uint8_t> data) {
  return Apply<Status>(ObjectOp::kPut, [&] { return ObjectStoreWrapper::Put(key, data); });
}

Result<Buffer> FaultInjectionObjectStore::Get(std::string_view key) {
  return Apply<Result<Buffer>>(ObjectOp::kGet, [&] { return ObjectStoreWrapper::Get(key); });
}

Result<ObjectInfo> FaultInjectionObjectStore::Head(std::string_view key) {
  return Apply<Result<ObjectInfo>>(ObjectOp::kHead, [&] { return ObjectStoreWrapper::Head(key); });
}

Status FaultInjectionObjectStore::Delete(std::string_view key) {
  return Apply<Status>(ObjectOp::kDelete, [&] { return ObjectStoreWrapper::Delete(key); });
}

Result<ObjectListing> FaultInjectionObjectStore::List(std::string_view prefix,
                                                      std::string_view page_token,
                                                      size_t max_keys) {
  return Apply<Result<ObjectListing>>(
      ObjectOp::kList, [&] { return ObjectStoreWrapper::List(prefix, page_token, max_keys); });
}

}  // namespace geofs::object
