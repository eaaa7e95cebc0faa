// Tests specific to LocalBackend: what the conformance suite cannot see
// (handles across instances, containment, the descriptor cache, the files
// on disk).

#include "vfs/local_backend.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tools/temp_dir.h"
#include "vfs/page_cache.h"
#include "vfs/sync_backend.h"

namespace geofs::vfs {
namespace {

using testutil::TempDir;

const Credentials kRoot{0, 0, {}};
const Credentials kUser{1000, 1000, {}};

namespace fsys = std::filesystem;

class LocalBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    export_dir = tmp.path() + "/export";
    outside_dir = tmp.path() + "/outside";
    fsys::create_directory(export_dir);
    fsys::create_directory(outside_dir);
    Reopen();
  }

  void Reopen(LocalBackendOptions options = {}) {
    backend.reset();
    auto opened = LocalBackend::Open(export_dir, options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    backend = std::move(opened).value();
    fs = SyncBackend(backend.get());
    root = *backend->Root();
  }

  Entry MakeFile(const Handle& dir, const std::string& name, std::string_view data = "") {
    CreateRequest req;
    req.mode = CreateMode::kGuarded;
    req.attrs.mode = 0644;
    auto r = fs.Create(kRoot, dir, name, req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return {};
    if (!data.empty()) {
      EXPECT_TRUE(fs.Write(kRoot, r->object.handle, 0, data).ok());
    }
    return r->object;
  }

  // A backend handle for any path, made the way LocalBackend makes them.
  static Handle RawHandle(const std::string& path) {
    struct {
      file_handle fh;
      unsigned char room[128];
    } h;
    h.fh.handle_bytes = sizeof(h.room);
    int mount_id;
    EXPECT_EQ(::name_to_handle_at(AT_FDCWD, path.c_str(), &h.fh, &mount_id, 0), 0) << path;
    std::vector<uint8_t> bytes(4);
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<uint8_t>(h.fh.handle_type >> (24 - 8 * i));
    bytes.insert(bytes.end(), h.fh.f_handle, h.fh.f_handle + h.fh.handle_bytes);
    return Handle(bytes);
  }

  static size_t OpenDescriptors() {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fsys::directory_iterator("/proc/self/fd")) ++n;
    return n;
  }

  TempDir tmp;
  std::string export_dir, outside_dir;
  std::unique_ptr<LocalBackend> backend;
  SyncBackend fs;
  Handle root;
};

TEST_F(LocalBackendTest, OpenRejectsWhatIsNotADirectory) {
  EXPECT_EQ(LocalBackend::Open(tmp.path() + "/missing").status().code(), StatusCode::kNotFound);
  std::ofstream(tmp.path() + "/file") << "x";
  EXPECT_EQ(LocalBackend::Open(tmp.path() + "/file").status().code(), StatusCode::kNotDirectory);
}

TEST_F(LocalBackendTest, HandlesAreLinuxFileHandlesThatSurviveANewInstance) {
  Entry d = fs.Mkdir(kRoot, root, "d", {})->object;
  Entry f = MakeFile(d.handle, "f", "persistent");
  EXPECT_EQ(f.handle, RawHandle(export_dir + "/d/f"));
  EXPECT_EQ(root, RawHandle(export_dir));
  EXPECT_LE(f.handle.size(), kMaxHandleBytes);

  Reopen();
  auto attr = fs.GetAttr(kRoot, f.handle);
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  EXPECT_EQ(attr->fileid, f.attr.fileid);
  auto data = fs.Read(kRoot, f.handle, 0, 100);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->data.view(), "persistent");
  auto parent = fs.LookupParent(kRoot, d.handle);
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(parent->object.handle, root);
}

