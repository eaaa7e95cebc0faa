// A small blocking ONC RPC client over TCP for tests: it builds calls byte by
// byte (so tests can also send malformed ones) and decodes replies without
// trusting the server. Reports through geofs::Status, not gtest.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "geofs/status.h"

namespace geofs::testing {

// An opaque_auth as sent in a call.
struct RpcAuth {
  uint32_t flavor = 0;
  std::vector<uint8_t> body;

  static RpcAuth None() { return {}; }
  // AUTH_SYS with the given identity (RFC 5531 appendix A).
  static RpcAuth Sys(uint32_t uid, uint32_t gid, const std::vector<uint32_t>& gids = {},
                     const std::string& machine_name = "geofs-test", uint32_t stamp = 0);
};

struct RpcCallSpec {
  uint32_t xid = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  RpcAuth cred = RpcAuth::None();
  RpcAuth verf = RpcAuth::None();
  std::vector<uint8_t> args;  // already XDR-encoded
  uint32_t rpc_version = 2;
};

// The call message (no record mark).
std::vector<uint8_t> EncodeCall(const RpcCallSpec& call);

// Frames `record` with record marks, in fragments of at most max_fragment
// bytes (the last one flagged).
std::vector<uint8_t> FrameRecord(std::span<const uint8_t> record,
                                 size_t max_fragment = std::numeric_limits<int32_t>::max());

// A decoded reply message. Fields beyond those the reply carries stay 0.
struct RpcReply {
  uint32_t xid = 0;
  bool accepted = false;  // MSG_ACCEPTED, else MSG_DENIED
  // MSG_ACCEPTED
  uint32_t accept_stat = 0;
  uint32_t mismatch_low = 0;  // PROG_MISMATCH
  uint32_t mismatch_high = 0;
  std::vector<uint8_t> body;  // the results after accept_stat (SUCCESS)
  // MSG_DENIED
  uint32_t reject_stat = 0;
  uint32_t auth_stat = 0;  // AUTH_ERROR
  uint32_t rpc_low = 0;    // RPC_MISMATCH
  uint32_t rpc_high = 0;
};

// Decodes one reply record; fails on anything RFC 5531 does not allow.
Result<RpcReply> ParseReply(std::span<const uint8_t> record);

// One TCP connection. Every receive times out. Not thread-safe.
class RpcClient {
 public:
  // Connects to an IPv4 or IPv6 literal.
  static Result<std::unique_ptr<RpcClient>> Connect(
      const std::string& host, uint16_t port,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  Status SendBytes(std::span<const uint8_t> bytes);
  // Sends `call` framed in fragments of at most max_fragment bytes.
  Status Send(const RpcCallSpec& call, size_t max_fragment = std::numeric_limits<int32_t>::max());
  // The next record from the server, fragments joined; at most max_bytes.
  Result<std::vector<uint8_t>> ReadRecord(size_t max_bytes = 64 << 20);
  Result<RpcReply> ReadReply();

  // Sends a call with a fresh xid and waits for the reply with that xid.
  Result<RpcReply> Call(uint32_t program, uint32_t version, uint32_t procedure,
                        std::span<const uint8_t> args = {}, RpcAuth cred = RpcAuth::None());

  // Half-closes the sending side (the server sees end of stream).
  Status ShutdownWrite();
  // True if the server closes the connection before the timeout (any bytes
  // it sends first are discarded).
  bool WaitForClose();

  int fd() const { return fd_; }
  uint32_t NextXid() { return next_xid_++; }

 private:
  RpcClient(int fd, std::chrono::milliseconds timeout);
  Status ReadExact(uint8_t* out, size_t n);

  int fd_;
  std::chrono::milliseconds timeout_;
  uint32_t next_xid_;
};

}  // namespace geofs::testing
