// SpokeBackend: READ (chunk maps, chunks, journal overlay).
#include <algorithm>
#include <cstring>

#include "spoke/chunk_fetcher.h"
#include "spoke/local_creates.h"
#include "spoke/metadata_cache.h"
#include "spoke/spoke_backend.h"
#include "spoke/spoke_backend_internal.h"
#include "vfs/access.h"

namespace geofs::spoke {
namespace {

// The first extent of `map` that ends after `offset`.
std::vector<MapExtent>::const_iterator FirstEndingAfter(const ChunkMap& map, uint64_t offset) {
  return std::upper_bound(
      map.extents.begin(), map.extents.end(), offset,
      [](uint64_t off, const MapExtent& e) { return off < e.offset + e.length; });
}

// Assembles one READ reply from the chunks of the extents it touches.
class ReadAssembly : public std::enable_shared_from_this<ReadAssembly> {
 public:
  // With `trace`, the READ is recorded in the access stream when it is
  // answered: how long it waited, and whether its chunks were cached.
  ReadAssembly(uint64_t begin, uint64_t end, vfs::ReadReply reply, vfs::Callback<vfs::ReadReply> cb,
               std::optional<ReadTrace> trace)
      : begin_(begin),
        end_(end),
        reply_(std::move(reply)),
        cb_(std::move(cb)),
        trace_(std::move(trace)) {}

  // Fetches every extent overlapping [begin, end) and answers.
  void Run(ChunkFetcher* fetcher, BufferPool* pool, const ChunkMap& map,
           std::vector<PendingRange> overlay) {
    overlay_ = std::move(overlay);
    std::vector<MapExtent> parts;
    for (auto it = FirstEndingAfter(map, begin_); it != map.extents.end() && it->offset < end_;
         ++it) {
      parts.push_back(*it);
    }
    // One chunk covers the whole range and nothing overlays it: no copy.
    if (parts.size() == 1 && overlay_.empty() && parts[0].offset <= begin_ &&
        parts[0].offset + parts[0].length >= end_) {
      MapExtent e = parts[0];
      auto self = shared_from_this();
      uint64_t want = end_ - begin_;
      fetcher->GetRange(
          e.id, e.chunk_offset + (begin_ - e.offset), want,
          [self, e, want](Result<Buffer> raw) {
            if (!raw.ok()) return self->Answer(raw.status());
            if (raw->size() < want) {
              return self->Answer(Status::IoError("chunk " + e.id.ToHex() + " is short"));
            }
            self->reply_.data = std::move(raw).value();
            self->Answer(std::move(self->reply_));
          },
          Note());
      return;
    }
    buffer_ = pool->Allocate(end_ - begin_, &out_);
    remaining_ = parts.size() + 1;
    uint64_t filled = begin_;  // parts are sorted and do not overlap
    for (const MapExtent& e : parts) {
      auto self = shared_from_this();
      uint64_t from = std::max(e.offset, begin_);
      uint64_t to = std::min(e.offset + e.length, end_);
      ZeroHole(filled, from);
      filled = to;
      // Straight into the reply: a disk hit is read there, not copied.
      fetcher->ReadRangeInto(
          e.id, e.chunk_offset + (from - e.offset), to - from, out_ + (from - begin_),
          [self, e, from, to](Result<size_t> copied) {
            if (!copied.ok()) return self->Done(copied.status());
            if (*copied < to - from) {
              return self->Done(Status::IoError("chunk " + e.id.ToHex() + " is short"));
            }
            self->Done(Status::Ok());
          },
          Note());
    }
    ZeroHole(filled, end_);
    Done(Status::Ok());
  }

 private:
  // Holes in the file read as zeros.
  void ZeroHole(uint64_t from, uint64_t to) {
    if (from < to) std::memset(out_ + (from - begin_), 0, to - from);
  }

  void Done(Status status) {
    {
      std::lock_guard lock(mu_);
      if (!status.ok() && first_error_.ok()) first_error_ = status;
      if (--remaining_ > 0) return;
    }
    if (!first_error_.ok()) return Answer(first_error_);
    // Journalled writes are newer than anything committed.
    for (const PendingRange& p : overlay_) {
      uint64_t from = std::max(p.offset, begin_);
      uint64_t to = std::min(p.offset + p.data.size(), end_);
      if (from < to)
        std::memcpy(out_ + (from - begin_), p.data.data() + (from - p.offset), to - from);
    }
    reply_.data = std::move(buffer_);
    Answer(std::move(reply_));
  }

  ReadNote* Note() { return trace_ ? &trace_->note : nullptr; }

  void Answer(Result<vfs::ReadReply> r) {
    if (trace_) trace_->Record();
    cb_(std::move(r));
  }

