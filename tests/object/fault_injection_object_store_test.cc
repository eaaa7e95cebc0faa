#include "object/fault_injection_object_store.h"

#include <gtest/gtest.h>

#include <chrono>

#include "object/memory_object_store.h"
#include "object/object_store_test_util.h"

namespace geofs::object {
namespace {

using namespace std::chrono_literals;
using objtest::Bytes;

TEST(FaultInjectionObjectStoreTest, PassesCallsThroughWithoutFaults) {
  MemoryObjectStore base;
  FaultInjectionObjectStore store(&base);
  ASSERT_TRUE(store.Put("k", Bytes("v")).ok());
  EXPECT_EQ(store.Get("k")->view(), "v");
  EXPECT_EQ(store.Head("k")->size, 1u);
  EXPECT_EQ(store.List("", "", 10)->objects.size(), 1u);
  ASSERT_TRUE(store.Delete("k").ok());
  EXPECT_EQ(base.object_count(), 0u);
  EXPECT_EQ(store.Describe(), "memory:");
  EXPECT_EQ(store.calls(ObjectOp::kPut), 1u);
  EXPECT_EQ(store.calls(ObjectOp::kGet), 1u);
  EXPECT_EQ(store.injected(), 0u);
}

TEST(FaultInjectionObjectStoreTest, FailsTheNextNCallsOfChosenKinds) {
  MemoryObjectStore base;
  FaultInjectionObjectStore store(&base);
  store.FailNext(OpBit(ObjectOp::kPut), 2, Status::Unavailable("injected"));
  EXPECT_EQ(store.Put("k", Bytes("1")).code(), StatusCode::kUnavailable);
  EXPECT_EQ(store.Get("k").status().code(), StatusCode::kNotFound);  // Gets unaffected
  EXPECT_EQ(store.Put("k", Bytes("2")).code(), StatusCode::kUnavailable);
  EXPECT_EQ(base.object_count(), 0u);  // a failed call had no effect
  ASSERT_TRUE(store.Put("k", Bytes("3")).ok());
  EXPECT_EQ(store.Get("k")->view(), "3");
  EXPECT_EQ(store.injected(), 2u);
  EXPECT_EQ(store.calls(ObjectOp::kPut), 3u);

  store.FailNext(OpBit(ObjectOp::kGet) | OpBit(ObjectOp::kHead), 1, Status::IoError("disk"));
  EXPECT_EQ(store.Head("k").status().code(), StatusCode::kIoError);
  EXPECT_TRUE(store.Get("k").ok());
}

TEST(FaultInjectionObjectStoreTest, FailsAFractionReproducibly) {
  MemoryObjectStore base;
  ASSERT_TRUE(base.Put("k", Bytes("v")).ok());
  auto pattern = [&](uint64_t seed) {
    FaultInjectionObjectStore store(&base, seed);
    store.FailFraction(OpBit(ObjectOp::kHead), 0.3, Status::Unavailable("flaky"));
    std::vector<bool> failed;
    for (int i = 0; i < 2000; ++i) failed.push_back(!store.Head("k").ok());
    EXPECT_TRUE(store.Get("k").ok());
    return failed;
  };
  auto a = pattern(42);
  auto b = pattern(42);
  EXPECT_EQ(a, b);
  long failures = std::count(a.begin(), a.end(), true);
  EXPECT_GT(failures, 450);
  EXPECT_LT(failures, 750);
  EXPECT_NE(pattern(43), a);
}

TEST(FaultInjectionObjectStoreTest, StallsCallsThatThenSucceed) {
  MemoryObjectStore base;
  FaultInjectionObjectStore store(&base);
  ASSERT_TRUE(store.Put("k", Bytes("v")).ok());
  store.StallNext(OpBit(ObjectOp::kGet), 1, 150ms);
  auto start = std::chrono::steady_clock::now();
  auto got = store.Get("k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->view(), "v");
  start = std::chrono::steady_clock::now();
  EXPECT_TRUE(store.Get("k").ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(store.injected(), 0u);
}

TEST(FaultInjectionObjectStoreTest, AfterCallFaultsLoseTheReplyNotTheEffect) {
  MemoryObjectStore base;
  FaultInjectionObjectStore store(&base);
  store.AddFault({.ops = OpBit(ObjectOp::kPut),
                  .status = Status(StatusCode::kDeadlineExceeded, "reply lost"),
                  .count = 1,
                  .after_call = true});
  EXPECT_EQ(store.Put("k", Bytes("v")).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(base.Get("k")->view(), "v");
}

TEST(FaultInjectionObjectStoreTest, StalledFailureAndClear) {
  MemoryObjectStore base;
  FaultInjectionObjectStore store(&base);
  store.AddFault({.ops = OpBit(ObjectOp::kList),
                  .status = Status(StatusCode::kDeadlineExceeded, "timed out"),
                  .stall = 50ms});
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(store.List("", "", 10).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(store.List("", "", 10).status().code(), StatusCode::kDeadlineExceeded);
  store.ClearFaults();
  EXPECT_TRUE(store.List("", "", 10).ok());
  EXPECT_EQ(store.injected(), 2u);
}

}  // namespace
}  // namespace geofs::object
