// SyncBatcher groups concurrent durability barriers; LocalObjectStore relies
// on it to order a Put's syncs: data synced before the rename, the directory
// synced after it, both before Put returns.
#include "object/sync_batcher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
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

TEST(SyncBatcherTest, WaitersQueuedDuringASyncShareTheNextBatch) {
  Gate gate;
  std::atomic<int> syncs{0};
  SyncBatcher batcher([&](int, SyncBatcher::Kind) {
    if (syncs.fetch_add(1) == 0) gate.Wait();  // the first leader stalls
    return 0;
  });
  std::jthread first([&] { EXPECT_TRUE(batcher.SyncData(0, "first").ok()); });
  WaitFor([&] { return syncs.load() == 1; });

  constexpr int kWaiters = 8;
  std::vector<std::jthread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] { EXPECT_TRUE(batcher.SyncData(i + 1, "waiter").ok()); });
  }
  WaitFor([&] { return batcher.pending() == kWaiters; });
  gate.Open();
  first.join();
  waiters.clear();  // joins

  EXPECT_EQ(syncs.load(), 1 + kWaiters);  // every request synced
  EXPECT_EQ(batcher.batches(), 2u);       // in two rounds
}

TEST(SyncBatcherTest, ARequestIsNeverAnsweredByASyncThatStartedBeforeIt) {
  // The sync in progress when a request arrives may have missed the
  // caller's writes: the request must get a sync of its own.
  Gate gate;
  std::atomic<int> syncs{0};
  std::atomic<int> second_request_synced{0};
  SyncBatcher batcher([&](int fd, SyncBatcher::Kind) {
    if (syncs.fetch_add(1) == 0) gate.Wait();
    if (fd == 2) ++second_request_synced;
    return 0;
  });
  std::jthread first([&] { EXPECT_TRUE(batcher.SyncData(1, "first").ok()); });
  WaitFor([&] { return syncs.load() == 1; });
  std::atomic<bool> second_done{false};
  std::jthread second([&] {
    EXPECT_TRUE(batcher.SyncData(2, "second").ok());
    second_done = true;
  });
  WaitFor([&] { return batcher.pending() == 1; });
  EXPECT_FALSE(second_done.load());
  gate.Open();
  second.join();
  EXPECT_EQ(second_request_synced.load(), 1);
}

TEST(SyncBatcherTest, ErrorsGoToTheRequestThatFailedAndNameIt) {
  SyncBatcher batcher([](int fd, SyncBatcher::Kind) { return fd == 7 ? EIO : 0; });
  EXPECT_TRUE(batcher.SyncData(3, "put good").ok());
  Status bad = batcher.SyncData(7, "put bad");
  EXPECT_EQ(bad.code(), StatusCode::kIoError) << bad.ToString();
  EXPECT_NE(bad.ToString().find("put bad"), std::string::npos) << bad.ToString();
}

TEST(SyncBatcherTest, DirectoriesAreOpenedAndFsynced) {
  TempDir dir;
  std::vector<SyncBatcher::Kind> kinds;
  std::vector<bool> were_dirs;
  SyncBatcher batcher([&](int fd, SyncBatcher::Kind kind) {
    struct stat st;
    were_dirs.push_back(::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode));
    kinds.push_back(kind);
    return 0;
  });
  ASSERT_TRUE(batcher.SyncDirectory(dir.path(), "dir").ok());
  ASSERT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds[0], SyncBatcher::Kind::kDirectory);
  EXPECT_TRUE(were_dirs[0]);
  EXPECT_FALSE(batcher.SyncDirectory(dir.path() + "/missing", "gone").ok());
}

// What a recording syncer saw at the moment of one sync.
struct SyncEvent {
  SyncBatcher::Kind kind;
  std::string path;               // what the fd named then
  std::string content;            // kData: the file's bytes
  std::set<std::string> entries;  // kDirectory: the names it held
  bool object_visible = false;    // kData: whether the key's file existed
};

std::string PathOfFd(int fd) {
  std::error_code ec;
  return fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
}

class RecordingStore {
 public:
  explicit RecordingStore(const std::string& root) {
    LocalObjectStoreOptions options;
    options.sync = [this](int fd, SyncBatcher::Kind kind) { return Record(fd, kind); };
    auto opened = LocalObjectStore::Open(root, options);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
  }

  LocalObjectStore& store() { return *store_; }
  void WatchKey(const std::string& key) { watched_path_ = store_->PathOf(key); }
  std::vector<SyncEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  void FailDataSyncs() { fail_data_ = true; }

