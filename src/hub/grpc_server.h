// Starting the hub's gRPC server with its limits, shared by geofs-hubd and
// the tests that check those limits.
#pragma once

#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "geofs/status.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace geofs::hub {

struct GrpcServerOptions {
  // "HOST:PORT"; port 0 picks a free one.
  std::string listen = "127.0.0.1:0";
  // Largest message received or sent: a 4 MiB chunk with room to spare, or
  // a CommitFile of ~200,000 extents. Larger messages are refused
  // (RESOURCE_EXHAUSTED) before they are read whole.
  int max_message_bytes = 16 << 20;
  // Threads serving calls at most (the synchronous API runs each call on
  // a thread of its own).
  int max_threads = 256;
};

struct GrpcServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // the bound port
};

// Serves `service` (plaintext: mTLS comes with pairing). REQUIRES: `service`
// outlives the server.
Result<GrpcServer> StartGrpcServer(grpc::Service* service, const GrpcServerOptions& options);

}  // namespace geofs::hub