TEST_F(LocalBackendTest, LargeReadsOfCachedDataAreFileRangesSmallOnesAreCopied) {
  std::string content(256 * 1024, 'x');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>('a' + i % 23);
  Entry f = MakeFile(root, "f", content);  // just written: in the page cache

  auto big = fs.ReadRaw(kRoot, f.handle, 1000, 128 * 1024);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  ASSERT_TRUE(big->file.has_value());
  EXPECT_TRUE(big->data.empty());
  EXPECT_EQ(big->file->offset, 1000u);
  EXPECT_EQ(big->file->length, 128u * 1024);
  EXPECT_FALSE(big->eof);
  std::vector<uint8_t> sent;
  AppendFileRange(*big->file, sent);
  EXPECT_EQ(std::string(sent.begin(), sent.end()), content.substr(1000, 128 * 1024));

  auto tail = fs.ReadRaw(kRoot, f.handle, content.size() - 64 * 1024, 1 << 20);
  ASSERT_TRUE(tail.ok() && tail->file.has_value());
  EXPECT_EQ(tail->file->length, 64u * 1024);  // clipped at the end of the file
  EXPECT_TRUE(tail->eof);

  auto small = fs.ReadRaw(kRoot, f.handle, 0, 4096);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->file.has_value());
  EXPECT_EQ(small->data.view(), content.substr(0, 4096));

  // Data not in the page cache is read on the worker, never handed to the
  // network thread to wait on.
  int fd = ::open((export_dir + "/f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fdatasync(fd), 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
  auto cold = fs.ReadRaw(kRoot, f.handle, 0, 128 * 1024);
  ASSERT_TRUE(cold.ok());
  EXPECT_FALSE(cold->file.has_value());
  EXPECT_EQ(cold->data.view(), content.substr(0, 128 * 1024));
}

TEST_F(LocalBackendTest, CachedReadsAnswerInlineMissesFromTheReadThreads) {
  EXPECT_TRUE(backend->QuickReads());
  std::string content(64 * 1024, 'q');
  Entry f = MakeFile(root, "f", content);

  // Cached: the callback has run before Read returns, on this thread.
  for (uint32_t count : {4096u, 40000u}) {
    bool called = false;
    std::thread::id caller;
    backend->Read(kRoot, f.handle, 0, count, [&](Result<ReadReply> r) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      called = true;
      caller = std::this_thread::get_id();
    });
    EXPECT_TRUE(called) << count;
    EXPECT_EQ(caller, std::this_thread::get_id()) << count;
  }

  // Not cached: a read thread reads it, and the bytes are right. Eviction is
  // only a hint (pages another CPU still holds are skipped), so evict until
  // the page cache says the range is gone.
  {
    int fd = ::open((export_dir + "/f").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fdatasync(fd), 0);
    bool evicted = false;
    for (int attempt = 0; attempt < 200 && !evicted; ++attempt) {
      ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
      // cachestat, not a probing read: a read that misses starts readahead.
      evicted = !RangeInPageCache(fd, 0, 4096) && !RangeInPageCache(fd, 4096, 4096);
      if (!evicted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(fd);
    ASSERT_TRUE(evicted) << "the test could not evict its file from the page cache";
  }
  std::promise<std::pair<std::thread::id, std::string>> done;
  backend->Read(kRoot, f.handle, 100, 4096, [&](Result<ReadReply> r) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    done.set_value({std::this_thread::get_id(), std::string(r->data.view())});
  });
  // Usually a read thread answers; not always: the non-blocking attempt
  // starts readahead, and a fast enough device completes it before the
  // attempt gives up. Either way the bytes must be right.
  const std::string bytes = done.get_future().get().second;
  EXPECT_EQ(bytes, content.substr(100, 4096));

  // Without read threads, Read is not quick and always answers inline.
  LocalBackendOptions blocking;
  blocking.read_threads = 0;
  Reopen(blocking);
  EXPECT_FALSE(backend->QuickReads());
  bool called = false;
  backend->Read(kRoot, f.handle, 0, 10, [&](Result<ReadReply> r) { called = r.ok(); });
  EXPECT_TRUE(called);
}

TEST_F(LocalBackendTest, ObjectsRemovedBehindTheBacksHandleAreStale) {
  Entry f = MakeFile(root, "f", "data");
  ASSERT_TRUE(fs.Read(kRoot, f.handle, 0, 4).ok());  // its descriptor is cached now
  fsys::remove(export_dir + "/f");
  EXPECT_EQ(fs.GetAttr(kRoot, f.handle).status().code(), StatusCode::kStale);
  EXPECT_EQ(fs.Read(kRoot, f.handle, 0, 4).status().code(), StatusCode::kStale);
  Reopen();
  EXPECT_EQ(fs.GetAttr(kRoot, f.handle).status().code(), StatusCode::kStale);
}

TEST_F(LocalBackendTest, HandlesOfObjectsOutsideTheExportAreRefused) {
  std::ofstream(outside_dir + "/secret") << "top secret";
  fsys::create_directory(outside_dir + "/dir");
  for (const std::string& path :
       {outside_dir + "/secret", outside_dir + "/dir", outside_dir, tmp.path()}) {
    auto r = fs.GetAttr(kRoot, RawHandle(path));
    EXPECT_EQ(r.status().code(), StatusCode::kStale) << path;
    EXPECT_FALSE(fs.Read(kRoot, RawHandle(path), 0, 100).ok()) << path;
  }
  // The root's parent is not reachable through "..".
  auto parent = fs.LookupParent(kRoot, root);
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(parent->object.handle, root);
  ReadDirRequest req;
  req.max_entries = 10;
  req.with_attrs = true;
  auto page = fs.ReadDir(kRoot, root, req);
  ASSERT_TRUE(page.ok());
  int dotdots = 0;
  for (const auto& e : page->entries) {
    if (e.name != "..") continue;
    ++dotdots;
    EXPECT_EQ(e.entry->handle, root);
  }
  EXPECT_EQ(dotdots, 1);
}

TEST_F(LocalBackendTest, DescriptorCacheStaysWithinItsBound) {
  LocalBackendOptions options;
  options.max_open_files = 8;
  Reopen(options);
  std::vector<Entry> files;
  for (int i = 0; i < 30; ++i) files.push_back(MakeFile(root, "f" + std::to_string(i), "x"));
  const size_t before = OpenDescriptors();
  for (int round = 0; round < 2; ++round) {
    for (const auto& f : files) {
      auto r = fs.Read(kUser, f.handle, 0, 10);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->data.view(), "x");
      EXPECT_LE(backend->CachedFileCount(), 8u);
    }
  }
  EXPECT_LE(OpenDescriptors(), before + 8);
  EXPECT_GT(backend->CachedFileCount(), 0u);
}

