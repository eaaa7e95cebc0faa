#include "hub/chunk_upload.h"

#include "hub/grpc_status.h"

namespace geofs::hub {

Status UploadChunks(v1::Hub::StubInterface* stub, grpc::ClientContext* ctx,
                    std::span<const std::pair<std::string, Buffer>> chunks,
                    v1::PutChunksResponse* resp) {
  resp->Clear();
  std::unique_ptr<grpc::ClientWriterInterface<v1::PutChunkRequest>> writer =
      stub->PutChunks(ctx, resp);
  v1::PutChunkRequest req;
  for (const auto& [id, stored] : chunks) {
    req.set_chunk_id(id);
    req.set_data(stored.data(), stored.size());
    if (!writer->Write(req)) break;  // the call ended; Finish says why
  }
  writer->WritesDone();
  return FromGrpcStatus(writer->Finish(), ctx);
}

}  // namespace geofs::hub