 private:
  int Record(int fd, SyncBatcher::Kind kind) {
    SyncEvent e{kind, PathOfFd(fd), {}, {}, false};
    if (kind == SyncBatcher::Kind::kData) {
      // The store's fd is write-only: read the file through its path.
      std::ifstream in(e.path, std::ios::binary);
      e.content.assign(std::istreambuf_iterator<char>(in), {});
      e.object_visible = !watched_path_.empty() && fs::exists(watched_path_);
    } else {
      for (const auto& entry : fs::directory_iterator(e.path)) {
        e.entries.insert(entry.path().filename().string());
      }
    }
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
    return kind == SyncBatcher::Kind::kData && fail_data_ ? EIO : 0;
  }

  std::unique_ptr<LocalObjectStore> store_;
  std::string watched_path_;
  std::atomic<bool> fail_data_{false};
  std::mutex mu_;
  std::vector<SyncEvent> events_;
};

TEST(LocalObjectStoreSyncTest, DataIsSyncedBeforeTheRenameAndDirectoriesAfter) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.WatchKey("chunks/ab/abc");
  ASSERT_TRUE(rec.store().Put("chunks/ab/abc", Bytes("payload")).ok());

  const std::vector<SyncEvent> events = rec.events();
  const std::string objects = dir.path() + "/objects";
  // 1. the temp file, complete, while the key is not yet visible;
  ASSERT_GE(events.size(), 1u);
  EXPECT_EQ(events[0].kind, SyncBatcher::Kind::kData);
  EXPECT_TRUE(events[0].path.starts_with(dir.path() + "/tmp/")) << events[0].path;
  EXPECT_EQ(events[0].content, "payload");
  EXPECT_FALSE(events[0].object_visible);
  // 2. each directory that had to be created, synced in its parent after
  // the mkdir, and finally the object's own directory holding the new name.
  auto synced_holding = [&](const std::string& path, const std::string& name) {
    for (size_t i = 1; i < events.size(); ++i) {
      if (events[i].kind == SyncBatcher::Kind::kDirectory && events[i].path == path &&
          events[i].entries.count(name)) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(synced_holding(objects, "chunks"));
  EXPECT_TRUE(synced_holding(objects + "/chunks", "ab"));
  EXPECT_TRUE(synced_holding(objects + "/chunks/ab", "abc"));
  EXPECT_EQ(events.back().path, objects + "/chunks/ab");

  // Overwriting an existing key: same order, no directories to create.
  const size_t before = events.size();
  ASSERT_TRUE(rec.store().Put("chunks/ab/abc", Bytes("second")).ok());
  const std::vector<SyncEvent> more = rec.events();
  ASSERT_EQ(more.size(), before + 2);
  EXPECT_EQ(more[before].kind, SyncBatcher::Kind::kData);
  EXPECT_EQ(more[before].content, "second");
  EXPECT_EQ(more[before + 1].kind, SyncBatcher::Kind::kDirectory);
  EXPECT_EQ(more[before + 1].path, objects + "/chunks/ab");
}

TEST(LocalObjectStoreSyncTest, AFailedDataSyncFailsThePutAndStoresNothing) {
  TempDir dir;
  RecordingStore rec(dir.path());
  rec.FailDataSyncs();
  Status s = rec.store().Put("k", Bytes("never durable"));
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_NE(s.ToString().find("put k"), std::string::npos) << s.ToString();
  EXPECT_EQ(rec.store().Head("k").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(fs::is_empty(dir.path() + "/tmp"));
}

TEST(LocalObjectStoreSyncTest, ConcurrentPutsShareSyncsAndAllLand) {
  TempDir dir;
  std::atomic<int> syncs{0};
  LocalObjectStoreOptions options;
  options.sync = [&](int, SyncBatcher::Kind) {
    ++syncs;
    // A slow device: barriers pile up behind the one in progress.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 0;
  };
  auto store = LocalObjectStore::Open(dir.path(), options);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Put("d/seed", Bytes("x")).ok());  // creates d/
  const int before = syncs.load();

  constexpr int kThreads = 16;
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        EXPECT_TRUE((*store)->Put("d/" + std::to_string(i), Bytes(std::to_string(i))).ok());
      });
    }
  }
  for (int i = 0; i < kThreads; ++i) {
    auto got = (*store)->Get("d/" + std::to_string(i));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->view(), std::to_string(i));
  }
  // Every file's data was synced; the shared directory once per batch.
  const int used = syncs.load() - before;
  EXPECT_GE(used, kThreads + 1);
  EXPECT_LT(used, 2 * kThreads);
}

}  // namespace
}  // namespace geofs::object
