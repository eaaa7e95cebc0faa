#include "cli/hub_client.h"

#include <grpcpp/grpcpp.h>

#include "hub/chunk_upload.h"
#include "hub/grpc_status.h"

namespace geofs::cli {
namespace {

// Chunks are at most 4 MiB (64 MiB with unusual chunker settings); the
// hub refuses messages over 16 MiB anyway.
constexpr int kMaxMessageBytes = 64 << 20;

}  // namespace

Result<std::unique_ptr<HubClient>> HubClient::Connect(const std::string& address,
                                                      std::chrono::milliseconds timeout) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + timeout)) {
    return Status::Unavailable("no hub answers at " + address);
  }
  return std::unique_ptr<HubClient>(new HubClient(address, std::move(channel)));
}

void HubClient::SetDeadline(grpc::ClientContext* ctx, std::chrono::milliseconds timeout) {
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
}

Status HubClient::Translate(const grpc::Status& status, const grpc::ClientContext& ctx) {
  return hub::FromGrpcStatus(status, &ctx);
}

Result<v1::PutChunksResponse> HubClient::PutChunks(std::span<const hub::StoredChunk> chunks) const {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kCallTimeout);
  v1::PutChunksResponse resp;
  GEOFS_RETURN_IF_ERROR(hub::UploadChunks(channel_, &ctx, chunks, &resp));
  return resp;
}

}  // namespace geofs::cli
