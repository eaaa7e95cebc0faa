// One conformance suite over every Backend implementation: each test runs
// against the in-memory backend and against the local backend (in a fresh
// temporary directory).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "geofs/vfs.h"
#include "tools/temp_dir.h"
#include "vfs/local_backend.h"
#include "vfs/memory_backend.h"
#include "vfs/sync_backend.h"

namespace geofs::vfs {
namespace {

using testutil::TempDir;

struct MemoryEnv {
  std::unique_ptr<Backend> Make() { return std::make_unique<MemoryBackend>(); }
};

struct LocalEnv {
  TempDir dir;
  std::unique_ptr<Backend> Make() {
    auto backend = LocalBackend::Open(dir.path());
    if (!backend.ok()) {
      ADD_FAILURE() << backend.status().ToString();
      return nullptr;
    }
    return std::move(backend).value();
  }
};

const Credentials kRoot{0, 0, {}};
const Credentials kUser{1000, 1000, {}};
const Credentials kOther{2000, 2000, {}};
// Not kUser, but a member of kUser's group.
const Credentials kGroupMate{3000, 3000, {1000}};

constexpr WallTime kLongAgo{1'000'000, 0};

SetAttrs Mode(uint32_t mode) {
  SetAttrs a;
  a.mode = mode;
  return a;
}

CreateRequest Guarded(uint32_t mode) {
  CreateRequest r;
  r.mode = CreateMode::kGuarded;
  r.attrs.mode = mode;
  return r;
}

CreateRequest Exclusive(uint8_t seed) {
  CreateRequest r;
  r.mode = CreateMode::kExclusive;
  for (size_t i = 0; i < r.verifier.size(); ++i) r.verifier[i] = static_cast<uint8_t>(seed + i);
  return r;
}

SetAttrs TimesTo(WallTime t) {
  SetAttrs a;
  a.atime_how = a.mtime_how = TimeUpdate::kClientTime;
  a.atime = a.mtime = t;
  return a;
}

#define ASSERT_OK(expr)                                              \
  do {                                                               \
    const auto& r_ = (expr);                                         \
    ASSERT_TRUE(r_.ok()) << #expr << ": " << r_.status().ToString(); \
  } while (0)

#define EXPECT_CODE(expr, code_value)                                                     \
  do {                                                                                    \
    const auto& r_ = (expr);                                                              \
    EXPECT_FALSE(r_.ok()) << #expr;                                                       \
    EXPECT_EQ(r_.status().code(), code_value) << #expr << ": " << r_.status().ToString(); \
  } while (0)

template <typename Env>
class BackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend = env.Make();
    ASSERT_NE(backend, nullptr);
    fs = SyncBackend(backend.get());
    auto r = backend->Root();
    ASSERT_TRUE(r.ok());
    root = *r;
    // A shared playground every caller may write to.
    ASSERT_OK(fs.SetAttr(kRoot, root, Mode(0777)));
  }

  Entry MakeFile(const Handle& dir, std::string_view name, uint32_t mode = 0644,
                 const Credentials& cred = kUser) {
    auto r = fs.Create(cred, dir, name, Guarded(mode));
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    return r.ok() ? r->object : Entry{};
  }

  Entry MakeDir(const Handle& dir, std::string_view name, uint32_t mode = 0755,
                const Credentials& cred = kUser) {
    auto r = fs.Mkdir(cred, dir, name, Mode(mode));
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    return r.ok() ? r->object : Entry{};
  }

  Attr AttrOf(const Handle& h) {
    auto r = fs.GetAttr(kRoot, h);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Attr{};
  }

  std::string ReadAll(const Handle& h, const Credentials& cred = kUser) {
    auto r = fs.Read(cred, h, 0, 1 << 20);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::string(r->data.view()) : "";
  }

  // Every entry of `dir`, read in pages of `page` entries.
  std::vector<DirEntry> List(const Handle& dir, uint32_t page = 1000, bool with_attrs = false,
                             const Credentials& cred = kUser) {
    std::vector<DirEntry> all;
    ReadDirRequest req;
    req.max_entries = page;
    req.with_attrs = with_attrs;
    for (int guard = 0; guard < 100000; ++guard) {
      auto r = fs.ReadDir(cred, dir, req);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      EXPECT_LE(r->entries.size(), page);
      for (auto& e : r->entries) all.push_back(e);
      if (r->eof) break;
      EXPECT_FALSE(r->entries.empty()) << "a page without entries must be the last";
      if (r->entries.empty()) break;
      req.cookie = r->entries.back().cookie;
      req.verifier = r->verifier;
    }
    return all;
  }

  std::multiset<std::string> Names(const Handle& dir) {
    std::multiset<std::string> names;
    for (const auto& e : List(dir)) names.insert(e.name);
    return names;
  }

  Env env;
  std::unique_ptr<Backend> backend;
  SyncBackend fs;
  Handle root;
};

using Backends = ::testing::Types<MemoryEnv, LocalEnv>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, MemoryEnv> ? "Memory" : "Local";
  }
};
TYPED_TEST_SUITE(BackendTest, Backends, BackendNames);

TYPED_TEST(BackendTest, RootIsAStableDirectoryThatIsItsOwnParent) {
  auto again = this->backend->Root();
  ASSERT_OK(again);
  EXPECT_EQ(*again, this->root);
  Attr a = this->AttrOf(this->root);
  EXPECT_EQ(a.type, FileType::kDirectory);
  EXPECT_GE(a.nlink, 2u);
  auto parent = this->fs.LookupParent(kUser, this->root);
  ASSERT_OK(parent);
  EXPECT_EQ(parent->object.handle, this->root);
  EXPECT_EQ(parent->object.attr.fileid, a.fileid);
}

TYPED_TEST(BackendTest, CreatedFileHasRequestedAttributesAndIsFoundByLookup) {
  auto& fs = this->fs;
  ASSERT_OK(fs.SetAttr(kRoot, this->root, TimesTo(kLongAgo)));
  auto created = fs.Create(kUser, this->root, "f", Guarded(0640));
  ASSERT_OK(created);
  const Attr& a = created->object.attr;
  EXPECT_EQ(a.type, FileType::kRegular);
  EXPECT_EQ(a.mode, 0640u);
  EXPECT_EQ(a.uid, kUser.uid);
  EXPECT_EQ(a.gid, kUser.gid);
  EXPECT_EQ(a.size, 0u);
  EXPECT_EQ(a.nlink, 1u);
  ASSERT_TRUE(created->dir_wcc.before && created->dir_wcc.after);
  EXPECT_EQ(created->dir_wcc.before->mtime, kLongAgo);
  EXPECT_GT(created->dir_wcc.after->mtime, kLongAgo);
  EXPECT_GT(created->dir_wcc.after->ctime, kLongAgo);

  auto found = fs.Lookup(kOther, this->root, "f");
  ASSERT_OK(found);
  EXPECT_EQ(found->object.handle, created->object.handle);
  EXPECT_EQ(found->object.attr.fileid, a.fileid);
  ASSERT_TRUE(found->dir_attr);
  EXPECT_EQ(found->dir_attr->type, FileType::kDirectory);
  EXPECT_EQ(this->AttrOf(created->object.handle).fileid, a.fileid);
}

