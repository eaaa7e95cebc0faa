// SyncBatcher groups concurrent file-system barriers; LocalObjectStore relies
// on it to order a Put: data durable before the rename, the new name durable
// before Put returns.
#include "object/sync_batcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "object/local_object_store.h"
#include "object/object_store_test_util.h"

namespace geofs::object {
namespace {

namespace fs = std::filesystem;
using objtest::Bytes;
using objtest::TempDir;

// Blocks callers until Open() is called.
class Gate {
 public:
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

void WaitFor(const std::function<bool()>& done) {
  while (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(SyncBatcherTest, WaitersQueuedDuringABarrierShareTheNextOne) {
  Gate gate;
  std::atomic<int> barriers{0};
  SyncBatcher batcher(0, [&](int) {
    if (barriers.fetch_add(1) == 0) gate.Wait();  // the first leader stalls
    return 0;
  });
  std::jthread first([&] { EXPECT_TRUE(batcher.Barrier("first").ok()); });
  WaitFor([&] { return barriers.load() == 1; });

  constexpr int kWaiters = 8;
  std::vector<std::jthread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] { EXPECT_TRUE(batcher.Barrier("waiter").ok()); });
  }
  WaitFor([&] { return batcher.pending() == kWaiters; });
  gate.Open();
  first.join();
  waiters.clear();  // joins

  EXPECT_EQ(barriers.load(), 2);  // one for the first caller, one for all the rest
  EXPECT_EQ(batcher.rounds(), 2u);
}

TEST(SyncBatcherTest, ACallerIsNeverAnsweredByABarrierThatStartedBeforeIt) {
  // The barrier in progress when a caller arrives may have missed the
  // caller's writes: the caller must wait for one of its own.
  Gate gate;
  std::atomic<int> barriers{0};
  SyncBatcher batcher(0, [&](int) {
    if (barriers.fetch_add(1) == 0) gate.Wait();
    return 0;
  });
  std::jthread first([&] { EXPECT_TRUE(batcher.Barrier("first").ok()); });
  WaitFor([&] { return barriers.load() == 1; });
  std::atomic<bool> second_done{false};
  std::jthread second([&] {
    EXPECT_TRUE(batcher.Barrier("second").ok());
    second_done = true;
  });
  WaitFor([&] { return batcher.pending() == 1; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(second_done.load());
  gate.Open();
  second.join();
  EXPECT_EQ(barriers.load(), 2);
}

TEST(SyncBatcherTest, ABarrierErrorGoesToEveryCallerOfItsRoundNamingEach) {
  std::atomic<bool> fail{false};
  SyncBatcher batcher(0, [&](int) { return fail.load() ? EIO : 0; });
  EXPECT_TRUE(batcher.Barrier("put good").ok());
  fail = true;
  Status bad = batcher.Barrier("put bad");
  EXPECT_EQ(bad.code(), StatusCode::kIoError) << bad.ToString();
  EXPECT_NE(bad.ToString().find("put bad"), std::string::npos) << bad.ToString();
  fail = false;
  EXPECT_TRUE(batcher.Barrier("put again").ok());
}

TEST(SyncBatcherTest, TheDefaultBarrierSyncsTheFileSystemOfTheFd) {
  TempDir dir;
  const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    SyncBatcher batcher(fd);
    EXPECT_TRUE(batcher.Barrier("real").ok());
  }
  ::close(fd);
  SyncBatcher bad(-1);  // syncfs fails, and so does the call
  Status s = bad.Barrier("no fd");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("no fd"), std::string::npos) << s.ToString();
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Keys spread over fan-out directories, with stable storage for views.
const std::vector<std::string>& Keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (int i = 0; i < 20; ++i)
      k.push_back("chunks/0" + std::to_string(i % 3) + "/k" + std::to_string(i));
    return k;
  }();
  return keys;
}

// What the store's directories held at the moment of one barrier.
struct BarrierEvent {
  std::map<std::string, std::string> temps;  // name -> bytes, under tmp/
  bool object_visible = false;               // the watched key's file existed
  std::string object;                        // and held these bytes
};

class RecordingStore {
 public:
  explicit RecordingStore(const std::string& root) : root_(root) {
    LocalObjectStoreOptions options;
    options.barrier = [this](int fd) { return Record(fd); };
    auto opened = LocalObjectStore::Open(root, options);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
  }

  LocalObjectStore& store() { return *store_; }
  void WatchKey(const std::string& key) { watched_path_ = store_->PathOf(key); }
  std::vector<BarrierEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  // Fails barrier number `n` (0-based) with EIO.
  void FailBarrier(int n) { fail_at_ = n; }
  // The fd every barrier got, for checking it names the store's root.
  std::string barrier_fd_path() {
    std::lock_guard lock(mu_);
    return fd_path_;
  }

 private:
  int Record(int fd) {
    BarrierEvent e;
    for (const auto& entry : fs::directory_iterator(root_ + "/tmp")) {
      e.temps[entry.path().filename().string()] = ReadFile(entry.path());
    }
    e.object_visible = !watched_path_.empty() && fs::exists(watched_path_);
    if (e.object_visible) e.object = ReadFile(watched_path_);
    std::error_code ec;
    std::lock_guard lock(mu_);
    fd_path_ = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
    events_.push_back(std::move(e));
    return static_cast<int>(events_.size()) - 1 == fail_at_ ? EIO : 0;
  }

  const std::string root_;
  std::unique_ptr<LocalObjectStore> store_;
  std::string watched_path_;
  std::atomic<int> fail_at_{-1};
  std::mutex mu_;
  std::vector<BarrierEvent> events_;
  std::string fd_path_;
};

TEST(LocalObjectStoreBarrierTest, DataIsDurableBeforeTheRenameAndTheNameBeforePutReturns) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.WatchKey("chunks/ab/abc");
  ASSERT_TRUE(rec.store().Put("chunks/ab/abc", Bytes("payload")).ok());

