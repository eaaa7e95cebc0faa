// HubBackend: options, the file-state table, metadata operations and READ.
#include "hub/hub_backend.h"

#include <algorithm>
#include <cstring>

#include "hub/chunk_ids.h"
#include "hub/fs_stats.h"
#include "hub/hub_backend_internal.h"

namespace geofs::hub {

Status HubBackendOptions::Validate() const {
  GEOFS_RETURN_IF_ERROR(chunker.Validate());
  if (max_dirty_bytes_per_file == 0 || max_dirty_bytes < max_dirty_bytes_per_file) {
    return Status::InvalidArgument(
        "hub backend: need 0 < max_dirty_bytes_per_file <= max_dirty_bytes");
  }
  if (upload_parallelism < 1) {
    return Status::InvalidArgument("hub backend: upload_parallelism must be at least 1");
  }
  if (clock == nullptr) return Status::InvalidArgument("hub backend: no clock");
  return Status::Ok();
}

HubBackend::HubBackend(meta::Namespace* ns, chunk::ChunkStore* chunks, HubBackendOptions options)
    : ns_(ns),
      chunks_(chunks),
      options_(std::move(options)),
      gate_(ns, options_.leases),
      cache_(options_.chunk_cache_bytes) {
  if (options_.dirty_expire.count() > 0) {
    flusher_ = std::jthread([this](std::stop_token stop) { BackgroundFlusher(stop); });
  }
}

HubBackend::~HubBackend() {
  if (flusher_.joinable()) {
    flusher_.request_stop();
    flusher_cv_.notify_all();
    flusher_.join();
  }
}

// --- File-state table.

std::shared_ptr<HubBackend::FileState> HubBackend::FindState(uint64_t ino) {
  std::lock_guard lock(files_mu_);
  auto it = files_.find(ino);
  return it == files_.end() ? nullptr : it->second;
}

std::shared_ptr<HubBackend::FileState> HubBackend::GetOrCreateState(uint64_t ino,
                                                                    const vfs::Handle& h) {
  std::lock_guard lock(files_mu_);
  auto& slot = files_[ino];
  if (!slot) slot = std::make_shared<FileState>(h);
  return slot;
}

void HubBackend::MaybeForget(const std::shared_ptr<FileState>& state) {
  auto parts = meta::Namespace::ParseHandle(state->handle);
  std::lock_guard table_lock(files_mu_);
  std::lock_guard lock(state->mu);
  if (!state->overlay.empty() || state->forgotten) return;
  auto it = files_.find(parts->ino);
  if (it != files_.end() && it->second == state) files_.erase(it);
  state->forgotten = true;
}

vfs::Attr HubBackend::Patched(vfs::Attr attr) {
  if (attr.type != vfs::FileType::kRegular) return attr;
  std::shared_ptr<FileState> state = FindState(attr.fileid);
  if (!state) return attr;
  std::lock_guard lock(state->mu);
  return PatchedLocked(attr, state->overlay, state->mtime);
}

template <typename Reply>
void HubBackend::PatchReply(Reply& reply) {
  if constexpr (std::is_same_v<Reply, vfs::Attr>) {
    reply = Patched(reply);
  } else if constexpr (std::is_same_v<Reply, vfs::Wcc>) {
    if (reply.after) reply.after = Patched(*reply.after);
  } else if constexpr (std::is_same_v<Reply, vfs::LookupReply>) {
    reply.object.attr = Patched(reply.object.attr);
  } else if constexpr (std::is_same_v<Reply, vfs::AccessReply>) {
    reply.attr = Patched(reply.attr);
  } else if constexpr (std::is_same_v<Reply, vfs::LinkReply>) {
    if (reply.file_attr) reply.file_attr = Patched(*reply.file_attr);
  } else if constexpr (std::is_same_v<Reply, vfs::DirPage>) {
    for (vfs::DirEntry& e : reply.entries) {
      if (e.entry) e.entry->attr = Patched(e.entry->attr);
    }
  }
}

namespace {

// Calls `cb` with `result`, first applying `patch` to a value.
template <typename T, typename Patch>
void Reply(Result<T> result, const vfs::Callback<T>& cb, Patch patch) {
  if (result.ok()) patch(*result);
  cb(std::move(result));
}

}  // namespace

// --- Metadata: forwarded to the namespace, attributes patched with the
// buffered writes of this process.

vfs::Capabilities HubBackend::GetCapabilities() const { return meta::Namespace::Capabilities(); }

Result<vfs::Handle> HubBackend::Root() { return ns_->RootHandle(); }

void HubBackend::GetAttr(const vfs::Credentials&, const vfs::Handle& h,
                         vfs::Callback<vfs::Attr> cb) {
  Reply(ns_->GetAttr(h), cb, [this](vfs::Attr& a) { PatchReply(a); });
}

void HubBackend::SetAttr(const vfs::Credentials& cred, const vfs::Handle& h,
                         const vfs::SetAttrs& attrs, std::optional<WallTime> guard_ctime,
                         vfs::Callback<vfs::Wcc> cb) {
  // Buffered writes would otherwise land after a truncation or overwrite
  // the times being set; committing them first keeps the order the client
  // sees.
  if (Status flushed = FlushIfDirty(h); !flushed.ok()) return cb(flushed);
  Reply(gate_.SetAttr(kNoSession, cred, h, attrs, guard_ctime), cb,
        [this](vfs::Wcc& w) { PatchReply(w); });
}

void HubBackend::Lookup(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
                        vfs::Callback<vfs::LookupReply> cb) {
  Reply(ns_->Lookup(cred, dir, name), cb, [this](vfs::LookupReply& r) { PatchReply(r); });
}

void HubBackend::LookupParent(const vfs::Credentials& cred, const vfs::Handle& dir,
                              vfs::Callback<vfs::LookupReply> cb) {
  cb(ns_->LookupParent(cred, dir));
}

void HubBackend::Access(const vfs::Credentials& cred, const vfs::Handle& h, uint32_t requested,
                        vfs::Callback<vfs::AccessReply> cb) {
  Reply(ns_->Access(cred, h, requested), cb, [this](vfs::AccessReply& r) { PatchReply(r); });
}

void HubBackend::ReadLink(const vfs::Credentials&, const vfs::Handle& h,
                          vfs::Callback<vfs::ReadLinkReply> cb) {
  cb(ns_->ReadLink(h));
}

void HubBackend::Create(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
                        const vfs::CreateRequest& req, vfs::Callback<vfs::CreateReply> cb) {
  // CREATE over an existing file may truncate it (O_TRUNC): its buffered
  // writes came first, so commit them before.
  if (req.mode != vfs::CreateMode::kExclusive && req.attrs.size) {
    auto existing = ns_->Lookup(cred, dir, name);
    if (existing.ok() && existing->object.attr.type == vfs::FileType::kRegular) {
      if (Status flushed = FlushIfDirty(existing->object.handle); !flushed.ok()) {
        return cb(flushed);
      }
    }
  }
  cb(gate_.Create(kNoSession, cred, dir, name, req));
}

void HubBackend::Mkdir(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
                       const vfs::SetAttrs& attrs, vfs::Callback<vfs::CreateReply> cb) {
  cb(gate_.Mkdir(kNoSession, cred, dir, name, attrs));
}

void HubBackend::Symlink(const vfs::Credentials& cred, const vfs::Handle& dir,
                         std::string_view name, std::string_view target, const vfs::SetAttrs& attrs,
                         vfs::Callback<vfs::CreateReply> cb) {
  cb(gate_.Symlink(kNoSession, cred, dir, name, target, attrs));
}

void HubBackend::Mknod(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
                       const vfs::MknodRequest& req, vfs::Callback<vfs::CreateReply> cb) {
  cb(gate_.Mknod(kNoSession, cred, dir, name, req));
}

void HubBackend::Remove(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
                        vfs::Callback<vfs::Wcc> cb) {
  // Buffered writes of a removed file are dropped when their flush finds
  // the file gone (kStale); with other links left they are committed.
  cb(gate_.Remove(kNoSession, cred, dir, name));
}

void HubBackend::Rmdir(const vfs::Credentials& cred, const vfs::Handle& dir, std::string_view name,
                       vfs::Callback<vfs::Wcc> cb) {
  cb(gate_.Rmdir(kNoSession, cred, dir, name));
}

void HubBackend::Rename(const vfs::Credentials& cred, const vfs::Handle& from_dir,
                        std::string_view from_name, const vfs::Handle& to_dir,
                        std::string_view to_name, vfs::Callback<vfs::RenameReply> cb) {
  cb(gate_.Rename(kNoSession, cred, from_dir, from_name, to_dir, to_name));
}

void HubBackend::Link(const vfs::Credentials& cred, const vfs::Handle& file, const vfs::Handle& dir,
                      std::string_view name, vfs::Callback<vfs::LinkReply> cb) {
  Reply(gate_.Link(kNoSession, cred, file, dir, name), cb,
        [this](vfs::LinkReply& r) { PatchReply(r); });
}

void HubBackend::ReadDir(const vfs::Credentials& cred, const vfs::Handle& dir,
                         const vfs::ReadDirRequest& req, vfs::Callback<vfs::DirPage> cb) {
  Reply(ns_->ReadDir(cred, dir, req), cb, [this](vfs::DirPage& p) { PatchReply(p); });
}

void HubBackend::FsStat(const vfs::Credentials&, const vfs::Handle& h,
                        vfs::Callback<vfs::FsStats> cb) {
  auto attr = ns_->GetAttr(h);
  if (!attr.ok()) return cb(attr.status());
  auto stats = HubFsStats(*ns_, options_.space);
  if (stats.ok()) stats->attr = Patched(*attr);
  cb(std::move(stats));
}

// --- READ.

Result<Buffer> HubBackend::FetchChunk(const meta::Extent& e) {
  auto data =
      cache_.Get(ToChunkId(e.chunk), [this](const chunk::ChunkId& id) { return chunks_->Get(id); });
  if (!data.ok()) {
    // A chunk the namespace references but the store lacks is the server's
    // failure, not a missing file: never report it as "not found".
    if (data.status() == StatusCode::kNotFound) {
      return Status::IoError("chunk " + meta::ChunkIdHex(e.chunk) + " is missing from the store");
    }
    return data.status();
  }
  if (data->size() != e.chunk_size) {
    return Status::Corruption("chunk " + meta::ChunkIdHex(e.chunk) + " holds " +
                              std::to_string(data->size()) + " bytes, not " +
                              std::to_string(e.chunk_size));
  }
  return data;
}

Status HubBackend::ReadCommitted(const std::vector<meta::Extent>& extents, uint64_t begin,
                                 std::span<uint8_t> out) {
  std::memset(out.data(), 0, out.size());
  const uint64_t end = begin + out.size();
  for (const meta::Extent& e : extents) {
    const uint64_t from = std::max(begin, e.offset);
    const uint64_t to = std::min(end, e.end());
    if (from >= to) continue;
    GEOFS_ASSIGN_OR_RETURN(Buffer chunk, FetchChunk(e));
    std::memcpy(out.data() + (from - begin), chunk.data() + e.chunk_offset + (from - e.offset),
                to - from);
  }
  return Status::Ok();
}

void HubBackend::Read(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset,
                      uint32_t count, vfs::Callback<vfs::ReadReply> cb) {
  auto parts = meta::Namespace::ParseHandle(h);
  if (!parts.ok()) return cb(parts.status());
  // The buffered writes are read before the committed map: a flush that
  // commits in between only moves bytes we already hold into the map.
  std::vector<WriteOverlay::Piece> pieces;
  uint64_t buffered_end = 0;
  WallTime buffered_mtime;
  if (std::shared_ptr<FileState> state = FindState(parts->ino)) {
    std::lock_guard lock(state->mu);
    pieces = state->overlay.Pieces(offset, offset + count);
    buffered_end = state->overlay.end();
    buffered_mtime = state->mtime;
  }
  auto map = ns_->GetChunkMap(cred, h, offset, count);
  if (!map.ok()) return cb(map.status());

  vfs::ReadReply reply;
  vfs::Attr attr = map->attr;
  if (buffered_end > 0) {
    attr.size = std::max(attr.size, buffered_end);
    attr.mtime = std::max(attr.mtime, buffered_mtime);
    attr.ctime = std::max(attr.ctime, buffered_mtime);
  }
  reply.attr = attr;
  if (offset >= attr.size) {
    reply.eof = true;
    return cb(std::move(reply));
  }
  const uint64_t n = std::min<uint64_t>(count, attr.size - offset);
  reply.eof = offset + n >= attr.size;

  // Common case: one extent holds the whole range; share the cached chunk.
  if (pieces.empty()) {
    for (const meta::Extent& e : map->extents) {
      if (e.offset <= offset && offset + n <= e.end()) {
        auto chunk = FetchChunk(e);
        if (!chunk.ok()) return cb(chunk.status());
        reply.data = chunk->Slice(e.chunk_offset + (offset - e.offset), n);
        return cb(std::move(reply));
      }
    }
  }
  uint8_t* p;
  Buffer data = Buffer::Allocate(n, &p);
  if (Status s = ReadCommitted(map->extents, offset, {p, n}); !s.ok()) return cb(s);
  for (const WriteOverlay::Piece& piece : pieces) {
    if (piece.offset >= offset + n) continue;
    const uint64_t len = std::min<uint64_t>(piece.data.size(), offset + n - piece.offset);
    std::memcpy(p + (piece.offset - offset), piece.data.data(), len);
  }
  reply.data = std::move(data);
  cb(std::move(reply));
}

}  // namespace geofs::hub
