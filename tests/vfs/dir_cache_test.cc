#include "vfs/dir_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace geofs::vfs {
namespace {

Handle H(uint8_t b) {
  const uint8_t bytes[] = {b, 1, 2, 3};
  return Handle(bytes);
}

std::shared_ptr<const DirListing> Listing(int n, const std::string& prefix = "n") {
  std::vector<DirListing::Item> items;
  for (int i = 0; i < n; ++i) {
    items.push_back({prefix + std::to_string(i), uint64_t(100 + i), uint64_t(1000 + i)});
  }
  return std::make_shared<const DirListing>(std::move(items));
}

TEST(DirListingTest, CookiesResumeAfterTheirItem) {
  auto l = Listing(5);
  EXPECT_EQ(l->StartAfter(0), 0u);
  EXPECT_EQ(l->StartAfter(1000), 1u);
  EXPECT_EQ(l->StartAfter(1004), 5u) << "the last cookie means: at the end";
  EXPECT_EQ(l->StartAfter(999), std::nullopt);
}

TEST(DirListingTest, AmbiguousCookiesAreLeftToTheFileSystem) {
  DirListing l({{"a", 1, 7}, {"b", 2, 7}, {"c", 3, 9}});
  EXPECT_EQ(l.StartAfter(7), std::nullopt);
  EXPECT_EQ(l.StartAfter(9), 3u);
}

TEST(DirListingTest, MemoisesOneHandlePerItemAndKeepsTheFirst) {
  auto l = Listing(3);
  EXPECT_EQ(l->MemoisedHandle(1), nullptr);
  l->Memoise(1, H(9));
  ASSERT_NE(l->MemoisedHandle(1), nullptr);
  EXPECT_EQ(*l->MemoisedHandle(1), H(9));
  EXPECT_EQ(l->MemoisedHandle(0), nullptr);
  EXPECT_EQ(l->MemoisedHandle(2), nullptr);
  l->Memoise(1, H(8));
  EXPECT_EQ(*l->MemoisedHandle(1), H(9)) << "a memoised slot is never rewritten under readers";
}

TEST(DirListingTest, ConcurrentWritersAndReadersSeeWholeHandles) {
  constexpr int kItems = 2000;
  auto l = Listing(kItems);
  std::vector<std::thread> threads;
  std::atomic<int> torn{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < kItems; ++i) {
          // Every writer offers the same handle for an item, derived from it.
          if ((i + t) % 2 == 0) l->Memoise(i, H(static_cast<uint8_t>(i)));
          const Handle* h = l->MemoisedHandle(i);
          if (h != nullptr && !(*h == H(static_cast<uint8_t>(i)))) ++torn;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(torn.load(), 0);
  for (int i = 0; i < kItems; ++i) {
    ASSERT_NE(l->MemoisedHandle(i), nullptr) << i;
    EXPECT_EQ(*l->MemoisedHandle(i), H(static_cast<uint8_t>(i)));
  }
}

TEST(DirCacheTest, AListingIsServedOnlyUnderItsStamp) {
  DirCache cache(1000);
  DirStamp s1{1, 10, 10, 4096};
  DirStamp s2{1, 10, 11, 4096};
  cache.InsertListing(H(1), s1, Listing(3));
  EXPECT_NE(cache.FindListing(H(1), s1), nullptr);
  EXPECT_EQ(cache.FindListing(H(2), s1), nullptr);
  EXPECT_EQ(cache.FindListing(H(1), s2), nullptr) << "a changed ctime means changed contents";
  EXPECT_EQ(cache.FindListing(H(1), s1), nullptr) << "the stale state is gone for good";
  EXPECT_EQ(cache.size(), 0u);
}

TEST(DirCacheTest, NamesAreMemoisedPerStampAndInode) {
  DirCache cache(1000);
  DirStamp s{1, 10, 10, 4096};
  const std::pair<std::string_view, NameInfo> memo[] = {{"n1", {101, FileType::kRegular, H(9)}}};
  cache.InsertNames(H(1), s, memo);
  ASSERT_TRUE(cache.FindName(H(1), s, "n1").has_value());
  EXPECT_EQ(cache.FindName(H(1), s, "n1")->handle, H(9));
  EXPECT_FALSE(cache.FindName(H(1), s, "n0").has_value());

  EXPECT_FALSE(cache.FindName(H(1), DirStamp{1, 10, 12, 4096}, "n1").has_value());
}

TEST(DirCacheTest, StaysWithinItsBoundByEvictingWholeDirectories) {
  DirCache cache(100);
  for (uint8_t d = 0; d < 10; ++d) {
    cache.InsertListing(H(d), DirStamp{d, 1, 1, 1}, Listing(40));
    EXPECT_LE(cache.size(), 100u);
  }
  EXPECT_NE(cache.FindListing(H(9), DirStamp{9, 1, 1, 1}), nullptr) << "the newest stays";
  EXPECT_EQ(cache.FindListing(H(0), DirStamp{0, 1, 1, 1}), nullptr) << "the oldest went";
  cache.InsertListing(H(20), DirStamp{20, 1, 1, 1}, Listing(51));
  EXPECT_EQ(cache.FindListing(H(20), DirStamp{20, 1, 1, 1}), nullptr)
      << "a listing of more than half the capacity is not cached";
}

TEST(AttrCacheTest, ServesAttributesForTheirTtlOnly) {
  AttrCache cache(10, std::chrono::seconds(1));
  const auto t0 = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  Attr a;
  a.fileid = 7;
  a.size = 1;
  cache.Put(a, t0);
  ASSERT_TRUE(cache.Find(7, t0 + std::chrono::milliseconds(999)).has_value());
  EXPECT_EQ(cache.Find(7, t0)->size, 1u);
  EXPECT_FALSE(cache.Find(7, t0 + std::chrono::milliseconds(1001)).has_value());
  Attr older = a;
  older.size = 2;
  cache.Put(older, t0 - std::chrono::milliseconds(1));
  EXPECT_EQ(cache.Find(7, t0)->size, 1u) << "an older read does not replace a newer one";
  cache.Erase(7);
  EXPECT_FALSE(cache.Find(7, t0).has_value());
}

TEST(AttrCacheTest, FindManyAnswersLikeFindForEachId) {
  AttrCache cache(10, std::chrono::seconds(1));
  const auto t0 = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  for (uint64_t id : {1, 3}) {
    Attr a;
    a.fileid = id;
    a.size = id * 10;
    cache.Put(a, t0);
  }
  Attr late;
  late.fileid = 4;
  cache.Put(late, t0 - std::chrono::seconds(2));
  const uint64_t ids[] = {3, 2, 1, 4};
  std::vector<std::optional<Attr>> out(4);
  cache.FindMany(ids, t0 + std::chrono::milliseconds(10), out);
  ASSERT_TRUE(out[0].has_value());
  EXPECT_EQ(out[0]->size, 30u);
  EXPECT_FALSE(out[1].has_value());
  ASSERT_TRUE(out[2].has_value());
  EXPECT_EQ(out[2]->size, 10u);
  EXPECT_FALSE(out[3].has_value()) << "expired";
}

TEST(AttrCacheTest, IsBoundedAndAZeroTtlCachesNothing) {
  const auto t0 = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  AttrCache cache(3, std::chrono::seconds(1));
  for (uint64_t id = 1; id <= 5; ++id) {
    Attr a;
    a.fileid = id;
    cache.Put(a, t0);
  }
  EXPECT_FALSE(cache.Find(1, t0).has_value());
  EXPECT_FALSE(cache.Find(2, t0).has_value());
  EXPECT_TRUE(cache.Find(5, t0).has_value());
  AttrCache off(3, std::chrono::nanoseconds(0));
  Attr a;
  a.fileid = 1;
  off.Put(a, t0);
  EXPECT_FALSE(off.Find(1, t0).has_value());
}

}  // namespace
}  // namespace geofs::vfs