  const uint64_t begin_, end_;
  vfs::ReadReply reply_;
  vfs::Callback<vfs::ReadReply> cb_;
  std::vector<PendingRange> overlay_;
  std::optional<ReadTrace> trace_;
  Buffer buffer_;
  uint8_t* out_ = nullptr;
  std::mutex mu_;
  size_t remaining_ = 0;  // guarded by mu_
  Status first_error_;    // guarded by mu_
};

}  // namespace

Result<std::shared_ptr<const ChunkMap>> MapFromProto(
    uint64_t version, const v1::Attr& attr,
    const google::protobuf::RepeatedPtrField<v1::Extent>& extents) {
  auto map = std::make_shared<ChunkMap>();
  map->version = version;
  GEOFS_ASSIGN_OR_RETURN(map->attr, FromProto(attr));
  map->extents.reserve(extents.size());
  for (const v1::Extent& e : extents) {
    auto id = chunk::ChunkId::FromBytes(
        std::span(reinterpret_cast<const uint8_t*>(e.chunk_id().data()), e.chunk_id().size()));
    if (!id.ok()) return Status::IoError("hub sent a malformed chunk id");
    if (e.chunk_offset() + e.length() > e.chunk_length()) {
      return Status::IoError("hub sent an extent beyond its chunk");
    }
    map->extents.push_back(
        MapExtent{e.offset(), e.length(), *id, e.chunk_offset(), e.chunk_length()});
  }
  std::sort(map->extents.begin(), map->extents.end(),
            [](const MapExtent& a, const MapExtent& b) { return a.offset < b.offset; });
  return std::shared_ptr<const ChunkMap>(std::move(map));
}

void SpokeBackend::FetchChunkMap(const vfs::Credentials& cred, const FileKey& key,
                                 std::function<void(Result<std::shared_ptr<const ChunkMap>>)> cb) {
  if (auto file = local_ ? local_->Find(key.ino) : std::nullopt) {
    if (!file->attr_known) {
      // Recovered after a restart: the hub must have it first.
      return local_->Flush(LocalScope::kFile, key.ino,
                           [this, cred, key, cb = std::move(cb)](Status s) mutable {
                             if (!s.ok()) return cb(s);
                             FetchChunkMap(cred, key, std::move(cb));
                           });
    }
    // A file created here holds no data at the hub yet: only what the
    // journal overlays.
    if (Status s = vfs::CheckRead(file->attr, cred); !s.ok()) return cb(s);
    auto map = std::make_shared<ChunkMap>();
    map->attr = file->attr;
    return cb(std::shared_ptr<const ChunkMap>(std::move(map)));
  }
  if (auto cached = meta_->GetChunkMap(key.ino, AllowExpired())) {
    ++metadata_hits_;
    if (Status s = vfs::CheckRead(cached->attr, cred); !s.ok()) return cb(s);
    return cb(std::move(cached));
  }
  ++metadata_misses_;
  uint64_t epoch = meta_->Epoch();
  auto req = WithCred<v1::GetChunkMapRequest>(cred);
  *req.mutable_ref() = ToProto(key);
  link_->Call(
      &v1::Hub::Stub::async::GetChunkMap, std::move(req),
      [this, key, cred, epoch, cb = std::move(cb)](Result<v1::GetChunkMapResponse> r, Grant g) {
        if (!r.ok()) {
          if (auto stale = AllowExpired() ? meta_->GetChunkMap(key.ino, true) : nullptr) {
            if (Status s = vfs::CheckRead(stale->attr, cred); !s.ok()) return cb(s);
            return cb(std::move(stale));
          }
          return cb(r.status());
        }
        auto map = MapFromProto(r->version(), r->attr(), r->extents());
        if (!map.ok()) return cb(map.status());
        meta_->PutChunkMap(key, *map, ExpiryOf(g), epoch);
        cb(std::move(map));
      });
}

void SpokeBackend::Read(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset,
                        uint32_t count, vfs::Callback<vfs::ReadReply> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  std::optional<ReadTrace> trace;
  if (ring_) {
    trace.emplace(ring_.get(), options_.clock, EventOf(cred.uid, prefetch::AccessOp::kRead, *key));
    trace->event.offset = offset;
    trace->event.length = count;
  }
  FetchChunkMap(cred, *key,
                [this, key = *key, offset, count, trace = std::move(trace),
                 cb = std::move(cb)](Result<std::shared_ptr<const ChunkMap>> map) mutable {
                  if (!map.ok()) return cb(map.status());
                  vfs::Attr attr = Patched(key, (*map)->attr);
                  const uint64_t end = offset >= attr.size
                                           ? offset
                                           : offset + std::min<uint64_t>(count, attr.size - offset);
                  vfs::ReadReply reply;
                  reply.eof = end >= attr.size;
                  reply.attr = attr;
                  if (offset >= end) return cb(std::move(reply));
                  std::vector<PendingRange> overlay;
                  if (journal_) overlay = journal_->Read(key, offset, end - offset);
                  auto assembly = std::make_shared<ReadAssembly>(offset, end, std::move(reply),
                                                                 std::move(cb), std::move(trace));
                  assembly->Run(fetcher_.get(), &reply_pool_, **map, std::move(overlay));
                });
}

}  // namespace geofs::spoke
