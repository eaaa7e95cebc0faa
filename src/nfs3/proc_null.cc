#include "nfs3/procedures.h"

namespace geofs::nfs3 {

// NULL answers every peer, allowed or not: it is how clients probe a server.
void ProcNull(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder respond) {
  respond(rpc::Reply::Success(xdr::Encoder()));
}

}  // namespace geofs::nfs3
