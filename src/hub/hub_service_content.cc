// HubService: file contents (chunk maps, chunks, commits) and administration.
#include <unordered_set>

#include "chunk/chunk_codec.h"
#include "common/logging.h"
#include "common/parallel.h"
#include "hub/chunk_ids.h"
#include "hub/hub_fsck.h"
#include "hub/hub_service.h"
#include "hub/proto_convert.h"
#include "hub/service_util.h"

namespace geofs::hub {

using service::Context;
using service::HandleOf;
using service::RefText;
using service::Run;

namespace {

constexpr int kMaxReadChunks = 1024;
constexpr int kMaxFindChunks = 65536;
// DescribeDir pages: entries (as ReadDir) and extents in all.
constexpr uint32_t kDefaultDescribePage = 1024;
constexpr uint32_t kMaxDescribePage = 4096;
constexpr uint64_t kDefaultDescribeExtents = 65536;

Result<chunk::ChunkId> ChunkIdOf(const std::string& bytes) {
  auto id = chunk::ChunkId::FromBytes(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!id.ok()) {
    return Status::InvalidArgument("chunk id of " + std::to_string(bytes.size()) +
                                   " bytes; ids are 32-byte SHA-256 digests");
  }
  return id;
}

std::string BytesOf(const chunk::ChunkId& id) {
  return std::string(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
}

Status Cancelled(grpc::ServerContext* ctx) {
  if (!ctx->IsCancelled()) return Status::Ok();
  return Status(StatusCode::kDeadlineExceeded, "the call was cancelled or its deadline passed");
}

void ToProto(const meta::Extent& e, v1::Extent* out) {
  out->set_offset(e.offset);
  out->set_length(e.length);
  out->set_chunk_id(e.chunk.data(), e.chunk.size());
  out->set_chunk_offset(e.chunk_offset);
  out->set_chunk_length(e.chunk_size);
}

v1::Compression ToProto(chunk::Compression c) {
  return c == chunk::Compression::kZstd ? v1::ZSTD : v1::NONE;
}

}  // namespace

grpc::Status HubService::GetChunkMap(grpc::ServerContext* ctx, const v1::GetChunkMapRequest* req,
                                     v1::GetChunkMapResponse* resp) {
  return RunLeased(ctx, {req->ref().ino()}, [&]() -> Result<Inos> {
    GEOFS_ASSIGN_OR_RETURN(vfs::Credentials cred, FromProto(req->cred()));
    const uint64_t length = req->length() == 0 ? UINT64_MAX : req->length();
    GEOFS_ASSIGN_OR_RETURN(meta::ChunkMap map, Context(ns_->GetChunkMap(cred, HandleOf(req->ref()),
                                                                        req->offset(), length),
                                                       RefText(req->ref())));
    resp->Clear();
    resp->set_version(map.version);
    ToProto(map.attr, resp->mutable_attr());
    for (const meta::Extent& e : map.extents) ToProto(e, resp->add_extents());
    return Inos{req->ref().ino()};
  });
}

grpc::Status HubService::DescribeDir(grpc::ServerContext* ctx, const v1::DescribeDirRequest* req,
                                     v1::DescribeDirResponse* resp) {
  return RunLeased(ctx, {req->dir().ino()}, [&]() -> Result<Inos> {
    GEOFS_ASSIGN_OR_RETURN(vfs::Credentials cred, FromProto(req->cred()));
    vfs::ReadDirRequest page_req;
    page_req.cookie = req->cookie();
    page_req.verifier = req->verifier();
    page_req.max_entries = req->max_entries() == 0 ? kDefaultDescribePage
                                                   : std::min(req->max_entries(), kMaxDescribePage);
    page_req.with_attrs = true;
    const uint64_t max_extents =
        req->max_extents() == 0 ? kDefaultDescribeExtents : req->max_extents();
    GEOFS_ASSIGN_OR_RETURN(vfs::DirPage page,
                           Context(ns_->ReadDir(cred, HandleOf(req->dir()), page_req),
                                   "describing " + RefText(req->dir())));
    resp->Clear();
    resp->set_eof(page.eof);
    resp->set_verifier(page.verifier);
    if (page.dir_attr) ToProto(*page.dir_attr, resp->mutable_dir_attr());
    Inos described{req->dir().ino()};
    uint64_t extents = 0;
    for (const vfs::DirEntry& e : page.entries) {
      if (extents >= max_extents) {
        resp->set_eof(false);  // the caller continues from the last cookie sent
        break;
      }
      if (e.name == "." || e.name == ".." || !e.entry) continue;
      v1::DescribedEntry* out = resp->add_entries();
      v1::DirEntry* de = out->mutable_entry();
      de->set_fileid(e.fileid);
      de->set_name(e.name);
      de->set_cookie(e.cookie);
      service::ToProto(*e.entry, de->mutable_entry());
      described.push_back(e.fileid);  // inode numbers are file ids
      if (e.entry->attr.type != vfs::FileType::kRegular) continue;
      // A file the caller may not read is described without its map.
      Result<meta::ChunkMap> map = ns_->GetChunkMap(cred, e.entry->handle, 0, UINT64_MAX);
      if (!map.ok()) continue;
      out->set_has_map(true);
      out->set_version(map->version);
      // The map's attributes belong to its version.
      ToProto(map->attr, de->mutable_entry()->mutable_attr());
      for (const meta::Extent& x : map->extents) ToProto(x, out->add_extents());
      extents += map->extents.size();
    }
    return described;
  });
}

grpc::Status HubService::ReadChunks(grpc::ServerContext* ctx, const v1::ReadChunksRequest* req,
                                    grpc::ServerWriter<v1::ChunkData>* writer) {
  return Run(ctx, [&]() -> Status {
    if (req->chunk_ids_size() > kMaxReadChunks) {
      return Status::InvalidArgument("ReadChunks of " + std::to_string(req->chunk_ids_size()) +
                                     " chunks; at most " + std::to_string(kMaxReadChunks));
    }
    std::vector<chunk::ChunkId> ids;
    for (const std::string& bytes : req->chunk_ids()) {
      GEOFS_ASSIGN_OR_RETURN(chunk::ChunkId id, ChunkIdOf(bytes));
      ids.push_back(id);
    }
    bool accepts_zstd = false;
    for (int c : req->accept()) accepts_zstd |= c == v1::ZSTD;
    for (const chunk::ChunkId& id : ids) {
      GEOFS_RETURN_IF_ERROR(Cancelled(ctx));
      const std::string what = "chunk " + id.ToHex();
      GEOFS_ASSIGN_OR_RETURN(Buffer stored, Context(chunks_->GetEncoded(id), what));
      // Verified here too, so that a corrupt chunk is never sent.
      GEOFS_ASSIGN_OR_RETURN(Buffer raw, Context(chunk::DecodeChunk(stored, id), what));
      GEOFS_ASSIGN_OR_RETURN(chunk::ChunkHeader header, chunk::ReadChunkHeader(stored.span()));
      if (header.compression == chunk::Compression::kZstd && !accepts_zstd) {
        chunk::ChunkCodecOptions plain;
        plain.compress = false;
        stored = chunk::EncodeChunk(raw.span(), plain).bytes;
        header.compression = chunk::Compression::kNone;
      }
      v1::ChunkData out;
      out.set_chunk_id(BytesOf(id));
      out.set_compression(ToProto(header.compression));
      out.set_raw_length(raw.size());
      out.set_data(stored.data(), stored.size());
      if (!writer->Write(out)) return Status::Unavailable("the reader went away");
    }
    return Status::Ok();
  });
}

grpc::Status HubService::FindMissingChunks(grpc::ServerContext* ctx,
                                           const v1::FindMissingChunksRequest* req,
                                           v1::FindMissingChunksResponse* resp) {
  return Run(ctx, [&]() -> Status {
    if (req->chunks_size() > kMaxFindChunks) {
      return Status::InvalidArgument("FindMissingChunks of " + std::to_string(req->chunks_size()) +
                                     " chunks; at most " + std::to_string(kMaxFindChunks));
    }
    std::vector<chunk::ChunkId> ids;
    std::vector<meta::ChunkRef> refs;
    for (const v1::ChunkRef& ref : req->chunks()) {
      GEOFS_ASSIGN_OR_RETURN(chunk::ChunkId id, ChunkIdOf(ref.chunk_id()));
      if (ref.raw_length() == 0 || ref.raw_length() > options_.max_chunk_size) {
        return Status::InvalidArgument(
            "chunk " + id.ToHex() + " of " + std::to_string(ref.raw_length()) +
            " bytes; chunks hold 1.." + std::to_string(options_.max_chunk_size));
      }
      ids.push_back(id);
      refs.push_back({ToMetaId(id), ref.raw_length()});
    }
    // Registering keeps the chunks the caller will not upload (present
    // ones) safe from GC until its commit. Not synced on its own: the
    // caller's commit is, and covers it; if a crash loses it, the commit
    // fails cleanly and the caller registers again.
    GEOFS_RETURN_IF_ERROR(Context(ns_->RegisterChunks(refs, /*sync=*/false), "registering chunks"));
    GEOFS_ASSIGN_OR_RETURN(std::vector<chunk::ChunkId> missing, chunks_->Missing(ids));
    for (const chunk::ChunkId& id : missing) resp->add_missing(BytesOf(id));
    return Status::Ok();
  });
}

grpc::Status HubService::PutChunks(grpc::ServerContext* ctx,
                                   grpc::ServerReader<v1::PutChunkRequest>* reader,
                                   v1::PutChunksResponse* resp) {
  return Run(ctx, [&]() -> Status {
    // Received chunks, held between reading the stream and storing them,
    // and their registrations.
    std::vector<chunk::EncodedUpload> batch;
    std::vector<meta::ChunkRef> refs;
    size_t batch_bytes = 0;
    auto store_batch = [&]() -> Status {
      // Registered before they are stored, so GC knows every chunk it may
      // have to collect. Not synced: the commit that references them is,
      // and a registration lost in a crash leaves orphans that GC sweeps
      // (GcRunner).
      GEOFS_RETURN_IF_ERROR(
          Context(ns_->RegisterChunks(refs, /*sync=*/false), "registering chunks"));
      // Checked in parallel, then stored together: the local store makes
      // the whole batch durable with two barriers.
      auto puts = chunks_->PutEncodedMany(batch, options_.put_parallelism);
      std::vector<meta::StoredChunkSize> sizes(batch.size());  // 0 where not stored
      Status stored = Status::Ok();
      for (size_t i = 0; i < batch.size(); ++i) {
        const auto& put = puts[i];
        if (!put.ok()) {
          // Bytes that do not match their name are the caller's mistake.
          Status s = put.status();
          if (s.code() == StatusCode::kCorruption) s = Status::InvalidArgument(s.message());
          if (stored.ok()) stored = Context(s, "chunk " + batch[i].id.ToHex());
          continue;
        }
        sizes[i] = {ToMetaId(batch[i].id), put->stored_size};
        if (put->uploaded) {
          resp->set_stored(resp->stored() + 1);
          resp->set_bytes_stored(resp->bytes_stored() + put->stored_size);
          resp->set_raw_bytes_stored(resp->raw_bytes_stored() + put->raw_size);
        }
      }
      // For Stats (the object store's bytes without listing it), including
      // what was stored before a failure; durable with the commit, like the
      // registration.
      const Status recorded = ns_->RecordStoredSizes(sizes, /*sync=*/false);
      GEOFS_RETURN_IF_ERROR(stored);
      GEOFS_RETURN_IF_ERROR(Context(recorded, "recording stored sizes"));
      batch.clear();
      refs.clear();
      batch_bytes = 0;
      return Status::Ok();
    };

    v1::PutChunkRequest req;
    while (reader->Read(&req)) {
      GEOFS_RETURN_IF_ERROR(Cancelled(ctx));
      GEOFS_ASSIGN_OR_RETURN(chunk::ChunkId id, ChunkIdOf(req.chunk_id()));
      const std::string what = "chunk " + id.ToHex();
      // The received bytes move into the Buffer: no copy.
      auto owner = std::make_shared<std::string>(std::move(*req.mutable_data()));
      Buffer stored(owner, reinterpret_cast<const uint8_t*>(owner->data()), owner->size());
      // The header's raw size registers the chunk; decoding (in PutEncodedMany)
      // then checks it together with the hash before anything is stored.
      auto header = chunk::ReadChunkHeader(stored.span());
      if (!header.ok()) return Status::InvalidArgument(what + ": " + header.status().ToString());
      if (header->raw_size == 0 || header->raw_size > options_.max_chunk_size) {
        return Status::InvalidArgument(what + " claims " + std::to_string(header->raw_size) +
                                       " raw bytes; chunks hold 1.." +
                                       std::to_string(options_.max_chunk_size));
      }
      resp->set_received(resp->received() + 1);
      batch_bytes += stored.size();
      refs.push_back({ToMetaId(id), header->raw_size});
      batch.push_back({id, std::move(stored)});
      if (batch_bytes >= options_.put_batch_bytes) GEOFS_RETURN_IF_ERROR(store_batch());
    }
    GEOFS_RETURN_IF_ERROR(Cancelled(ctx));
    if (!batch.empty()) GEOFS_RETURN_IF_ERROR(store_batch());
    return Status::Ok();
  });
}

grpc::Status HubService::CommitFile(grpc::ServerContext* ctx, const v1::CommitFileRequest* req,
                                    v1::CommitFileResponse* resp) {
  uint64_t origin = 0;
  if (auto refused = ChangeOrigin(ctx, &origin)) return *refused;
  return Run(ctx, [&] { return ApplyCommitFile(origin, req, resp, nullptr); });
}

Status HubService::ApplyCommitFile(uint64_t origin, const v1::CommitFileRequest* req,
                                   v1::CommitFileResponse* resp, NoWaitChange* no_wait) {
  GEOFS_ASSIGN_OR_RETURN(vfs::Credentials cred, FromProto(req->cred()));
  meta::ChunkMapUpdate update;
  update.expected_version = req->expected_version();
  if (req->replace_all()) {
    update.offset = 0;
    update.length = UINT64_MAX;
  } else {
    update.offset = req->offset();
    update.length = req->length();
  }
  update.new_size = req->new_size();
  if (req->has_mtime()) update.mtime = FromProto(req->mtime());
  update.extents.reserve(req->extents_size());
  for (const v1::Extent& e : req->extents()) {
    GEOFS_ASSIGN_OR_RETURN(chunk::ChunkId id, ChunkIdOf(e.chunk_id()));
    meta::Extent out;
    out.offset = e.offset();
    out.length = e.length();
    out.chunk = ToMetaId(id);
    out.chunk_offset = e.chunk_offset();
    out.chunk_size = e.chunk_length();
    update.extents.push_back(out);
  }
  GEOFS_ASSIGN_OR_RETURN(
      meta::CommitReply reply,
      Context(gate_.CommitChunkMap(origin, cred, HandleOf(req->ref()), update, no_wait),
              "committing " + RefText(req->ref())));
  resp->set_version(reply.version);
  ToProto(reply.wcc, resp->mutable_wcc());
  return Status::Ok();
}

grpc::Status HubService::Stats(grpc::ServerContext* ctx, const v1::StatsRequest* req,
                               v1::StatsResponse* resp) {
  return Run(ctx, [&]() -> Status {
    GEOFS_ASSIGN_OR_RETURN(meta::NamespaceStats stats, ns_->Stats());
    if (req->list_object_store()) {
      uint64_t listed_bytes = 0, listed_objects = 0;
      GEOFS_RETURN_IF_ERROR(chunks_->ForEachChunk([&](const chunk::ChunkInfo& info) {
        listed_bytes += info.stored_size;
        ++listed_objects;
        return Cancelled(ctx);
      }));
      resp->set_object_store_listed(true);
      resp->set_listed_objects(listed_objects);
      resp->set_listed_bytes(listed_bytes);
    }
    resp->set_inodes(stats.inodes);
    resp->set_directories(stats.directories);
    resp->set_files(stats.files);
    resp->set_symlinks(stats.symlinks);
    resp->set_specials(stats.specials);
    resp->set_logical_bytes(stats.logical_bytes);
    resp->set_chunks(stats.chunks);
    resp->set_referenced_raw_bytes(stats.referenced_bytes);
    resp->set_unreferenced_chunks(stats.unreferenced_chunks);
    resp->set_unreferenced_raw_bytes(stats.unreferenced_bytes);
    resp->set_stored_bytes(stats.stored_bytes);
    resp->set_unsized_chunks(stats.unsized_chunks);
    resp->set_object_store(options_.object_store_description);
    GEOFS_ASSIGN_OR_RETURN(std::optional<WallTime> sweep, ns_->OrphanSweepDue());
    resp->set_orphan_sweep_due(sweep.has_value());
    resp->set_namespace_writes_stopped(ns_->WritesStopped());
    if (options_.leases != nullptr) {
      const LeaseStats leases = options_.leases->Stats();
      resp->set_sessions(leases.sessions);
      resp->set_detached_sessions(leases.detached_sessions);
      resp->set_read_leases(leases.read_leases);
      resp->set_write_leases(leases.write_leases);
      resp->set_invalidations_sent(leases.invalidations_sent);
    }
    return Status::Ok();
  });
}

grpc::Status HubService::Fsck(grpc::ServerContext* ctx, const v1::FsckRequest* req,
                              v1::FsckResponse* resp) {
  return Run(ctx, [&]() -> Status {
    FsckOptions options;
    options.verify_chunk_data = req->verify_chunk_data();
    options.cancelled = [ctx] { return ctx->IsCancelled(); };
    GEOFS_ASSIGN_OR_RETURN(FsckReport report, CheckHub(*ns_, *chunks_, options));
    if (!report.problems.empty()) {
      GetLogger("hub.fsck")
          ->warn("fsck found {} problems, first: {}", report.problems.size(),
                 report.problems.front());
    }
    for (std::string& p : report.problems) resp->add_problems(std::move(p));
    resp->set_inodes_checked(report.inodes_checked);
    resp->set_chunks_checked(report.chunks_checked);
    return Status::Ok();
  });
}

}  // namespace geofs::hub