  std::vector<BarrierEvent> events = rec.events();
  ASSERT_EQ(events.size(), 2u);
  // 1. the complete temp file, while the key is not yet visible;
  ASSERT_EQ(events[0].temps.size(), 1u);
  EXPECT_EQ(events[0].temps.begin()->second, "payload");
  EXPECT_FALSE(events[0].object_visible);
  // 2. the key in place (with the directories created for it), temp gone.
  EXPECT_TRUE(events[1].temps.empty());
  EXPECT_TRUE(events[1].object_visible);
  EXPECT_EQ(events[1].object, "payload");
  EXPECT_EQ(rec.barrier_fd_path(), dir.path());

  // Overwriting an existing key: the old object stays until the new bytes
  // are durable.
  ASSERT_TRUE(rec.store().Put("chunks/ab/abc", Bytes("second")).ok());
  events = rec.events();
  ASSERT_EQ(events.size(), 4u);
  ASSERT_EQ(events[2].temps.size(), 1u);
  EXPECT_EQ(events[2].temps.begin()->second, "second");
  EXPECT_EQ(events[2].object, "payload");
  EXPECT_EQ(events[3].object, "second");
}

TEST(LocalObjectStoreBarrierTest, AFailedDataBarrierFailsThePutAndStoresNothing) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.FailBarrier(0);
  Status s = rec.store().Put("k", Bytes("never durable"));
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_NE(s.ToString().find("put k"), std::string::npos) << s.ToString();
  EXPECT_EQ(rec.events().size(), 1u);  // never renamed, so no second barrier
  EXPECT_EQ(rec.store().Head("k").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(fs::is_empty(dir.path() + "/tmp"));
}

TEST(LocalObjectStoreBarrierTest, AFailedNameBarrierFailsThePut) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.FailBarrier(1);
  Status s = rec.store().Put("k", Bytes("maybe not durable"));
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_NE(s.ToString().find("put k"), std::string::npos) << s.ToString();
}

// PutMany: every object's data durable before any name, with two barriers
// for the whole set; a refused object fails alone.
TEST(LocalObjectStoreBarrierTest, PutManyMakesASetDurableWithTwoBarriers) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.WatchKey("chunks/00/k0");
  std::vector<std::string> data;
  std::vector<std::vector<uint8_t>> bytes;
  for (int i = 0; i < 20; ++i) {
    data.push_back("object " + std::to_string(i));
    bytes.push_back(Bytes(data[i]));
  }
  std::vector<ObjectPut> puts;
  for (int i = 0; i < 20; ++i) {
    puts.push_back({i == 7 ? std::string_view("bad//key") : std::string_view(Keys()[i]), bytes[i]});
  }
  std::vector<Status> out = rec.store().PutMany(puts, 4);
  ASSERT_EQ(out.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    if (i == 7) {
      EXPECT_EQ(out[i].code(), StatusCode::kInvalidArgument) << out[i].ToString();
      continue;
    }
    ASSERT_TRUE(out[i].ok()) << i << ": " << out[i].ToString();
    auto got = rec.store().Get(Keys()[i]);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->view(), data[i]);
  }
  std::vector<BarrierEvent> events = rec.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].temps.size(), 19u);  // every temp complete, no name yet
  EXPECT_FALSE(events[0].object_visible);
  EXPECT_TRUE(events[1].temps.empty());
  EXPECT_EQ(events[1].object, "object 0");
}

TEST(LocalObjectStoreBarrierTest, PutManyWithAFailedDataBarrierStoresNothing) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.FailBarrier(0);
  const std::vector<uint8_t> a = Bytes("a"), b = Bytes("b");
  std::vector<ObjectPut> puts = {{Keys()[0], a}, {Keys()[1], b}};
  std::vector<Status> out = rec.store().PutMany(puts, 2);
  ASSERT_EQ(out.size(), 2u);
  for (const Status& s : out) EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_EQ(rec.events().size(), 1u);
  EXPECT_EQ(rec.store().Head(Keys()[0]).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(fs::is_empty(dir.path() + "/tmp"));
}

TEST(LocalObjectStoreBarrierTest, DeleteIsDurableBeforeItReturns) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.WatchKey("d/k");
  ASSERT_TRUE(rec.store().Put("d/k", Bytes("x")).ok());
  ASSERT_TRUE(rec.store().Delete("d/k").ok());
  std::vector<BarrierEvent> events = rec.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_FALSE(events[2].object_visible);
}

TEST(LocalObjectStoreBarrierTest, ConcurrentPutsShareBarriersAndAllLand) {
  TempDir dir;
  std::atomic<int> barriers{0};
  LocalObjectStoreOptions options;
  options.barrier = [&](int) {
    ++barriers;
    // A slow device: Puts pile up behind the barrier in progress.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 0;
  };
  auto store = LocalObjectStore::Open(dir.path(), options);
  ASSERT_TRUE(store.ok());

  constexpr int kThreads = 16;
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        // Keys in different fan-out directories share barriers too.
        const std::string key = "d" + std::to_string(i) + "/k";
        EXPECT_TRUE((*store)->Put(key, Bytes(std::to_string(i))).ok());
      });
    }
  }
  for (int i = 0; i < kThreads; ++i) {
    auto got = (*store)->Get("d" + std::to_string(i) + "/k");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->view(), std::to_string(i));
  }
  EXPECT_GE(barriers.load(), 2);
  EXPECT_LT(barriers.load(), kThreads);
}

}  // namespace
}  // namespace geofs::object
