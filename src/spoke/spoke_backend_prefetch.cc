// SpokeBackend: the prefetcher's PrefetchSource, over the metadata cache,
// the chunk fetcher and the hub link.
//
// Prefetch runs with root's credentials at the hub: it only fills the
// caches, and every NFS call served from them is still checked against the
// cached attributes with the hub's own rules (vfs/access.h), as a call
// answered by the hub would be.
#include <algorithm>

#include "cache/chunk_cache.h"
#include "prefetch/sequential_predictor.h"
#include "prefetch/tree_predictor.h"
#include "spoke/chunk_fetcher.h"
#include "spoke/metadata_cache.h"
#include "spoke/spoke_backend.h"
#include "spoke/spoke_backend_internal.h"

namespace geofs::spoke {
namespace {

// Entries per DescribeDir page: one round trip for an ordinary class
// directory of an image folder.
constexpr uint32_t kDescribePage = 4096;

prefetch::FileChunks ChunksOfMap(const FileKey& key, const ChunkMap& map) {
  prefetch::FileChunks out;
  out.file = {key.ino, key.gen};
  out.size = map.attr.size;
  out.chunks.reserve(map.extents.size());
  for (const MapExtent& e : map.extents) {
    out.chunks.push_back(prefetch::ChunkSpan{e.id, e.offset, e.length, e.chunk_length});
  }
  return out;
}

}  // namespace

class SpokeBackend::PrefetchBridge final : public prefetch::PrefetchSource {
 public:
  PrefetchBridge(SpokeBackend* backend, uint64_t cache_budget)
      : b_(backend), cache_budget_(cache_budget) {}

  void DescribeDir(const prefetch::FileId& dir, uint64_t cookie,
                   std::function<void(Result<prefetch::DirPage>)> cb) override {
    const FileKey dkey{dir.ino, dir.gen};
    const uint64_t epoch = b_->meta_->Epoch();
    auto req = WithCred<v1::DescribeDirRequest>(vfs::Credentials{});
    *req.mutable_dir() = ToProto(dkey);
    req.set_cookie(cookie);
    req.set_max_entries(kDescribePage);
    b_->link_->Call(&v1::Hub::Stub::async::DescribeDir, std::move(req),
                    [this, dkey, epoch, cb = std::move(cb)](Result<v1::DescribeDirResponse> r,
                                                           Grant g) {
                      if (!r.ok()) return cb(r.status());
                      cb(Absorb(dkey, *r, ExpiryOf(g), epoch));
                    });
  }

  void ChunksOf(const prefetch::FileId& file,
                std::function<void(Result<prefetch::FileChunks>)> cb) override {
    const FileKey key{file.ino, file.gen};
    b_->FetchChunkMap(vfs::Credentials{}, key,
                      [key, cb = std::move(cb)](Result<std::shared_ptr<const ChunkMap>> map) {
                        if (!map.ok()) return cb(map.status());
                        cb(ChunksOfMap(key, **map));
                      });
  }

  std::vector<chunk::ChunkId> Fetch(const std::vector<chunk::ChunkId>& ids,
                                    ChunkDone done) override {
    return b_->fetcher_->Prefetch(ids, std::move(done));
  }

  uint64_t CacheBudget() const override { return cache_budget_; }

 private:
  // Puts what the page describes into the metadata cache, as ReadDir,
  // Lookup and GetChunkMap replies would, and hands the prefetcher its files.
  Result<prefetch::DirPage> Absorb(const FileKey& dkey, const v1::DescribeDirResponse& r,
                                   SteadyTime expiry, uint64_t epoch) {
    MetadataCache& meta = *b_->meta_;
    GEOFS_ASSIGN_OR_RETURN(std::optional<vfs::Attr> dir_attr,
                           OptionalAttr(r.has_dir_attr(), r.dir_attr()));
    if (dir_attr) meta.PutAttr(dkey, *dir_attr, expiry, epoch);
    prefetch::DirPage page;
    page.eof = r.eof();
    for (const v1::DescribedEntry& d : r.entries()) {
      const v1::DirEntry& e = d.entry();
      page.next_cookie = e.cookie();
      if (!e.has_entry()) continue;
      GEOFS_ASSIGN_OR_RETURN(vfs::Entry entry, FromProto(e.entry()));
      const FileKey child = FromProto(e.entry().ref());
      meta.PutAttr(child, entry.attr, expiry, epoch);
      // Only with the directory's attributes may a cached name answer
      // LOOKUP (SpokeBackend::Lookup checks search permission on them).
      if (dir_attr) meta.PutLookup(dkey, e.name(), child, expiry, epoch);
      if (entry.attr.type == vfs::FileType::kDirectory) {
        page.subdirs.push_back({child.ino, child.gen});
        continue;
      }
      if (!d.has_map()) continue;
      GEOFS_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkMap> map,
                             MapFromProto(d.version(), e.entry().attr(), d.extents()));
      meta.PutChunkMap(child, map, expiry, epoch);
      page.files.push_back(ChunksOfMap(child, *map));
    }
    return page;
  }

  SpokeBackend* const b_;
  const uint64_t cache_budget_;
};

void SpokeBackend::StartPrefetch() {
  const uint64_t capacity = cache_->Stats().capacity_bytes;
  ring_ = std::make_unique<prefetch::AccessRing>();
  bridge_ = std::make_unique<PrefetchBridge>(
      this, static_cast<uint64_t>(static_cast<double>(capacity) * options_.prefetch_cache_share));
  std::vector<std::unique_ptr<prefetch::Predictor>> predictors;
  predictors.push_back(std::make_unique<prefetch::SequentialPredictor>());
  predictors.push_back(std::make_unique<prefetch::TreePredictor>());
  prefetch::PrefetcherOptions options = options_.prefetcher;
  options.clock = options_.clock;
  prefetcher_ = std::make_unique<prefetch::Prefetcher>(bridge_.get(), ring_.get(),
                                                       std::move(predictors), options);
  prefetcher_->Start();
}

}  // namespace geofs::spoke
