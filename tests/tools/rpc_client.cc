#include "tools/rpc_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "xdr/xdr.h"

namespace geofs::testing {
namespace {

constexpr uint32_t kLastFragment = 0x80000000u;

void PutAuth(xdr::Encoder* e, const RpcAuth& auth) {
  e->U32(auth.flavor);
  e->Opaque(auth.body);
}

}  // namespace

RpcAuth RpcAuth::Sys(uint32_t uid, uint32_t gid, const std::vector<uint32_t>& gids,
                     const std::string& machine_name, uint32_t stamp) {
  xdr::Encoder e;
  e.U32(stamp);
  e.String(machine_name);
  e.U32(uid);
  e.U32(gid);
  e.U32(static_cast<uint32_t>(gids.size()));
  for (uint32_t g : gids) e.U32(g);
  return RpcAuth{1, e.Flatten()};
}

std::vector<uint8_t> EncodeCall(const RpcCallSpec& call) {
  xdr::Encoder e;
  e.U32(call.xid);
  e.U32(0);  // CALL
  e.U32(call.rpc_version);
  e.U32(call.program);
  e.U32(call.version);
  e.U32(call.procedure);
  PutAuth(&e, call.cred);
  PutAuth(&e, call.verf);
  std::vector<uint8_t> out = e.Flatten();
  out.insert(out.end(), call.args.begin(), call.args.end());
  return out;
}

std::vector<uint8_t> FrameRecord(std::span<const uint8_t> record, size_t max_fragment) {
  max_fragment = std::clamp<size_t>(max_fragment, 1, 0x7fffffff);
  std::vector<uint8_t> out;
  out.reserve(record.size() + 4 * (record.size() / max_fragment + 1));
  size_t pos = 0;
  do {
    size_t len = std::min(max_fragment, record.size() - pos);
    uint32_t mark = static_cast<uint32_t>(len) | (pos + len == record.size() ? kLastFragment : 0);
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(mark >> shift));
    out.insert(out.end(), record.begin() + pos, record.begin() + pos + len);
    pos += len;
  } while (pos < record.size());
  return out;
}

Result<RpcReply> ParseReply(std::span<const uint8_t> record) {
  xdr::Decoder d(record);
  RpcReply r;
  uint32_t mtype = 0;
  uint32_t reply_stat = 0;
  if (!d.U32(&r.xid) || !d.U32(&mtype) || mtype != 1 || !d.U32(&reply_stat)) {
    return Status::Corruption("not an RPC reply");
  }
  if (reply_stat == 0) {
    r.accepted = true;
    uint32_t verf_flavor = 0;
    std::span<const uint8_t> verf;
    if (!d.U32(&verf_flavor) || !d.Opaque(400, &verf) || !d.U32(&r.accept_stat)) {
      return Status::Corruption("truncated accepted reply");
    }
    if (r.accept_stat == 2 && (!d.U32(&r.mismatch_low) || !d.U32(&r.mismatch_high))) {
      return Status::Corruption("truncated PROG_MISMATCH");
    }
    if (r.accept_stat > 5) return Status::Corruption("unknown accept_stat");
    if (r.accept_stat != 0 && d.remaining() != 0) {
      return Status::Corruption("bytes after an error reply");
    }
    std::span<const uint8_t> rest = d.Rest();
    r.body.assign(rest.begin(), rest.end());
    return r;
  }
  if (reply_stat != 1 || !d.U32(&r.reject_stat)) return Status::Corruption("bad reply_stat");
  bool ok = false;
  if (r.reject_stat == 0) {
    ok = d.U32(&r.rpc_low) && d.U32(&r.rpc_high);
  } else if (r.reject_stat == 1) {
    ok = d.U32(&r.auth_stat);
  }
  if (!ok || d.remaining() != 0) return Status::Corruption("malformed denied reply");
  return r;
}

RpcClient::RpcClient(int fd, std::chrono::milliseconds timeout)
    : fd_(fd), timeout_(timeout), next_xid_(std::random_device{}()) {}

RpcClient::~RpcClient() { close(fd_); }

Result<std::unique_ptr<RpcClient>> RpcClient::Connect(const std::string& host, uint16_t port,
                                                      std::chrono::milliseconds timeout) {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    addr_len = sizeof(*v4);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    addr_len = sizeof(*v6);
  } else {
    return Status::InvalidArgument("not an IP literal: " + host);
  }
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno(err, "connect to " + host + ":" + std::to_string(port));
  }
  return std::unique_ptr<RpcClient>(new RpcClient(fd, timeout));
}

Status RpcClient::SendBytes(std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "send");
    }
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status RpcClient::Send(const RpcCallSpec& call, size_t max_fragment) {
  std::vector<uint8_t> record = EncodeCall(call);
  return SendBytes(FrameRecord(record, max_fragment));
}

Status RpcClient::ReadExact(uint8_t* out, size_t n) {
  while (n > 0) {
    ssize_t got = recv(fd_, out, n, 0);
    if (got == 0) return Status::Unavailable("connection closed by the server");
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Status(StatusCode::kDeadlineExceeded, "no reply before the timeout");
      }
      return Status::FromErrno(errno, "recv");
    }
    out += got;
    n -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> RpcClient::ReadRecord(size_t max_bytes) {
  std::vector<uint8_t> record;
  bool last = false;
  while (!last) {
    uint8_t mark_bytes[4];
    GEOFS_RETURN_IF_ERROR(ReadExact(mark_bytes, 4));
    uint32_t mark = (uint32_t{mark_bytes[0]} << 24) | (uint32_t{mark_bytes[1]} << 16) |
                    (uint32_t{mark_bytes[2]} << 8) | mark_bytes[3];
    last = (mark & kLastFragment) != 0;
    size_t len = mark & ~kLastFragment;
    if (len > max_bytes - record.size()) return Status::Corruption("reply record too large");
    size_t at = record.size();
    record.resize(at + len);
    GEOFS_RETURN_IF_ERROR(ReadExact(record.data() + at, len));
  }
  return record;
}

Result<RpcReply> RpcClient::ReadReply() {
  GEOFS_ASSIGN_OR_RETURN(std::vector<uint8_t> record, ReadRecord());
  return ParseReply(record);
}

Result<RpcReply> RpcClient::Call(uint32_t program, uint32_t version, uint32_t procedure,
                                 std::span<const uint8_t> args, RpcAuth cred) {
  RpcCallSpec call;
  call.xid = NextXid();
  call.program = program;
  call.version = version;
  call.procedure = procedure;
  call.cred = std::move(cred);
  call.args.assign(args.begin(), args.end());
  GEOFS_RETURN_IF_ERROR(Send(call));
  while (true) {
    GEOFS_ASSIGN_OR_RETURN(RpcReply reply, ReadReply());
    if (reply.xid == call.xid) return reply;
  }
}

Status RpcClient::ShutdownWrite() {
  if (shutdown(fd_, SHUT_WR) != 0) return Status::FromErrno(errno, "shutdown");
  return Status::Ok();
}

bool RpcClient::WaitForClose() {
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  uint8_t sink[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = recv(fd_, sink, sizeof(sink), 0);
    if (n == 0) return true;
    if (n < 0 && errno == ECONNRESET) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return false;
  }
  return false;
}

}  // namespace geofs::testing
