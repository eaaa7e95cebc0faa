#include "hub/grpc_server.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>

namespace geofs::hub {

Result<GrpcServer> StartGrpcServer(grpc::Service* service, const GrpcServerOptions& options) {
  // Debian builds Abseil without NDEBUG, so every absl::Mutex that gRPC
  // locks would also walk a global lock-order graph under a global spin
  // lock (deadlock detection), a few percent of the hub's CPU per call.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  grpc::ServerBuilder builder;
  GrpcServer out;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &out.port);
  builder.RegisterService(service);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  grpc::ResourceQuota quota("geofs-hub");
  quota.SetMaxThreads(options.max_threads);
  builder.SetResourceQuota(quota);
  // gRPC's defaults (1-2 idle pollers) make a thread exit after almost every
  // call under concurrent load and start a new one for the next: a
  // clone per namespace change. Keeping a quarter of the threads polling
  // reuses them.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 2);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              std::max(2, options.max_threads / 4));
  // Ping idle connections, so that a peer that vanished mid-stream is
  // noticed and its call cancelled.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Spokes ping every couple of seconds to notice a hub that stopped
  // answering (HubLinkOptions::keepalive_time); the default policy would
  // take that for abuse and drop their connections.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  out.server = builder.BuildAndStart();
  if (!out.server || out.port == 0) {
    return Status::Unavailable("cannot serve gRPC on " + options.listen);
  }
  return out;
}

}  // namespace geofs::hub
