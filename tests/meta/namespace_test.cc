// The namespace conformance suite, run over every KvStore implementation.
#include "meta/namespace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>

#include "meta/schema.h"
#include "meta_test_util.h"

namespace geofs::meta {
namespace {

using testing::CountingKvStore;
using testing::FailingKvStore;
using testing::MemoryEnv;
using testing::RocksEnv;
using testing::UnsyncedKvStore;
using vfs::Credentials;
using vfs::Handle;

template <typename T>
StatusCode CodeOf(const Result<T>& r) {
  return r.status().code();
}
StatusCode CodeOf(const Status& s) { return s.code(); }

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

ChunkId Id(int n) {
  ChunkId id{};
  id[0] = static_cast<uint8_t>(n >> 8);
  id[1] = static_cast<uint8_t>(n);
  id[31] = 0xaa;
  return id;
}

Extent Ext(uint64_t offset, uint64_t length, const ChunkId& chunk, uint64_t chunk_offset,
           uint64_t chunk_size) {
  return Extent{offset, length, chunk, chunk_offset, chunk_size};
}

uint64_t InoOf(const Handle& h) { return Namespace::ParseHandle(h)->ino; }
uint64_t GenOf(const Handle& h) { return Namespace::ParseHandle(h)->generation; }

// Entries the large-directory test creates; GEOFS_META_DIR_ENTRIES overrides
// (docs/namespace.md has a manual run at 1,000,000).
size_t LargeDirEntries() {
  const char* env = std::getenv("GEOFS_META_DIR_ENTRIES");
  return env ? std::strtoull(env, nullptr, 10) : 100'000;
}

template <typename Env>
class NamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(env_.store()); }

