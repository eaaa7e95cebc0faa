// Tests specific to MemoryBackend: exact times from an injected clock, its
// cookie and handle formats, and huge sparse files.

#include "vfs/memory_backend.h"

#include <gtest/gtest.h>

#include <chrono>

#include "vfs/sync_backend.h"

namespace geofs::vfs {
namespace {

const Credentials kUser{1000, 1000, {}};

class MemoryBackendTest : public ::testing::Test {
 protected:
  MemoryBackendTest() : backend(&clock), fs(&backend), root(*backend.Root()) {
    SetAttrs open_root;
    open_root.mode = 0777;
    EXPECT_TRUE(fs.SetAttr(Credentials{}, root, open_root).ok());
  }

  Entry MakeFile(std::string_view name) {
    CreateRequest req;
    req.attrs.mode = 0644;
    auto r = fs.Create(kUser, root, name, req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->object : Entry{};
  }

  void Tick() { clock.Advance(std::chrono::milliseconds(1500)); }

  ManualClock clock;
  MemoryBackend backend;
  SyncBackend fs;
  Handle root;
};

TEST_F(MemoryBackendTest, TimesFollowPosixWithTheInjectedClock) {
  const WallTime t0 = clock.WallNow();
  Entry f = MakeFile("f");
  EXPECT_EQ(f.attr.mtime, t0);
  EXPECT_EQ(f.attr.ctime, t0);
  EXPECT_EQ(f.attr.atime, t0);

  Tick();
  const WallTime t1 = clock.WallNow();
  auto w = fs.Write(kUser, f.handle, 0, "abc");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->wcc.before->mtime, t0);
  EXPECT_EQ(w->wcc.after->mtime, t1);
  EXPECT_EQ(w->wcc.after->ctime, t1);
  EXPECT_EQ(w->wcc.after->atime, t0);

  Tick();
  const WallTime t2 = clock.WallNow();
  auto r = fs.Read(kUser, f.handle, 0, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attr->atime, t2);
  EXPECT_EQ(r->attr->mtime, t1);

  // An empty write changes nothing.
  Tick();
  ASSERT_TRUE(fs.Write(kUser, f.handle, 0, "").ok());
  EXPECT_EQ(fs.GetAttr(kUser, f.handle)->mtime, t1);

  // Renaming touches both directories and the object's ctime only.
  SetAttrs dir_mode;
  dir_mode.mode = 0755;
  auto d = fs.Mkdir(kUser, root, "d", dir_mode);
  ASSERT_TRUE(d.ok());
  Tick();
  const WallTime t3 = clock.WallNow();
  ASSERT_TRUE(fs.Rename(kUser, root, "f", d->object.handle, "g").ok());
  Attr moved = *fs.GetAttr(kUser, f.handle);
  EXPECT_EQ(moved.ctime, t3);
  EXPECT_EQ(moved.mtime, t1);
  EXPECT_EQ(fs.GetAttr(kUser, root)->mtime, t3);
  EXPECT_EQ(fs.GetAttr(kUser, d->object.handle)->mtime, t3);

  // A link changes the file's ctime and the directory's mtime.
  Tick();
  const WallTime t4 = clock.WallNow();
  ASSERT_TRUE(fs.Link(kUser, f.handle, root, "again").ok());
  EXPECT_EQ(fs.GetAttr(kUser, f.handle)->ctime, t4);
  EXPECT_EQ(fs.GetAttr(kUser, root)->mtime, t4);
}

TEST_F(MemoryBackendTest, HandlesAreInodeAndGenerationNeverReused) {
  Entry f = MakeFile("f");
  ASSERT_EQ(f.handle.size(), 16u);
  ASSERT_TRUE(fs.Remove(kUser, root, "f").ok());
  Entry g = MakeFile("f");
  EXPECT_NE(g.attr.fileid, f.attr.fileid);
  EXPECT_NE(g.handle, f.handle);
  // Another backend instance knows none of this one's handles.
  MemoryBackend other;
  SyncBackend other_fs(&other);
  EXPECT_EQ(other_fs.GetAttr(kUser, g.handle).status().code(), StatusCode::kStale);
}

TEST_F(MemoryBackendTest, CookiesAreSequenceNumbersAndUnknownOnesAreRejected) {
  for (int i = 0; i < 5; ++i) MakeFile("f" + std::to_string(i));
  ReadDirRequest req;
  req.max_entries = 100;
  auto page = fs.ReadDir(kUser, root, req);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 7u);
  EXPECT_EQ(page->entries[0].name, ".");
  EXPECT_EQ(page->entries[1].name, "..");
  for (size_t i = 1; i < page->entries.size(); ++i) {
    EXPECT_LT(page->entries[i - 1].cookie, page->entries[i].cookie);
  }
  const uint64_t verifier = page->verifier;
  // A page that ends between the dots is not the last.
  req.max_entries = 1;
  auto dot = fs.ReadDir(kUser, root, req);
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(dot->entries.size(), 1u);
  EXPECT_FALSE(dot->eof);
  req.max_entries = 100;
  req.cookie = page->entries.back().cookie + 1000;
  EXPECT_EQ(fs.ReadDir(kUser, root, req).status().code(), StatusCode::kBadCookie);
  // New entries are listed after older ones, whatever their names.
  req.cookie = page->entries.back().cookie;
  MakeFile("a-new-name");
  auto next = fs.ReadDir(kUser, root, req);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->entries.size(), 1u);
  EXPECT_EQ(next->entries[0].name, "a-new-name");
  EXPECT_TRUE(next->eof);
  EXPECT_EQ(next->verifier, verifier);
}

TEST_F(MemoryBackendTest, HugeSparseFilesCostNothing) {
  Entry f = MakeFile("huge");
  SetAttrs grow;
  grow.size = uint64_t{1} << 40;
  ASSERT_TRUE(fs.SetAttr(kUser, f.handle, grow).ok());
  ASSERT_TRUE(fs.Write(kUser, f.handle, (uint64_t{1} << 40) - 3, "end").ok());
  Attr a = *fs.GetAttr(kUser, f.handle);
  EXPECT_EQ(a.size, uint64_t{1} << 40);
  EXPECT_LE(a.used, 64u * 1024);
  auto r = fs.Read(kUser, f.handle, (uint64_t{1} << 40) - 10, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data.view(), std::string(7, '\0') + "end");
  EXPECT_TRUE(r->eof);
  // Shrinking inside a block and growing again exposes zeros, not old data.
  grow.size = (uint64_t{1} << 40) - 2;
  ASSERT_TRUE(fs.SetAttr(kUser, f.handle, grow).ok());
  grow.size = uint64_t{1} << 40;
  ASSERT_TRUE(fs.SetAttr(kUser, f.handle, grow).ok());
  r = fs.Read(kUser, f.handle, (uint64_t{1} << 40) - 3, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data.view(), std::string("e\0\0", 3));
  EXPECT_EQ(fs.Write(kUser, f.handle, ~uint64_t{0} - 1, "xy").status().code(),
            StatusCode::kFileTooLarge);
}

TEST_F(MemoryBackendTest, CallbacksMayReenterTheBackend) {
  Entry f = MakeFile("f");
  bool inner_ok = false;
  backend.GetAttr(kUser, f.handle, [&](Result<Attr> outer) {
    ASSERT_TRUE(outer.ok());
    backend.GetAttr(kUser, f.handle, [&](Result<Attr> inner) { inner_ok = inner.ok(); });
  });
  EXPECT_TRUE(inner_ok);
}

}  // namespace
}  // namespace geofs::vfs