TEST_F(LocalBackendTest, RemovingAFileReleasesItsCachedDescriptor) {
  Entry f = MakeFile(root, "big", std::string(1 << 20, 'x'));
  ASSERT_TRUE(fs.Read(kRoot, f.handle, 0, 10).ok());
  const size_t cached = backend->CachedFileCount();
  ASSERT_TRUE(fs.Remove(kRoot, root, "big").ok());
  EXPECT_EQ(backend->CachedFileCount(), cached - 1)
      << "a removed file's descriptor would keep its blocks allocated";
}

TEST_F(LocalBackendTest, ObjectsOnDiskBelongToTheCallerWithExactModes) {
  ASSERT_TRUE(fs.SetAttr(kRoot, root,
                         [] {
                           SetAttrs a;
                           a.mode = 0777;
                           return a;
                         }())
                  .ok());
  CreateRequest req;
  req.attrs.mode = 0666;
  ASSERT_TRUE(fs.Create(kUser, root, "f", req).ok());
  struct stat st;
  ASSERT_EQ(::stat((export_dir + "/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUser.uid);
  EXPECT_EQ(st.st_gid, kUser.gid);
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  ASSERT_TRUE(fs.Symlink(kUser, root, "s", "f").ok());
  ASSERT_EQ(::lstat((export_dir + "/s").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUser.uid);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(LocalBackendTest, ExclusiveCreateKeepsTheVerifierInTheTimes) {
  CreateRequest req;
  req.mode = CreateMode::kExclusive;
  req.verifier = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0};
  auto made = fs.Create(kRoot, root, "x", req);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->object.attr.mtime, (WallTime{0x12345678, 0}));
  EXPECT_EQ(made->object.attr.atime, (WallTime{0x9abcdef0, 0}));
  Reopen();
  auto replay = fs.Create(kRoot, root, "x", req);
  ASSERT_TRUE(replay.ok()) << "a replay after a server restart still matches";
  EXPECT_EQ(replay->object.handle, made->object.handle);
}

TEST_F(LocalBackendTest, ReadDirCookiesAreValidInANewInstance) {
  Entry target = MakeFile(root, "n0");
  for (int i = 1; i < 100; ++i) {
    ASSERT_TRUE(fs.Link(kRoot, target.handle, root, "n" + std::to_string(i)).ok());
  }
  ReadDirRequest req;
  req.max_entries = 40;
  auto first = fs.ReadDir(kRoot, root, req);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->entries.size(), 40u);
  Reopen();
  std::set<std::string> names;
  for (const auto& e : first->entries) names.insert(e.name);
  req.cookie = first->entries.back().cookie;
  req.verifier = first->verifier;
  req.max_entries = 1000;
  auto rest = fs.ReadDir(kRoot, root, req);
  ASSERT_TRUE(rest.ok());
  EXPECT_TRUE(rest->eof);
  for (const auto& e : rest->entries) EXPECT_TRUE(names.insert(e.name).second) << e.name;
  EXPECT_EQ(names.size(), 102u);
}

// The directory cache trusts a directory only once its last change is a
// little in the past (file times tick coarsely); tests wait that long.
void LetTheDirectorySettle() { std::this_thread::sleep_for(std::chrono::milliseconds(80)); }

// Every entry of `dir` (without "." and ".."), paging `per_page` at a time;
// fails the test on a duplicate.
std::map<std::string, DirEntry> ListAll(SyncBackend& fs, const Handle& dir, uint32_t per_page,
                                        bool with_attrs = true) {
  std::map<std::string, DirEntry> all;
  ReadDirRequest req;
  req.max_entries = per_page;
  req.with_attrs = with_attrs;
  for (int pages = 0; pages < 10000; ++pages) {
    auto page = fs.ReadDir(kRoot, dir, req);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) break;
    for (auto& e : page->entries) {
      if (e.name == "." || e.name == "..") continue;
      EXPECT_TRUE(all.emplace(e.name, e).second) << "listed twice: " << e.name;
    }
    if (page->eof) break;
    req.cookie = page->entries.back().cookie;
    req.verifier = page->verifier;
  }
  return all;
}

TEST_F(LocalBackendTest, CachedListingsFollowChangesMadeOnDisk) {
  for (int i = 0; i < 50; ++i) MakeFile(root, "f" + std::to_string(i));
  LetTheDirectorySettle();
  auto before = ListAll(fs, root, 1000);
  ASSERT_EQ(before.size(), 50u);
  EXPECT_GE(backend->CachedNameCount(), 50u) << "a settled directory is cached";
  EXPECT_EQ(ListAll(fs, root, 1000).size(), 50u);

  // A file created with plain open() appears in the next listing.
  int fd = ::open((export_dir + "/new").c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  auto with_new = ListAll(fs, root, 1000);
  ASSERT_TRUE(with_new.count("new"));
  struct stat st;
  ASSERT_EQ(::stat((export_dir + "/new").c_str(), &st), 0);
  ASSERT_TRUE(with_new["new"].entry.has_value());
  EXPECT_EQ(with_new["new"].entry->attr.fileid, st.st_ino);
  EXPECT_EQ(with_new["new"].entry->attr.mode, 0600u);

  // A removed one vanishes; a renamed one shows under its new name with the
  // handle it had, also when the listing was cached in between.
  LetTheDirectorySettle();
  ASSERT_EQ(ListAll(fs, root, 1000).size(), 51u);
  ASSERT_EQ(::unlink((export_dir + "/f3").c_str()), 0);
  ASSERT_EQ(::rename((export_dir + "/f4").c_str(), (export_dir + "/g4").c_str()), 0);
  auto after = ListAll(fs, root, 7);
  EXPECT_EQ(after.size(), 50u);
  EXPECT_FALSE(after.count("f3"));
  EXPECT_FALSE(after.count("f4"));
  ASSERT_TRUE(after.count("g4"));
  ASSERT_TRUE(after["g4"].entry.has_value());
  EXPECT_EQ(after["g4"].entry->handle, before["f4"].entry->handle);
  auto looked_up = fs.Lookup(kRoot, root, "g4");
  ASSERT_TRUE(looked_up.ok());
  EXPECT_EQ(looked_up->object.handle, before["f4"].entry->handle);
}

TEST_F(LocalBackendTest, PagedListingsStayCompleteWhileTheDirectoryChanges) {
  for (int i = 0; i < 300; ++i) MakeFile(root, "keep" + std::to_string(i));
  LetTheDirectorySettle();
  std::set<std::string> seen;
  ReadDirRequest req;
  req.max_entries = 17;
  req.with_attrs = true;
  int churn = 0;
  for (int pages = 0; pages < 1000; ++pages) {
    auto page = fs.ReadDir(kRoot, root, req);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const auto& e : page->entries) {
      if (e.name.starts_with("keep")) {
        EXPECT_TRUE(seen.insert(e.name).second) << e.name;
      }
    }
    if (page->eof) break;
    // Between pages: churn on disk and through the backend; every other page
    // lets the directory settle so the next one may come from the cache.
    const std::string tmp_name = export_dir + "/tmp" + std::to_string(churn++);
    int fd = ::open(tmp_name.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
    if (churn % 3 == 0) {
      ASSERT_EQ(::unlink(tmp_name.c_str()), 0);
    }
    MakeFile(root, "via" + std::to_string(churn));
    if (churn % 2 == 0) LetTheDirectorySettle();
    req.cookie = page->entries.back().cookie;
    req.verifier = page->verifier;
  }
  EXPECT_EQ(seen.size(), 300u) << "every entry that existed throughout is listed exactly once";
}

TEST_F(LocalBackendTest, LookupFollowsANameReplacedOnDisk) {
  Entry a = MakeFile(root, "a", "old");
  LetTheDirectorySettle();
  for (int i = 0; i < 2; ++i) {
    auto r = fs.Lookup(kRoot, root, "a");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->object.handle, a.handle);
  }
  ASSERT_EQ(::rename((export_dir + "/a").c_str(), (export_dir + "/b").c_str()), 0);
  int fd = ::open((export_dir + "/a").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "newer", 5), 5);
  ::close(fd);
  LetTheDirectorySettle();
  auto now_a = fs.Lookup(kRoot, root, "a");
  ASSERT_TRUE(now_a.ok());
  EXPECT_NE(now_a->object.handle, a.handle);
  EXPECT_EQ(now_a->object.attr.size, 5u);
  auto b = fs.Lookup(kRoot, root, "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->object.handle, a.handle);
  ASSERT_EQ(::unlink((export_dir + "/b").c_str()), 0);
  EXPECT_EQ(fs.Lookup(kRoot, root, "b").status().code(), StatusCode::kNotFound);
}

TEST_F(LocalBackendTest, RepeatedLookupsWithFewDescriptorsStayExact) {
  LocalBackendOptions options;
  options.max_open_files = 2;
  Reopen(options);
  std::vector<Entry> files;
  for (int i = 0; i < 10; ++i) {
    files.push_back(MakeFile(root, "f" + std::to_string(i), std::string(i + 1, 'x')));
  }
  ASSERT_TRUE(fs.Symlink(kRoot, root, "link", "f0").ok());
  LetTheDirectorySettle();
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 10; ++i) {
      auto r = fs.Lookup(kRoot, root, "f" + std::to_string(i));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->object.handle, files[i].handle);
      EXPECT_EQ(r->object.attr.size, uint64_t(i + 1));
      auto data = fs.Read(kRoot, r->object.handle, 0, 100);
      ASSERT_TRUE(data.ok());
      EXPECT_EQ(data->data.size(), size_t(i + 1));
    }
    auto link = fs.Lookup(kRoot, root, "link");
    ASSERT_TRUE(link.ok());
    EXPECT_EQ(link->object.attr.type, FileType::kSymlink);
    EXPECT_LE(backend->CachedFileCount(), 2u);
  }
}