  void Open(KvStore* kv) {
    kv_ = kv;
    ns_.reset();
    NamespaceOptions options;
    options.clock = &clock_;
    options.ino_reserve = 16;
    auto opened = Namespace::Open(kv, options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    ns_ = std::move(opened).value();
    root_ = ns_->RootHandle();
  }

  // A process restart: the store is closed and opened again.
  void Restart() {
    ns_.reset();
    env_.Reopen();
    Open(env_.store());
  }

  void Tick() { clock_.Advance(std::chrono::seconds(1)); }

  vfs::Entry Create(const Handle& dir, std::string_view name, uint32_t mode = 0644,
                    const Credentials& cred = Root()) {
    vfs::CreateRequest req;
    req.mode = vfs::CreateMode::kGuarded;
    req.attrs.mode = mode;
    auto r = ns_->Create(cred, dir, name, req);
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    return r.ok() ? r->object : vfs::Entry{};
  }

  vfs::Entry Mkdir(const Handle& dir, std::string_view name, uint32_t mode = 0755,
                   const Credentials& cred = Root()) {
    vfs::SetAttrs attrs;
    attrs.mode = mode;
    auto r = ns_->Mkdir(cred, dir, name, attrs);
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    return r.ok() ? r->object : vfs::Entry{};
  }

  Result<vfs::LookupReply> Lookup(const Handle& dir, std::string_view name,
                                  const Credentials& cred = Root()) {
    return ns_->Lookup(cred, dir, name);
  }

  vfs::Attr Attr(const Handle& h) {
    auto r = ns_->GetAttr(h);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : vfs::Attr{};
  }

  // Every name in `dir` (without "." and ".."), listing in small pages.
  std::vector<std::string> Names(const Handle& dir) {
    std::vector<std::string> names;
    vfs::ReadDirRequest req;
    req.max_entries = 3;
    while (true) {
      auto page = ns_->ReadDir(Root(), dir, req);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (const vfs::DirEntry& e : page->entries) {
        if (e.name != "." && e.name != "..") names.push_back(e.name);
        req.cookie = e.cookie;
      }
      if (page->eof) break;
    }
    return names;
  }

  void Register(std::vector<ChunkRef> chunks) {
    Status s = ns_->RegisterChunks(chunks);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  uint64_t Refs(const ChunkId& id) {
    auto c = ns_->GetChunk(id);
    EXPECT_TRUE(c.ok());
    return c.ok() && *c ? (*c)->refs : UINT64_MAX;
  }

  Result<CommitReply> Commit(const Handle& file, uint64_t version, uint64_t offset, uint64_t length,
                             std::vector<Extent> extents, uint64_t new_size,
                             const Credentials& cred = Root()) {
    ChunkMapUpdate u;
    u.expected_version = version;
    u.offset = offset;
    u.length = length;
    u.extents = std::move(extents);
    u.new_size = new_size;
    return ns_->CommitChunkMap(cred, file, u);
  }

  std::vector<Extent> Extents(const Handle& file, uint64_t offset = 0,
                              uint64_t length = UINT64_MAX) {
    auto m = ns_->GetChunkMap(Root(), file, offset, length);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? m->extents : std::vector<Extent>{};
  }

  void ExpectClean() {
    auto problems = ns_->Fsck();
    ASSERT_TRUE(problems.ok()) << problems.status().ToString();
    EXPECT_TRUE(problems->empty()) << Join(*problems);
  }

  // Writes `inject` straight into the store, expects Fsck to report a
  // problem containing `expected`, then writes `repair` and expects a clean
  // Fsck again.
  void ExpectFsckFinds(const WriteBatch& inject, const WriteBatch& repair,
                       std::string_view expected) {
    ASSERT_TRUE(kv_->Write(inject).ok());
    auto problems = ns_->Fsck();
    ASSERT_TRUE(problems.ok()) << problems.status().ToString();
    const bool found = std::any_of(problems->begin(), problems->end(), [&](const std::string& p) {
      return p.find(expected) != std::string::npos;
    });
    EXPECT_TRUE(found) << "expected '" << expected << "' among:\n" << Join(*problems);
    ASSERT_TRUE(kv_->Write(repair).ok());
    ExpectClean();
  }

  static Credentials Root() { return Credentials{0, 0, {}}; }
  static Credentials User() { return Credentials{1000, 1000, {}}; }
  static Credentials Other() { return Credentials{2000, 2000, {}}; }

  Env env_;
  ManualClock clock_{WallTime{1'700'000'000, 0}};
  KvStore* kv_ = nullptr;
  std::unique_ptr<Namespace> ns_;
  Handle root_;
};

using Envs = ::testing::Types<MemoryEnv, RocksEnv>;
TYPED_TEST_SUITE(NamespaceTest, Envs);

TYPED_TEST(NamespaceTest, FreshStoreHasARootDirectory) {
  vfs::Attr root = this->Attr(this->root_);
  EXPECT_EQ(root.type, vfs::FileType::kDirectory);
  EXPECT_EQ(root.mode, 0755u);
  EXPECT_EQ(root.nlink, 2u);
  EXPECT_EQ(root.fileid, schema::kRootIno);
  auto parent = this->ns_->LookupParent(this->Root(), this->root_);
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(parent->object.handle, this->root_);
  EXPECT_TRUE(this->Names(this->root_).empty());
  auto stats = this->ns_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->inodes, 1u);
  EXPECT_EQ(stats->directories, 1u);
  this->ExpectClean();
  // Reopening keeps the same root.
  this->Restart();
  EXPECT_EQ(this->ns_->RootHandle(), this->root_);
}

TYPED_TEST(NamespaceTest, CreateLookupAndDirectoryTimes) {
  const vfs::Attr before = this->Attr(this->root_);
  this->Tick();
  vfs::CreateRequest req;
  req.mode = vfs::CreateMode::kUnchecked;
  req.attrs.mode = 0640;
  auto created = this->ns_->Create(this->User(), this->root_, "f", req);
  EXPECT_EQ(CodeOf(created), StatusCode::kAccessDenied);  // root dir is 0755 root-owned
  created = this->ns_->Create(this->Root(), this->root_, "f", req);
  ASSERT_TRUE(created.ok());
  const vfs::Attr& a = created->object.attr;
  EXPECT_EQ(a.type, vfs::FileType::kRegular);
  EXPECT_EQ(a.mode, 0640u);
  EXPECT_EQ(a.nlink, 1u);
  EXPECT_EQ(a.size, 0u);
  EXPECT_EQ(a.fileid, InoOf(created->object.handle));
  EXPECT_EQ(created->dir_wcc.before->mtime, before.mtime);
  EXPECT_GT(created->dir_wcc.after->mtime, before.mtime);
  auto found = this->Lookup(this->root_, "f");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->object.handle, created->object.handle);
  EXPECT_EQ(found->dir_attr->fileid, schema::kRootIno);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, RejectsBadNames) {
  this->Create(this->root_, "file");
  const vfs::Entry dir = this->Mkdir(this->root_, "dir");
  const std::string slash = "a/b", nul("a\0b", 3), long_name(256, 'x'), max_name(255, 'y');
  const auto cred = this->Root();
  vfs::CreateRequest req;
  for (const std::string& bad : {std::string(), std::string("."), std::string(".."), slash, nul}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(CodeOf(this->ns_->Create(cred, this->root_, bad, req)), StatusCode::kInvalidArgument);
    EXPECT_EQ(CodeOf(this->ns_->Mkdir(cred, this->root_, bad, {})), StatusCode::kInvalidArgument);
    EXPECT_EQ(CodeOf(this->ns_->Lookup(cred, this->root_, bad)), StatusCode::kInvalidArgument);
    EXPECT_EQ(CodeOf(this->ns_->Remove(cred, this->root_, bad)), StatusCode::kInvalidArgument);
    EXPECT_EQ(CodeOf(this->ns_->Rename(cred, this->root_, "file", dir.handle, bad)),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(CodeOf(this->ns_->Symlink(cred, this->root_, bad, "t", {})),
              StatusCode::kInvalidArgument);
  }
  auto file = this->Lookup(this->root_, "file");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(CodeOf(this->ns_->Create(cred, this->root_, long_name, req)), StatusCode::kNameTooLong);
  EXPECT_EQ(CodeOf(this->ns_->Link(cred, file->object.handle, dir.handle, long_name)),
            StatusCode::kNameTooLong);
  EXPECT_EQ(CodeOf(this->ns_->Lookup(cred, this->root_, long_name)), StatusCode::kNameTooLong);
  EXPECT_TRUE(this->ns_->Create(cred, this->root_, max_name, req).ok());
  EXPECT_TRUE(this->Lookup(this->root_, max_name).ok());
  // Symlink targets: not empty, no NUL, at most 4096 bytes.
  EXPECT_EQ(CodeOf(this->ns_->Symlink(cred, this->root_, "s", "", {})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(this->ns_->Symlink(cred, this->root_, "s", nul, {})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(this->ns_->Symlink(cred, this->root_, "s", std::string(4097, 'a'), {})),
            StatusCode::kNameTooLong);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, ErrorsOfMissingExistingAndWrongTypes) {
  const auto cred = this->Root();
  const vfs::Entry file = this->Create(this->root_, "file");
  const vfs::Entry dir = this->Mkdir(this->root_, "dir");
  this->Create(dir.handle, "inner");
  EXPECT_EQ(CodeOf(this->Lookup(this->root_, "nope")), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(this->Lookup(file.handle, "x")), StatusCode::kNotDirectory);
  vfs::CreateRequest guarded;
  guarded.mode = vfs::CreateMode::kGuarded;
  EXPECT_EQ(CodeOf(this->ns_->Create(cred, this->root_, "file", guarded)),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeOf(this->ns_->Mkdir(cred, this->root_, "file", {})), StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeOf(this->ns_->Symlink(cred, this->root_, "dir", "t", {})),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeOf(this->ns_->Remove(cred, this->root_, "nope")), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(this->ns_->Remove(cred, this->root_, "dir")), StatusCode::kIsDirectory);
  EXPECT_EQ(CodeOf(this->ns_->Rmdir(cred, this->root_, "file")), StatusCode::kNotDirectory);
  EXPECT_EQ(CodeOf(this->ns_->Rmdir(cred, this->root_, "dir")), StatusCode::kNotEmpty);
  EXPECT_EQ(CodeOf(this->ns_->Create(cred, file.handle, "x", guarded)), StatusCode::kNotDirectory);
  EXPECT_EQ(CodeOf(this->ns_->ReadDir(cred, file.handle, {0, 0, 10, false})),
            StatusCode::kNotDirectory);
  EXPECT_EQ(CodeOf(this->ns_->ReadLink(file.handle)), StatusCode::kInvalidArgument);
  // Handles: wrong size is malformed; a removed object's handle is stale,
  // and so is a right number with a wrong generation.
  EXPECT_EQ(CodeOf(this->ns_->GetAttr(Handle(std::vector<uint8_t>(15)))), StatusCode::kBadHandle);
  EXPECT_EQ(
      CodeOf(this->ns_->GetAttr(Namespace::MakeHandle(InoOf(file.handle), GenOf(file.handle) + 1))),
      StatusCode::kStale);
  EXPECT_EQ(CodeOf(this->ns_->GetAttr(Namespace::MakeHandle(1u << 30, 1))), StatusCode::kStale);
  ASSERT_TRUE(this->ns_->Remove(cred, this->root_, "file").ok());
  EXPECT_EQ(CodeOf(this->ns_->GetAttr(file.handle)), StatusCode::kStale);
  EXPECT_EQ(CodeOf(this->ns_->Lookup(cred, dir.handle, "gone")), StatusCode::kNotFound);
  ASSERT_TRUE(this->ns_->Remove(cred, dir.handle, "inner").ok());
  ASSERT_TRUE(this->ns_->Rmdir(cred, this->root_, "dir").ok());
  EXPECT_EQ(CodeOf(this->ns_->Create(cred, dir.handle, "x", guarded)), StatusCode::kStale);
  EXPECT_EQ(this->Attr(this->root_).nlink, 2u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, CreateModes) {
  const auto cred = this->Root();
  const vfs::Entry file = this->Create(this->root_, "f");
  this->Register({{Id(1), 100}});
  ASSERT_TRUE(this->Commit(file.handle, 1, 0, UINT64_MAX, {Ext(0, 100, Id(1), 0, 100)}, 100).ok());
  // UNCHECKED over an existing file applies the size only (O_TRUNC).
  vfs::CreateRequest unchecked;
  unchecked.attrs.size = 0;
  unchecked.attrs.mode = 0600;
  auto reopened = this->ns_->Create(cred, this->root_, "f", unchecked);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(reopened->object.handle, file.handle);
  EXPECT_EQ(reopened->object.attr.size, 0u);
  EXPECT_EQ(reopened->object.attr.mode, 0644u);
  EXPECT_TRUE(this->Extents(file.handle).empty());
  EXPECT_EQ(this->Refs(Id(1)), 0u);
  this->Mkdir(this->root_, "d");
  EXPECT_EQ(CodeOf(this->ns_->Create(cred, this->root_, "d", unchecked)),
            StatusCode::kAlreadyExists);

  // EXCLUSIVE: a replay with the same verifier returns the same file, even
  // after a restart, until the file's attributes are set.
  vfs::CreateRequest exclusive;
  exclusive.mode = vfs::CreateMode::kExclusive;
  exclusive.verifier = {1, 2, 3, 4, 5, 6, 7, 8};
  auto first = this->ns_->Create(cred, this->root_, "x", exclusive);
  ASSERT_TRUE(first.ok());
  this->Restart();
  auto replay = this->ns_->Create(cred, this->root_, "x", exclusive);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->object.handle, first->object.handle);
  vfs::CreateRequest other = exclusive;
  other.verifier[0] = 9;
  EXPECT_EQ(CodeOf(this->ns_->Create(cred, this->root_, "x", other)), StatusCode::kAlreadyExists);
  vfs::SetAttrs touch;
  touch.mtime_how = vfs::TimeUpdate::kServerTime;
  ASSERT_TRUE(this->ns_->SetAttr(cred, first->object.handle, touch, std::nullopt).ok());
  EXPECT_EQ(CodeOf(this->ns_->Create(cred, this->root_, "x", exclusive)),
            StatusCode::kAlreadyExists);
  this->ExpectClean();
}

// A spoke answers creates from a reservation before the hub has them; each
// reserved number makes one file, once, even across restarts and replays.
TYPED_TEST(NamespaceTest, ReservedInodeNumbersMakeOneFileEach) {
  const auto cred = this->Root();
  EXPECT_EQ(CodeOf(this->ns_->ReserveInodes(0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(this->ns_->ReserveInodes(Namespace::kMaxReservation + 1)),
            StatusCode::kInvalidArgument);
  auto reserved = this->ns_->ReserveInodes(4);
  ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
  ASSERT_EQ(reserved->generations.size(), 4u);
  const uint64_t first = reserved->first;
  auto handle_of = [&](uint64_t i) {
    return Namespace::MakeHandle(first + i, reserved->generations[i]);
  };
  // Ordinary creates never take a reserved number.
  const vfs::Entry plain = this->Create(this->root_, "plain");
  EXPECT_GE(InoOf(plain.handle), first + 4);

  vfs::CreateRequest req;
  req.mode = vfs::CreateMode::kGuarded;
  req.attrs.mode = 0600;
  // The ctime a spoke answered the create with becomes the file's.
  const WallTime answered{1'650'000'000, 123};
  auto made = this->ns_->CreateReserved(cred, this->root_, "a", req, first + 2, answered);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made->object.handle, handle_of(2));
  EXPECT_EQ(made->object.attr.mode, 0600u);
  EXPECT_EQ(made->object.attr.ctime, answered);
  EXPECT_NE(made->dir_wcc.after->ctime, answered) << "the directory's is the hub's";
  auto looked = this->ns_->Lookup(cred, this->root_, "a");
  ASSERT_TRUE(looked.ok());
  EXPECT_EQ(looked->object.handle, handle_of(2));
  // A replay (even GUARDED) answers the file as it is.
  auto replay = this->ns_->CreateReserved(cred, this->root_, "a", req, first + 2);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  EXPECT_EQ(replay->object.handle, handle_of(2));
  // A used number makes no second file; a taken name is not opened as another number.
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(cred, this->root_, "b", req, first + 2)),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(cred, this->root_, "a", req, first + 1)),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(cred, this->root_, "plain", req, first + 1)),
            StatusCode::kAlreadyExists);
  // Numbers never reserved: one in use, one never handed out.
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(cred, this->root_, "c", req, InoOf(plain.handle))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(cred, this->root_, "c", req, first + 1'000'000)),
            StatusCode::kInvalidArgument);
  vfs::CreateRequest exclusive;
  exclusive.mode = vfs::CreateMode::kExclusive;
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(cred, this->root_, "c", exclusive, first)),
            StatusCode::kInvalidArgument);
  // Permissions are checked as for any create.
  const vfs::Entry locked = this->Mkdir(this->root_, "locked", 0755);
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(this->User(), locked.handle, "c", req, first)),
            StatusCode::kAccessDenied);
  this->ExpectClean();

  // The rest of the reservation survives a restart, in any order.
  this->Restart();
  EXPECT_GE(InoOf(this->Create(this->root_, "after-restart").handle), first + 4);
  for (uint64_t i : {3, 0, 1}) {
    const std::string name = "r" + std::to_string(i);
    auto r = this->ns_->CreateReserved(cred, this->root_, name, req, first + i);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    EXPECT_EQ(r->object.handle, handle_of(i));
  }
  // A removed file's number stays used: replaying its create makes nothing.
  ASSERT_TRUE(this->ns_->Remove(cred, this->root_, "a").ok());
  EXPECT_EQ(CodeOf(this->ns_->CreateReserved(cred, this->root_, "a", req, first + 2)),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(this->ns_->GetAttr(handle_of(2))), StatusCode::kStale);
  this->ExpectClean();

  // fsck: a run of reserved numbers must not hold an inode, nor pass the counter.
  auto put = [](const std::string& k, const std::string& v) {
    WriteBatch b;
    b.Put(k, v);
    return b;
  };
  WriteBatch drop;
  drop.Delete(schema::ReservedKey(InoOf(plain.handle) + 1));
  this->ExpectFsckFinds(put(schema::ReservedKey(InoOf(plain.handle) + 1),
                            schema::EncodeReservedStart(InoOf(plain.handle))),
                        drop, "include existing inode");
  WriteBatch drop_far;
  drop_far.Delete(schema::ReservedKey(first + 2'000'000));
  this->ExpectFsckFinds(
      put(schema::ReservedKey(first + 2'000'000), schema::EncodeReservedStart(first + 1'000'000)),
      drop_far, "past the allocated numbers");
}

