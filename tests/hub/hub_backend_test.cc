#include "hub/hub_backend.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <set>
#include <thread>

#include "hub/chunk_ids.h"
#include "hub_test_util.h"

namespace geofs::hub {
namespace {

using testing::Await;
using testing::MemoryHub;
using testing::RandomBytes;

constexpr size_t kMiB = 1 << 20;

vfs::Credentials Root() { return {}; }
vfs::Credentials User(uint32_t uid) { return vfs::Credentials{uid, uid, {}}; }

class HubBackendTest : public ::testing::Test {
 protected:
  HubBackendTest() { Start(); }

  static HubBackendOptions Options() {
    HubBackendOptions o;
    o.dirty_expire = std::chrono::milliseconds(0);  // no background flushes
    return o;
  }
  void Start(HubBackendOptions options = Options()) {
    backend_.reset();
    backend_ = std::make_unique<HubBackend>(&hub_.ns(), &hub_.chunks(), options);
  }
  // A process crash: buffered writes are lost, committed ones stay.
  void Crash(HubBackendOptions options = Options()) { Start(options); }

  vfs::Handle Create(const std::string& name, uint32_t mode = 0644,
                     vfs::Credentials cred = Root()) {
    vfs::CreateRequest req;
    req.attrs.mode = mode;
    auto r = Await<vfs::CreateReply>(
        [&](auto cb) { backend_->Create(cred, hub_.ns().RootHandle(), name, req, cb); });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->object.handle : vfs::Handle();
  }
  Result<vfs::WriteReply> Write(const vfs::Handle& h, uint64_t offset, const std::string& data,
                                vfs::Stability stability = vfs::Stability::kUnstable,
                                vfs::Credentials cred = Root()) {
    return Await<vfs::WriteReply>(
        [&](auto cb) { backend_->Write(cred, h, offset, Buffer::CopyOf(data), stability, cb); });
  }
  // Writes `data` at `offset` in 1 MiB UNSTABLE writes, like an NFS client.
  void WriteStream(const vfs::Handle& h, uint64_t offset, const std::string& data) {
    for (size_t at = 0; at < data.size(); at += kMiB) {
      auto r = Write(h, offset + at, data.substr(at, kMiB));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }
  Status Commit(const vfs::Handle& h) {
    return Await<vfs::Wcc>([&](auto cb) { backend_->Commit(Root(), h, 0, 0, cb); }).status();
  }
  Result<vfs::Attr> GetAttr(const vfs::Handle& h) {
    return Await<vfs::Attr>([&](auto cb) { backend_->GetAttr(Root(), h, cb); });
  }
  Result<vfs::ReadReply> Read(const vfs::Handle& h, uint64_t offset, uint32_t count) {
    return Await<vfs::ReadReply>([&](auto cb) { backend_->Read(Root(), h, offset, count, cb); });
  }
  // The whole file, read in 1 MiB READs until EOF.
  Result<std::string> ReadAll(const vfs::Handle& h) {
    std::string out;
    for (;;) {
      auto r = Read(h, out.size(), kMiB);
      if (!r.ok()) return r.status();
      out.append(r->data.view());
      if (r->eof) return out;
      if (r->data.empty()) return Status::Internal("empty read before EOF");
    }
  }
  Result<vfs::Wcc> Truncate(const vfs::Handle& h, uint64_t size) {
    vfs::SetAttrs attrs;
    attrs.size = size;
    return Await<vfs::Wcc>([&](auto cb) { backend_->SetAttr(Root(), h, attrs, std::nullopt, cb); });
  }
  // What the namespace has committed, ignoring anything buffered.
  meta::ChunkMap Committed(const vfs::Handle& h) {
    auto map = hub_.ns().GetChunkMap(Root(), h, 0, UINT64_MAX);
    EXPECT_TRUE(map.ok()) << map.status().ToString();
    return map.ok() ? *map : meta::ChunkMap{};
  }

  MemoryHub hub_;
  std::unique_ptr<HubBackend> backend_;
};

TEST_F(HubBackendTest, FsStatWithholdsTheSpaceKeptFreeForTheNamespace) {
  const std::string dir = ::testing::TempDir();
  struct statvfs fs;
  ASSERT_EQ(::statvfs(dir.c_str(), &fs), 0);
  const uint64_t total = uint64_t{fs.f_blocks} * fs.f_frsize;
  auto fsstat_with = [&](const SpaceSource& space) {
    HubBackendOptions options = Options();
    options.space = space;
    Start(options);
    return Await<vfs::FsStats>(
        [&](auto cb) { backend_->FsStat(Root(), hub_.ns().RootHandle(), cb); });
  };
  auto plain = fsstat_with({.statfs_path = dir});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->total_bytes, total);
  EXPECT_GT(plain->avail_bytes, 0u);
  // A reserve as large as the file system: nothing is left to report.
  auto kept = fsstat_with({.statfs_path = dir, .keep_free_bytes = total});
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->total_bytes, total);
  EXPECT_EQ(kept->avail_bytes, 0u);
  EXPECT_EQ(kept->free_bytes, 0u);
}

TEST_F(HubBackendTest, UnstableWritesAreVisibleAtOnceButCommittedOnlyByCommit) {
  vfs::Handle h = Create("f");
  auto w = Write(h, 0, "hello world");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->committed, vfs::Stability::kUnstable);
  EXPECT_EQ(w->count, 11u);
  ASSERT_TRUE(w->wcc.before && w->wcc.after);
  EXPECT_EQ(w->wcc.before->size, 0u);
  EXPECT_EQ(w->wcc.after->size, 11u);

