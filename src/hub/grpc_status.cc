#include "hub/grpc_status.h"

#include <array>
#include <string>

#include "hub.pb.h"

namespace geofs::hub {
namespace {

struct Mapping {
  StatusCode code;
  grpc::StatusCode grpc;
  std::string_view token;
};

// Every geofs code once, in enum order (checked below).
constexpr std::array<Mapping, 28> kTable = {{
    {StatusCode::kOk, grpc::StatusCode::OK, "ok"},
    {StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND, "not_found"},
    {StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS, "already_exists"},
    {StatusCode::kNotDirectory, grpc::StatusCode::FAILED_PRECONDITION, "not_directory"},
    {StatusCode::kIsDirectory, grpc::StatusCode::FAILED_PRECONDITION, "is_directory"},
    {StatusCode::kNotEmpty, grpc::StatusCode::FAILED_PRECONDITION, "not_empty"},
    {StatusCode::kNotPermitted, grpc::StatusCode::PERMISSION_DENIED, "not_permitted"},
    {StatusCode::kAccessDenied, grpc::StatusCode::PERMISSION_DENIED, "access_denied"},
    {StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT, "invalid_argument"},
    {StatusCode::kNameTooLong, grpc::StatusCode::INVALID_ARGUMENT, "name_too_long"},
    {StatusCode::kNoSpace, grpc::StatusCode::RESOURCE_EXHAUSTED, "no_space"},
    {StatusCode::kQuotaExceeded, grpc::StatusCode::RESOURCE_EXHAUSTED, "quota_exceeded"},
    {StatusCode::kReadOnly, grpc::StatusCode::FAILED_PRECONDITION, "read_only"},
    {StatusCode::kStale, grpc::StatusCode::NOT_FOUND, "stale"},
    {StatusCode::kBadHandle, grpc::StatusCode::INVALID_ARGUMENT, "bad_handle"},
    {StatusCode::kIoError, grpc::StatusCode::INTERNAL, "io_error"},
    {StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE, "unavailable"},
    {StatusCode::kNotSupported, grpc::StatusCode::UNIMPLEMENTED, "not_supported"},
    {StatusCode::kFileTooLarge, grpc::StatusCode::OUT_OF_RANGE, "file_too_large"},
    {StatusCode::kCrossDevice, grpc::StatusCode::FAILED_PRECONDITION, "cross_device"},
    {StatusCode::kTooManyLinks, grpc::StatusCode::RESOURCE_EXHAUSTED, "too_many_links"},
    {StatusCode::kBadCookie, grpc::StatusCode::INVALID_ARGUMENT, "bad_cookie"},
    {StatusCode::kNotSync, grpc::StatusCode::FAILED_PRECONDITION, "not_sync"},
    {StatusCode::kTooSmall, grpc::StatusCode::INVALID_ARGUMENT, "too_small"},
    {StatusCode::kAborted, grpc::StatusCode::ABORTED, "aborted"},
    {StatusCode::kCorruption, grpc::StatusCode::DATA_LOSS, "corruption"},
    {StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED, "deadline_exceeded"},
    {StatusCode::kInternal, grpc::StatusCode::INTERNAL, "internal"},
}};

constexpr bool TableIsInEnumOrder() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].code) != i) return false;
  }
  return true;
}
static_assert(TableIsInEnumOrder(), "kTable must list every StatusCode in order");

const Mapping* Find(StatusCode code) {
  size_t i = static_cast<size_t>(code);
  return i < kTable.size() ? &kTable[i] : nullptr;
}

// For statuses without a geofs-code: what a gRPC code most likely meant.
StatusCode CodeForGrpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return StatusCode::kOk;
    case grpc::StatusCode::NOT_FOUND:
      return StatusCode::kNotFound;
    case grpc::StatusCode::ALREADY_EXISTS:
      return StatusCode::kAlreadyExists;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return StatusCode::kAccessDenied;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return StatusCode::kInvalidArgument;
    // Without geofs-code, RESOURCE_EXHAUSTED is gRPC's own: the server is
    // out of threads or memory for calls ("Server Threadpool Exhausted").
    // That passes, so callers should retry, not report a full disk (the
    // hub's own kNoSpace always carries its token).
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
      return StatusCode::kUnavailable;
    case grpc::StatusCode::UNIMPLEMENTED:
      return StatusCode::kNotSupported;
    case grpc::StatusCode::OUT_OF_RANGE:
      return StatusCode::kFileTooLarge;
    case grpc::StatusCode::ABORTED:
      return StatusCode::kAborted;
    case grpc::StatusCode::DATA_LOSS:
      return StatusCode::kCorruption;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return StatusCode::kDeadlineExceeded;
    case grpc::StatusCode::FAILED_PRECONDITION:
      return StatusCode::kInvalidArgument;
    default:
      return StatusCode::kInternal;
  }
}

}  // namespace

grpc::StatusCode GrpcCodeFor(StatusCode code) {
  const Mapping* m = Find(code);
  return m ? m->grpc : grpc::StatusCode::INTERNAL;
}

std::string_view CodeToken(StatusCode code) {
  const Mapping* m = Find(code);
  return m ? m->token : "internal";
}

std::optional<StatusCode> CodeFromToken(std::string_view token) {
  for (const Mapping& m : kTable) {
    if (m.token == token) return m.code;
  }
  return std::nullopt;
}

grpc::Status ToGrpcStatus(const Status& status, grpc::ServerContextBase* ctx) {
  if (status.ok()) return grpc::Status::OK;
  if (ctx) ctx->AddTrailingMetadata(kGeofsCodeKey, std::string(CodeToken(status.code())));
  return grpc::Status(GrpcCodeFor(status.code()), status.ToString());
}

Status FromGrpcStatus(const grpc::Status& status, const grpc::ClientContext* ctx) {
  if (status.ok()) return Status::Ok();
  StatusCode code = CodeForGrpc(status.error_code());
  if (ctx) {
    const auto& trailers = ctx->GetServerTrailingMetadata();
    auto it = trailers.find(kGeofsCodeKey);
    if (it != trailers.end()) {
      std::string_view token(it->second.data(), it->second.size());
      if (auto exact = CodeFromToken(token); exact && *exact != StatusCode::kOk) code = *exact;
    }
  }
  // The server's message already starts with the code's name; keep it whole
  // rather than prefixing the name twice.
  std::string_view name = StatusCodeName(code);
  const std::string full = status.error_message();  // returned by value
  std::string_view message = full;
  if (message.substr(0, name.size()) == name && message.substr(name.size(), 2) == ": ") {
    message.remove_prefix(name.size() + 2);
  } else if (message == name) {
    message = {};
  }
  return Status(code, message);
}

Status ChangeStatus(const v1::ChangeResult& result) {
  if (result.code().empty()) return Status::Ok();
  auto code = CodeFromToken(result.code());
  if (!code || *code == StatusCode::kOk) {
    return Status::Internal("the hub answered a change with unknown code \"" + result.code() +
                            "\": " + result.message());
  }
  return Status(*code, result.message());
}

}  // namespace geofs::hub