TYPED_TEST(NamespaceTest, SymlinksAndSpecialFiles) {
  const vfs::Entry pub = this->Mkdir(this->root_, "pub", 0777);
  auto link = this->ns_->Symlink(this->User(), pub.handle, "l", "../target/x", {});
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->object.attr.type, vfs::FileType::kSymlink);
  EXPECT_EQ(link->object.attr.size, 11u);
  EXPECT_EQ(link->object.attr.uid, 1000u);
  auto target = this->ns_->ReadLink(link->object.handle);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->target, "../target/x");

  vfs::MknodRequest fifo;
  fifo.type = vfs::FileType::kFifo;
  auto made = this->ns_->Mknod(this->User(), pub.handle, "fifo", fifo);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->object.attr.type, vfs::FileType::kFifo);
  vfs::MknodRequest dev;
  dev.type = vfs::FileType::kCharDevice;
  dev.rdev_major = 1;
  dev.rdev_minor = 3;
  EXPECT_EQ(CodeOf(this->ns_->Mknod(this->User(), pub.handle, "null", dev)),
            StatusCode::kNotPermitted);
  made = this->ns_->Mknod(this->Root(), pub.handle, "null", dev);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->object.attr.rdev_major, 1u);
  EXPECT_EQ(made->object.attr.rdev_minor, 3u);
  vfs::MknodRequest regular;
  regular.type = vfs::FileType::kRegular;
  EXPECT_EQ(CodeOf(this->ns_->Mknod(this->Root(), pub.handle, "r", regular)),
            StatusCode::kInvalidArgument);
  // Objects without data have no chunk map.
  EXPECT_EQ(CodeOf(this->ns_->GetChunkMap(this->Root(), made->object.handle, 0, 10)),
            StatusCode::kInvalidArgument);
  auto stats = this->ns_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->symlinks, 1u);
  EXPECT_EQ(stats->specials, 2u);
  ASSERT_TRUE(this->ns_->Remove(this->Root(), pub.handle, "null").ok());
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, SetAttrRulesAndTimes) {
  const vfs::Entry pub = this->Mkdir(this->root_, "pub", 0777);
  const vfs::Entry f = this->Create(pub.handle, "f", 0644, this->User());
  this->Tick();
  vfs::SetAttrs chmod;
  chmod.mode = 0600;
  EXPECT_EQ(CodeOf(this->ns_->SetAttr(this->Other(), f.handle, chmod, std::nullopt)),
            StatusCode::kNotPermitted);
  auto wcc = this->ns_->SetAttr(this->User(), f.handle, chmod, std::nullopt);
  ASSERT_TRUE(wcc.ok());
  EXPECT_EQ(wcc->after->mode, 0600u);
  EXPECT_GT(wcc->after->ctime, wcc->before->ctime);
  EXPECT_EQ(wcc->after->mtime, wcc->before->mtime);
  vfs::SetAttrs chown;
  chown.uid = 2000;
  EXPECT_EQ(CodeOf(this->ns_->SetAttr(this->User(), f.handle, chown, std::nullopt)),
            StatusCode::kNotPermitted);
  // A guarded SETATTR applies only at the ctime the client saw.
  const WallTime ctime = wcc->after->ctime;
  EXPECT_EQ(CodeOf(this->ns_->SetAttr(this->Root(), f.handle, chown, WallTime{1, 0})),
            StatusCode::kNotSync);
  ASSERT_TRUE(this->ns_->SetAttr(this->Root(), f.handle, chown, ctime).ok());
  EXPECT_EQ(this->Attr(f.handle).uid, 2000u);
  vfs::SetAttrs times;
  times.atime_how = vfs::TimeUpdate::kClientTime;
  times.atime = {1000, 5};
  times.mtime_how = vfs::TimeUpdate::kClientTime;
  times.mtime = {2000, 7};
  ASSERT_TRUE(this->ns_->SetAttr(this->Other(), f.handle, times, std::nullopt).ok());
  vfs::Attr a = this->Attr(f.handle);
  EXPECT_EQ(a.atime, (WallTime{1000, 5}));
  EXPECT_EQ(a.mtime, (WallTime{2000, 7}));
  vfs::SetAttrs size;
  size.size = 10;
  EXPECT_EQ(CodeOf(this->ns_->SetAttr(this->Root(), pub.handle, size, std::nullopt)),
            StatusCode::kIsDirectory);
  size.size = uint64_t{1} << 63;
  EXPECT_EQ(CodeOf(this->ns_->SetAttr(this->Root(), f.handle, size, std::nullopt)),
            StatusCode::kFileTooLarge);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, PermissionsFollowTheCallersCredentials) {
  const vfs::Entry priv = this->Mkdir(this->root_, "priv", 0700);
  this->Create(priv.handle, "secret", 0600);
  EXPECT_EQ(CodeOf(this->Lookup(priv.handle, "secret", this->User())), StatusCode::kAccessDenied);
  EXPECT_EQ(CodeOf(this->ns_->ReadDir(this->User(), priv.handle, {0, 0, 10, false})),
            StatusCode::kAccessDenied);
  const vfs::Entry tmp = this->Mkdir(this->root_, "tmp", 01777);
  const vfs::Entry mine = this->Create(tmp.handle, "mine", 0644, this->User());
  EXPECT_EQ(mine.attr.uid, 1000u);
  EXPECT_EQ(mine.attr.gid, 1000u);
  // Sticky directory: only the owner (or root) may remove or rename it away.
  EXPECT_EQ(CodeOf(this->ns_->Remove(this->Other(), tmp.handle, "mine")),
            StatusCode::kNotPermitted);
  EXPECT_EQ(CodeOf(this->ns_->Rename(this->Other(), tmp.handle, "mine", tmp.handle, "theirs")),
            StatusCode::kNotPermitted);
  auto access = this->ns_->Access(this->Other(), mine.handle,
                                  vfs::kAccessRead | vfs::kAccessModify | vfs::kAccessExecute);
  ASSERT_TRUE(access.ok());
  EXPECT_EQ(access->granted, uint32_t{vfs::kAccessRead});
  // Contents: reading needs read permission (or ownership); writing, write.
  const vfs::Entry closed = this->Create(tmp.handle, "closed", 0600, this->User());
  EXPECT_EQ(CodeOf(this->ns_->GetChunkMap(this->Other(), closed.handle, 0, 1)),
            StatusCode::kAccessDenied);
  EXPECT_TRUE(this->ns_->GetChunkMap(this->User(), closed.handle, 0, 1).ok());
  EXPECT_EQ(CodeOf(this->Commit(closed.handle, 1, 0, UINT64_MAX, {}, 0, this->Other())),
            StatusCode::kAccessDenied);
  EXPECT_TRUE(this->ns_->Remove(this->User(), tmp.handle, "mine").ok());
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, HardLinksShareOneInode) {
  const auto cred = this->Root();
  const vfs::Entry a = this->Mkdir(this->root_, "a");
  const vfs::Entry b = this->Mkdir(this->root_, "b");
  const vfs::Entry f = this->Create(a.handle, "f");
  this->Register({{Id(1), 10}});
  ASSERT_TRUE(this->Commit(f.handle, 1, 0, UINT64_MAX, {Ext(0, 10, Id(1), 0, 10)}, 10).ok());
  auto linked = this->ns_->Link(cred, f.handle, b.handle, "g");
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(linked->file_attr->nlink, 2u);
  EXPECT_EQ(this->Lookup(b.handle, "g")->object.handle, f.handle);
  EXPECT_EQ(CodeOf(this->ns_->Link(cred, f.handle, b.handle, "g")), StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeOf(this->ns_->Link(cred, a.handle, b.handle, "dirlink")), StatusCode::kIsDirectory);
  EXPECT_EQ(CodeOf(this->ns_->Link(cred, f.handle, f.handle, "x")), StatusCode::kNotDirectory);
  auto stats = this->ns_->Stats();
  EXPECT_EQ(stats->files, 1u);
  EXPECT_EQ(stats->logical_bytes, 10u);
  this->ExpectClean();
  // Removing one name keeps the file and its chunks.
  ASSERT_TRUE(this->ns_->Remove(cred, a.handle, "f").ok());
  EXPECT_EQ(this->Attr(f.handle).nlink, 1u);
  EXPECT_EQ(this->Refs(Id(1)), 1u);
  this->ExpectClean();
  ASSERT_TRUE(this->ns_->Remove(cred, b.handle, "g").ok());
  EXPECT_EQ(CodeOf(this->ns_->GetAttr(f.handle)), StatusCode::kStale);
  EXPECT_EQ(this->Refs(Id(1)), 0u);
  EXPECT_EQ(this->ns_->Stats()->files, 0u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, RenameWithinAndAcrossDirectories) {
  const auto cred = this->Root();
  const vfs::Entry a = this->Mkdir(this->root_, "a");
  const vfs::Entry b = this->Mkdir(this->root_, "b");
  const vfs::Entry f = this->Create(a.handle, "f");
  this->Create(a.handle, "z");
  ASSERT_TRUE(this->ns_->Rename(cred, a.handle, "f", a.handle, "g").ok());
  EXPECT_EQ(CodeOf(this->Lookup(a.handle, "f")), StatusCode::kNotFound);
  EXPECT_EQ(this->Lookup(a.handle, "g")->object.handle, f.handle);
  // A renamed entry gets a new cookie: it now lists last.
  EXPECT_EQ(this->Names(a.handle), (std::vector<std::string>{"z", "g"}));
  // A file to another directory.
  auto moved = this->ns_->Rename(cred, a.handle, "g", b.handle, "f2");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(this->Lookup(b.handle, "f2")->object.handle, f.handle);
  EXPECT_EQ(this->Attr(f.handle).nlink, 1u);
  // A directory to another directory moves its "..", and the link counts.
  const vfs::Entry sub = this->Mkdir(a.handle, "sub");
  EXPECT_EQ(this->Attr(a.handle).nlink, 3u);
  ASSERT_TRUE(this->ns_->Rename(cred, a.handle, "sub", b.handle, "sub").ok());
  EXPECT_EQ(this->Attr(a.handle).nlink, 2u);
  EXPECT_EQ(this->Attr(b.handle).nlink, 3u);
  EXPECT_EQ(this->ns_->LookupParent(cred, sub.handle)->object.handle, b.handle);
  EXPECT_EQ(CodeOf(this->ns_->Rename(cred, a.handle, "missing", b.handle, "x")),
            StatusCode::kNotFound);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, RenameOverExistingTargets) {
  const auto cred = this->Root();
  const vfs::Entry d = this->Mkdir(this->root_, "d");
  const vfs::Entry f1 = this->Create(d.handle, "f1");
  const vfs::Entry f2 = this->Create(d.handle, "f2");
  this->Register({{Id(7), 5}});
  ASSERT_TRUE(this->Commit(f2.handle, 1, 0, UINT64_MAX, {Ext(0, 5, Id(7), 0, 5)}, 5).ok());
  // File over file: the replaced file is freed with its chunk references.
  ASSERT_TRUE(this->ns_->Rename(cred, d.handle, "f1", d.handle, "f2").ok());
  EXPECT_EQ(this->Lookup(d.handle, "f2")->object.handle, f1.handle);
  EXPECT_EQ(CodeOf(this->ns_->GetAttr(f2.handle)), StatusCode::kStale);
  EXPECT_EQ(this->Refs(Id(7)), 0u);
  // Directory over empty directory; over non-empty; file/dir mismatches.
  const vfs::Entry x = this->Mkdir(d.handle, "x");
  const vfs::Entry y = this->Mkdir(d.handle, "y");
  this->Create(x.handle, "inside");
  ASSERT_TRUE(this->ns_->Rename(cred, d.handle, "x", d.handle, "y").ok());
  EXPECT_EQ(CodeOf(this->ns_->GetAttr(y.handle)), StatusCode::kStale);
  EXPECT_EQ(this->Lookup(d.handle, "y")->object.handle, x.handle);
  EXPECT_EQ(this->Attr(d.handle).nlink, 3u);
  this->Mkdir(d.handle, "e");
  EXPECT_EQ(CodeOf(this->ns_->Rename(cred, d.handle, "e", d.handle, "y")), StatusCode::kNotEmpty);
  EXPECT_EQ(CodeOf(this->ns_->Rename(cred, d.handle, "f2", d.handle, "e")),
            StatusCode::kIsDirectory);
  EXPECT_EQ(CodeOf(this->ns_->Rename(cred, d.handle, "e", d.handle, "f2")),
            StatusCode::kNotDirectory);
  // Two names of one inode: nothing happens, both stay.
  ASSERT_TRUE(this->ns_->Link(cred, f1.handle, d.handle, "hard").ok());
  ASSERT_TRUE(this->ns_->Rename(cred, d.handle, "hard", d.handle, "f2").ok());
  EXPECT_TRUE(this->Lookup(d.handle, "hard").ok());
  EXPECT_EQ(this->Attr(f1.handle).nlink, 2u);
  // Renaming a name onto itself.
  ASSERT_TRUE(this->ns_->Rename(cred, d.handle, "e", d.handle, "e").ok());
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, RenameRefusesToMoveADirectoryIntoItself) {
  const auto cred = this->Root();
  const vfs::Entry a = this->Mkdir(this->root_, "a");
  const vfs::Entry b = this->Mkdir(a.handle, "b");
  const vfs::Entry c = this->Mkdir(b.handle, "c");
  EXPECT_EQ(CodeOf(this->ns_->Rename(cred, this->root_, "a", c.handle, "a")),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(this->ns_->Rename(cred, this->root_, "a", a.handle, "self")),
            StatusCode::kInvalidArgument);
  // The other way round is fine: c up to the root.
  ASSERT_TRUE(this->ns_->Rename(cred, b.handle, "c", this->root_, "c").ok());
  EXPECT_EQ(this->ns_->LookupParent(cred, c.handle)->object.handle, this->root_);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, InodeNumbersAndGenerationsAreNeverReused) {
  const auto cred = this->Root();
  std::set<uint64_t> inos, gens;
  std::vector<Handle> removed;
  uint64_t highest = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 20; ++i) {
      const std::string name = "r" + std::to_string(round) + "_" + std::to_string(i);
      const vfs::Entry e = this->Create(this->root_, name);
      EXPECT_GT(InoOf(e.handle), highest);
      EXPECT_TRUE(inos.insert(InoOf(e.handle)).second);
      EXPECT_TRUE(gens.insert(GenOf(e.handle)).second);
      if (i % 2 == 0) {
        ASSERT_TRUE(this->ns_->Remove(cred, this->root_, name).ok());
        removed.push_back(e.handle);
      }
    }
    highest = *inos.rbegin();
    this->Restart();
    for (const Handle& h : removed) {
      EXPECT_EQ(CodeOf(this->ns_->GetAttr(h)), StatusCode::kStale);
    }
  }
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, ReadDirListsDotsThenEntriesWithStableCookies) {
  const auto cred = this->Root();
  const vfs::Entry d = this->Mkdir(this->root_, "d");
  auto empty = this->ns_->ReadDir(cred, d.handle, {0, 0, 10, false});
  ASSERT_TRUE(empty.ok());
  ASSERT_EQ(empty->entries.size(), 2u);
  EXPECT_EQ(empty->entries[0].name, ".");
  EXPECT_EQ(empty->entries[0].fileid, InoOf(d.handle));
  EXPECT_EQ(empty->entries[1].name, "..");
  EXPECT_EQ(empty->entries[1].fileid, schema::kRootIno);
  EXPECT_TRUE(empty->eof);
  // One entry per page: "." alone does not end the listing of an empty
  // directory, ".." follows.
  auto only_dot = this->ns_->ReadDir(cred, d.handle, {0, 0, 1, false});
  ASSERT_TRUE(only_dot.ok());
  ASSERT_EQ(only_dot->entries.size(), 1u);
  EXPECT_FALSE(only_dot->eof);
  auto only_dotdot = this->ns_->ReadDir(cred, d.handle, {only_dot->entries[0].cookie, 0, 1, false});
  ASSERT_TRUE(only_dotdot.ok());
  ASSERT_EQ(only_dotdot->entries.size(), 1u);
  EXPECT_EQ(only_dotdot->entries[0].name, "..");
  EXPECT_TRUE(only_dotdot->eof);
  for (const char* n : {"a", "b", "c", "d"}) this->Create(d.handle, n);

  auto p1 = this->ns_->ReadDir(cred, d.handle, {0, 0, 3, true});
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->entries.size(), 3u);
  EXPECT_FALSE(p1->eof);
  EXPECT_EQ(p1->entries[2].name, "a");
  ASSERT_TRUE(p1->entries[2].entry.has_value());
  EXPECT_EQ(p1->entries[2].entry->handle, this->Lookup(d.handle, "a")->object.handle);
  const uint64_t cookie_a = p1->entries[2].cookie;
  // The cookie's own entry goes away, another is added: the listing still
  // continues right after it.
  ASSERT_TRUE(this->ns_->Remove(cred, d.handle, "a").ok());
  this->Create(d.handle, "e");
  auto p2 = this->ns_->ReadDir(cred, d.handle, {cookie_a, p1->verifier, 10, false});
  ASSERT_TRUE(p2.ok());
  std::vector<std::string> names;
  for (const auto& e : p2->entries) {
    names.push_back(e.name);
    EXPECT_FALSE(e.entry.has_value());
    EXPECT_GT(e.cookie, cookie_a);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c", "d", "e"}));
  EXPECT_TRUE(p2->eof);
  EXPECT_EQ(p2->verifier, p1->verifier);
  EXPECT_EQ(CodeOf(this->ns_->ReadDir(cred, d.handle, {0, 0, 0, false})), StatusCode::kTooSmall);
  EXPECT_EQ(CodeOf(this->ns_->ReadDir(cred, d.handle, {1'000'000, 0, 5, false})),
            StatusCode::kBadCookie);
  // Listing reads only: it does not touch the directory.
  EXPECT_EQ(this->Attr(d.handle).atime, d.attr.atime);
}