  EXPECT_EQ(GetAttr(h)->size, 11u);
  EXPECT_EQ(*ReadAll(h), "hello world");
  EXPECT_EQ(Committed(h).attr.size, 0u);
  EXPECT_GT(backend_->dirty_bytes(), 0u);

  ASSERT_TRUE(Commit(h).ok());
  EXPECT_EQ(backend_->dirty_bytes(), 0u);
  EXPECT_EQ(Committed(h).attr.size, 11u);
  Crash();
  EXPECT_EQ(*ReadAll(h), "hello world");
}

TEST_F(HubBackendTest, UnflushedWritesAreLostInACrashCommittedOnesAreNot) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "committed").ok());
  ASSERT_TRUE(Commit(h).ok());
  ASSERT_TRUE(Write(h, 0, "UNSTABLE!").ok());
  EXPECT_EQ(*ReadAll(h), "UNSTABLE!");
  Crash();
  EXPECT_EQ(*ReadAll(h), "committed");
}

TEST_F(HubBackendTest, FileSyncWritesAreDurableWhenAnswered) {
  vfs::Handle h = Create("f");
  for (auto stability : {vfs::Stability::kFileSync, vfs::Stability::kDataSync}) {
    auto w = Write(h, 0, "durable " + std::to_string(static_cast<int>(stability)), stability);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(w->committed, vfs::Stability::kFileSync);
    EXPECT_EQ(w->wcc.after->size, 9u);
    Crash();
    EXPECT_EQ(*ReadAll(h), "durable " + std::to_string(static_cast<int>(stability)));
  }
}

TEST_F(HubBackendTest, OverwritingTheMiddleOfALargeFileReChunksOnlyAroundTheEdit) {
  vfs::Handle h = Create("f");
  const std::string data = RandomBytes(24 * kMiB, 1);
  WriteStream(h, 0, data);
  ASSERT_TRUE(Commit(h).ok());
  const meta::ChunkMap before = Committed(h);
  ASSERT_GT(before.extents.size(), 8u);
  const uint64_t stored_before = hub_.StoredBytes();

  std::string edited = data;
  edited.replace(12 * kMiB, 5, "EDIT!");
  ASSERT_TRUE(Write(h, 12 * kMiB, "EDIT!").ok());
  EXPECT_EQ(*ReadAll(h), edited);  // buffered, over the committed chunks
  ASSERT_TRUE(Commit(h).ok());
  EXPECT_EQ(*ReadAll(h), edited);

  const meta::ChunkMap after = Committed(h);
  std::set<meta::ChunkId> old_ids;
  for (const auto& e : before.extents) old_ids.insert(e.chunk);
  size_t new_chunks = 0;
  for (const auto& e : after.extents) new_chunks += !old_ids.count(e.chunk);
  EXPECT_GE(new_chunks, 1u);
  EXPECT_LE(new_chunks, 2u);
  EXPECT_LE(hub_.StoredBytes() - stored_before, 2 * Options().chunker.max_size);
  Crash();
  EXPECT_EQ(*ReadAll(h), edited);
}

