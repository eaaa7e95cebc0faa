#include "rpc/test_program.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "geofs/buffer.h"
#include "xdr/xdr.h"

namespace geofs::testing {

void TestProgram::Dispatch(const rpc::CallContext& ctx, std::span<const uint8_t> args,
                           rpc::Responder respond) {
  int now = running_.fetch_add(1) + 1;
  int seen = max_running_.load();
  while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {
  }
  xdr::Decoder d(args);
  xdr::Encoder out;
  rpc::Reply reply;
  switch (ctx.procedure) {
    case kNull:
      reply = rpc::Reply::Success(std::move(out));
      break;
    case kEcho: {
      std::span<const uint8_t> payload;
      if (!d.Opaque(SIZE_MAX, &payload)) {
        reply = rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs);
        break;
      }
      out.OpaqueRef(Buffer(ctx.record, payload.data(), payload.size()));
      reply = rpc::Reply::Success(std::move(out));
      break;
    }
    case kDelayed: {
      uint32_t delay_ms = 0;
      uint32_t value = 0;
      if (!d.U32(&delay_ms) || !d.U32(&value)) {
        reply = rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<uint32_t>(delay_ms, 5000)));
      out.U32(value);
      reply = rpc::Reply::Success(std::move(out));
      break;
    }
    case kWhoAmI:
      out.U32(static_cast<uint32_t>(ctx.flavor));
      out.U32(ctx.auth_sys ? ctx.auth_sys->uid : 0);
      out.U32(ctx.auth_sys ? ctx.auth_sys->gid : 0);
      out.U32(ctx.auth_sys ? static_cast<uint32_t>(ctx.auth_sys->gids.size()) : 0);
      out.U32(ctx.peer.port);
      reply = rpc::Reply::Success(std::move(out));
      break;
    case kFill: {
      static const Buffer kData = Buffer::CopyOf(std::string(1 << 20, 'f'));
      uint32_t n = 0;
      if (!d.U32(&n) || n > kData.size()) {
        reply = rpc::Reply::Error(rpc::AcceptStat::kGarbageArgs);
        break;
      }
      out.OpaqueRef(kData.Slice(0, n));
      reply = rpc::Reply::Success(std::move(out));
      break;
    }
    case kLoseCall:
      running_.fetch_sub(1);
      return;
    default:
      reply = rpc::Reply::Error(rpc::AcceptStat::kProcUnavail);
  }
  running_.fetch_sub(1);
  respond(std::move(reply));
}

}  // namespace geofs::testing