TEST_F(LocalBackendTest, ListingAttributesFollowChangesMadeThroughTheBackend) {
  Entry f = MakeFile(root, "f", "12");
  LetTheDirectorySettle();
  ASSERT_EQ(ListAll(fs, root, 100)["f"].entry->attr.size, 2u);
  ASSERT_TRUE(fs.Write(kRoot, f.handle, 0, "12345").ok());
  EXPECT_EQ(ListAll(fs, root, 100)["f"].entry->attr.size, 5u);
  SetAttrs chmod;
  chmod.mode = 0600;
  ASSERT_TRUE(fs.SetAttr(kRoot, f.handle, chmod).ok());
  EXPECT_EQ(ListAll(fs, root, 100)["f"].entry->attr.mode, 0600u);
}

TEST_F(LocalBackendTest, WithoutAnAttributeTtlListingsShowOnDiskChangesAtOnce) {
  LocalBackendOptions options;
  options.attr_ttl = std::chrono::milliseconds(0);
  Reopen(options);
  MakeFile(root, "f");
  LetTheDirectorySettle();
  ASSERT_EQ(ListAll(fs, root, 100)["f"].entry->attr.mode, 0644u);
  ASSERT_EQ(::chmod((export_dir + "/f").c_str(), 0640), 0);
  EXPECT_EQ(ListAll(fs, root, 100)["f"].entry->attr.mode, 0640u);
  EXPECT_GT(backend->CachedNameCount(), 0u) << "the names are still cached";
}

