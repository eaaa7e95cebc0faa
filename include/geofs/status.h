// Status and Result<T>: the one error type that crosses component boundaries.
//
// Codes are protocol-neutral; each edge (NFS, gRPC) translates them exactly
// once (see src/nfs3/nfs_status.cc). No exceptions cross a component boundary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace geofs {

enum class StatusCode : uint8_t {
  kOk = 0,
  kNotFound,         // ENOENT
  kAlreadyExists,    // EEXIST
  kNotDirectory,     // ENOTDIR
  kIsDirectory,      // EISDIR
  kNotEmpty,         // ENOTEMPTY
  kNotPermitted,     // EPERM: only the owner (or root) may do this
  kAccessDenied,     // EACCES: mode bits or export policy refuse it
  kInvalidArgument,  // EINVAL
  kNameTooLong,      // ENAMETOOLONG
  kNoSpace,          // ENOSPC
  kQuotaExceeded,    // EDQUOT
  kReadOnly,         // EROFS
  kStale,            // the object no longer exists (or its generation moved on)
  kBadHandle,        // the handle is malformed or forged
  kIoError,          // EIO, or a backend failure that is not the caller's fault
  kUnavailable,      // try again later (NFS3ERR_JUKEBOX): backend unreachable
  kNotSupported,     // the backend does not implement this operation
  kFileTooLarge,     // EFBIG
  kCrossDevice,      // EXDEV
  kTooManyLinks,     // EMLINK
  kBadCookie,        // a directory cookie is no longer valid
  kNotSync,          // a guarded SETATTR found a different ctime
  kTooSmall,         // a reply buffer cannot hold even one entry
  kAborted,          // optimistic concurrency check failed (version moved on)
  kCorruption,       // stored data does not match its checksum
  kDeadlineExceeded,
  kInternal,
};

// Short lower-case name of a code ("not found"), for messages and logs.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string_view message);

  static Status Ok() { return Status(); }
  static Status NotFound(std::string_view m = {}) { return {StatusCode::kNotFound, m}; }
  static Status AlreadyExists(std::string_view m = {}) { return {StatusCode::kAlreadyExists, m}; }
  static Status NotDirectory(std::string_view m = {}) { return {StatusCode::kNotDirectory, m}; }
  static Status IsDirectory(std::string_view m = {}) { return {StatusCode::kIsDirectory, m}; }
  static Status NotEmpty(std::string_view m = {}) { return {StatusCode::kNotEmpty, m}; }
  static Status NotPermitted(std::string_view m = {}) { return {StatusCode::kNotPermitted, m}; }
  static Status AccessDenied(std::string_view m = {}) { return {StatusCode::kAccessDenied, m}; }
  static Status InvalidArgument(std::string_view m = {}) {
    return {StatusCode::kInvalidArgument, m};
  }
  static Status NameTooLong(std::string_view m = {}) { return {StatusCode::kNameTooLong, m}; }
  static Status NoSpace(std::string_view m = {}) { return {StatusCode::kNoSpace, m}; }
  static Status ReadOnly(std::string_view m = {}) { return {StatusCode::kReadOnly, m}; }
  static Status Stale(std::string_view m = {}) { return {StatusCode::kStale, m}; }
  static Status BadHandle(std::string_view m = {}) { return {StatusCode::kBadHandle, m}; }
  static Status IoError(std::string_view m = {}) { return {StatusCode::kIoError, m}; }
  static Status Unavailable(std::string_view m = {}) { return {StatusCode::kUnavailable, m}; }
  static Status NotSupported(std::string_view m = {}) { return {StatusCode::kNotSupported, m}; }
  static Status FileTooLarge(std::string_view m = {}) { return {StatusCode::kFileTooLarge, m}; }
  static Status CrossDevice(std::string_view m = {}) { return {StatusCode::kCrossDevice, m}; }
  static Status TooManyLinks(std::string_view m = {}) { return {StatusCode::kTooManyLinks, m}; }
  static Status BadCookie(std::string_view m = {}) { return {StatusCode::kBadCookie, m}; }
  static Status NotSync(std::string_view m = {}) { return {StatusCode::kNotSync, m}; }
  static Status TooSmall(std::string_view m = {}) { return {StatusCode::kTooSmall, m}; }
  static Status Aborted(std::string_view m = {}) { return {StatusCode::kAborted, m}; }
  static Status Corruption(std::string_view m = {}) { return {StatusCode::kCorruption, m}; }
  static Status Internal(std::string_view m = {}) { return {StatusCode::kInternal, m}; }

  // Maps an errno value to a Status; `context` names the object or call.
  static Status FromErrno(int err, std::string_view context);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  std::string_view message() const { return message_ ? std::string_view(*message_) : ""; }
  // "not found: /a/b" style text for logs and CLI errors.
  std::string ToString() const;

  bool operator==(StatusCode code) const { return code_ == code; }

 private:
  StatusCode code_ = StatusCode::kOk;
  // Shared so that copying a Status on hot paths never allocates.
  std::shared_ptr<const std::string> message_;
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status::Internal("Result constructed from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace geofs

#define GEOFS_CONCAT_INNER_(a, b) a##b
#define GEOFS_CONCAT_(a, b) GEOFS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define GEOFS_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::geofs::Status geofs_status_ = (expr);           \
    if (!geofs_status_.ok()) return geofs_status_;    \
  } while (0)

// `lhs = value of expr`, or return its Status. `expr` must yield a Result.
#define GEOFS_ASSIGN_OR_RETURN(lhs, expr) \
  GEOFS_ASSIGN_OR_RETURN_IMPL_(GEOFS_CONCAT_(geofs_result_, __LINE__), lhs, expr)
#define GEOFS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
