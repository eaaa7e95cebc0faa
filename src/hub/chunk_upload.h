// The client side of PutChunks, shared by geofsctl's importer and the
// spoke's journal uploader.
#pragma once

#include <span>
#include <string>
#include <utility>

#include "geofs/buffer.h"
#include "geofs/status.h"
#include "hub.grpc.pb.h"

namespace geofs::hub {

// Streams `chunks` (binary chunk id, bytes in stored form) to the hub in one
// PutChunks call on `ctx` (the caller sets its deadline and metadata) and
// fills `resp`. The status is the call's, translated by FromGrpcStatus.
Status UploadChunks(v1::Hub::StubInterface* stub, grpc::ClientContext* ctx,
                    std::span<const std::pair<std::string, Buffer>> chunks,
                    v1::PutChunksResponse* resp);

}  // namespace geofs::hub
