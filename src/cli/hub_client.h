// HubClient: a gRPC channel to a hub and its calls as geofs::Status, with a
// deadline on every call. Thread-safe (gRPC stubs are).
#pragma once

#include <grpcpp/channel.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "geofs/status.h"
#include "hub.grpc.pb.h"
#include "hub/chunk_upload.h"

namespace geofs::cli {

class HubClient {
 public:
  // Connects to "HOST:PORT" (plaintext), waiting up to `timeout` for the
  // hub to answer; kUnavailable naming the address otherwise.
  static Result<std::unique_ptr<HubClient>> Connect(const std::string& address,
                                                    std::chrono::milliseconds timeout);

  // Deadline of namespace calls, and of each round of chunk calls.
  static constexpr std::chrono::seconds kCallTimeout{120};
  // Deadline of calls that scan everything (Stats, Fsck).
  static constexpr std::chrono::hours kScanTimeout{6};

  // One unary call with a deadline `timeout` from now.
  template <typename Req, typename Resp>
  Status Call(grpc::Status (v1::Hub::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
              const Req& req, Resp* resp, std::chrono::milliseconds timeout = kCallTimeout) const;

  // Uploads chunks in stored form in one stream, without copying their
  // bytes (hub::UploadChunks over the channel).
  Result<v1::PutChunksResponse> PutChunks(std::span<const hub::StoredChunk> chunks) const;

  const std::string& address() const { return address_; }

 private:
  HubClient(std::string address, std::shared_ptr<grpc::Channel> channel)
      : address_(std::move(address)),
        channel_(std::move(channel)),
        stub_(v1::Hub::NewStub(channel_)) {}

  static void SetDeadline(grpc::ClientContext* ctx, std::chrono::milliseconds timeout);
  static Status Translate(const grpc::Status& status, const grpc::ClientContext& ctx);

  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Hub::Stub> stub_;
};

template <typename Req, typename Resp>
Status HubClient::Call(grpc::Status (v1::Hub::Stub::*method)(grpc::ClientContext*, const Req&,
                                                             Resp*),
                       const Req& req, Resp* resp, std::chrono::milliseconds timeout) const {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, timeout);
  grpc::Status status = (stub_.get()->*method)(&ctx, req, resp);
  return Translate(status, ctx);
}

}  // namespace geofs::cli