TEST_F(HubBackendTest, InsertingOneByteAtTheFrontOf100MiBStoresAtMostTwoChunks) {
  vfs::Handle h = Create("big");
  const std::string data = RandomBytes(100 * kMiB, 2);
  WriteStream(h, 0, data);
  ASSERT_TRUE(Commit(h).ok());
  const uint64_t stored_before = hub_.StoredBytes();
  const size_t objects_before = hub_.objects().object_count();

  // An editor rewrites the file with one byte more at the front (more than
  // the per-file buffer bound, so flushes happen mid-stream too).
  const std::string edited = "!" + data;
  WriteStream(h, 0, edited);
  ASSERT_TRUE(Commit(h).ok());

  EXPECT_LE(hub_.objects().object_count() - objects_before, 2u);
  EXPECT_LE(hub_.StoredBytes() - stored_before, 2 * Options().chunker.max_size);
  auto stats = hub_.ns().Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->logical_bytes, edited.size());
  Crash();
  auto back = ReadAll(h);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == edited) << "content differs after the rewrite";
}

TEST_F(HubBackendTest, SparseFilesStoreOnlyWrittenBytesAndReadHolesAsZeros) {
  vfs::Handle h = Create("sparse");
  const uint64_t offset = 10 * kMiB;
  ASSERT_TRUE(Write(h, offset, "tail").ok());
  auto attr = GetAttr(h);
  EXPECT_EQ(attr->size, offset + 4);
  auto hole = Read(h, 5 * kMiB, 16);
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(hole->data.view(), std::string(16, '\0'));
  ASSERT_TRUE(Commit(h).ok());

  const meta::ChunkMap map = Committed(h);
  ASSERT_EQ(map.extents.size(), 1u);
  EXPECT_EQ(map.extents[0].offset, offset);
  EXPECT_EQ(map.extents[0].length, 4u);
  EXPECT_EQ(map.attr.size, offset + 4);
  auto all = ReadAll(h);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, std::string(offset, '\0') + "tail");
  EXPECT_LT(hub_.StoredBytes(), 1024u);
}

TEST_F(HubBackendTest, TruncateCommitsBufferedWritesFirst) {
  vfs::Handle h = Create("f");
  const std::string data = RandomBytes(3 * kMiB, 3);
  WriteStream(h, 0, data);  // buffered only
  auto wcc = Truncate(h, 1000);
  ASSERT_TRUE(wcc.ok()) << wcc.status().ToString();
  EXPECT_EQ(wcc->after->size, 1000u);
  EXPECT_EQ(*ReadAll(h), data.substr(0, 1000));
  // Growing again reads zeros past the old end.
  ASSERT_TRUE(Truncate(h, 1500).ok());
  EXPECT_EQ(*ReadAll(h), data.substr(0, 1000) + std::string(500, '\0'));
  Crash();
  EXPECT_EQ(*ReadAll(h), data.substr(0, 1000) + std::string(500, '\0'));
}

TEST_F(HubBackendTest, CreateWithTruncationCommitsBufferedWritesFirst) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "old contents").ok());
  vfs::CreateRequest req;
  req.attrs.size = 0;  // open(O_CREAT | O_TRUNC)
  auto created = Await<vfs::CreateReply>(
      [&](auto cb) { backend_->Create(Root(), hub_.ns().RootHandle(), "f", req, cb); });
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->object.handle, h);
  EXPECT_EQ(GetAttr(h)->size, 0u);
  EXPECT_EQ(*ReadAll(h), "");
}

