// HubService: the gRPC API of proto/hub.proto over the hub's Namespace and
// ChunkStore. Namespace changes (SetAttr, Create, Remove, Rename, Link, and
// batches of them in ApplyChanges) use gRPC's callback API and a commit
// pipeline: one thread applies the queued changes that need not wait for
// coherence, one after the other and unsynced, then makes the group durable
// with one sync and answers it; a change that must wait (invalidations,
// another change of its names) runs on a worker thread the ordinary way (or,
// in a batch, is answered `deferred`). So the common change needs no thread
// of its own and meets no lock contention, and every change is durable
// before it is answered. The other calls use the synchronous API (the
// server's thread pool runs them in parallel).
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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunk/chunk_store.h"
#include "chunk/chunker.h"
#include "hub.grpc.pb.h"
#include "hub/change_gate.h"
#include "hub/fs_stats.h"
#include "hub/lease_manager.h"
#include "meta/namespace.h"

namespace geofs::hub {

struct HubServiceOptions {
  // Shown by Stats ("file:///srv/geofs/objects", "s3://bucket/prefix").
  std::string object_store_description;
  // What FsStat reports as space (see fs_stats.h).
  SpaceSource space;
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
  // Threads running the changes that must wait for coherence: as many
  // such changes are in progress at once (more wait in FIFO order; the
  // pipeline's changes do not).
  int waiting_change_threads = 32;
};

// The metadata key naming the caller's session on unary calls.
inline constexpr char kSessionKey[] = "geofs-session";
// The geofs code (trailing "geofs-code") of FAILED_PRECONDITION answers to
// calls tagged with a session that is not open: unknown (say, from before
// a hub restart), ended, or replaced. The spoke must reopen its session.
inline constexpr char kNoSessionToken[] = "no_session";

// The generated service with the change methods switched to the callback API.
using HubServiceBase = v1::Hub::WithCallbackMethod_SetAttr<
    v1::Hub::WithCallbackMethod_Create<v1::Hub::WithCallbackMethod_Remove<
        v1::Hub::WithCallbackMethod_Rename<v1::Hub::WithCallbackMethod_Link<
            v1::Hub::WithCallbackMethod_ApplyChanges<v1::Hub::Service>>>>>>;

// The most changes one ApplyChanges call may carry.
inline constexpr int kMaxChangesPerBatch = 1024;

class HubService final : public HubServiceBase {
 public:
  // REQUIRES: `ns` and `chunks` outlive the service.
  HubService(meta::Namespace* ns, chunk::ChunkStore* chunks, HubServiceOptions options = {});
  ~HubService() override;

  // Namespace changes (callback API).
  grpc::ServerUnaryReactor* SetAttr(grpc::CallbackServerContext* ctx, const v1::SetAttrRequest* req,
                                    v1::SetAttrResponse* resp) override;
  grpc::ServerUnaryReactor* Create(grpc::CallbackServerContext* ctx, const v1::CreateRequest* req,
                                   v1::CreateResponse* resp) override;
  grpc::ServerUnaryReactor* Remove(grpc::CallbackServerContext* ctx, const v1::RemoveRequest* req,
                                   v1::RemoveResponse* resp) override;
  grpc::ServerUnaryReactor* Rename(grpc::CallbackServerContext* ctx, const v1::RenameRequest* req,
                                   v1::RenameResponse* resp) override;
  grpc::ServerUnaryReactor* Link(grpc::CallbackServerContext* ctx, const v1::LinkRequest* req,
                                 v1::LinkResponse* resp) override;
  // Several of the above at once: each change is applied as its own call
  // would be, except that one which would wait is answered `deferred`
  // instead (not applied), so it cannot hold up the rest of the batch.
  grpc::ServerUnaryReactor* ApplyChanges(grpc::CallbackServerContext* ctx,
                                         const v1::ApplyChangesRequest* req,
                                         v1::ApplyChangesResponse* resp) override;