TYPED_TEST(NamespaceTest, ChunkMapsCommitSplitTruncateAndHoles) {
  const auto cred = this->Root();
  const vfs::Entry f = this->Create(this->root_, "f");
  const ChunkId a = Id(1), b = Id(2), c = Id(3);
  this->Register({{a, 100}, {b, 50}, {c, 80}});
  auto empty = this->ns_->GetChunkMap(cred, f.handle, 0, UINT64_MAX);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->version, 1u);
  EXPECT_TRUE(empty->extents.empty());

  // A sparse file: A at [0,100), a hole, B at [200,250), a hole up to 300.
  auto v2 = this->Commit(f.handle, 1, 0, UINT64_MAX,
                         {Ext(0, 100, a, 0, 100), Ext(200, 50, b, 0, 50)}, 300);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(v2->wcc.after->size, 300u);
  EXPECT_EQ(v2->wcc.after->used, 150u);
  EXPECT_EQ(this->Extents(f.handle).size(), 2u);
  EXPECT_TRUE(this->Extents(f.handle, 120, 50).empty());
  EXPECT_EQ(this->Extents(f.handle, 99, 2), (std::vector<Extent>{Ext(0, 100, a, 0, 100)}));
  EXPECT_EQ(this->Extents(f.handle, 99, 102).size(), 2u);
  EXPECT_EQ(this->Extents(f.handle, 250, 100).size(), 0u);
  EXPECT_EQ(this->Refs(a), 1u);
  EXPECT_EQ(this->Refs(c), 0u);

  // A stale version is refused and changes nothing.
  EXPECT_EQ(CodeOf(this->Commit(f.handle, 1, 0, UINT64_MAX, {}, 0)), StatusCode::kAborted);
  EXPECT_EQ(this->Attr(f.handle).size, 300u);

  // Replacing [40,60) splits A; both pieces keep referencing it.
  ASSERT_TRUE(this->Commit(f.handle, 2, 40, 20, {Ext(40, 20, c, 10, 80)}, 300).ok());
  EXPECT_EQ(this->Extents(f.handle),
            (std::vector<Extent>{Ext(0, 40, a, 0, 100), Ext(40, 20, c, 10, 80),
                                 Ext(60, 40, a, 60, 100), Ext(200, 50, b, 0, 50)}));
  EXPECT_EQ(this->Refs(a), 2u);
  EXPECT_EQ(this->Refs(c), 1u);
  this->ExpectClean();

  // A range with no new extents becomes a hole.
  ASSERT_TRUE(this->Commit(f.handle, 3, 200, 50, {}, 300).ok());
  EXPECT_EQ(this->Refs(b), 0u);
  EXPECT_EQ(this->Attr(f.handle).used, 100u);

  // Truncation trims the extent it cuts and drops those past the end.
  vfs::SetAttrs shrink;
  shrink.size = 50;
  auto wcc = this->ns_->SetAttr(cred, f.handle, shrink, std::nullopt);
  ASSERT_TRUE(wcc.ok());
  EXPECT_EQ(this->Extents(f.handle),
            (std::vector<Extent>{Ext(0, 40, a, 0, 100), Ext(40, 10, c, 10, 80)}));
  EXPECT_EQ(this->Refs(a), 1u);
  EXPECT_EQ(this->ns_->GetChunkMap(cred, f.handle, 0, 1)->version, 5u);
  // Growing leaves a hole.
  vfs::SetAttrs grow;
  grow.size = 1000;
  ASSERT_TRUE(this->ns_->SetAttr(cred, f.handle, grow, std::nullopt).ok());
  EXPECT_TRUE(this->Extents(f.handle, 50, UINT64_MAX).empty());
  auto map = this->ns_->GetChunkMap(cred, f.handle, 0, UINT64_MAX);
  EXPECT_EQ(map->version, 6u);
  EXPECT_EQ(map->attr.size, 1000u);
  auto stats = this->ns_->Stats();
  EXPECT_EQ(stats->logical_bytes, 1000u);
  EXPECT_EQ(stats->chunks, 2u);
  EXPECT_EQ(stats->referenced_bytes, 180u);
  EXPECT_EQ(stats->extents, 2u);
  this->ExpectClean();

  // The chunk map survives a restart.
  this->Restart();
  EXPECT_EQ(this->Extents(f.handle).size(), 2u);
  // Removing the file drops its references.
  ASSERT_TRUE(this->ns_->Remove(cred, this->root_, "f").ok());
  EXPECT_EQ(this->Refs(a), 0u);
  EXPECT_EQ(this->Refs(c), 0u);
  EXPECT_EQ(this->ns_->Stats()->extents, 0u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, ChunkMapCommitRejectsBadUpdates) {
  const vfs::Entry f = this->Create(this->root_, "f");
  const vfs::Entry d = this->Mkdir(this->root_, "d");
  this->Register({{Id(1), 100}});
  auto code = [&](std::vector<Extent> extents, uint64_t new_size, uint64_t offset = 0,
                  uint64_t length = UINT64_MAX) {
    return CodeOf(this->Commit(f.handle, 1, offset, length, std::move(extents), new_size));
  };
  EXPECT_EQ(code({Ext(0, 10, Id(2), 0, 10)}, 10), StatusCode::kInvalidArgument);    // unregistered
  EXPECT_EQ(code({Ext(0, 10, Id(1), 0, 99)}, 10), StatusCode::kInvalidArgument);    // wrong size
  EXPECT_EQ(code({Ext(0, 0, Id(1), 0, 100)}, 10), StatusCode::kInvalidArgument);    // empty
  EXPECT_EQ(code({Ext(0, 10, Id(1), 95, 100)}, 10), StatusCode::kInvalidArgument);  // past chunk
  EXPECT_EQ(code({Ext(0, 20, Id(1), 0, 100)}, 10), StatusCode::kInvalidArgument);   // past size
  EXPECT_EQ(code({Ext(0, 10, Id(1), 0, 100), Ext(5, 10, Id(1), 0, 100)}, 50),
            StatusCode::kInvalidArgument);  // overlapping
  EXPECT_EQ(code({Ext(10, 10, Id(1), 0, 100), Ext(0, 5, Id(1), 0, 100)}, 50),
            StatusCode::kInvalidArgument);  // out of order
  EXPECT_EQ(code({Ext(0, 10, Id(1), 0, 100)}, 50, 5, 10), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({}, uint64_t{1} << 63), StatusCode::kFileTooLarge);
  EXPECT_EQ(CodeOf(this->Commit(d.handle, 1, 0, UINT64_MAX, {}, 0)), StatusCode::kIsDirectory);
  // Nothing of the above changed the file or any refcount.
  EXPECT_EQ(this->ns_->GetChunkMap(this->Root(), f.handle, 0, 1)->version, 1u);
  EXPECT_EQ(this->Refs(Id(1)), 0u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, GarbageCollectionHonoursReferencesAndGrace) {
  const auto grace = std::chrono::hours(1);
  const ChunkId a = Id(1), b = Id(2);
  std::vector<ChunkId> deleted;
  auto collect = [&](Status result = Status::Ok()) {
    auto r = this->ns_->CollectGarbage(this->clock_.WallNow(), grace, [&](const ChunkId& id) {
      deleted.push_back(id);
      return result;
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : GcResult{};
  };
  this->Register({{a, 10}, {b, 20}});
  const vfs::Entry f = this->Create(this->root_, "f");
  ASSERT_TRUE(this->Commit(f.handle, 1, 0, UINT64_MAX, {Ext(0, 10, a, 0, 10)}, 10).ok());
  EXPECT_EQ(collect().deleted, 0u);  // b is unreferenced, but young
  this->clock_.Advance(std::chrono::minutes(30));
  this->Register({{b, 20}});  // a writer is about to use b: a fresh grace
  this->clock_.Advance(std::chrono::minutes(31));
  EXPECT_EQ(collect().deleted, 0u);
  EXPECT_TRUE(deleted.empty());
  this->clock_.Advance(std::chrono::minutes(30));
  auto listed = this->ns_->ListUnreferenced(WallTime{INT64_MAX / 2, 0}, 100);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);  // never the referenced one
  EXPECT_EQ((*listed)[0].id, b);
  EXPECT_EQ(collect().deleted, 1u);
  EXPECT_EQ(deleted, std::vector<ChunkId>{b});
  EXPECT_FALSE(this->ns_->GetChunk(b)->has_value());
  this->ExpectClean();

  // The file goes; a is unreferenced from now on.
  ASSERT_TRUE(this->ns_->Remove(this->Root(), this->root_, "f").ok());
  deleted.clear();
  EXPECT_EQ(collect().deleted, 0u);
  this->clock_.Advance(grace);
  // The object store fails: a stays, marked, and cannot be used meanwhile.
  GcResult failed = collect(Status::IoError("s3 down"));
  EXPECT_EQ(failed.failed, 1u);
  EXPECT_TRUE((*this->ns_->GetChunk(a))->collecting);
  EXPECT_EQ(CodeOf(this->ns_->RegisterChunks(std::vector<ChunkRef>{{a, 10}})),
            StatusCode::kUnavailable);
  const vfs::Entry g = this->Create(this->root_, "g");
  EXPECT_EQ(CodeOf(this->Commit(g.handle, 1, 0, UINT64_MAX, {Ext(0, 10, a, 0, 10)}, 10)),
            StatusCode::kUnavailable);
  this->ExpectClean();
  this->Restart();  // a marked chunk is retried after a restart too
  EXPECT_EQ(collect().deleted, 1u);
  EXPECT_FALSE(this->ns_->GetChunk(a)->has_value());
  // Gone from the namespace, it can be registered and used afresh.
  this->Register({{a, 10}});
  EXPECT_TRUE(this->Commit(g.handle, 1, 0, UINT64_MAX, {Ext(0, 10, a, 0, 10)}, 10).ok());
  EXPECT_EQ(this->Refs(a), 1u);
  auto stats = this->ns_->Stats();
  EXPECT_EQ(stats->chunks, 1u);
  EXPECT_EQ(stats->unreferenced_chunks, 0u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, GarbageCollectionSkipsChunksReusedDuringThePass) {
  const auto grace = std::chrono::hours(1);
  this->Register({{Id(1), 10}, {Id(2), 10}});
  this->clock_.Advance(grace);
  std::vector<ChunkId> deleted;
  auto r = this->ns_->CollectGarbage(this->clock_.WallNow(), grace, [&](const ChunkId& id) {
    deleted.push_back(id);
    // While the first is being deleted, a writer registers the second.
    EXPECT_EQ(CodeOf(this->ns_->RegisterChunks(std::vector<ChunkRef>{{id, 10}})),
              StatusCode::kUnavailable);
    EXPECT_TRUE(this->ns_->RegisterChunks(std::vector<ChunkRef>{{Id(2), 10}}).ok());
    return Status::Ok();
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->deleted, 1u);
  EXPECT_EQ(deleted, std::vector<ChunkId>{Id(1)});
  ASSERT_TRUE(this->ns_->GetChunk(Id(2))->has_value());
  EXPECT_FALSE((*this->ns_->GetChunk(Id(2)))->collecting);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, CollectOrphanDeletesOnlyChunksWithoutARecord) {
  const WallTime stored_at = this->clock_.WallNow();
  std::vector<ChunkId> deleted;
  auto delete_ok = [&](const ChunkId& id) {
    deleted.push_back(id);
    return Status::Ok();
  };
  // A writer registered it (its upload may be in flight): never an orphan.
  this->Register({{Id(1), 10}});
  auto known = this->ns_->CollectOrphan(Id(1), 10, stored_at, delete_ok);
  ASSERT_TRUE(known.ok()) << known.status().ToString();
  EXPECT_FALSE(*known);
  EXPECT_TRUE(deleted.empty());
  EXPECT_FALSE((*this->ns_->GetChunk(Id(1)))->collecting);

  // Unknown to the namespace: deleted, and forgotten again.
  auto orphan = this->ns_->CollectOrphan(Id(2), 20, stored_at, delete_ok);
  ASSERT_TRUE(orphan.ok()) << orphan.status().ToString();
  EXPECT_TRUE(*orphan);
  EXPECT_EQ(deleted, std::vector<ChunkId>{Id(2)});
  EXPECT_FALSE(this->ns_->GetChunk(Id(2))->has_value());
  this->ExpectClean();

  // The delete fails: the orphan stays marked, no writer can register it,
  // and the next CollectGarbage pass (it is older than the grace) retries.
  auto failed = this->ns_->CollectOrphan(Id(3), 30, stored_at,
                                         [](const ChunkId&) { return Status::IoError("down"); });
  EXPECT_EQ(CodeOf(failed), StatusCode::kIoError);
  EXPECT_TRUE((*this->ns_->GetChunk(Id(3)))->collecting);
  EXPECT_EQ(CodeOf(this->ns_->RegisterChunks(std::vector<ChunkRef>{{Id(3), 30}})),
            StatusCode::kUnavailable);
  this->ExpectClean();
  const auto grace = std::chrono::hours(1);
  this->clock_.Advance(grace);
  deleted.clear();
  auto r = this->ns_->CollectGarbage(this->clock_.WallNow(), grace, delete_ok);
  ASSERT_TRUE(r.ok());
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<ChunkId>{Id(1), Id(3)}));
  EXPECT_FALSE(this->ns_->GetChunk(Id(3))->has_value());
  auto stats = this->ns_->Stats();
  EXPECT_EQ(stats->chunks, 0u);
  EXPECT_EQ(stats->unreferenced_chunks, 0u);
  EXPECT_EQ(stats->unreferenced_bytes, 0u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, AnOrphanSweepIsDueOnlyAfterARunThatDidNotStopCleanly) {
  auto due = [&]() -> std::optional<WallTime> {
    auto d = this->ns_->OrphanSweepDue();
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : std::nullopt;
  };
  // MarkRunning, and whether it found the previous run stopped cleanly.
  auto start = [&](WallTime now) {
    auto clean = this->ns_->MarkRunning(now);
    EXPECT_TRUE(clean.ok()) << clean.status().ToString();
    return clean.ok() && *clean;
  };
  const WallTime t1{1000, 1}, t2{2000, 2}, t3{3000, 3}, t4{4000, 4}, t5{5000, 5};
  EXPECT_EQ(due(), std::nullopt);

  // The store's first run: nothing says an earlier one stopped cleanly.
  EXPECT_FALSE(start(t1));
  EXPECT_EQ(due(), t1);

  // A crash (no clean stop), then a run whose due time covers the first's.
  this->Restart();
  EXPECT_FALSE(start(t2));
  EXPECT_EQ(due(), t2);
  ASSERT_TRUE(this->ns_->OrphanSweepDone(t1).ok());  // a sweep that started too early
  EXPECT_EQ(due(), t2);
  ASSERT_TRUE(this->ns_->OrphanSweepDone(t2).ok());
  EXPECT_EQ(due(), std::nullopt);

  // A clean stop: the next run needs no sweep.
  ASSERT_TRUE(this->ns_->MarkCleanStop().ok());
  this->Restart();
  EXPECT_TRUE(start(t3));
  EXPECT_EQ(due(), std::nullopt);

  // A crash again; the sweep it calls for survives clean restarts until done.
  this->Restart();
  EXPECT_FALSE(start(t4));
  ASSERT_TRUE(this->ns_->MarkCleanStop().ok());
  this->Restart();
  EXPECT_TRUE(start(t5));
  EXPECT_EQ(due(), t4);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, StoredSizesAddUpWithoutListingTheStore) {
  auto stats = [&] {
    auto s = this->ns_->Stats();
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : NamespaceStats{};
  };
  auto record = [&](std::vector<StoredChunkSize> sizes) {
    Status s = this->ns_->RecordStoredSizes(sizes);
    ASSERT_TRUE(s.ok()) << s.ToString();
  };
  // Registered before they are stored: sizes not known yet.
  this->Register({{Id(1), 100}, {Id(2), 200}});
  EXPECT_EQ(stats().unsized_chunks, 2u);
  EXPECT_EQ(stats().stored_bytes, 0u);
  this->ExpectClean();

  // Stored: what the object store reported. Unknown chunks and zero sizes
  // teach nothing.
  record({{Id(1), 40}, {Id(2), 210}, {Id(9), 5}, {Id(1), 0}});
  EXPECT_EQ((*this->ns_->GetChunk(Id(1)))->stored_size, 40u);
  EXPECT_FALSE(this->ns_->GetChunk(Id(9))->has_value());
  EXPECT_EQ(stats().unsized_chunks, 0u);
  EXPECT_EQ(stats().stored_bytes, 250u);
  // Recorded again (stored anew in another form): replaced, not added.
  record({{Id(1), 45}, {Id(1), 45}});
  EXPECT_EQ(stats().stored_bytes, 255u);
  // Registering again keeps the size; referencing and restarting too.
  this->Register({{Id(1), 100}});
  const vfs::Entry f = this->Create(this->root_, "f");
  ASSERT_TRUE(this->Commit(f.handle, 1, 0, UINT64_MAX, {Ext(0, 100, Id(1), 0, 100)}, 100).ok());
  this->Restart();
  EXPECT_EQ((*this->ns_->GetChunk(Id(1)))->stored_size, 45u);
  EXPECT_EQ(stats().stored_bytes, 255u);
  this->ExpectClean();

  // An orphan being collected counts until it is forgotten.
  const WallTime stored_at = this->clock_.WallNow();
  auto failed = this->ns_->CollectOrphan(Id(3), 70, stored_at,
                                         [](const ChunkId&) { return Status::IoError("down"); });
  EXPECT_EQ(CodeOf(failed), StatusCode::kIoError);
  EXPECT_EQ(stats().stored_bytes, 325u);
  this->ExpectClean();

  // Collected chunks leave the counts.
  ASSERT_TRUE(this->ns_->Remove(this->Root(), this->root_, "f").ok());
  const auto grace = std::chrono::hours(1);
  this->clock_.Advance(grace);
  auto gc = this->ns_->CollectGarbage(this->clock_.WallNow(), grace,
                                      [](const ChunkId&) { return Status::Ok(); });
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->deleted, 3u);
  EXPECT_EQ(stats().stored_bytes, 0u);
  EXPECT_EQ(stats().unsized_chunks, 0u);
  // A chunk registered but never stored leaves unsized.
  this->Register({{Id(4), 10}});
  EXPECT_EQ(stats().unsized_chunks, 1u);
  this->clock_.Advance(grace);
  ASSERT_TRUE(this->ns_
                  ->CollectGarbage(this->clock_.WallNow(), grace,
                                   [](const ChunkId&) { return Status::Ok(); })
                  .ok());
  EXPECT_EQ(stats().unsized_chunks, 0u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, RecordsFromBeforeStoredSizesReadAsUnsized) {
  this->Register({{Id(1), 100}, {Id(2), 200}});
  ASSERT_TRUE(this->ns_->RecordStoredSizes(std::vector<StoredChunkSize>{{Id(1), 40}}).ok());
  // Rewrites the chunk and statistics records in their first layout: format
  // byte 1, without the stored size(s) the current layout appends.
  auto first_layout = [](std::string value, size_t appended) {
    value[0] = 1;
    value.resize(value.size() - appended);
    return value;
  };
  WriteBatch old;
  for (int i : {1, 2}) {
    const std::string key = schema::ChunkKey(Id(i));
    old.Put(key, first_layout(**this->kv_->Get(key), 8));
  }
  old.Put(schema::StatsKey(), first_layout(**this->kv_->Get(schema::StatsKey()), 16));
  ASSERT_TRUE(this->kv_->Write(old).ok());
  ASSERT_TRUE(this->ns_->MarkCleanStop().ok());
  this->Restart();

  auto stats = this->ns_->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->unreferenced_chunks, 2u);
  EXPECT_EQ(stats->unsized_chunks, 2u);
  EXPECT_EQ(stats->stored_bytes, 0u);
  EXPECT_EQ((*this->ns_->GetChunk(Id(1)))->stored_size, 0u);
  this->ExpectClean();
  // A clean stop, but the sweep's listing is what tells the missing sizes.
  auto clean = this->ns_->MarkRunning(this->clock_.WallNow());
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(*clean);
  EXPECT_TRUE(this->ns_->OrphanSweepDue()->has_value());
  ASSERT_TRUE(
      this->ns_->RecordStoredSizes(std::vector<StoredChunkSize>{{Id(1), 40}, {Id(2), 200}}).ok());
  EXPECT_EQ(this->ns_->Stats()->unsized_chunks, 0u);
  EXPECT_EQ(this->ns_->Stats()->stored_bytes, 240u);
  this->ExpectClean();
}

// Counts the writes that asked for durability and the syncs.
class SyncCountingKvStore : public KvStoreWrapper {
 public:
  using KvStoreWrapper::KvStoreWrapper;
  Status Sync() override {
    ++syncs;
    return KvStoreWrapper::Sync();
  }
  int syncs = 0;
  int synced_writes = 0;

 protected:
  Status DoWrite(const WriteBatch& batch, bool sync) override {
    if (sync) ++synced_writes;
    return KvStoreWrapper::DoWrite(batch, sync);
  }
};

TEST(NamespaceRegistrationTest, AnUnsyncedRegistrationWaitsForTheNextSyncedChange) {
  MemoryKvStore memory;
  SyncCountingKvStore store(&memory);
  auto ns = Namespace::Open(&store);
  ASSERT_TRUE(ns.ok());
  store.syncs = store.synced_writes = 0;
  ASSERT_TRUE((*ns)->RegisterChunks(std::vector<ChunkRef>{{Id(1), 10}}, /*sync=*/false).ok());
  EXPECT_EQ(store.syncs + store.synced_writes, 0);
  // Applied all the same: it protects the chunk in this process.
  auto c = (*ns)->GetChunk(Id(1));
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->size, 10u);
  // The default registration, and every other change, syncs.
  ASSERT_TRUE((*ns)->RegisterChunks(std::vector<ChunkRef>{{Id(2), 10}}).ok());
  EXPECT_GE(store.syncs + store.synced_writes, 1);
}

TYPED_TEST(NamespaceTest, FsckFindsInjectedInconsistencies) {
  const vfs::Entry d = this->Mkdir(this->root_, "d");
  const vfs::Entry f = this->Create(d.handle, "f");
  this->Register({{Id(1), 100}});
  ASSERT_TRUE(this->Commit(f.handle, 1, 0, UINT64_MAX, {Ext(0, 100, Id(1), 0, 100)}, 100).ok());
  const vfs::Entry gone = this->Create(d.handle, "gone");
  ASSERT_TRUE(this->ns_->Remove(this->Root(), d.handle, "gone").ok());
  this->ExpectClean();
  const uint64_t fino = InoOf(f.handle), dino = InoOf(d.handle);
  auto stored = [&](const std::string& key) { return **this->kv_->Get(key); };
  const std::string f_key = schema::InodeKey(fino), d_key = schema::InodeKey(dino);
  const schema::InodeRecord f_rec = *schema::DecodeInode(fino, stored(f_key));
  const schema::InodeRecord d_rec = *schema::DecodeInode(dino, stored(d_key));
  auto put = [](const std::string& k, const std::string& v) {
    WriteBatch b;
    b.Put(k, v);
    return b;
  };
  auto del = [](const std::string& k) {
    WriteBatch b;
    b.Delete(k);
    return b;
  };

  {  // An entry naming an inode that does not exist.
    WriteBatch inject = put(schema::DirentKey(dino, "ghost"),
                            schema::EncodeDirent({999'999, vfs::FileType::kRegular, 3}));
    this->ExpectFsckFinds(inject, del(schema::DirentKey(dino, "ghost")), "names missing inode");
  }
  {  // A file whose link count is wrong.
    schema::InodeRecord bad = f_rec;
    bad.nlink = 5;
    this->ExpectFsckFinds(put(f_key, schema::EncodeInode(bad)), put(f_key, stored(f_key)),
                          "has nlink 5 but 1 names");
  }
  {  // An inode no entry names.
    schema::InodeRecord orphan = f_rec;
    orphan.ino = InoOf(gone.handle);
    orphan.generation = GenOf(gone.handle);
    orphan.size = orphan.used = 0;
    const std::string key = schema::InodeKey(orphan.ino);
    this->ExpectFsckFinds(put(key, schema::EncodeInode(orphan)), del(key), "orphan");
  }
  {  // A directory that miscounts its entries.
    schema::InodeRecord bad = d_rec;
    bad.entries = 7;
    this->ExpectFsckFinds(put(d_key, schema::EncodeInode(bad)), put(d_key, stored(d_key)),
                          "counts 7 entries, holds 1");
  }
  {  // A refcount that disagrees with the extents.
    const std::string key = schema::ChunkKey(Id(1));
    ChunkInfo bad = *schema::DecodeChunk(Id(1), stored(key));
    bad.refs = 2;
    this->ExpectFsckFinds(put(key, schema::EncodeChunk(bad)), put(key, stored(key)),
                          "has refcount 2 but 1 extents");
  }
  {  // An extent naming an unknown chunk.
    const std::string key = schema::ExtentKey(fino, 100);
    this->ExpectFsckFinds(put(key, schema::EncodeExtent(Ext(0, 100, Id(9), 0, 100))),
                          put(key, stored(key)), "has no refcount");
  }
  {  // An extent past the end of its file, overlapping the previous one.
    WriteBatch inject =
        put(schema::ExtentKey(fino, 150), schema::EncodeExtent(Ext(50, 100, Id(1), 0, 100)));
    this->ExpectFsckFinds(inject, del(schema::ExtentKey(fino, 150)), "past the file's size");
  }
  {  // A cookie record without its entry.
    const std::string key = schema::CookieKey(dino, 1000);
    this->ExpectFsckFinds(put(key, schema::EncodeCookie({fino, vfs::FileType::kRegular, "x"})),
                          del(key), "has no entry record");
  }
  {  // Statistics that drifted.
    const std::string key = schema::StatsKey();
    NamespaceStats bad = *schema::DecodeStats(stored(key));
    ++bad.inodes;
    this->ExpectFsckFinds(put(key, schema::EncodeStats(bad)), put(key, stored(key)),
                          "statistics: inodes");
  }
  {  // A record that does not decode, and a key of no known family.
    this->ExpectFsckFinds(put(f_key, "garbage"), put(f_key, stored(f_key)), "malformed inode");
    this->ExpectFsckFinds(put("Zzz", "?"), del("Zzz"), "unknown key");
  }
}

TYPED_TEST(NamespaceTest, ConcurrentChangesStayConsistent) {
  constexpr int kThreads = 4, kRounds = 40;
  std::vector<vfs::Entry> dirs;
  for (int t = 0; t < kThreads; ++t)
    dirs.push_back(this->Mkdir(this->root_, "t" + std::to_string(t)));
  this->Register({{Id(1), 64}, {Id(2), 64}});
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) {
      for (const vfs::Entry& d : dirs) {
        auto page = this->ns_->ReadDir(this->Root(), d.handle, {0, 0, 50, true});
        EXPECT_TRUE(page.ok()) << page.status().ToString();
        auto found = this->ns_->Lookup(this->Root(), d.handle, "g");
        EXPECT_TRUE(found.ok() || found.status().code() == StatusCode::kNotFound);
      }
      EXPECT_TRUE(this->ns_->Fsck().ok());
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      const auto cred = this->Root();
      const Handle dir = dirs[t].handle;
      vfs::CreateRequest req;
      for (int i = 0; i < kRounds; ++i) {
        auto f = this->ns_->Create(cred, dir, "f", req);
        ASSERT_TRUE(f.ok()) << f.status().ToString();
        ChunkMapUpdate u;
        u.expected_version = 1;
        u.extents = {Ext(0, 64, Id(1 + i % 2), 0, 64)};
        u.new_size = 64;
        ASSERT_TRUE(this->ns_->CommitChunkMap(cred, f->object.handle, u).ok());
        ASSERT_TRUE(this->ns_->Rename(cred, dir, "f", dir, "g").ok());
        ASSERT_TRUE(this->ns_->Link(cred, f->object.handle, dir, "h" + std::to_string(i)).ok());
        ASSERT_TRUE(this->ns_->Remove(cred, dir, "g").ok());
      }
    });
  }
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  auto stats = this->ns_->Stats();
  EXPECT_EQ(stats->files, uint64_t{kThreads * kRounds});
  EXPECT_EQ(stats->extents, uint64_t{kThreads * kRounds});
  EXPECT_EQ(this->Refs(Id(1)) + this->Refs(Id(2)), uint64_t{kThreads * kRounds});
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, AFailedWriteChangesNothing) {
  FailingKvStore failing(this->env_.store());
  this->Open(&failing);
  const vfs::Entry a = this->Create(this->root_, "a");
  std::set<uint64_t> inos{InoOf(a.handle)};
  vfs::CreateRequest req;
  // ino_reserve is 16: fail writes at and around the counter's extension.
  for (int i = 0; i < 40; ++i) {
    if (i % 7 == 0) {
      failing.FailNextWrites(1);
      auto r = this->ns_->Create(this->Root(), this->root_, "x" + std::to_string(i), req);
      EXPECT_EQ(CodeOf(r), StatusCode::kIoError);
      EXPECT_EQ(CodeOf(this->Lookup(this->root_, "x" + std::to_string(i))), StatusCode::kNotFound);
    } else {
      EXPECT_TRUE(
          inos.insert(InoOf(this->Create(this->root_, "y" + std::to_string(i)).handle)).second);
    }
  }
  this->ExpectClean();
  this->ns_.reset();
  this->Restart();
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(
        inos.insert(InoOf(this->Create(this->root_, "z" + std::to_string(i)).handle)).second);
  }
  EXPECT_EQ(this->ns_->Stats()->files, inos.size());
  this->ExpectClean();
}