TEST_F(HubBackendTest, ConcurrentWritersToDifferentFiles) {
  constexpr int kFiles = 4;
  std::vector<vfs::Handle> handles;
  std::vector<std::string> contents;
  for (int i = 0; i < kFiles; ++i) {
    handles.push_back(Create("f" + std::to_string(i)));
    contents.push_back(RandomBytes(6 * kMiB + 1234 * i, 10 + i));
  }
  std::vector<std::jthread> writers;
  std::atomic<int> failures{0};
  for (int i = 0; i < kFiles; ++i) {
    writers.emplace_back([&, i] {
      constexpr size_t kWrite = 64 << 10;
      for (size_t at = 0; at < contents[i].size(); at += kWrite) {
        if (!Write(handles[i], at, contents[i].substr(at, kWrite)).ok()) ++failures;
      }
      if (!Commit(handles[i]).ok()) ++failures;
    });
  }
  writers.clear();
  EXPECT_EQ(failures, 0);
  Crash();
  for (int i = 0; i < kFiles; ++i) {
    auto back = ReadAll(handles[i]);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == contents[i]) << "file " << i;
  }
  auto problems = hub_.ns().Fsck();
  ASSERT_TRUE(problems.ok());
  EXPECT_TRUE(problems->empty()) << problems->front();
}

TEST_F(HubBackendTest, ConcurrentWritersToOneFileWhileItFlushes) {
  HubBackendOptions options = Options();
  options.max_dirty_bytes_per_file = 2 * kMiB;  // flushes while others write
  Start(options);
  vfs::Handle h = Create("shared");
  constexpr int kWriters = 4;
  constexpr size_t kPart = 3 * kMiB;
  const std::string data = RandomBytes(kWriters * kPart, 4);
  std::vector<std::jthread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      for (size_t at = 0; at < kPart; at += 256 << 10) {
        const size_t off = i * kPart + at;
        EXPECT_TRUE(Write(h, off, data.substr(off, 256 << 10)).ok());
      }
    });
  }
  writers.clear();
  EXPECT_EQ(*ReadAll(h), data);
  ASSERT_TRUE(Commit(h).ok());
  Crash();
  EXPECT_EQ(*ReadAll(h), data);
}

TEST_F(HubBackendTest, BufferedWritesLandOnWhatOthersCommittedMeanwhile) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "aaaaaaaaaa", vfs::Stability::kFileSync).ok());
  ASSERT_TRUE(Write(h, 2, "BB").ok());  // buffered against version v
  // Another writer (a gRPC client) commits a new version meanwhile.
  vfs::SetAttrs grow;
  grow.size = 12;
  ASSERT_TRUE(hub_.ns().SetAttr(Root(), h, grow, std::nullopt).ok());
  ASSERT_TRUE(Commit(h).ok());
  EXPECT_EQ(*ReadAll(h), std::string("aaBBaaaaaa\0\0", 12));
}

TEST_F(HubBackendTest, BackgroundFlusherCommitsOldBufferedData) {
  HubBackendOptions options = Options();
  options.dirty_expire = std::chrono::milliseconds(50);
  Start(options);
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "eventually").ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Committed(h).attr.size != 10 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Committed(h).attr.size, 10u);
  EXPECT_EQ(backend_->dirty_bytes(), 0u);
}

TEST_F(HubBackendTest, FlushAllCommitsEveryFile) {
  vfs::Handle a = Create("a");
  vfs::Handle b = Create("b");
  ASSERT_TRUE(Write(a, 0, "AAA").ok());
  ASSERT_TRUE(Write(b, 5, "BBB").ok());
  ASSERT_TRUE(backend_->FlushAll().ok());
  Crash();
  EXPECT_EQ(*ReadAll(a), "AAA");
  EXPECT_EQ(*ReadAll(b), std::string(5, '\0') + "BBB");
}

