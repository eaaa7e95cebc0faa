// The one translation between geofs::Status and grpc::Status (STYLE.md
// habit 7: errors are translated once, at the edge).
//
// A failed call carries the nearest gRPC code, the message
// "<geofs status name>: <details>", and the trailing metadata
// kGeofsCodeKey = a stable token for the exact geofs::StatusCode ("stale",
// "name_too_long", ...), so the receiving side recovers the exact code.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <optional>
#include <string_view>

#include "geofs/status.h"

namespace geofs::v1 {
class ChangeResult;
}

namespace geofs::hub {

inline constexpr char kGeofsCodeKey[] = "geofs-code";

// The gRPC code a geofs code travels as.
grpc::StatusCode GrpcCodeFor(StatusCode code);
// The stable token of a code ("stale", "not_found", ...).
std::string_view CodeToken(StatusCode code);
// The code of a token; nullopt for an unknown token.
std::optional<StatusCode> CodeFromToken(std::string_view token);

// Server side: the status to return for `status`. Sets the geofs-code
// trailing metadata on `ctx` (may be null in tests) unless `status` is OK.
grpc::Status ToGrpcStatus(const Status& status, grpc::ServerContextBase* ctx);

// Client side: the geofs status of a finished call, exact when the server
// sent geofs-code, else derived from the gRPC code (transport failures such
// as UNAVAILABLE or DEADLINE_EXCEEDED come from the client library itself).
// `ctx` may be null when there is no call context (the code is derived).
Status FromGrpcStatus(const grpc::Status& status, const grpc::ClientContext* ctx);

// The status of one change of an ApplyChanges batch that was not deferred:
// OK, or what its code token and message say (kInternal for an unknown
// token).
Status ChangeStatus(const v1::ChangeResult& result);

}  // namespace geofs::hub
