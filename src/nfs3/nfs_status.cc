#include "nfs3/nfs_status.h"

namespace geofs::nfs3 {

NfsStat ToNfsStat(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return NfsStat::kOk;
    case StatusCode::kNotFound:
      return NfsStat::kNoEnt;
    case StatusCode::kAlreadyExists:
      return NfsStat::kExist;
    case StatusCode::kNotDirectory:
      return NfsStat::kNotDir;
    case StatusCode::kIsDirectory:
      return NfsStat::kIsDir;
    case StatusCode::kNotEmpty:
      return NfsStat::kNotEmpty;
    case StatusCode::kNotPermitted:
      return NfsStat::kPerm;
    case StatusCode::kAccessDenied:
      return NfsStat::kAcces;
    case StatusCode::kInvalidArgument:
      return NfsStat::kInval;
    case StatusCode::kNameTooLong:
      return NfsStat::kNameTooLong;
    case StatusCode::kNoSpace:
      return NfsStat::kNoSpc;
    case StatusCode::kQuotaExceeded:
      return NfsStat::kDQuot;
    case StatusCode::kReadOnly:
      return NfsStat::kRofs;
    case StatusCode::kStale:
      return NfsStat::kStale;
    case StatusCode::kBadHandle:
      return NfsStat::kBadHandle;
    case StatusCode::kIoError:
    case StatusCode::kCorruption:
      return NfsStat::kIo;
    case StatusCode::kUnavailable:
    case StatusCode::kAborted:
    case StatusCode::kDeadlineExceeded:
      return NfsStat::kJukebox;
    case StatusCode::kNotSupported:
      return NfsStat::kNotSupp;
    case StatusCode::kFileTooLarge:
      return NfsStat::kFBig;
    case StatusCode::kCrossDevice:
      return NfsStat::kXdev;
    case StatusCode::kTooManyLinks:
      return NfsStat::kMLink;
    case StatusCode::kBadCookie:
      return NfsStat::kBadCookie;
    case StatusCode::kNotSync:
      return NfsStat::kNotSync;
    case StatusCode::kTooSmall:
      return NfsStat::kTooSmall;
    case StatusCode::kInternal:
      return NfsStat::kServerFault;
  }
  return NfsStat::kServerFault;
}

MountStat ToMountStat(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return MountStat::kOk;
    case StatusCode::kNotFound:
    case StatusCode::kStale:
      return MountStat::kNoEnt;
    case StatusCode::kNotPermitted:
      return MountStat::kPerm;
    case StatusCode::kAccessDenied:
      return MountStat::kAcces;
    case StatusCode::kNotDirectory:
      return MountStat::kNotDir;
    case StatusCode::kInvalidArgument:
    case StatusCode::kBadHandle:
      return MountStat::kInval;
    case StatusCode::kNameTooLong:
      return MountStat::kNameTooLong;
    case StatusCode::kNotSupported:
      return MountStat::kNotSupp;
    case StatusCode::kIoError:
    case StatusCode::kCorruption:
      return MountStat::kIo;
    default:
      return MountStat::kServerFault;
  }
}

}  // namespace geofs::nfs3
