#include "common/parallel.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace geofs {
namespace {

TEST(ParallelForTest, RunsEveryItemOnceOnSeveralThreads) {
  constexpr size_t kItems = 64;
  std::vector<std::atomic<int>> runs(kItems);
  std::mutex mu;
  std::set<std::thread::id> threads;
  Status s = ParallelFor(kItems, 4, [&](size_t i) {
    ++runs[i];
    {
      std::lock_guard lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < kItems; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  EXPECT_GT(threads.size(), 1u);
  EXPECT_LE(threads.size(), 4u);
}

TEST(ParallelForTest, ReturnsTheFirstErrorAndStartsNothingAfterIt) {
  std::atomic<int> started{0};
  Status s = ParallelFor(1000, 1, [&](size_t i) {
    ++started;
    return i == 3 ? Status::IoError("item 3") : Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.ToString().find("item 3"), std::string::npos);
  EXPECT_EQ(started.load(), 4);
}

TEST(ParallelForTest, ReusesPoolThreadsAcrossCalls) {
  // Kernel thread ids are not reused soon (unlike std::thread::id), so a
  // thread per call would show up as ever more distinct ids.
  std::mutex mu;
  std::set<pid_t> threads;
  for (int call = 0; call < 50; ++call) {
    ASSERT_TRUE(ParallelFor(8, 8, [&](size_t) {
                  std::this_thread::sleep_for(std::chrono::microseconds(200));
                  std::lock_guard lock(mu);
                  threads.insert(::gettid());
                  return Status::Ok();
                }).ok());
  }
  EXPECT_LE(threads.size(), SharedWorkerPool().size() + 1);
}

TEST(ParallelForTest, NestedAndConcurrentCallsFinishWhenThePoolIsBusy) {
  // More concurrent callers than pool threads, each nesting a second call:
  // callers work on their own items, so none waits for a free thread.
  const size_t callers = SharedWorkerPool().size() + 8;
  std::atomic<size_t> done{0};
  std::vector<std::jthread> threads;
  for (size_t c = 0; c < callers; ++c) {
    threads.emplace_back([&] {
      Status s = ParallelFor(4, 4, [&](size_t) {
        return ParallelFor(4, 4, [&](size_t) {
          ++done;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          return Status::Ok();
        });
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
  }
  threads.clear();
  EXPECT_EQ(done.load(), callers * 16);
}

TEST(WorkerPoolTest, DestructionRunsTheQueuedTasks) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(2);
    for (int i = 0; i < 20; ++i) pool.Submit([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 20);
}

}  // namespace
}  // namespace geofs
