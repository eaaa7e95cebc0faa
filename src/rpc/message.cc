#include "rpc/message.h"

#include <algorithm>
#include <string_view>

#include "rpc/record.h"

namespace geofs::rpc {
namespace {

// The AUTH_SYS body (RFC 5531 appendix A). The body must be consumed exactly:
// trailing bytes mean the sender and we disagree about its layout.
std::optional<AuthSys> ParseAuthSys(std::span<const uint8_t> body) {
  xdr::Decoder d(body);
  AuthSys sys;
  std::string_view machine;
  uint32_t gid_count = 0;
  if (!d.U32(&sys.stamp) || !d.String(kMaxMachineNameBytes, &machine) || !d.U32(&sys.uid) ||
      !d.U32(&sys.gid) || !d.U32(&gid_count)) {
    return std::nullopt;
  }
  if (gid_count > kMaxAuthSysGids || d.remaining() != size_t{gid_count} * 4) return std::nullopt;
  sys.machine_name.assign(machine);
  sys.gids.resize(gid_count);
  for (uint32_t& g : sys.gids) d.U32(&g);
  return sys;
}

}  // namespace

CallHeader ParseCall(std::span<const uint8_t> record) {
  CallHeader h;
  xdr::Decoder d(record);
  uint32_t mtype = 0;
  uint32_t rpcvers = 0;
  if (!d.U32(&h.xid) || !d.U32(&mtype) || mtype != static_cast<uint32_t>(MsgType::kCall) ||
      !d.U32(&rpcvers)) {
    return h;  // kDrop
  }
  // RFC 5531 section 9: the RPC version is checked before anything else.
  if (rpcvers != kRpcVersion) {
    h.disposition = CallDisposition::kRpcMismatch;
    return h;
  }
  if (!d.U32(&h.program) || !d.U32(&h.version) || !d.U32(&h.procedure)) return h;  // kDrop

  h.disposition = CallDisposition::kAuthError;
  uint32_t cred_flavor = 0;
  std::span<const uint8_t> cred;
  if (!d.U32(&cred_flavor) || !d.Opaque(kMaxAuthBodyBytes, &cred)) {
    h.auth_error = AuthStat::kBadCred;
    return h;
  }
  uint32_t verf_flavor = 0;
  std::span<const uint8_t> verf;
  if (!d.U32(&verf_flavor) || !d.Opaque(kMaxAuthBodyBytes, &verf)) {
    h.auth_error = AuthStat::kBadVerf;
    return h;
  }
  switch (static_cast<AuthFlavor>(cred_flavor)) {
    case AuthFlavor::kNone:
      break;
    case AuthFlavor::kSys:
      h.auth_sys = ParseAuthSys(cred);
      if (!h.auth_sys) {
        h.auth_error = AuthStat::kBadCred;
        return h;
      }
      break;
    case AuthFlavor::kShort:
      h.auth_error = AuthStat::kRejectedCred;
      return h;
    default:
      h.auth_error = AuthStat::kTooWeak;
      return h;
  }
  h.flavor = static_cast<AuthFlavor>(cred_flavor);
  h.disposition = CallDisposition::kDispatch;
  h.args_offset = d.position();
  return h;
}

ReplyHeader::ReplyHeader(uint32_t xid, ReplyStat stat) {
  Put(0);  // record mark, set by SetBodySize
  Put(xid);
  Put(static_cast<uint32_t>(MsgType::kReply));
  Put(static_cast<uint32_t>(stat));
  SetBodySize(0);
}

void ReplyHeader::Put(uint32_t v) {
  bytes_[size_++] = static_cast<uint8_t>(v >> 24);
  bytes_[size_++] = static_cast<uint8_t>(v >> 16);
  bytes_[size_++] = static_cast<uint8_t>(v >> 8);
  bytes_[size_++] = static_cast<uint8_t>(v);
}

bool ReplyHeader::SetBodySize(size_t body_bytes) {
  size_t record = size_ - 4;
  if (body_bytes > kMaxFragmentBytes - record) return false;
  std::array<uint8_t, 4> mark = SingleFragmentMark(static_cast<uint32_t>(record + body_bytes));
  std::copy(mark.begin(), mark.end(), bytes_.begin());
  return true;
}

ReplyHeader ReplyHeader::Accepted(uint32_t xid, AcceptStat stat) {
  ReplyHeader h(xid, ReplyStat::kAccepted);
  h.Put(static_cast<uint32_t>(AuthFlavor::kNone));  // verifier: AUTH_NONE, empty body
  h.Put(0);
  h.Put(static_cast<uint32_t>(stat));
  h.SetBodySize(0);
  return h;
}

ReplyHeader ReplyHeader::ProgMismatch(uint32_t xid, uint32_t low, uint32_t high) {
  ReplyHeader h = Accepted(xid, AcceptStat::kProgMismatch);
  h.Put(low);
  h.Put(high);
  h.SetBodySize(0);
  return h;
}

ReplyHeader ReplyHeader::RpcMismatch(uint32_t xid) {
  ReplyHeader h(xid, ReplyStat::kDenied);
  h.Put(static_cast<uint32_t>(RejectStat::kRpcMismatch));
  h.Put(kRpcVersion);
  h.Put(kRpcVersion);
  h.SetBodySize(0);
  return h;
}

ReplyHeader ReplyHeader::AuthError(uint32_t xid, AuthStat why) {
  ReplyHeader h(xid, ReplyStat::kDenied);
  h.Put(static_cast<uint32_t>(RejectStat::kAuthError));
  h.Put(static_cast<uint32_t>(why));
  h.SetBodySize(0);
  return h;
}

std::vector<uint8_t> OutgoingReply::Flatten() const {
  std::vector<uint8_t> out;
  out.reserve(size());
  ForEachSegment(xdr::Overloaded{
      [&](std::span<const uint8_t> s) { out.insert(out.end(), s.begin(), s.end()); },
      [&](const FileRange& f) { AppendFileRange(f, out); }});
  return out;
}

}  // namespace geofs::rpc
