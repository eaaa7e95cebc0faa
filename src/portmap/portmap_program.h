// PORTMAP v2 (RFC 1833 section 3) answering from a table fixed at start, so
// that clients which ask a portmapper find geofs without an rpcbind running.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "rpc/program.h"

namespace geofs::portmap {

inline constexpr uint32_t kProgram = 100000;
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kProtocolTcp = 6;
inline constexpr uint32_t kProtocolUdp = 17;

enum class Procedure : uint32_t {
  kNull = 0,
  kSet = 1,
  kUnset = 2,
  kGetPort = 3,
  kDump = 4,
  kCallIt = 5,
};

struct Mapping {
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t protocol = kProtocolTcp;
  uint32_t port = 0;
};

// NULL, GETPORT and DUMP answer from the table. SET and UNSET answer FALSE:
// the table belongs to this process, not to other servers. CALLIT answers
// PROC_UNAVAIL: forwarding calls for strangers only serves UDP broadcast
// discovery (we speak TCP) and traffic amplification. rpcbind v3/v4 callers
// get PROG_MISMATCH(2, 2) and fall back to v2. Thread-safe (immutable).
class PortmapProgram : public rpc::Program {
 public:
  explicit PortmapProgram(std::vector<Mapping> mappings);

  uint32_t program() const override { return kProgram; }
  uint32_t min_version() const override { return kVersion; }
  uint32_t max_version() const override { return kVersion; }
  void Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                rpc::Responder respond) override;

 private:
  const std::vector<Mapping> mappings_;
};

}  // namespace geofs::portmap
