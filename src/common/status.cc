#include "geofs/status.h"

#include <cerrno>
#include <cstring>

namespace geofs {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kAlreadyExists: return "already exists";
    case StatusCode::kNotDirectory: return "not a directory";
    case StatusCode::kIsDirectory: return "is a directory";
    case StatusCode::kNotEmpty: return "directory not empty";
    case StatusCode::kNotPermitted: return "operation not permitted";
    case StatusCode::kAccessDenied: return "access denied";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNameTooLong: return "name too long";
    case StatusCode::kNoSpace: return "no space left";
    case StatusCode::kQuotaExceeded: return "quota exceeded";
    case StatusCode::kReadOnly: return "read-only";
    case StatusCode::kStale: return "stale handle";
    case StatusCode::kBadHandle: return "bad handle";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kNotSupported: return "not supported";
    case StatusCode::kFileTooLarge: return "file too large";
    case StatusCode::kCrossDevice: return "cross-device";
    case StatusCode::kTooManyLinks: return "too many links";
    case StatusCode::kBadCookie: return "bad cookie";
    case StatusCode::kNotSync: return "not in sync";
    case StatusCode::kTooSmall: return "too small";
    case StatusCode::kAborted: return "aborted";
    case StatusCode::kCorruption: return "corruption";
    case StatusCode::kDeadlineExceeded: return "deadline exceeded";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

Status::Status(StatusCode code, std::string_view message) : code_(code) {
  if (!message.empty()) message_ = std::make_shared<const std::string>(message);
}

Status Status::FromErrno(int err, std::string_view context) {
  StatusCode code;
  switch (err) {
    case 0: return Status::Ok();
    case ENOENT: code = StatusCode::kNotFound; break;
    case EEXIST: code = StatusCode::kAlreadyExists; break;
    case ENOTDIR: code = StatusCode::kNotDirectory; break;
    case EISDIR: code = StatusCode::kIsDirectory; break;
    case ENOTEMPTY: code = StatusCode::kNotEmpty; break;
    case EPERM: code = StatusCode::kNotPermitted; break;
    case EACCES: code = StatusCode::kAccessDenied; break;
    case EINVAL: code = StatusCode::kInvalidArgument; break;
    case ENAMETOOLONG: code = StatusCode::kNameTooLong; break;
    case ENOSPC: code = StatusCode::kNoSpace; break;
    case EDQUOT: code = StatusCode::kQuotaExceeded; break;
    case EROFS: code = StatusCode::kReadOnly; break;
    case ESTALE: code = StatusCode::kStale; break;
    case EFBIG: code = StatusCode::kFileTooLarge; break;
    case EXDEV: code = StatusCode::kCrossDevice; break;
    case EMLINK: code = StatusCode::kTooManyLinks; break;
    case ENOTSUP: code = StatusCode::kNotSupported; break;
    case EAGAIN: code = StatusCode::kUnavailable; break;
    case ETIMEDOUT: code = StatusCode::kDeadlineExceeded; break;
    case ELOOP: code = StatusCode::kInvalidArgument; break;
    default: code = StatusCode::kIoError; break;
  }
  std::string message(context);
  message += ": ";
  message += std::strerror(err);
  return Status(code, message);
}

std::string Status::ToString() const {
  std::string out(StatusCodeName(code_));
  if (message_) {
    out += ": ";
    out += *message_;
  }
  return out;
}

}  // namespace geofs