// Work per call does not grow with the directory or the file: counted
// store operations stay bounded by the page or range asked for.
TYPED_TEST(NamespaceTest, LookupListingAndRangesCostNoScans) {
  CountingKvStore counting(this->env_.store());
  UnsyncedKvStore unsynced(&counting);
  this->Open(&unsynced);
  const auto cred = this->Root();
  const vfs::Entry d = this->Mkdir(this->root_, "big");
  constexpr int kEntries = 5000;
  vfs::CreateRequest req;
  for (int i = 0; i < kEntries; ++i) {
    ASSERT_TRUE(this->ns_->Create(cred, d.handle, "e" + std::to_string(i), req).ok());
  }
  counting.Reset();
  ASSERT_TRUE(this->Lookup(d.handle, "e2500").ok());
  EXPECT_LE(counting.gets(), 3u);
  EXPECT_EQ(counting.seeks(), 0u);
  counting.Reset();
  auto page = this->ns_->ReadDir(cred, d.handle, {2500, 0, 100, true});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->entries.size(), 100u);
  EXPECT_EQ(counting.seeks(), 1u);
  EXPECT_LE(counting.steps(), 101u);
  EXPECT_LE(counting.gets(), 101u);

  const vfs::Entry f = this->Create(this->root_, "huge");
  constexpr int kExtents = 3000;
  std::vector<ChunkRef> refs;
  std::vector<Extent> extents;
  for (int i = 0; i < kExtents; ++i) {
    refs.push_back({Id(i), 1000});
    extents.push_back(Ext(uint64_t(i) * 1000, 1000, Id(i), 0, 1000));
  }
  this->Register(refs);
  ASSERT_TRUE(this->Commit(f.handle, 1, 0, UINT64_MAX, extents, kExtents * 1000).ok());
  counting.Reset();
  EXPECT_EQ(this->Extents(f.handle, 1'500'500, 1000).size(), 2u);
  EXPECT_EQ(counting.seeks(), 1u);
  EXPECT_LE(counting.steps(), 3u);
  // Rewriting a small range of a big file touches only what it cuts.
  counting.Reset();
  ASSERT_TRUE(this->Commit(f.handle, 2, 1'500'500, 1000, {Ext(1'500'500, 1000, Id(7), 0, 1000)},
                           kExtents * 1000)
                  .ok());
  EXPECT_LE(counting.steps(), 4u);
  EXPECT_LE(counting.written_ops(), 16u);
  this->ExpectClean();
}