TYPED_TEST(BackendTest, CreateModes) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "f");
  ASSERT_OK(fs.Write(kUser, f.handle, 0, "hello"));
  EXPECT_CODE(fs.Create(kUser, this->root, "f", Guarded(0644)), StatusCode::kAlreadyExists);

  CreateRequest unchecked;
  unchecked.mode = CreateMode::kUnchecked;
  auto again = fs.Create(kUser, this->root, "f", unchecked);
  ASSERT_OK(again);
  EXPECT_EQ(again->object.handle, f.handle);
  EXPECT_EQ(again->object.attr.size, 5u);

  unchecked.attrs.size = 0;
  again = fs.Create(kUser, this->root, "f", unchecked);
  ASSERT_OK(again);
  EXPECT_EQ(again->object.handle, f.handle);
  EXPECT_EQ(again->object.attr.size, 0u);

  this->MakeDir(this->root, "d");
  EXPECT_CODE(fs.Create(kUser, this->root, "d", unchecked), StatusCode::kAlreadyExists);
  // Creating needs write permission on the directory; opening does not.
  Entry ro = this->MakeDir(this->root, "ro", 0555, kRoot);
  this->MakeFile(ro.handle, "x", 0666, kRoot);
  EXPECT_CODE(fs.Create(kUser, ro.handle, "y", unchecked), StatusCode::kAccessDenied);
  ASSERT_OK(fs.Create(kUser, ro.handle, "x", unchecked));
}

TYPED_TEST(BackendTest, ExclusiveCreateReplaysWithTheSameVerifierOnly) {
  auto& fs = this->fs;
  auto first = fs.Create(kUser, this->root, "x", Exclusive(1));
  ASSERT_OK(first);
  EXPECT_EQ(first->object.attr.uid, kUser.uid);
  auto replay = fs.Create(kUser, this->root, "x", Exclusive(1));
  ASSERT_OK(replay);
  EXPECT_EQ(replay->object.handle, first->object.handle);
  EXPECT_EQ(replay->object.attr.fileid, first->object.attr.fileid);
  EXPECT_CODE(fs.Create(kUser, this->root, "x", Exclusive(2)), StatusCode::kAlreadyExists);

  this->MakeFile(this->root, "plain");
  EXPECT_CODE(fs.Create(kUser, this->root, "plain", Exclusive(1)), StatusCode::kAlreadyExists);

  // The client's follow-up SETATTR ends the replay window.
  SetAttrs follow_up = TimesTo({2'000'000, 0});
  follow_up.mode = 0600;
  ASSERT_OK(fs.SetAttr(kUser, first->object.handle, follow_up));
  EXPECT_CODE(fs.Create(kUser, this->root, "x", Exclusive(1)), StatusCode::kAlreadyExists);
}

TYPED_TEST(BackendTest, NamesAreValidated) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "f");
  for (std::string_view bad :
       std::initializer_list<std::string_view>{"", ".", "..", "a/b", std::string_view("a\0b", 3)}) {
    EXPECT_CODE(fs.Lookup(kUser, this->root, bad), StatusCode::kInvalidArgument);
    EXPECT_CODE(fs.Create(kUser, this->root, bad, Guarded(0644)), StatusCode::kInvalidArgument);
    EXPECT_CODE(fs.Mkdir(kUser, this->root, bad, {}), StatusCode::kInvalidArgument);
    EXPECT_CODE(fs.Remove(kUser, this->root, bad), StatusCode::kInvalidArgument);
    EXPECT_CODE(fs.Rename(kUser, this->root, "f", this->root, bad), StatusCode::kInvalidArgument);
    EXPECT_CODE(fs.Link(kUser, f.handle, this->root, bad), StatusCode::kInvalidArgument);
  }
  const std::string longest(kMaxNameBytes, 'n');
  this->MakeFile(this->root, longest);
  ASSERT_OK(fs.Lookup(kUser, this->root, longest));
  EXPECT_CODE(fs.Create(kUser, this->root, longest + "n", Guarded(0644)), StatusCode::kNameTooLong);
  EXPECT_CODE(fs.Lookup(kUser, this->root, "missing"), StatusCode::kNotFound);
  EXPECT_CODE(fs.Lookup(kUser, f.handle, "x"), StatusCode::kNotDirectory);
  EXPECT_CODE(fs.Create(kUser, f.handle, "x", Guarded(0644)), StatusCode::kNotDirectory);
  EXPECT_CODE(fs.LookupParent(kUser, f.handle), StatusCode::kNotDirectory);
}

TYPED_TEST(BackendTest, WriteThenReadBack) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "f");
  ASSERT_OK(fs.SetAttr(kUser, f.handle, TimesTo(kLongAgo)));
  for (Stability s : {Stability::kUnstable, Stability::kDataSync, Stability::kFileSync}) {
    auto w = fs.Write(kUser, f.handle, 0, "hello world", s);
    ASSERT_OK(w);
    EXPECT_EQ(w->count, 11u);
    EXPECT_GE(static_cast<uint32_t>(w->committed), static_cast<uint32_t>(s));
  }
  auto w = fs.Write(kUser, f.handle, 6, "there", Stability::kUnstable);
  ASSERT_OK(w);
  ASSERT_TRUE(w->wcc.before && w->wcc.after);
  EXPECT_EQ(w->wcc.after->size, 11u);

  auto r = fs.Read(kUser, f.handle, 0, 100);
  ASSERT_OK(r);
  EXPECT_EQ(r->data.view(), "hello there");
  EXPECT_TRUE(r->eof);
  ASSERT_TRUE(r->attr);
  EXPECT_EQ(r->attr->size, 11u);
  EXPECT_GT(r->attr->mtime, kLongAgo);

  r = fs.Read(kUser, f.handle, 2, 3);
  ASSERT_OK(r);
  EXPECT_EQ(r->data.view(), "llo");
  EXPECT_FALSE(r->eof);
  r = fs.Read(kUser, f.handle, 6, 5);
  ASSERT_OK(r);
  EXPECT_EQ(r->data.view(), "there");
  EXPECT_TRUE(r->eof);
  r = fs.Read(kUser, f.handle, 50, 5);
  ASSERT_OK(r);
  EXPECT_TRUE(r->data.empty());
  EXPECT_TRUE(r->eof);

  // Appending grows the file.
  ASSERT_OK(fs.Write(kUser, f.handle, 11, "!"));
  EXPECT_EQ(this->ReadAll(f.handle), "hello there!");
}

