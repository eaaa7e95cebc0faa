// The contract between the ONC RPC server (RFC 5531) and the programs it
// serves (MOUNT, NFS, PORTMAP). The server owns transport, record marking,
// call-header parsing, authentication parsing and version negotiation; a
// Program owns its procedures.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "xdr/xdr.h"

namespace geofs::rpc {

inline constexpr uint32_t kRpcVersion = 2;

enum class AuthFlavor : uint32_t { kNone = 0, kSys = 1, kShort = 2, kDh = 3, kGss = 6 };

enum class AcceptStat : uint32_t {
  kSuccess = 0,
  kProgUnavail = 1,
  kProgMismatch = 2,
  kProcUnavail = 3,
  kGarbageArgs = 4,
  kSystemErr = 5,
};

enum class AuthStat : uint32_t {
  kOk = 0,
  kBadCred = 1,
  kRejectedCred = 2,
  kBadVerf = 3,
  kRejectedVerf = 4,
  kTooWeak = 5,
};

// AUTH_SYS credentials exactly as the client sent them (before squashing).
struct AuthSys {
  uint32_t stamp = 0;
  std::string machine_name;  // at most 255 bytes
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> gids;  // at most 16
};

// The client's transport address.
struct PeerAddress {
  bool is_v4 = true;
  std::array<uint8_t, 16> bytes{};  // network order; v4 uses the first 4
  uint16_t port = 0;
  std::string ToString() const;
};

// Everything about one call except its arguments.
struct CallContext {
  uint32_t xid = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  AuthFlavor flavor = AuthFlavor::kNone;
  std::optional<AuthSys> auth_sys;  // set iff flavor == kSys
  PeerAddress peer;
  // Keeps the received record alive; a procedure that hands slices of its
  // arguments to asynchronous work (WRITE data) shares it.
  std::shared_ptr<const void> record;
};

// A program's answer to one call.
struct Reply {
  // Accepted: `stat` (and `body` when kSuccess). Denied: set `auth_error`.
  AcceptStat stat = AcceptStat::kSuccess;
  std::optional<AuthStat> auth_error;
  xdr::Encoder body;

  static Reply Success(xdr::Encoder body) {
    Reply r;
    r.body = std::move(body);
    return r;
  }
  static Reply Error(AcceptStat stat) {
    Reply r;
    r.stat = stat;
    return r;
  }
  static Reply AuthError(AuthStat why) {
    Reply r;
    r.auth_error = why;
    return r;
  }
};

// Invoked exactly once per call, from any thread.
using Responder = std::function<void(Reply)>;

class Program {
 public:
  virtual ~Program() = default;
  virtual uint32_t program() const = 0;
  virtual uint32_t min_version() const = 0;
  virtual uint32_t max_version() const = 0;
  // Handles one call whose version is within [min_version, max_version].
  // `args` views the call's argument bytes, which stay valid while
  // ctx.record is held. Unknown procedures answer kProcUnavail; arguments
  // that do not decode answer kGarbageArgs. May block (it runs on a worker
  // thread) unless RunsInline(ctx) said otherwise.
  virtual void Dispatch(const CallContext& ctx, std::span<const uint8_t> args,
                        Responder respond) = 0;
  // Whether the call may be dispatched on the thread that read it (a network
  // thread), sparing the hand-off to a worker and back: only for calls that
  // finish in microseconds and never wait on slow I/O. Thread-safe.
  virtual bool RunsInline(const CallContext& ctx) const { return false; }
};

}  // namespace geofs::rpc
