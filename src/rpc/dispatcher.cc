#include "rpc/dispatcher.h"

#include <atomic>
#include <exception>
#include <string>
#include <utility>

#include "common/logging.h"

namespace geofs::rpc {
namespace {

OutgoingReply EncodeReply(uint32_t xid, const Program& program, Reply reply) {
  OutgoingReply out{ReplyHeader::Accepted(xid, reply.stat), {}};
  if (reply.auth_error) {
    out.header = ReplyHeader::AuthError(xid, *reply.auth_error);
  } else if (reply.stat == AcceptStat::kSuccess) {
    if (out.header.SetBodySize(reply.body.size())) {
      out.body = std::move(reply.body);
    } else {
      GetLogger("rpc")->error("reply of {} bytes to program {} does not fit in a record",
                              reply.body.size(), program.program());
      out.header = ReplyHeader::Accepted(xid, AcceptStat::kSystemErr);
    }
  } else if (reply.stat == AcceptStat::kProgMismatch) {
    out.header = ReplyHeader::ProgMismatch(xid, program.min_version(), program.max_version());
  }
  return out;
}

// The one answer owed to a call handed to a program. Whoever holds the last
// reference to it when no answer was given (a dropped Responder, a task the
// executor discarded) answers SYSTEM_ERR.
class PendingCall {
 public:
  PendingCall(uint32_t xid, std::shared_ptr<const Program> program, Dispatcher::ReplySink sink)
      : xid_(xid), program_(std::move(program)), sink_(std::move(sink)) {}
  PendingCall(const PendingCall&) = delete;
  PendingCall& operator=(const PendingCall&) = delete;

  ~PendingCall() {
    if (!answered_.exchange(true)) {
      GetLogger("rpc")->warn("call xid {:#x} to program {} was never answered", xid_,
                             program_->program());
      sink_(EncodeReply(xid_, *program_, Reply::Error(AcceptStat::kSystemErr)));
    }
  }

  void Answer(Reply reply) {
    if (answered_.exchange(true)) {
      GetLogger("rpc")->warn("program {} answered call xid {:#x} twice", program_->program(), xid_);
      return;
    }
    sink_(EncodeReply(xid_, *program_, std::move(reply)));
  }

 private:
  const uint32_t xid_;
  const std::shared_ptr<const Program> program_;
  Dispatcher::ReplySink sink_;
  std::atomic<bool> answered_{false};
};

}  // namespace

Dispatcher::Dispatcher(Executor executor) : executor_(std::move(executor)) {}

Status Dispatcher::Register(std::shared_ptr<Program> program) {
  if (program->min_version() > program->max_version()) {
    return Status::InvalidArgument("program " + std::to_string(program->program()) +
                                   " has an empty version range");
  }
  if (Find(program->program()) != nullptr) {
    return Status::AlreadyExists("program " + std::to_string(program->program()) +
                                 " is already registered");
  }
  programs_.push_back(std::move(program));
  return Status::Ok();
}

std::shared_ptr<Program> Dispatcher::Find(uint32_t program) const {
  for (const auto& p : programs_) {
    if (p->program() == program) return p;
  }
  return nullptr;
}

void Dispatcher::Handle(Record record, const PeerAddress& peer, ReplySink sink) const {
  CallHeader h = ParseCall(record.bytes);
  switch (h.disposition) {
    case CallDisposition::kDrop:
      sink(std::nullopt);
      return;
    case CallDisposition::kRpcMismatch:
      sink(OutgoingReply{ReplyHeader::RpcMismatch(h.xid), {}});
      return;
    case CallDisposition::kAuthError:
      sink(OutgoingReply{ReplyHeader::AuthError(h.xid, h.auth_error), {}});
      return;
    case CallDisposition::kDispatch:
      break;
  }

  std::shared_ptr<Program> program = Find(h.program);
  if (!program) {
    sink(OutgoingReply{ReplyHeader::Accepted(h.xid, AcceptStat::kProgUnavail), {}});
    return;
  }
  if (h.version < program->min_version() || h.version > program->max_version()) {
    sink(OutgoingReply{
        ReplyHeader::ProgMismatch(h.xid, program->min_version(), program->max_version()), {}});
    return;
  }

  CallContext ctx;
  ctx.xid = h.xid;
  ctx.program = h.program;
  ctx.version = h.version;
  ctx.procedure = h.procedure;
  ctx.flavor = h.flavor;
  ctx.auth_sys = std::move(h.auth_sys);
  ctx.peer = peer;
  ctx.record = std::move(record.owner);
  std::span<const uint8_t> args = record.bytes.subspan(h.args_offset);
  auto call = std::make_shared<PendingCall>(h.xid, program, std::move(sink));

  const bool inline_call = program->RunsInline(ctx);
  auto task = [program = std::move(program), ctx = std::move(ctx), args,
               call = std::move(call)]() mutable {
    Responder respond = [call = std::move(call)](Reply reply) { call->Answer(std::move(reply)); };
    try {
      program->Dispatch(ctx, args, std::move(respond));
    } catch (const std::exception& e) {
      // Programs report errors through their Reply; an escaped exception is a
      // bug. The call is still answered, by the Responder's destructor.
      GetLogger("rpc")->error("program {} procedure {} threw: {}", ctx.program, ctx.procedure,
                              e.what());
    }
  };
  if (inline_call) {
    task();
  } else {
    executor_(std::move(task));
  }
}

}  // namespace geofs::rpc