TYPED_TEST(BackendTest, SparseWritesReadAsZeros) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "sparse");
  constexpr uint64_t kFar = 8 << 20;
  ASSERT_OK(fs.Write(kUser, f.handle, kFar, "end"));
  Attr a = this->AttrOf(f.handle);
  EXPECT_EQ(a.size, kFar + 3);
  EXPECT_LT(a.used, kFar / 2) << "a hole should not be allocated";
  auto r = fs.Read(kUser, f.handle, kFar - 5000, 5003);
  ASSERT_OK(r);
  ASSERT_EQ(r->data.size(), 5003u);
  EXPECT_EQ(std::string(r->data.view().substr(0, 5000)), std::string(5000, '\0'));
  EXPECT_EQ(r->data.view().substr(5000), "end");
  EXPECT_TRUE(r->eof);
}

TYPED_TEST(BackendTest, TruncateShrinksAndGrowsWithZeros) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "t");
  ASSERT_OK(fs.Write(kUser, f.handle, 0, std::string(100, 'x')));
  ASSERT_OK(fs.SetAttr(kUser, f.handle, TimesTo(kLongAgo)));
  SetAttrs shrink;
  shrink.size = 10;
  auto wcc = fs.SetAttr(kUser, f.handle, shrink);
  ASSERT_OK(wcc);
  ASSERT_TRUE(wcc->before && wcc->after);
  EXPECT_EQ(wcc->before->size, 100u);
  EXPECT_EQ(wcc->after->size, 10u);
  EXPECT_GT(wcc->after->mtime, kLongAgo);
  EXPECT_EQ(this->ReadAll(f.handle), std::string(10, 'x'));
  SetAttrs grow;
  grow.size = 50;
  ASSERT_OK(fs.SetAttr(kUser, f.handle, grow));
  EXPECT_EQ(this->ReadAll(f.handle), std::string(10, 'x') + std::string(40, '\0'));

  Entry d = this->MakeDir(this->root, "d");
  EXPECT_CODE(fs.SetAttr(kUser, d.handle, grow), StatusCode::kIsDirectory);
  Entry other = this->MakeFile(this->root, "theirs", 0644, kOther);
  EXPECT_CODE(fs.SetAttr(kUser, other.handle, grow), StatusCode::kAccessDenied);
}

TYPED_TEST(BackendTest, SetAttrOwnershipAndModeRules) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "f", 0644);
  ASSERT_OK(fs.SetAttr(kUser, f.handle, Mode(0600)));
  EXPECT_EQ(this->AttrOf(f.handle).mode, 0600u);
  EXPECT_CODE(fs.SetAttr(kOther, f.handle, Mode(0777)), StatusCode::kNotPermitted);

  SetAttrs chown;
  chown.uid = kOther.uid;
  EXPECT_CODE(fs.SetAttr(kUser, f.handle, chown), StatusCode::kNotPermitted);
  SetAttrs chown_self;
  chown_self.uid = kUser.uid;
  ASSERT_OK(fs.SetAttr(kUser, f.handle, chown_self));

  Credentials in_two_groups{kUser.uid, kUser.gid, {4242}};
  SetAttrs chgrp;
  chgrp.gid = 4242;
  EXPECT_CODE(fs.SetAttr(kUser, f.handle, chgrp), StatusCode::kNotPermitted);
  ASSERT_OK(fs.SetAttr(in_two_groups, f.handle, chgrp));
  EXPECT_EQ(this->AttrOf(f.handle).gid, 4242u);

  ASSERT_OK(fs.SetAttr(kRoot, f.handle, chown));
  Attr a = this->AttrOf(f.handle);
  EXPECT_EQ(a.uid, kOther.uid);
  EXPECT_EQ(a.gid, 4242u);
  // kUser no longer owns it.
  EXPECT_CODE(fs.SetAttr(kUser, f.handle, Mode(0644)), StatusCode::kNotPermitted);
}

TYPED_TEST(BackendTest, SetAttrTimesAndGuard) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "f", 0666);
  const WallTime t{1'234'567'890, 123'456'789};
  ASSERT_OK(fs.SetAttr(kUser, f.handle, TimesTo(t)));
  Attr a = this->AttrOf(f.handle);
  EXPECT_EQ(a.mtime, t);
  EXPECT_EQ(a.atime, t);
  // Only the owner may set explicit times; anyone who may write may touch.
  EXPECT_CODE(fs.SetAttr(kOther, f.handle, TimesTo(t)), StatusCode::kNotPermitted);
  SetAttrs touch;
  touch.mtime_how = TimeUpdate::kServerTime;
  ASSERT_OK(fs.SetAttr(kOther, f.handle, touch));
  EXPECT_GT(this->AttrOf(f.handle).mtime, t);
  ASSERT_OK(fs.SetAttr(kUser, f.handle, Mode(0644)));
  EXPECT_CODE(fs.SetAttr(kOther, f.handle, touch), StatusCode::kAccessDenied);

  const WallTime ctime = this->AttrOf(f.handle).ctime;
  EXPECT_CODE(fs.SetAttr(kUser, f.handle, Mode(0600), WallTime{ctime.sec - 1, ctime.nsec}),
              StatusCode::kNotSync);
  EXPECT_EQ(this->AttrOf(f.handle).mode, 0644u);
  ASSERT_OK(fs.SetAttr(kUser, f.handle, Mode(0600), ctime));
  EXPECT_EQ(this->AttrOf(f.handle).mode, 0600u);
}

TYPED_TEST(BackendTest, SetIdBitsDropOnWriteAndChownByNonRoot) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "suid", 06755);
  EXPECT_EQ(this->AttrOf(f.handle).mode, 06755u);
  auto w = fs.Write(kUser, f.handle, 0, "x");
  ASSERT_OK(w);
  EXPECT_EQ(w->wcc.after->mode, 0755u);

  ASSERT_OK(fs.SetAttr(kUser, f.handle, Mode(06755)));
  ASSERT_OK(fs.Write(kRoot, f.handle, 0, "y"));
  EXPECT_EQ(this->AttrOf(f.handle).mode, 06755u) << "root's writes keep the bits";
  SetAttrs give;
  give.uid = kOther.uid;
  ASSERT_OK(fs.SetAttr(kRoot, f.handle, give));
  EXPECT_EQ(this->AttrOf(f.handle).mode, 06755u) << "root's chown keeps the bits";

  Entry g = this->MakeFile(this->root, "sgid", 06755);
  Credentials member{kUser.uid, kUser.gid, {77}};
  SetAttrs chgrp;
  chgrp.gid = 77;
  ASSERT_OK(fs.SetAttr(member, g.handle, chgrp));
  EXPECT_EQ(this->AttrOf(g.handle).mode, 0755u);
}

