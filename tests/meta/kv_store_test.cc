// One conformance suite over every KvStore implementation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/mounted_tmpfs.h"
#include "meta/rocks_kv_store.h"
#include "meta_test_util.h"

namespace geofs::meta {
namespace {

using testing::MemoryEnv;
using testing::RocksEnv;
using testing::TempDir;

template <typename Env>
class KvStoreTest : public ::testing::Test {
 protected:
  KvStore* kv() { return env_.store(); }

  void Put(std::string_view k, std::string_view v) {
    WriteBatch b;
    b.Put(k, v);
    ASSERT_TRUE(kv()->Write(b).ok());
  }

  std::optional<std::string> Get(KvReader& r, std::string_view k) {
    auto v = r.Get(k);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : std::nullopt;
  }

  std::vector<std::string> Keys(KvReader& r, std::string_view start, std::string_view limit,
                                std::string_view seek) {
    std::vector<std::string> keys;
    auto it = r.NewIterator(start, limit);
    for (it->Seek(seek); it->Valid(); it->Next()) keys.emplace_back(it->key());
    EXPECT_TRUE(it->status().ok());
    return keys;
  }

  Env env_;
};

using Envs = ::testing::Types<MemoryEnv, RocksEnv>;
TYPED_TEST_SUITE(KvStoreTest, Envs);

TYPED_TEST(KvStoreTest, GetPutDelete) {
  EXPECT_EQ(this->Get(*this->kv(), "a"), std::nullopt);
  this->Put("a", "1");
  EXPECT_EQ(this->Get(*this->kv(), "a"), "1");
  this->Put("a", "2");
  EXPECT_EQ(this->Get(*this->kv(), "a"), "2");
  WriteBatch b;
  b.Delete("a");
  b.Delete("never-there");
  ASSERT_TRUE(this->kv()->Write(b).ok());
  EXPECT_EQ(this->Get(*this->kv(), "a"), std::nullopt);
}

TYPED_TEST(KvStoreTest, BatchAppliesInOrder) {
  WriteBatch b;
  b.Put("x", "1");
  b.Delete("x");
  b.Delete("y");
  b.Put("y", "2");
  b.Put("z", "");
  EXPECT_EQ(b.ops().size(), 5u);
  ASSERT_TRUE(this->kv()->Write(b, /*sync=*/false).ok());
  ASSERT_TRUE(this->kv()->Sync().ok());
  EXPECT_EQ(this->Get(*this->kv(), "x"), std::nullopt);
  EXPECT_EQ(this->Get(*this->kv(), "y"), "2");
  EXPECT_EQ(this->Get(*this->kv(), "z"), "");  // empty values exist
}

TYPED_TEST(KvStoreTest, IteratesInByteOrderWithinBounds) {
  const std::string k00("a\0", 2), kff("a\xff", 2);
  for (const std::string& k : {std::string("a"), k00, std::string("ab"), kff, std::string("b"),
                               std::string("\xff\xff", 2)}) {
    this->Put(k, "v" + k);
  }
  auto& kv = *this->kv();
  EXPECT_EQ(this->Keys(kv, "", "", ""),
            (std::vector<std::string>{"a", k00, "ab", kff, "b", std::string("\xff\xff", 2)}));
  // Bounded by [start, limit); seeking below start clamps to start.
  EXPECT_EQ(this->Keys(kv, "a", "b", ""), (std::vector<std::string>{"a", k00, "ab", kff}));
  EXPECT_EQ(this->Keys(kv, k00, kff, "0"), (std::vector<std::string>{k00, "ab"}));
  EXPECT_EQ(this->Keys(kv, "a", "b", "aa"), (std::vector<std::string>{"ab", kff}));
  EXPECT_EQ(this->Keys(kv, "a", PrefixSuccessor("a"), "a\x01"),
            (std::vector<std::string>{"ab", kff}));
  EXPECT_TRUE(this->Keys(kv, "c", "d", "").empty());
  auto it = kv.NewIterator("a", "b");
  it->Seek("ab");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "vab");
}

TYPED_TEST(KvStoreTest, SnapshotsAndIteratorsSeeOneState) {
  this->Put("k1", "old");
  std::unique_ptr<KvReader> snap = this->kv()->NewSnapshot();
  std::unique_ptr<KvIterator> it = this->kv()->NewIterator("k", "l");
  WriteBatch b;
  b.Put("k1", "new");
  b.Put("k2", "added");
  ASSERT_TRUE(this->kv()->Write(b).ok());
  EXPECT_EQ(this->Get(*snap, "k1"), "old");
  EXPECT_EQ(this->Get(*snap, "k2"), std::nullopt);
  EXPECT_EQ(this->Keys(*snap, "k", "l", ""), std::vector<std::string>{"k1"});
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "old");
  it->Next();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
  EXPECT_EQ(this->Get(*this->kv(), "k1"), "new");
  EXPECT_EQ(this->Keys(*this->kv(), "k", "l", "").size(), 2u);
}

TYPED_TEST(KvStoreTest, ReadersNeverSeeHalfABatch) {
  // A writer flips two keys together; readers must always see them equal.
  WriteBatch init;
  init.Put("p", "0");
  init.Put("q", "0");
  ASSERT_TRUE(this->kv()->Write(init).ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; i <= 200; ++i) {
      WriteBatch b;
      b.Put("p", std::to_string(i));
      b.Put("q", std::to_string(i));
      ASSERT_TRUE(this->kv()->Write(b, /*sync=*/false).ok());
    }
    done = true;
  });
  int checks = 0;
  while (!done || checks < 10) {
    std::unique_ptr<KvReader> snap = this->kv()->NewSnapshot();
    EXPECT_EQ(this->Get(*snap, "p"), this->Get(*snap, "q"));
    std::vector<std::string> values;
    auto it = this->kv()->NewIterator("p", "r");
    for (it->Seek(""); it->Valid(); it->Next()) values.emplace_back(it->value());
    ASSERT_EQ(values.size(), 2u);
    EXPECT_EQ(values[0], values[1]);
    ++checks;
  }
  writer.join();
}

