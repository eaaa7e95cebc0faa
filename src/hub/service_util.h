// Helpers shared by the hub service's .cc files: request validation,
// error context, and entry conversion.
#pragma once

#include <string>
#include <string_view>

#include "geofs/status.h"
#include "geofs/vfs.h"
#include "hub.pb.h"
#include "hub/grpc_status.h"

namespace geofs::hub::service {

// `s` with `what` (the object or step) in front of its message.
Status Context(const Status& s, std::string_view what);
template <typename T>
Result<T> Context(Result<T> r, std::string_view what) {
  if (r.ok()) return r;
  return Context(r.status(), what);
}

// A name made printable for messages: quoted, control bytes and NUL as \xNN,
// cut after 64 bytes with its length noted.
std::string Quote(std::string_view name);
// kInvalidArgument naming `name` if it is empty, ".", "..", or holds '/'
// or NUL; kNameTooLong if it exceeds vfs::kMaxNameBytes.
Status CheckName(std::string_view name);

// "inode 42" for messages.
std::string RefText(const v1::FileRef& ref);
// The namespace handle of a FileRef (validity is checked by the namespace:
// an unknown inode or generation is kStale).
vfs::Handle HandleOf(const v1::FileRef& ref);
void ToProto(const vfs::Entry& entry, v1::Entry* out);

// Runs `fn` (returning Status) and translates its result for gRPC.
template <typename Fn>
grpc::Status Run(grpc::ServerContext* ctx, Fn fn) {
  return ToGrpcStatus(fn(), ctx);
}

}  // namespace geofs::hub::service