  grpc::Status ReserveInodes(grpc::ServerContext* ctx, const v1::ReserveInodesRequest* req,
                             v1::ReserveInodesResponse* resp) override;

  grpc::Status GetAttr(grpc::ServerContext* ctx, const v1::GetAttrRequest* req,
                       v1::GetAttrResponse* resp) override;
  grpc::Status Lookup(grpc::ServerContext* ctx, const v1::LookupRequest* req,
                      v1::LookupResponse* resp) override;
  grpc::Status ResolvePath(grpc::ServerContext* ctx, const v1::ResolvePathRequest* req,
                           v1::ResolvePathResponse* resp) override;
  grpc::Status Access(grpc::ServerContext* ctx, const v1::AccessRequest* req,
                      v1::AccessResponse* resp) override;
  grpc::Status ReadLink(grpc::ServerContext* ctx, const v1::ReadLinkRequest* req,
                        v1::ReadLinkResponse* resp) override;
  grpc::Status ReadDir(grpc::ServerContext* ctx, const v1::ReadDirRequest* req,
                       v1::ReadDirResponse* resp) override;
  grpc::Status FsStat(grpc::ServerContext* ctx, const v1::FsStatRequest* req,
                      v1::FsStatResponse* resp) override;

  grpc::Status GetChunkMap(grpc::ServerContext* ctx, const v1::GetChunkMapRequest* req,
                           v1::GetChunkMapResponse* resp) override;
  grpc::Status ReadChunks(grpc::ServerContext* ctx, const v1::ReadChunksRequest* req,
                          grpc::ServerWriter<v1::ChunkData>* writer) override;
  grpc::Status DescribeDir(grpc::ServerContext* ctx, const v1::DescribeDirRequest* req,
                           v1::DescribeDirResponse* resp) override;
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
  std::optional<grpc::Status> ChangeOrigin(grpc::ServerContextBase* ctx, uint64_t* origin);
  // A change call's work: `no_wait` as in ChangeGate (null: may wait).
  using Change = std::function<Status(uint64_t origin, NoWaitChange* no_wait)>;
  class ChangePipeline;  // hub_service.cc
  // Answers a change call: checks its origin, then runs `change` through
  // the pipeline and finishes the call with its status.
  grpc::ServerUnaryReactor* RunChange(grpc::CallbackServerContext* ctx, Change change);
  // The change methods' work, for a call or for one change of a batch.
  Status ApplySetAttr(uint64_t origin, const v1::SetAttrRequest* req, v1::SetAttrResponse* resp,
                      NoWaitChange* no_wait);
  Status ApplyCreate(uint64_t origin, const v1::CreateRequest* req, v1::CreateResponse* resp,
                     NoWaitChange* no_wait);
  Status ApplyRemove(uint64_t origin, const v1::RemoveRequest* req, v1::RemoveResponse* resp,
                     NoWaitChange* no_wait);
  Status ApplyRename(uint64_t origin, const v1::RenameRequest* req, v1::RenameResponse* resp,
                     NoWaitChange* no_wait);
  Status ApplyLink(uint64_t origin, const v1::LinkRequest* req, v1::LinkResponse* resp,
                   NoWaitChange* no_wait);
  Status ApplyCommitFile(uint64_t origin, const v1::CommitFileRequest* req,
                         v1::CommitFileResponse* resp, NoWaitChange* no_wait);
  // `apply` on a request and its reply (which outlive the Change).
  template <typename Req, typename Resp>
  Change Bound(Status (HubService::*apply)(uint64_t, const Req*, Resp*, NoWaitChange*),
               const Req* req, Resp* resp);
  // The work of one change of a batch, answering into `result`.
  Result<Change> ChangeOf(const v1::Change& change, v1::ChangeResult* result);

  meta::Namespace* const ns_;
  chunk::ChunkStore* const chunks_;
  const HubServiceOptions options_;
  ChangeGate gate_;
  // Last: destroyed first, while what its changes use is alive.
  std::unique_ptr<ChangePipeline> pipeline_;
};

}  // namespace geofs::hub