TYPED_TEST(KvStoreTest, ConcurrentSyncedWritersAllLand) {
  constexpr int kThreads = 4, kWrites = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        WriteBatch b;
        b.Put("t" + std::to_string(t) + "/" + std::to_string(i), "x");
        EXPECT_TRUE(this->kv()->Write(b, /*sync=*/true).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(this->Keys(*this->kv(), "t", "u", "").size(), size_t{kThreads * kWrites});
}

TEST(RocksKvStoreTest, SyncedWritesSurviveReopen) {
  TempDir dir;
  {
    auto store = RocksKvStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    WriteBatch b;
    b.Put("durable", "yes");
    ASSERT_TRUE((*store)->Write(b, /*sync=*/false).ok());
    ASSERT_TRUE((*store)->Sync().ok());
  }
  auto store = RocksKvStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  auto v = (*store)->Get("durable");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "yes");
}

TEST(RocksKvStoreTest, OpenFailsCleanly) {
  TempDir dir;
  RocksKvStoreOptions options;
  options.create_if_missing = false;
  auto missing = RocksKvStore::Open(dir.path() + "/absent", options);
  EXPECT_FALSE(missing.ok());
  auto first = RocksKvStore::Open(dir.path());
  ASSERT_TRUE(first.ok());
  // The LOCK file keeps a second opener out.
  auto second = RocksKvStore::Open(dir.path());
  EXPECT_FALSE(second.ok());
}

// Writes to `path` until the file system is full.
TEST(RocksKvStoreTest, AFullDiskStopsWritesCleanlyAndTheStoreResumesOnceThereIsRoom) {
  geofs::testing::MountedTmpfs fs("8m");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << fs.error();
  const std::string db = fs.path() + "/db";
  RocksKvStoreOptions options;
  options.write_buffer_bytes = 256 << 10;  // flushes (table files) as well as log writes
  options.resume_min_free_bytes = 1 << 20;
  options.resume_interval = std::chrono::milliseconds(0);
  auto store = RocksKvStore::Open(db, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_FALSE((*store)->Stopped());
  EXPECT_FALSE(*(*store)->Resume());  // nothing to resume
  WriteBatch before;
  before.Put("before", "1");
  ASSERT_TRUE((*store)->Write(before).ok());
  const std::string ballast = fs.path() + "/ballast";
  ASSERT_TRUE(geofs::testing::FillFileSystem(ballast));

  // Synced writes from several threads until the disk refuses: each fails
  // with kNoSpace, none takes the process down.
  const std::string value(4096, 'v');
  std::atomic<int> acknowledged{0};
  std::atomic<bool> full{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 5000 && !full; ++i) {
        WriteBatch b;
        b.Put("k" + std::to_string(t) + "-" + std::to_string(i), value);
        Status s = (*store)->Write(b);
        if (s.ok()) {
          ++acknowledged;
        } else {
          EXPECT_EQ(s.code(), StatusCode::kNoSpace) << s.ToString();
          full = true;
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  ASSERT_TRUE(full) << "the file system never filled";
  EXPECT_EQ(*(*store)->Get("before"), std::optional<std::string>("1"));  // reads go on
  EXPECT_TRUE((*store)->Stopped());
  EXPECT_FALSE(*(*store)->Resume());  // no room yet

  // Room again: the store still refuses writes, past the 5 s after which
  // RocksDB's own recovery would have let the next write abort the process,
  // until it resumes; and it does not while a reader holds it.
  std::filesystem::remove(ballast);
  WriteBatch after;
  after.Put("after", "1");
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ((*store)->Write(after).code(), StatusCode::kNoSpace);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  {
    std::unique_ptr<KvReader> reader = (*store)->NewSnapshot();
    EXPECT_FALSE(*(*store)->Resume());
    EXPECT_EQ(*reader->Get("before"), std::optional<std::string>("1"));
  }
  auto resumed = (*store)->Resume();
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  ASSERT_TRUE(*resumed);
  EXPECT_FALSE((*store)->Stopped());
  EXPECT_FALSE(*(*store)->Resume());  // once

  // Every acknowledged write is there, and writes go on.
  auto count_k = [](KvStore& s) {
    int found = 0;
    auto it = s.NewIterator("k", "l");
    for (it->Seek(""); it->Valid(); it->Next()) ++found;
    EXPECT_TRUE(it->status().ok());
    return found;
  };
  const int found = count_k(**store);
  EXPECT_GE(found, acknowledged.load());
  EXPECT_EQ(*(*store)->Get("before"), std::optional<std::string>("1"));
  ASSERT_TRUE((*store)->Write(after).ok());
  EXPECT_EQ(*(*store)->Get("after"), std::optional<std::string>("1"));

  // And all of it survives opening the store again.
  store->reset();
  store = RocksKvStore::Open(db, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(count_k(**store), found);
  EXPECT_EQ(*(*store)->Get("after"), std::optional<std::string>("1"));
}

TEST(PrefixSuccessorTest, SmallestKeyAfterThePrefix) {
  EXPECT_EQ(PrefixSuccessor("ab"), "ac");
  EXPECT_EQ(PrefixSuccessor(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixSuccessor(std::string("\xff\xff", 2)), "");
  EXPECT_EQ(PrefixSuccessor(""), "");
}

}  // namespace
}  // namespace geofs::meta