TYPED_TEST(BackendTest, AccessReportsModeBitsPerClass) {
  auto& fs = this->fs;
  const uint32_t all =
      kAccessRead | kAccessLookup | kAccessModify | kAccessExtend | kAccessDelete | kAccessExecute;
  Entry f = this->MakeFile(this->root, "f", 0640);
  auto granted = [&](const Credentials& c, const Handle& h) {
    auto r = fs.Access(c, h, all);
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->granted : 0xffffffff;
  };
  EXPECT_EQ(granted(kUser, f.handle), kAccessRead | kAccessModify | kAccessExtend);
  EXPECT_EQ(granted(kGroupMate, f.handle), kAccessRead);
  EXPECT_EQ(granted(kOther, f.handle), 0u);
  EXPECT_EQ(granted(kRoot, f.handle), kAccessRead | kAccessModify | kAccessExtend);
  ASSERT_OK(fs.SetAttr(kUser, f.handle, Mode(0100)));
  EXPECT_EQ(granted(kRoot, f.handle), kAccessRead | kAccessModify | kAccessExtend | kAccessExecute);
  EXPECT_EQ(granted(kUser, f.handle), kAccessExecute);
  auto only_read = fs.Access(kRoot, f.handle, kAccessRead);
  ASSERT_OK(only_read);
  EXPECT_EQ(only_read->granted, kAccessRead);
  EXPECT_EQ(only_read->attr.fileid, f.attr.fileid);

  Entry d = this->MakeDir(this->root, "d", 0750);
  EXPECT_EQ(granted(kUser, d.handle), all);
  EXPECT_EQ(granted(kGroupMate, d.handle), kAccessRead | kAccessLookup | kAccessExecute);
  EXPECT_EQ(granted(kOther, d.handle), 0u);
  ASSERT_OK(fs.SetAttr(kUser, d.handle, Mode(0)));
  EXPECT_EQ(granted(kRoot, d.handle), all);
}

TYPED_TEST(BackendTest, OperationsEnforceCallerPermissions) {
  auto& fs = this->fs;
  Entry locked = this->MakeDir(this->root, "locked", 0755, kRoot);
  EXPECT_CODE(fs.Create(kUser, locked.handle, "f", Guarded(0644)), StatusCode::kAccessDenied);
  EXPECT_CODE(fs.Mkdir(kUser, locked.handle, "d", {}), StatusCode::kAccessDenied);
  EXPECT_CODE(fs.Symlink(kUser, locked.handle, "s", "t"), StatusCode::kAccessDenied);
  Entry secret = this->MakeFile(locked.handle, "secret", 0600, kRoot);
  ASSERT_OK(fs.Write(kRoot, secret.handle, 0, "s3cr3t"));
  EXPECT_CODE(fs.Read(kUser, secret.handle, 0, 10), StatusCode::kAccessDenied);
  EXPECT_CODE(fs.Write(kUser, secret.handle, 0, "x"), StatusCode::kAccessDenied);
  EXPECT_CODE(fs.Remove(kUser, locked.handle, "secret"), StatusCode::kAccessDenied);
  EXPECT_CODE(fs.Commit(kUser, secret.handle), StatusCode::kAccessDenied);

  // The owner reads and writes its own file whatever the mode (NFS has no
  // open state to remember that the file was opened before a chmod).
  Entry mine = this->MakeFile(this->root, "mine", 0);
  ASSERT_OK(fs.Write(kUser, mine.handle, 0, "ok"));
  EXPECT_EQ(this->ReadAll(mine.handle), "ok");
  // Execute permission suffices to read.
  Entry exe = this->MakeFile(this->root, "exe", 0711, kRoot);
  ASSERT_OK(fs.Read(kUser, exe.handle, 0, 10));

  Entry noexec = this->MakeDir(this->root, "noexec", 0766, kRoot);
  this->MakeFile(noexec.handle, "f", 0644, kRoot);
  EXPECT_CODE(fs.Lookup(kUser, noexec.handle, "f"), StatusCode::kAccessDenied);
  EXPECT_CODE(fs.LookupParent(kUser, noexec.handle), StatusCode::kAccessDenied);
  Entry noread = this->MakeDir(this->root, "noread", 0311, kRoot);
  ReadDirRequest req;
  req.max_entries = 10;
  EXPECT_CODE(fs.ReadDir(kUser, noread.handle, req), StatusCode::kAccessDenied);
  ASSERT_OK(fs.ReadDir(kRoot, noread.handle, req));
  // READDIRPLUS of a directory the caller may list but not search: names only.
  req.with_attrs = true;
  auto page = fs.ReadDir(kUser, noexec.handle, req);
  ASSERT_OK(page);
  ASSERT_FALSE(page->entries.empty());
  for (const auto& e : page->entries) EXPECT_FALSE(e.entry) << e.name;
}

TYPED_TEST(BackendTest, StickyDirectoryProtectsOthersEntries) {
  auto& fs = this->fs;
  Entry tmp = this->MakeDir(this->root, "tmp", 01777, kRoot);
  this->MakeFile(tmp.handle, "a", 0666, kUser);
  this->MakeFile(tmp.handle, "b", 0666, kUser);
  this->MakeFile(tmp.handle, "c", 0666, kUser);
  EXPECT_CODE(fs.Remove(kOther, tmp.handle, "a"), StatusCode::kNotPermitted);
  EXPECT_CODE(fs.Rename(kOther, tmp.handle, "a", tmp.handle, "z"), StatusCode::kNotPermitted);
  this->MakeFile(tmp.handle, "o", 0666, kOther);
  EXPECT_CODE(fs.Rename(kOther, tmp.handle, "o", tmp.handle, "a"), StatusCode::kNotPermitted);
  ASSERT_OK(fs.Remove(kUser, tmp.handle, "a"));
  ASSERT_OK(fs.Remove(kRoot, tmp.handle, "b"));
  // Without the sticky bit anyone who may write the directory may remove.
  ASSERT_OK(fs.SetAttr(kRoot, tmp.handle, Mode(0777)));
  ASSERT_OK(fs.Remove(kOther, tmp.handle, "c"));
}

