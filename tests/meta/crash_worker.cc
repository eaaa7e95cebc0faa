// namespace_crash_worker DIR SEED: changes the namespace in DIR at random,
// forever, until killed. After each acknowledged create under /ledger it
// prints the name on stdout, so the test knows what must survive.
//
// Exit status: 2 on an unexpected error, 1 on bad usage.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "meta/namespace.h"
#include "meta/rocks_kv_store.h"

namespace geofs::meta {
namespace {

constexpr int kNames = 24;
constexpr int kChunks = 12;
constexpr uint64_t kChunkSize = 4096;

const vfs::Credentials kRoot{0, 0, {}};

ChunkId PoolChunk(int i) {
  ChunkId id{};
  id[0] = 0xc0;
  id[1] = static_cast<uint8_t>(i);
  return id;
}

// Codes a random workload meets in normal operation.
bool Expected(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kNotEmpty:
    case StatusCode::kIsDirectory:
    case StatusCode::kNotDirectory:
    case StatusCode::kAborted:
    case StatusCode::kStale:
      return true;
    default:
      return false;
  }
}

template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}
const Status& StatusOf(const Status& s) { return s; }

#define CHECK_EXPECTED(expr)                                                                    \
  do {                                                                                          \
    const auto& geofs_r = (expr);                                                               \
    if (!Expected(StatusOf(geofs_r))) {                                                         \
      std::fprintf(stderr, "unexpected: %s at line %d\n", StatusOf(geofs_r).ToString().c_str(), \
                   __LINE__);                                                                   \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

class Worker {
 public:
  Worker(Namespace* ns, uint64_t seed) : ns_(ns), rng_(seed) {}

  int Run() {
    root_ = ns_->RootHandle();
    work_ = Dir(root_, "work");
    ledger_ = Dir(root_, "ledger");
    for (int i = 0; i < 4; ++i) dirs_.push_back(Dir(work_, "d" + std::to_string(i)));
    dirs_.push_back(work_);
    std::vector<ChunkRef> pool;
    for (int i = 0; i < kChunks; ++i) pool.push_back({PoolChunk(i), kChunkSize});
    for (uint64_t n = Next(1'000'000'000);; ++n) {
      CHECK_EXPECTED(ns_->RegisterChunks(pool));
      RandomChange();
      vfs::CreateRequest req;
      req.mode = vfs::CreateMode::kGuarded;
      const std::string name = "n" + std::to_string(n);
      auto created = ns_->Create(kRoot, ledger_, name, req);
      if (created.ok()) {
        std::printf("%s\n", name.c_str());
        std::fflush(stdout);
      } else {
        CHECK_EXPECTED(created);
      }
    }
  }

 private:
  uint64_t Next(uint64_t n) { return rng_() % n; }
  const vfs::Handle& AnyDir() { return dirs_[Next(dirs_.size())]; }
  std::string AnyName() { return "f" + std::to_string(Next(kNames)); }

  vfs::Handle Dir(const vfs::Handle& parent, const std::string& name) {
    auto made = ns_->Mkdir(kRoot, parent, name, {});
    if (made.ok()) return made->object.handle;
    auto found = ns_->Lookup(kRoot, parent, name);
    if (!found.ok()) {
      std::fprintf(stderr, "cannot make %s: %s\n", name.c_str(), found.status().ToString().c_str());
      std::exit(2);
    }
    return found->object.handle;
  }

  void RandomChange() {
    const vfs::Handle dir = AnyDir();
    const std::string name = AnyName();
    switch (Next(8)) {
      case 0: {
        vfs::CreateRequest req;
        CHECK_EXPECTED(ns_->Create(kRoot, dir, name, req));
        break;
      }
      case 1:
      case 2:
        return WriteChunks(dir, name);
      case 3: {
        auto found = ns_->Lookup(kRoot, dir, name);
        if (!found.ok()) return;
        vfs::SetAttrs attrs;
        attrs.size = Next(4 * kChunkSize);
        CHECK_EXPECTED(ns_->SetAttr(kRoot, found->object.handle, attrs, std::nullopt));
        break;
      }
      case 4:
        CHECK_EXPECTED(ns_->Rename(kRoot, dir, name, AnyDir(), AnyName()));
        break;
      case 5: {
        auto found = ns_->Lookup(kRoot, dir, name);
        if (!found.ok()) return;
        CHECK_EXPECTED(ns_->Link(kRoot, found->object.handle, AnyDir(), AnyName()));
        break;
      }
      case 6:
        CHECK_EXPECTED(ns_->Remove(kRoot, dir, name));
        break;
      case 7: {
        auto gc = ns_->CollectGarbage(WallTime{INT64_MAX / 4, 0}, std::chrono::nanoseconds(0),
                                      [](const ChunkId&) { return Status::Ok(); });
        CHECK_EXPECTED(gc);
        break;
      }
    }
  }

  void WriteChunks(const vfs::Handle& dir, const std::string& name) {
    auto found = ns_->Lookup(kRoot, dir, name);
    if (!found.ok() || found->object.attr.type != vfs::FileType::kRegular) return;
    auto map = ns_->GetChunkMap(kRoot, found->object.handle, 0, UINT64_MAX);
    CHECK_EXPECTED(map);
    if (!map.ok()) return;
    ChunkMapUpdate u;
    u.expected_version = map->version;
    u.offset = Next(8) * kChunkSize / 2;
    u.length = (1 + Next(4)) * kChunkSize;
    const uint64_t end = u.offset + u.length;
    uint64_t at = u.offset + Next(100);
    for (int i = 0, n = static_cast<int>(Next(3)); i < n && at < end; ++i) {
      const uint64_t len = 1 + Next(std::min<uint64_t>(kChunkSize / 2, end - at));
      u.extents.push_back(
          {at, len, PoolChunk(static_cast<int>(Next(kChunks))), Next(kChunkSize / 2), kChunkSize});
      at += len + Next(100);
    }
    u.new_size = std::max<uint64_t>(map->attr.size, u.offset + u.length);
    CHECK_EXPECTED(ns_->CommitChunkMap(kRoot, found->object.handle, u));
  }

  Namespace* const ns_;
  std::mt19937_64 rng_;
  vfs::Handle root_, work_, ledger_;
  std::vector<vfs::Handle> dirs_;
};

}  // namespace
}  // namespace geofs::meta

int main(int argc, char** argv) {
  using namespace geofs::meta;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DIR SEED\n", argv[0]);
    return 1;
  }
  auto store = RocksKvStore::Open(argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 2;
  }
  auto ns = Namespace::Open(store->get());
  if (!ns.ok()) {
    std::fprintf(stderr, "namespace: %s\n", ns.status().ToString().c_str());
    return 2;
  }
  return Worker(ns->get(), std::strtoull(argv[2], nullptr, 10)).Run();
}