TEST_F(LocalBackendTest, DirectoriesLargerThanTheCacheAreListedFromDisk) {
  LocalBackendOptions options;
  options.max_cached_names = 20;
  Reopen(options);
  for (int i = 0; i < 30; ++i) MakeFile(root, "f" + std::to_string(i));
  LetTheDirectorySettle();
  EXPECT_EQ(ListAll(fs, root, 8).size(), 30u);
  EXPECT_EQ(ListAll(fs, root, 8, /*with_attrs=*/false).size(), 30u);
  EXPECT_EQ(backend->CachedNameCount(), 0u);
}

TEST_F(LocalBackendTest, SyncMetadataOptionKeepsEverythingWorking) {
  LocalBackendOptions options;
  options.sync_metadata = true;
  Reopen(options);
  Entry d = fs.Mkdir(kRoot, root, "d", {})->object;
  Entry f = MakeFile(d.handle, "f", "synced");
  SetAttrs chmod;
  chmod.mode = 0600;
  ASSERT_TRUE(fs.SetAttr(kRoot, f.handle, chmod).ok());
  ASSERT_TRUE(fs.Link(kRoot, f.handle, root, "g").ok());
  ASSERT_TRUE(fs.Rename(kRoot, d.handle, "f", root, "h").ok());
  ASSERT_TRUE(fs.Remove(kRoot, root, "g").ok());
  ASSERT_TRUE(fs.Rmdir(kRoot, root, "d").ok());
  std::ifstream in(export_dir + "/h");
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "synced");
}

}  // namespace
}  // namespace geofs::vfs