TYPED_TEST(BackendTest, SetGidDirectoriesPassTheirGroupOn) {
  auto& fs = this->fs;
  Entry shared = this->MakeDir(this->root, "shared", 0777, kRoot);
  SetAttrs setgid = Mode(02777);
  setgid.gid = 500;
  ASSERT_OK(fs.SetAttr(kRoot, shared.handle, setgid));
  Entry f = this->MakeFile(shared.handle, "f", 0644, kUser);
  EXPECT_EQ(f.attr.gid, 500u);
  EXPECT_EQ(this->AttrOf(f.handle).gid, 500u);
  Entry d = this->MakeDir(shared.handle, "d", 0755, kUser);
  Attr da = this->AttrOf(d.handle);
  EXPECT_EQ(da.gid, 500u);
  EXPECT_EQ(da.mode, 02755u);
}

TYPED_TEST(BackendTest, CreateAppliesRequestedOwnerOnlyIfAllowed) {
  auto& fs = this->fs;
  CreateRequest req = Guarded(0600);
  req.attrs.uid = kOther.uid;
  req.attrs.gid = kOther.gid;
  EXPECT_CODE(fs.Create(kUser, this->root, "f", req), StatusCode::kNotPermitted);
  EXPECT_CODE(fs.Lookup(kUser, this->root, "f"), StatusCode::kNotFound);
  auto made = fs.Create(kRoot, this->root, "f", req);
  ASSERT_OK(made);
  EXPECT_EQ(made->object.attr.uid, kOther.uid);
  EXPECT_EQ(made->object.attr.gid, kOther.gid);
  EXPECT_EQ(made->object.attr.mode, 0600u);
  SetAttrs with_time = TimesTo(kLongAgo);
  with_time.mode = 0751;
  auto d = fs.Mkdir(kUser, this->root, "d", with_time);
  ASSERT_OK(d);
  EXPECT_EQ(d->object.attr.mode, 0751u);
  EXPECT_EQ(d->object.attr.mtime, kLongAgo);
  // Creation modes are exact: no umask.
  EXPECT_EQ(this->MakeFile(this->root, "g", 0666).attr.mode, 0666u);
  EXPECT_EQ(this->MakeDir(this->root, "e", 01777).attr.mode, 01777u);
}

TYPED_TEST(BackendTest, DirectoriesCountTheirLinks) {
  auto& fs = this->fs;
  Entry d = this->MakeDir(this->root, "d");
  EXPECT_EQ(d.attr.type, FileType::kDirectory);
  EXPECT_EQ(d.attr.nlink, 2u);
  const uint32_t root_links = this->AttrOf(this->root).nlink;
  Entry sub = this->MakeDir(d.handle, "sub");
  this->MakeDir(d.handle, "sub2");
  this->MakeFile(d.handle, "file");
  EXPECT_EQ(this->AttrOf(d.handle).nlink, 4u);
  EXPECT_EQ(this->AttrOf(this->root).nlink, root_links);
  auto parent = fs.LookupParent(kUser, sub.handle);
  ASSERT_OK(parent);
  EXPECT_EQ(parent->object.handle, d.handle);

  EXPECT_CODE(fs.Mkdir(kUser, d.handle, "sub", {}), StatusCode::kAlreadyExists);
  EXPECT_CODE(fs.Mkdir(kUser, d.handle, "file", {}), StatusCode::kAlreadyExists);
  EXPECT_CODE(fs.Rmdir(kUser, this->root, "d"), StatusCode::kNotEmpty);
  EXPECT_CODE(fs.Rmdir(kUser, d.handle, "file"), StatusCode::kNotDirectory);
  EXPECT_CODE(fs.Remove(kUser, d.handle, "sub"), StatusCode::kIsDirectory);
  EXPECT_CODE(fs.Rmdir(kUser, d.handle, "nothing"), StatusCode::kNotFound);
  EXPECT_CODE(fs.Remove(kUser, d.handle, "nothing"), StatusCode::kNotFound);
  auto wcc = fs.Rmdir(kUser, d.handle, "sub");
  ASSERT_OK(wcc);
  ASSERT_TRUE(wcc->after);
  EXPECT_EQ(wcc->after->nlink, 3u);
  EXPECT_CODE(fs.GetAttr(kUser, sub.handle), StatusCode::kStale);
}

TYPED_TEST(BackendTest, HardLinksShareOneObject) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "f");
  ASSERT_OK(fs.Write(kUser, f.handle, 0, "shared"));
  Entry d = this->MakeDir(this->root, "d");
  auto link = fs.Link(kUser, f.handle, d.handle, "g");
  ASSERT_OK(link);
  ASSERT_TRUE(link->file_attr);
  EXPECT_EQ(link->file_attr->nlink, 2u);
  ASSERT_TRUE(link->dir_wcc.after);
  auto g = fs.Lookup(kUser, d.handle, "g");
  ASSERT_OK(g);
  EXPECT_EQ(g->object.attr.fileid, f.attr.fileid);
  EXPECT_EQ(g->object.attr.nlink, 2u);

  ASSERT_OK(fs.Remove(kUser, this->root, "f"));
  EXPECT_EQ(this->AttrOf(g->object.handle).nlink, 1u);
  EXPECT_EQ(this->ReadAll(g->object.handle), "shared");
  EXPECT_EQ(this->ReadAll(f.handle), "shared") << "the object is still alive";

  EXPECT_CODE(fs.Link(kUser, d.handle, this->root, "dirlink"), StatusCode::kIsDirectory);
  EXPECT_CODE(fs.Link(kUser, f.handle, d.handle, "g"), StatusCode::kAlreadyExists);
  EXPECT_CODE(fs.Link(kUser, f.handle, f.handle, "x"), StatusCode::kNotDirectory);
  Entry locked = this->MakeDir(this->root, "locked", 0755, kRoot);
  EXPECT_CODE(fs.Link(kUser, f.handle, locked.handle, "x"), StatusCode::kAccessDenied);
}

TYPED_TEST(BackendTest, SymlinksStoreTheirTarget) {
  auto& fs = this->fs;
  const std::string target = "../some/where/else";
  auto s = fs.Symlink(kUser, this->root, "s", target);
  ASSERT_OK(s);
  EXPECT_EQ(s->object.attr.type, FileType::kSymlink);
  EXPECT_EQ(s->object.attr.size, target.size());
  EXPECT_EQ(s->object.attr.uid, kUser.uid);
  auto link = fs.ReadLink(kOther, s->object.handle);
  ASSERT_OK(link);
  EXPECT_EQ(link->target, target);
  auto found = fs.Lookup(kUser, this->root, "s");
  ASSERT_OK(found);
  EXPECT_EQ(found->object.attr.type, FileType::kSymlink) << "lookup does not follow";
  EXPECT_CODE(fs.Read(kUser, s->object.handle, 0, 10), StatusCode::kInvalidArgument);
  EXPECT_CODE(fs.Symlink(kUser, this->root, "s", "x"), StatusCode::kAlreadyExists);
  EXPECT_CODE(fs.Symlink(kUser, this->root, "empty", ""), StatusCode::kInvalidArgument);
  EXPECT_CODE(fs.Symlink(kUser, this->root, "long", std::string(kMaxPathBytes + 1, 'x')),
              StatusCode::kNameTooLong);
  Entry f = this->MakeFile(this->root, "f");
  EXPECT_CODE(fs.ReadLink(kUser, f.handle), StatusCode::kInvalidArgument);
  // Owner and times of the link itself can change; its mode cannot matter.
  ASSERT_OK(fs.SetAttr(kUser, s->object.handle, TimesTo(kLongAgo)));
  EXPECT_EQ(this->AttrOf(s->object.handle).mtime, kLongAgo);
}

