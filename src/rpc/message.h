// RPC v2 call headers in, reply headers out (RFC 5531 sections 8-9, and
// appendix A for AUTH_SYS).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "rpc/program.h"
#include "xdr/xdr.h"

namespace geofs::rpc {

inline constexpr size_t kMaxAuthBodyBytes = 400;  // opaque_auth body<400>
inline constexpr size_t kMaxMachineNameBytes = 255;
inline constexpr size_t kMaxAuthSysGids = 16;

enum class MsgType : uint32_t { kCall = 0, kReply = 1 };
enum class ReplyStat : uint32_t { kAccepted = 0, kDenied = 1 };
enum class RejectStat : uint32_t { kRpcMismatch = 0, kAuthError = 1 };

// What to do with a record, decided from its call header alone.
enum class CallDisposition {
  // A well-formed call: look up its program.
  kDispatch,
  // No reply is possible: the record is too short to hold the fixed header
  // (xid, mtype, rpcvers, prog, vers, proc), or it is not a CALL. Answering
  // would mean guessing an xid, or replying to a reply.
  kDrop,
  // rpcvers != 2: answer MSG_DENIED RPC_MISMATCH(2, 2).
  kRpcMismatch,
  // Answer MSG_DENIED AUTH_ERROR(auth_error).
  kAuthError,
};

struct CallHeader {
  CallDisposition disposition = CallDisposition::kDrop;
  uint32_t xid = 0;  // valid unless kDrop
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  AuthFlavor flavor = AuthFlavor::kNone;
  std::optional<AuthSys> auth_sys;  // set iff kDispatch and flavor == kSys
  AuthStat auth_error = AuthStat::kOk;
  size_t args_offset = 0;  // where the arguments start in the record
};

// Parses the call header at the start of `record`.
//
// Credentials: AUTH_NONE (any body) and AUTH_SYS (parsed strictly: the body
// must be exactly stamp, machinename<255>, uid, gid, gids<16>) are accepted.
// A truncated or malformed credential gets AUTH_BADCRED, a truncated or
// oversized verifier AUTH_BADVERF; a well-formed verifier is not checked
// further, since AUTH_NONE and AUTH_SYS carry nothing to verify.
// AUTH_SHORT gets AUTH_REJECTEDCRED: we never hand out shorthand
// credentials, and RFC 5531 appendix A has a client that is refused one fall
// back to its full AUTH_SYS credential. Every other flavour (AUTH_DH,
// RPCSEC_GSS, unknown numbers) gets AUTH_TOOWEAK ("rejected for security
// reasons"): the credential is not malformed (BADCRED) and no new session
// would help (REJECTEDCRED); the flavour itself is refused, so the client
// should pick another one from those MOUNT advertises.
CallHeader ParseCall(std::span<const uint8_t> record);

// A reply's record mark and RPC reply header, built without allocating.
class ReplyHeader {
 public:
  static ReplyHeader Accepted(uint32_t xid, AcceptStat stat);
  static ReplyHeader ProgMismatch(uint32_t xid, uint32_t low, uint32_t high);
  static ReplyHeader RpcMismatch(uint32_t xid);
  static ReplyHeader AuthError(uint32_t xid, AuthStat why);

  // Sets the record mark for a reply of this header plus `body_bytes`, sent
  // as a single fragment. Returns false if that does not fit in a fragment.
  bool SetBodySize(size_t body_bytes);

  std::span<const uint8_t> bytes() const { return {bytes_.data(), size_}; }

 private:
  // mark, xid, mtype, reply_stat, verf (flavor, length), accept_stat, low, high
  static constexpr size_t kMaxBytes = 9 * 4;

  explicit ReplyHeader(uint32_t xid, ReplyStat stat);
  void Put(uint32_t v);

  std::array<uint8_t, kMaxBytes> bytes_{};
  size_t size_ = 0;
};

// One reply record ready for a gather write: the header, then the body
// (non-empty only for an accepted SUCCESS), never copied into one buffer.
struct OutgoingReply {
  ReplyHeader header;
  xdr::Encoder body;

  size_t size() const { return header.bytes().size() + body.size(); }
  // Calls fn(std::span<const uint8_t>) for each segment in wire order.
  template <typename Fn>
  void ForEachSegment(Fn&& fn) const {
    fn(header.bytes());
    body.ForEachSegment(fn);
  }
  // The whole record (mark included) as one copy; tests and fuzzing.
  std::vector<uint8_t> Flatten() const;
};

}  // namespace geofs::rpc
