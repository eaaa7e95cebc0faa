// HubService: the gRPC API of proto/hub.proto over the hub's Namespace and
// ChunkStore (the synchronous gRPC service API; the server's thread pool
// runs calls in parallel).
//
// Every request is validated before anything changes: FileRefs that name no
// live object are NOT_FOUND "stale"; names must be single path components of
// at most 255 bytes; chunk ids are 32 bytes; uploads must hash to their ids;
// commits are checked against the file's version. Errors go through
// grpc_status.h and name the object. Long calls (ReadChunks, PutChunks,
// Fsck) stop when the caller cancels or its deadline passes.
//
// Coherence: read calls tagged with a session (metadata kSessionKey) lease
// the inodes their reply describes to it, granted before the namespace is
// read; changes run through a ChangeGate (the caller's session is not
// invalidated, and leases its reply's inodes). See docs/coherence.md.
//
// Thread-safe (the Namespace, ChunkStore and LeaseManager are).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chunk/chunk_store.h"
#include "chunk/chunker.h"
#include "hub.grpc.pb.h"
#include "hub/change_gate.h"
#include "hub/lease_manager.h"
#include "meta/namespace.h"

namespace geofs::hub {

struct HubServiceOptions {
  // Shown by Stats ("file:///srv/geofs/objects", "s3://bucket/prefix").
  std::string object_store_description;
  // FsStat reports the space of the file system holding this path; empty:
  // unbounded (see fs_stats.h).
  std::string statfs_path;
  // Largest raw chunk accepted by PutChunks and FindMissingChunks.
  size_t max_chunk_size = chunk::kMaxChunkSizeLimit;
  // PutChunks: chunks verified and stored at once, and the stored-form
  // bytes read from the stream before they are registered together.
  int put_parallelism = 4;
  size_t put_batch_bytes = size_t{32} << 20;
  // Coherence (docs/coherence.md): sessions, leases and invalidations.
  // Null: no Session stream (UNIMPLEMENTED) and no leases; changes are not
  // gated. REQUIRES: outlives the service.
  LeaseManager* leases = nullptr;
};

// The metadata key naming the caller's session on unary calls.
inline constexpr char kSessionKey[] = "geofs-session";
// The geofs code (trailing "geofs-code") of FAILED_PRECONDITION answers to
// calls tagged with a session that is not open: unknown (say, from before
// a hub restart), ended, or replaced. The spoke must reopen its session.
inline constexpr char kNoSessionToken[] = "no_session";

class HubService final : public v1::Hub::Service {
 public:
  // REQUIRES: `ns` and `chunks` outlive the service.
  HubService(meta::Namespace* ns, chunk::ChunkStore* chunks, HubServiceOptions options = {});

  grpc::Status GetAttr(grpc::ServerContext* ctx, const v1::GetAttrRequest* req,
                       v1::GetAttrResponse* resp) override;
  grpc::Status SetAttr(grpc::ServerContext* ctx, const v1::SetAttrRequest* req,
                       v1::SetAttrResponse* resp) override;
  grpc::Status Lookup(grpc::ServerContext* ctx, const v1::LookupRequest* req,
                      v1::LookupResponse* resp) override;
  grpc::Status ResolvePath(grpc::ServerContext* ctx, const v1::ResolvePathRequest* req,
                           v1::ResolvePathResponse* resp) override;
  grpc::Status Access(grpc::ServerContext* ctx, const v1::AccessRequest* req,
                      v1::AccessResponse* resp) override;
  grpc::Status ReadLink(grpc::ServerContext* ctx, const v1::ReadLinkRequest* req,
                        v1::ReadLinkResponse* resp) override;
  grpc::Status Create(grpc::ServerContext* ctx, const v1::CreateRequest* req,
                      v1::CreateResponse* resp) override;
  grpc::Status Remove(grpc::ServerContext* ctx, const v1::RemoveRequest* req,
                      v1::RemoveResponse* resp) override;
  grpc::Status Rename(grpc::ServerContext* ctx, const v1::RenameRequest* req,
                      v1::RenameResponse* resp) override;
  grpc::Status Link(grpc::ServerContext* ctx, const v1::LinkRequest* req,
                    v1::LinkResponse* resp) override;
  grpc::Status ReadDir(grpc::ServerContext* ctx, const v1::ReadDirRequest* req,
                       v1::ReadDirResponse* resp) override;
  grpc::Status FsStat(grpc::ServerContext* ctx, const v1::FsStatRequest* req,
                      v1::FsStatResponse* resp) override;

  grpc::Status GetChunkMap(grpc::ServerContext* ctx, const v1::GetChunkMapRequest* req,
                           v1::GetChunkMapResponse* resp) override;
  grpc::Status ReadChunks(grpc::ServerContext* ctx, const v1::ReadChunksRequest* req,
                          grpc::ServerWriter<v1::ChunkData>* writer) override;
  grpc::Status FindMissingChunks(grpc::ServerContext* ctx, const v1::FindMissingChunksRequest* req,
                                 v1::FindMissingChunksResponse* resp) override;
  grpc::Status PutChunks(grpc::ServerContext* ctx, grpc::ServerReader<v1::PutChunkRequest>* reader,
                         v1::PutChunksResponse* resp) override;
  grpc::Status CommitFile(grpc::ServerContext* ctx, const v1::CommitFileRequest* req,
                          v1::CommitFileResponse* resp) override;

  grpc::Status Session(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::HubMessage, v1::SpokeMessage>* stream) override;

  grpc::Status Stats(grpc::ServerContext* ctx, const v1::StatsRequest* req,
                     v1::StatsResponse* resp) override;
  grpc::Status Fsck(grpc::ServerContext* ctx, const v1::FsckRequest* req,
                    v1::FsckResponse* resp) override;

 private:
  using Inos = std::vector<uint64_t>;
  // Runs `read`, which fills the reply and returns the inodes it describes,
  // so that a tagged caller holds a lease on each of them granted before
  // the read that produced the reply: `first` is granted up front, and the
  // read is repeated while it names inodes not yet granted.
  grpc::Status RunLeased(grpc::ServerContext* ctx, Inos first,
                         const std::function<Result<Inos>()>& read);
  // The origin session of a change call: 0 if untagged. The grpc::Status
  // to answer instead when the tag is malformed or names no open session.
  std::optional<grpc::Status> ChangeOrigin(grpc::ServerContext* ctx, uint64_t* origin);

  meta::Namespace* const ns_;
  chunk::ChunkStore* const chunks_;
  const HubServiceOptions options_;
  ChangeGate gate_;
};

}  // namespace geofs::hub