TYPED_TEST(BackendTest, MknodCreatesSpecialFiles) {
  auto& fs = this->fs;
  MknodRequest fifo;
  fifo.type = FileType::kFifo;
  fifo.attrs.mode = 0640;
  auto p = fs.Mknod(kUser, this->root, "fifo", fifo);
  ASSERT_OK(p);
  EXPECT_EQ(p->object.attr.type, FileType::kFifo);
  EXPECT_EQ(p->object.attr.mode, 0640u);
  EXPECT_EQ(p->object.attr.uid, kUser.uid);
  EXPECT_CODE(fs.Read(kUser, p->object.handle, 0, 10), StatusCode::kInvalidArgument);
  EXPECT_CODE(fs.Write(kUser, p->object.handle, 0, "x"), StatusCode::kInvalidArgument);

  MknodRequest sock;
  sock.type = FileType::kSocket;
  auto s = fs.Mknod(kUser, this->root, "sock", sock);
  ASSERT_OK(s);
  EXPECT_EQ(s->object.attr.type, FileType::kSocket);

  MknodRequest chr;
  chr.type = FileType::kCharDevice;
  chr.rdev_major = 1;
  chr.rdev_minor = 3;
  chr.attrs.mode = 0600;
  EXPECT_CODE(fs.Mknod(kUser, this->root, "null", chr), StatusCode::kNotPermitted);
  auto c = fs.Mknod(kRoot, this->root, "null", chr);
  ASSERT_OK(c);
  EXPECT_EQ(c->object.attr.type, FileType::kCharDevice);
  EXPECT_EQ(c->object.attr.rdev_major, 1u);
  EXPECT_EQ(c->object.attr.rdev_minor, 3u);
  MknodRequest blk = chr;
  blk.type = FileType::kBlockDevice;
  blk.rdev_minor = 7;
  auto b = fs.Mknod(kRoot, this->root, "loop", blk);
  ASSERT_OK(b);
  EXPECT_EQ(b->object.attr.type, FileType::kBlockDevice);
  EXPECT_EQ(b->object.attr.rdev_minor, 7u);
  // Attribute changes reach special files without opening them.
  ASSERT_OK(fs.SetAttr(kRoot, c->object.handle, Mode(0666)));
  EXPECT_EQ(this->AttrOf(c->object.handle).mode, 0666u);

  MknodRequest bad;
  bad.type = FileType::kRegular;
  EXPECT_CODE(fs.Mknod(kRoot, this->root, "bad", bad), StatusCode::kInvalidArgument);
  EXPECT_CODE(fs.Mknod(kUser, this->root, "fifo", fifo), StatusCode::kAlreadyExists);
}

TYPED_TEST(BackendTest, RenameFilesAndDirectories) {
  auto& fs = this->fs;
  Entry a = this->MakeDir(this->root, "a");
  Entry b = this->MakeDir(this->root, "b");
  Entry f = this->MakeFile(a.handle, "f");
  ASSERT_OK(fs.Write(kUser, f.handle, 0, "F"));

  auto moved = fs.Rename(kUser, a.handle, "f", b.handle, "g");
  ASSERT_OK(moved);
  ASSERT_TRUE(moved->from_dir_wcc.after && moved->to_dir_wcc.after);
  EXPECT_CODE(fs.Lookup(kUser, a.handle, "f"), StatusCode::kNotFound);
  auto g = fs.Lookup(kUser, b.handle, "g");
  ASSERT_OK(g);
  EXPECT_EQ(g->object.attr.fileid, f.attr.fileid);
  EXPECT_EQ(this->ReadAll(f.handle), "F") << "handles survive a rename";

  // File over file: the old target goes away.
  Entry victim = this->MakeFile(b.handle, "victim");
  ASSERT_OK(fs.Rename(kUser, b.handle, "g", b.handle, "victim"));
  EXPECT_CODE(fs.GetAttr(kUser, victim.handle), StatusCode::kStale);
  EXPECT_EQ(this->ReadAll(f.handle), "F");
  EXPECT_EQ(this->Names(b.handle), (std::multiset<std::string>{".", "..", "victim"}));

  // Directory over an empty directory, not over a full one or a file.
  Entry d1 = this->MakeDir(a.handle, "d1");
  this->MakeDir(a.handle, "empty");
  Entry full = this->MakeDir(a.handle, "full");
  this->MakeFile(full.handle, "x");
  this->MakeFile(a.handle, "file");
  EXPECT_CODE(fs.Rename(kUser, a.handle, "d1", a.handle, "full"), StatusCode::kNotEmpty);
  EXPECT_CODE(fs.Rename(kUser, a.handle, "d1", a.handle, "file"), StatusCode::kNotDirectory);
  EXPECT_CODE(fs.Rename(kUser, a.handle, "file", a.handle, "d1"), StatusCode::kIsDirectory);
  EXPECT_CODE(fs.Rename(kUser, a.handle, "d1", d1.handle, "inside"), StatusCode::kInvalidArgument);
  EXPECT_CODE(fs.Rename(kUser, a.handle, "nothing", a.handle, "x"), StatusCode::kNotFound);
  const uint32_t a_links = this->AttrOf(a.handle).nlink;
  ASSERT_OK(fs.Rename(kUser, a.handle, "d1", a.handle, "empty"));
  EXPECT_EQ(this->AttrOf(a.handle).nlink, a_links - 1);
  EXPECT_EQ(this->AttrOf(d1.handle).fileid, d1.attr.fileid);

  // Moving a directory across parents moves its link and its "..".
  const uint32_t b_links = this->AttrOf(b.handle).nlink;
  ASSERT_OK(fs.Rename(kUser, a.handle, "empty", b.handle, "moved"));
  EXPECT_EQ(this->AttrOf(a.handle).nlink, a_links - 2);
  EXPECT_EQ(this->AttrOf(b.handle).nlink, b_links + 1);
  auto parent = fs.LookupParent(kUser, d1.handle);
  ASSERT_OK(parent);
  EXPECT_EQ(parent->object.handle, b.handle);

  // Renaming onto itself, or onto another link of the same file, changes
  // nothing.
  ASSERT_OK(fs.Rename(kUser, b.handle, "victim", b.handle, "victim"));
  ASSERT_OK(fs.Link(kUser, f.handle, b.handle, "alias"));
  ASSERT_OK(fs.Rename(kUser, b.handle, "alias", b.handle, "victim"));
  EXPECT_EQ(this->Names(b.handle),
            (std::multiset<std::string>{".", "..", "alias", "moved", "victim"}));
}