TEST_F(HubBackendTest, SequentialReadsOfOneChunkFetchItOnce) {
  vfs::Handle h = Create("f");
  const std::string data = RandomBytes(16 * kMiB, 5);
  WriteStream(h, 0, data);
  ASSERT_TRUE(Commit(h).ok());
  Crash();  // an empty cache
  ASSERT_EQ(*ReadAll(h), data);
  EXPECT_EQ(backend_->chunk_cache().misses(), Committed(h).extents.size());
  EXPECT_GT(backend_->chunk_cache().hits(), 0u);
}

TEST_F(HubBackendTest, CorruptChunksAreNeverServed) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, RandomBytes(100000, 6), vfs::Stability::kFileSync).ok());
  const meta::ChunkMap map = Committed(h);
  ASSERT_EQ(map.extents.size(), 1u);
  const std::string key = ToChunkId(map.extents[0].chunk).ObjectKey();
  ASSERT_TRUE(hub_.objects().CorruptForTesting(key, 5000, 0x5a).ok());
  Crash();
  auto r = Read(h, 0, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  // A write next to it needs the chunk too: refused, nothing committed.
  EXPECT_FALSE(Write(h, 10, "x", vfs::Stability::kFileSync).ok());
  EXPECT_EQ(Committed(h).version, map.version);
}

TEST_F(HubBackendTest, MissingChunksAreIoErrorsNotMissingFiles) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "data", vfs::Stability::kFileSync).ok());
  const meta::ChunkMap map = Committed(h);
  ASSERT_TRUE(hub_.chunks().Delete(ToChunkId(map.extents[0].chunk)).ok());
  Crash();
  auto r = Read(h, 0, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError) << r.status().ToString();
}

TEST_F(HubBackendTest, WritesCheckPermissionsAndObjects) {
  vfs::Handle h = Create("ro", 0644);
  auto denied = Write(h, 0, "x", vfs::Stability::kUnstable, User(1000));
  EXPECT_EQ(denied.status().code(), StatusCode::kAccessDenied);
  EXPECT_EQ(GetAttr(h)->size, 0u);

  auto dir = Await<vfs::CreateReply>(
      [&](auto cb) { backend_->Mkdir(Root(), hub_.ns().RootHandle(), "d", vfs::SetAttrs{}, cb); });
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(Write(dir->object.handle, 0, "x").status().code(), StatusCode::kIsDirectory);
  EXPECT_EQ(Write(h, UINT64_MAX - 1, "xyz").status().code(), StatusCode::kFileTooLarge);
}

TEST_F(HubBackendTest, BufferedWritesOfARemovedFileAreDropped) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "doomed").ok());
  auto removed =
      Await<vfs::Wcc>([&](auto cb) { backend_->Remove(Root(), hub_.ns().RootHandle(), "f", cb); });
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(Commit(h).code(), StatusCode::kStale);
  EXPECT_TRUE(backend_->FlushAll().ok());
  EXPECT_EQ(backend_->dirty_bytes(), 0u);
}

TEST_F(HubBackendTest, ListingsAndLookupsSeeBufferedSizes) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "12345").ok());
  auto looked = Await<vfs::LookupReply>(
      [&](auto cb) { backend_->Lookup(Root(), hub_.ns().RootHandle(), "f", cb); });
  ASSERT_TRUE(looked.ok());
  EXPECT_EQ(looked->object.attr.size, 5u);
  vfs::ReadDirRequest req;
  req.max_entries = 100;
  req.with_attrs = true;
  auto page = Await<vfs::DirPage>(
      [&](auto cb) { backend_->ReadDir(Root(), hub_.ns().RootHandle(), req, cb); });
  ASSERT_TRUE(page.ok());
  bool found = false;
  for (const auto& e : page->entries) {
    if (e.name == "f") {
      found = true;
      ASSERT_TRUE(e.entry);
      EXPECT_EQ(e.entry->attr.size, 5u);
    }
  }
  EXPECT_TRUE(found);
  auto fs = Await<vfs::FsStats>([&](auto cb) { backend_->FsStat(Root(), h, cb); });
  ASSERT_TRUE(fs.ok());
  EXPECT_GT(fs->avail_bytes, 0u);
  EXPECT_EQ(fs->attr->size, 5u);
}

}  // namespace
}  // namespace geofs::hub
