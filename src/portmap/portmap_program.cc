#include "portmap/portmap_program.h"

#include <utility>

#include "xdr/xdr.h"

namespace geofs::portmap {
namespace {

bool DecodeMapping(std::span<const uint8_t> args, Mapping* m) {
  xdr::Decoder d(args);
  return d.U32(&m->program) && d.U32(&m->version) && d.U32(&m->protocol) && d.U32(&m->port);
}

void EncodeMapping(const Mapping& m, xdr::Encoder* e) {
  e->U32(m.program);
  e->U32(m.version);
  e->U32(m.protocol);
  e->U32(m.port);
}

}  // namespace

PortmapProgram::PortmapProgram(std::vector<Mapping> mappings) : mappings_(std::move(mappings)) {}

void PortmapProgram::Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                              rpc::Responder respond) {
  xdr::Encoder out;
  Mapping wanted;
  switch (static_cast<Procedure>(ctx.procedure)) {
    case Procedure::kNull:
      break;
    case Procedure::kSet:
    case Procedure::kUnset:
      if (!DecodeMapping(args, &wanted))
        return respond(rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs));
      out.Bool(false);
      break;
    case Procedure::kGetPort: {
      if (!DecodeMapping(args, &wanted))
        return respond(rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs));
      uint32_t port = 0;  // RFC 1833: zero means the program is not registered
      for (const Mapping& m : mappings_) {
        if (m.program == wanted.program && m.version == wanted.version &&
            m.protocol == wanted.protocol) {
          port = m.port;
          break;
        }
      }
      out.U32(port);
      break;
    }
    case Procedure::kDump:
      // pmaplist is an XDR linked list: each entry is preceded by TRUE, the
      // end is marked by FALSE.
      for (const Mapping& m : mappings_) {
        out.Bool(true);
        EncodeMapping(m, &out);
      }
      out.Bool(false);
      break;
    default:
      return respond(rpc::Reply::Error(rpc::AcceptStat::kProcUnavail));
  }
  respond(rpc::Reply::Success(std::move(out)));
}

}  // namespace geofs::portmap