TYPED_TEST(BackendTest, RenameNeedsPermissionOnBothDirectories) {
  auto& fs = this->fs;
  Entry open_dir = this->MakeDir(this->root, "open", 0777, kRoot);
  Entry locked = this->MakeDir(this->root, "locked", 0755, kRoot);
  this->MakeFile(open_dir.handle, "f", 0644, kUser);
  EXPECT_CODE(fs.Rename(kUser, open_dir.handle, "f", locked.handle, "f"),
              StatusCode::kAccessDenied);
  this->MakeFile(locked.handle, "g", 0644, kRoot);
  EXPECT_CODE(fs.Rename(kUser, locked.handle, "g", open_dir.handle, "g"),
              StatusCode::kAccessDenied);
  // A directory changes parent only if its ".." may be rewritten.
  Entry other_open = this->MakeDir(this->root, "open2", 0777, kRoot);
  this->MakeDir(open_dir.handle, "rootdir", 0755, kRoot);
  EXPECT_CODE(fs.Rename(kUser, open_dir.handle, "rootdir", other_open.handle, "rootdir"),
              StatusCode::kAccessDenied);
  ASSERT_OK(fs.Rename(kUser, open_dir.handle, "rootdir", open_dir.handle, "renamed"));
}

TYPED_TEST(BackendTest, RemovedObjectsHandlesAreStale) {
  auto& fs = this->fs;
  Entry f = this->MakeFile(this->root, "f");
  ASSERT_OK(fs.Write(kUser, f.handle, 0, "data"));
  ASSERT_OK(this->fs.Read(kUser, f.handle, 0, 4));
  auto wcc = fs.Remove(kUser, this->root, "f");
  ASSERT_OK(wcc);
  ASSERT_TRUE(wcc->before && wcc->after);
  EXPECT_CODE(fs.GetAttr(kUser, f.handle), StatusCode::kStale);
  EXPECT_CODE(fs.Read(kUser, f.handle, 0, 4), StatusCode::kStale);
  EXPECT_CODE(fs.Write(kUser, f.handle, 0, "x"), StatusCode::kStale);
  EXPECT_CODE(fs.SetAttr(kUser, f.handle, Mode(0600)), StatusCode::kStale);
  EXPECT_CODE(fs.Access(kUser, f.handle, kAccessRead), StatusCode::kStale);
  EXPECT_CODE(fs.Commit(kUser, f.handle), StatusCode::kStale);
  EXPECT_CODE(fs.Link(kUser, f.handle, this->root, "again"), StatusCode::kStale);
  Entry again = this->MakeFile(this->root, "f");
  EXPECT_NE(again.handle, f.handle) << "a new object never gets an old handle";
  EXPECT_CODE(fs.GetAttr(kUser, f.handle), StatusCode::kStale);

  Entry d = this->MakeDir(this->root, "d");
  ASSERT_OK(fs.Rmdir(kUser, this->root, "d"));
  EXPECT_CODE(fs.Lookup(kUser, d.handle, "x"), StatusCode::kStale);
  EXPECT_CODE(fs.Create(kUser, d.handle, "x", Guarded(0644)), StatusCode::kStale);
  ReadDirRequest req;
  req.max_entries = 10;
  EXPECT_CODE(fs.ReadDir(kUser, d.handle, req), StatusCode::kStale);
}

TYPED_TEST(BackendTest, MalformedAndForgedHandlesNeverNameAnotherObject) {
  auto& fs = this->fs;
  std::vector<Entry> files;
  for (int i = 0; i < 20; ++i) files.push_back(this->MakeFile(this->root, "f" + std::to_string(i)));
  EXPECT_CODE(fs.GetAttr(kUser, Handle()), StatusCode::kBadHandle);
  const uint8_t three[] = {1, 2, 3};
  EXPECT_CODE(fs.GetAttr(kUser, Handle(three)), StatusCode::kBadHandle);

  const Handle real = files[7].handle;
  std::vector<uint8_t> bytes(real.bytes().begin(), real.bytes().end());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> forged = bytes;
      forged[i] ^= flip;
      auto r = fs.GetAttr(kUser, Handle(forged));
      if (r.ok()) {
        EXPECT_EQ(r->fileid, files[7].attr.fileid) << "byte " << i << " flip " << int(flip);
      } else {
        EXPECT_TRUE(r.status().code() == StatusCode::kBadHandle ||
                    r.status().code() == StatusCode::kStale)
            << r.status().ToString();
      }
    }
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 200; ++i) {
    std::vector<uint8_t> garbage(1 + rng() % kMaxHandleBytes);
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    auto r = fs.GetAttr(kUser, Handle(garbage));
    EXPECT_FALSE(r.ok());
  }
}

TYPED_TEST(BackendTest, ReadAndWriteRejectDirectories) {
  auto& fs = this->fs;
  Entry d = this->MakeDir(this->root, "d");
  EXPECT_CODE(fs.Read(kUser, d.handle, 0, 10), StatusCode::kIsDirectory);
  EXPECT_CODE(fs.Write(kUser, d.handle, 0, "x"), StatusCode::kIsDirectory);
  EXPECT_CODE(fs.Commit(kUser, d.handle), StatusCode::kIsDirectory);
  EXPECT_CODE(fs.Remove(kUser, d.handle, "x"), StatusCode::kNotFound);
}

