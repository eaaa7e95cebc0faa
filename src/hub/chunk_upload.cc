#include "hub/chunk_upload.h"

#include <grpcpp/generic/generic_stub.h>

#include "hub/grpc_status.h"

namespace geofs::hub {
namespace {

constexpr char kPutChunksMethod[] = "/geofs.v1.Hub/PutChunks";

// Protobuf wire-format keys (field number << 3 | wire type 2, length-
// delimited) of PutChunkRequest's fields: chunk_id = 1, data = 2.
constexpr char kChunkIdKey = (1 << 3) | 2;
constexpr char kDataKey = (2 << 3) | 2;

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// gRPC calls this when it no longer needs a slice made by SliceOf.
void ReleaseBuffer(void* buffer) { delete static_cast<Buffer*>(buffer); }

// A slice over `b`'s bytes that holds a reference to their owner.
grpc::Slice SliceOf(const Buffer& b) {
  auto* ref = new Buffer(b);
  return grpc::Slice(const_cast<uint8_t*>(ref->data()), ref->size(), &ReleaseBuffer, ref);
}

// Runs one operation of an async call and waits for it: the call has at
// most one operation outstanding, so the next event is this one's.
template <typename Start>
bool Step(grpc::CompletionQueue* cq, Start start) {
  int tag;
  start(&tag);
  void* got = nullptr;
  bool ok = false;
  return cq->Next(&got, &ok) && ok;
}

}  // namespace

grpc::ByteBuffer FramePutChunkRequest(const StoredChunk& chunk) {
  std::string prefix;
  prefix.push_back(kChunkIdKey);
  AppendVarint(&prefix, chunk.id.size());
  prefix += chunk.id;
  prefix.push_back(kDataKey);
  AppendVarint(&prefix, chunk.head.size() + chunk.body.size());
  grpc::Slice slices[3];
  size_t n = 0;
  slices[n++] = grpc::Slice(prefix);
  for (const Buffer* piece : {&chunk.head, &chunk.body}) {
    if (piece->size() != 0) slices[n++] = SliceOf(*piece);
  }
  return grpc::ByteBuffer(slices, n);
}

Status UploadChunks(const std::shared_ptr<grpc::ChannelInterface>& channel,
                    grpc::ClientContext* ctx, std::span<const StoredChunk> chunks,
                    v1::PutChunksResponse* resp) {
  resp->Clear();
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(ctx, kPutChunksMethod, &cq);
  bool open = Step(&cq, [&](void* tag) { call->StartCall(tag); });
  for (size_t i = 0; open && i < chunks.size(); ++i) {
    const grpc::ByteBuffer message = FramePutChunkRequest(chunks[i]);
    // false: the call ended; Finish says why.
    open = Step(&cq, [&](void* tag) { call->Write(message, tag); });
  }
  if (open) Step(&cq, [&](void* tag) { call->WritesDone(tag); });
  grpc::ByteBuffer reply;
  const bool replied = Step(&cq, [&](void* tag) { call->Read(&reply, tag); });
  grpc::Status status;
  Step(&cq, [&](void* tag) { call->Finish(&status, tag); });
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  if (status.ok()) {
    grpc::Slice whole;
    if (!replied || !reply.DumpToSingleSlice(&whole).ok() ||
        !resp->ParseFromArray(whole.begin(), static_cast<int>(whole.size()))) {
      return Status::Internal("PutChunks: the hub's reply is not a PutChunksResponse");
    }
  }
  return FromGrpcStatus(status, ctx);
}

}  // namespace geofs::hub