TYPED_TEST(NamespaceTest, PagedListingOfALargeDirectoryUnderChange) {
  UnsyncedKvStore unsynced(this->env_.store());
  this->Open(&unsynced);
  const auto cred = this->Root();
  const vfs::Entry d = this->Mkdir(this->root_, "big");
  const size_t n = LargeDirEntries();
  vfs::CreateRequest req;
  std::vector<std::string> alive;
  std::unordered_set<std::string> initial;
  const auto started = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    std::string name = "e" + std::to_string(i);
    ASSERT_TRUE(this->ns_->Create(cred, d.handle, name, req).ok());
    initial.insert(name);
    alive.push_back(std::move(name));
  }
  std::mt19937_64 rng(42);
  std::unordered_set<std::string> removed_unseen, created, seen, removed;
  size_t created_count = 0;
  vfs::ReadDirRequest page_req;
  page_req.max_entries = 1000;
  const auto created_at = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration listing{0};
  size_t pages = 0;
  while (true) {
    const auto page_start = std::chrono::steady_clock::now();
    auto page = this->ns_->ReadDir(cred, d.handle, page_req);
    listing += std::chrono::steady_clock::now() - page_start;
    ++pages;
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const vfs::DirEntry& e : page->entries) {
      page_req.cookie = e.cookie;
      if (e.name == "." || e.name == "..") continue;
      EXPECT_TRUE(seen.insert(e.name).second) << e.name << " listed twice";
      EXPECT_FALSE(removed_unseen.count(e.name)) << e.name << " listed after its removal";
    }
    if (page->eof) break;
    // Between pages: remove 30 random live entries, add 30 new ones.
    for (int k = 0; k < 30 && !alive.empty(); ++k) {
      const size_t idx = rng() % alive.size();
      std::swap(alive[idx], alive.back());
      const std::string name = std::move(alive.back());
      alive.pop_back();
      ASSERT_TRUE(this->ns_->Remove(cred, d.handle, name).ok());
      if (!seen.count(name)) removed_unseen.insert(name);
      removed.insert(name);
    }
    for (int k = 0; k < 30; ++k) {
      std::string name = "n" + std::to_string(created_count++);
      ASSERT_TRUE(this->ns_->Create(cred, d.handle, name, req).ok());
      created.insert(name);
      alive.push_back(std::move(name));
    }
  }
  auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::printf("[ timing   ] %zu entries: created in %lld ms; %zu pages of 1000 read in %lld ms\n",
              n, static_cast<long long>(ms(created_at - started)), pages,
              static_cast<long long>(ms(listing)));
  // Every entry alive at the end (whether there from the start or created
  // during the listing) was listed, exactly once (checked above), and
  // nothing else was.
  for (const std::string& name : alive) EXPECT_TRUE(seen.count(name)) << name << " never listed";
  for (const std::string& name : seen) {
    EXPECT_TRUE(initial.count(name) || created.count(name)) << name << " is not ours";
  }
  EXPECT_EQ(seen.size(), alive.size() + removed.size() - removed_unseen.size());
  auto stats = this->ns_->Stats();
  EXPECT_EQ(stats->files, alive.size());
}

}  // namespace
}  // namespace geofs::meta