TYPED_TEST(BackendTest, ReadDirListsDotsAndEveryNameOnce) {
  auto& fs = this->fs;
  Entry d = this->MakeDir(this->root, "d");
  std::set<std::string> expected = {".", ".."};
  for (int i = 0; i < 30; ++i) {
    const std::string name = "entry" + std::to_string(i);
    if (i % 3 == 0) {
      this->MakeDir(d.handle, name);
    } else {
      this->MakeFile(d.handle, name);
    }
    expected.insert(name);
  }
  // The dots are listed (the Linux client shows what the server lists), in
  // whatever position the backend orders them.
  auto all = this->List(d.handle, 1000, true);
  std::set<std::string> seen;
  std::set<uint64_t> cookies;
  for (const auto& e : all) {
    EXPECT_TRUE(seen.insert(e.name).second) << "duplicate " << e.name;
    EXPECT_NE(e.cookie, 0u);
    EXPECT_TRUE(cookies.insert(e.cookie).second) << "duplicate cookie for " << e.name;
    ASSERT_TRUE(e.entry) << e.name;
    EXPECT_EQ(e.entry->attr.fileid, e.fileid) << e.name;
    if (e.name == ".") {
      EXPECT_EQ(e.fileid, d.attr.fileid);
      EXPECT_EQ(e.entry->handle, d.handle);
      continue;
    }
    if (e.name == "..") {
      EXPECT_EQ(e.fileid, this->AttrOf(this->root).fileid);
      EXPECT_EQ(e.entry->handle, this->root);
      continue;
    }
    auto found = fs.Lookup(kUser, d.handle, e.name);
    ASSERT_OK(found);
    EXPECT_EQ(found->object.handle, e.entry->handle) << e.name;
    EXPECT_EQ(found->object.attr.type, e.entry->attr.type) << e.name;
  }
  EXPECT_EQ(seen, expected);

  // Paging gives the same listing; READDIR without attrs carries none.
  auto paged = this->List(d.handle, 4, false);
  std::set<std::string> paged_names;
  for (const auto& e : paged) {
    EXPECT_FALSE(e.entry);
    paged_names.insert(e.name);
  }
  EXPECT_EQ(paged.size(), expected.size());
  EXPECT_EQ(paged_names, expected);

  // The root's ".." is the root.
  int dotdots = 0;
  for (const auto& e : this->List(this->root, 2, true)) {
    if (e.name != "..") continue;
    ++dotdots;
    ASSERT_TRUE(e.entry);
    EXPECT_EQ(e.entry->handle, this->root);
    EXPECT_EQ(e.fileid, this->AttrOf(this->root).fileid);
  }
  EXPECT_EQ(dotdots, 1);

  ReadDirRequest req;
  req.max_entries = 0;
  EXPECT_CODE(fs.ReadDir(kUser, d.handle, req), StatusCode::kTooSmall);
  req.max_entries = 10;
  Entry f = this->MakeFile(this->root, "plainfile");
  EXPECT_CODE(fs.ReadDir(kUser, f.handle, req), StatusCode::kNotDirectory);
  auto empty = this->List(this->MakeDir(this->root, "empty").handle, 1);
  EXPECT_EQ(empty.size(), 2u);
}

TYPED_TEST(BackendTest, ReadDirCookiesSurviveConcurrentInsertsAndRemoves) {
  auto& fs = this->fs;
  Entry d = this->MakeDir(this->root, "big");
  // Names are hard links to one file: a directory entry costs no inode, and
  // creating inodes is what makes large directories slow to set up on disk.
  Entry target = this->MakeFile(this->root, "target");
  auto add = [&](const std::string& name) {
    ASSERT_OK(fs.Link(kUser, target.handle, d.handle, name));
  };
  std::set<std::string> stable, volatile_names;
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "stable-" + std::to_string(i);
    add(name);
    stable.insert(name);
  }
  for (int i = 0; i < 400; ++i) {
    const std::string name = "volatile-" + std::to_string(i);
    add(name);
    volatile_names.insert(name);
  }
  std::mt19937 rng(7);
  std::map<std::string, int> seen;
  ReadDirRequest req;
  req.max_entries = 13;
  int added = 0;
  bool eof = false;
  for (int pages = 0; pages < 10000 && !eof; ++pages) {
    auto page = fs.ReadDir(kUser, d.handle, req);
    ASSERT_OK(page);
    ASSERT_LE(page->entries.size(), req.max_entries);
    for (const auto& e : page->entries) ++seen[e.name];
    eof = page->eof;
    if (eof) break;
    ASSERT_FALSE(page->entries.empty());
    const DirEntry& last = page->entries.back();
    req.cookie = last.cookie;
    req.verifier = page->verifier;
    // The entry holding our cookie disappears: the listing must go on after it.
    if (volatile_names.erase(last.name)) ASSERT_OK(fs.Remove(kUser, d.handle, last.name));
    for (int k = 0; k < 2 && !volatile_names.empty(); ++k) {
      auto it = volatile_names.begin();
      std::advance(it, rng() % volatile_names.size());
      ASSERT_OK(fs.Remove(kUser, d.handle, *it));
      volatile_names.erase(it);
    }
    add("added-" + std::to_string(added++));
  }
  ASSERT_TRUE(eof);
  for (const auto& name : stable) EXPECT_EQ(seen[name], 1) << name;
  for (const auto& [name, count] : seen) EXPECT_EQ(count, 1) << name;
  EXPECT_EQ(seen["."], 1);
  EXPECT_EQ(seen[".."], 1);
}

TYPED_TEST(BackendTest, FsStatAndCommit) {
  auto& fs = this->fs;
  auto st = fs.FsStat(kUser, this->root);
  ASSERT_OK(st);
  EXPECT_GT(st->total_bytes, 0u);
  EXPECT_LE(st->free_bytes, st->total_bytes);
  EXPECT_LE(st->avail_bytes, st->free_bytes);
  EXPECT_GT(st->total_files, 0u);
  EXPECT_LE(st->free_files, st->total_files);
  ASSERT_TRUE(st->attr);
  EXPECT_EQ(st->attr->type, FileType::kDirectory);

  Entry f = this->MakeFile(this->root, "f");
  ASSERT_OK(fs.Write(kUser, f.handle, 0, "unstable", Stability::kUnstable));
  auto wcc = fs.Commit(kUser, f.handle, 0, 0);
  ASSERT_OK(wcc);
  ASSERT_TRUE(wcc->before && wcc->after);
  EXPECT_EQ(wcc->after->size, 8u);
  ASSERT_OK(fs.Commit(kUser, f.handle, 2, 3));
}

TYPED_TEST(BackendTest, ConcurrentClientsDoNotInterfere) {
  Entry d = this->MakeDir(this->root, "d");
  constexpr int kThreads = 4;
  constexpr int kFilesEach = 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      SyncBackend fs(this->backend.get());
      for (int i = 0; i < kFilesEach; ++i) {
        const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        auto made = fs.Create(kUser, d.handle, name, Guarded(0644));
        if (!made.ok()) {
          ++failures;
          continue;
        }
        if (!fs.Write(kUser, made->object.handle, 0, name).ok()) ++failures;
        auto back = fs.Read(kUser, made->object.handle, 0, 100);
        if (!back.ok() || back->data.view() != name) ++failures;
        if (i % 2 == 0 && !fs.Remove(kUser, d.handle, name).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(this->Names(d.handle).size(), 2u + kThreads * kFilesEach / 2);
}

}  // namespace
}  // namespace geofs::vfs
