// The one translation from geofs StatusCode to the NFSv3 and MOUNT v3 status
// codes (RFC 1813 section 2.6 and appendix I). No other layer knows nfsstat3.
#pragma once

#include <cstdint>

#include "geofs/status.h"

namespace geofs::nfs3 {

// nfsstat3.
enum class NfsStat : uint32_t {
  kOk = 0,
  kPerm = 1,
  kNoEnt = 2,
  kIo = 5,
  kNxio = 6,
  kAcces = 13,
  kExist = 17,
  kXdev = 18,
  kNoDev = 19,
  kNotDir = 20,
  kIsDir = 21,
  kInval = 22,
  kFBig = 27,
  kNoSpc = 28,
  kRofs = 30,
  kMLink = 31,
  kNameTooLong = 63,
  kNotEmpty = 66,
  kDQuot = 69,
  kStale = 70,
  kRemote = 71,
  kBadHandle = 10001,
  kNotSync = 10002,
  kBadCookie = 10003,
  kNotSupp = 10004,
  kTooSmall = 10005,
  kServerFault = 10006,
  kBadType = 10007,
  kJukebox = 10008,
};

// mountstat3.
enum class MountStat : uint32_t {
  kOk = 0,
  kPerm = 1,
  kNoEnt = 2,
  kIo = 5,
  kAcces = 13,
  kNotDir = 20,
  kInval = 22,
  kNameTooLong = 63,
  kNotSupp = 10004,
  kServerFault = 10006,
};

// Transient conditions (kUnavailable, kAborted: an optimistic-concurrency
// conflict, kDeadlineExceeded) become NFS3ERR_JUKEBOX so that the client
// retries later instead of failing the application. Data that cannot be
// served intact (kCorruption, kIoError) is NFS3ERR_IO; kInternal is a server
// bug and answers NFS3ERR_SERVERFAULT.
NfsStat ToNfsStat(StatusCode code);
inline NfsStat ToNfsStat(const Status& status) { return ToNfsStat(status.code()); }

MountStat ToMountStat(StatusCode code);
inline MountStat ToMountStat(const Status& status) { return ToMountStat(status.code()); }

}  // namespace geofs::nfs3
