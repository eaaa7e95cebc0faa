// The client side of PutChunks, shared by geofsctl's importer and the
// spoke's journal uploader.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "geofs/buffer.h"
#include "geofs/status.h"
#include "hub.grpc.pb.h"

namespace geofs::hub {

// A chunk in stored form as two pieces sent one after the other (the chunk
// codec's header and payload), so a raw chunk goes out without being
// copied behind its header.
struct StoredChunk {
  std::string id;  // 32-byte binary chunk id
  Buffer head;
  Buffer body;
};

// Streams `chunks` to the hub in one PutChunks call on `ctx` (the caller
// sets its deadline and metadata) and fills `resp`; the status is the
// call's, translated by FromGrpcStatus. The PutChunkRequest messages are
// framed by hand and gRPC sends the pieces' memory as is: no copy into
// protobuf strings, none into serialised messages. Each piece's owner is
// kept alive until gRPC is done with it (possibly after this returns).
Status UploadChunks(const std::shared_ptr<grpc::ChannelInterface>& channel,
                    grpc::ClientContext* ctx, std::span<const StoredChunk> chunks,
                    v1::PutChunksResponse* resp);

// One PutChunkRequest in protobuf wire format, `chunk`'s pieces referenced
// rather than copied. Exposed for tests.
grpc::ByteBuffer FramePutChunkRequest(const StoredChunk& chunk);

}  // namespace geofs::hub
