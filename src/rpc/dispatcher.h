// Dispatcher: turns call records into replies, independent of any transport.
// The RpcServer feeds it records read from sockets; tests and the fuzzer feed
// it bytes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "geofs/status.h"
#include "rpc/message.h"
#include "rpc/program.h"
#include "rpc/record.h"

namespace geofs::rpc {

class Dispatcher {
 public:
  using Task = std::function<void()>;
  // Runs a task now or later, on any thread. A task it destroys without
  // running answers its call with SYSTEM_ERR.
  using Executor = std::function<void(Task)>;
  // Receives the reply to one record, or nullopt when the record gets none.
  using ReplySink = std::function<void(std::optional<OutgoingReply>)>;

  // Procedures run on `executor`; header checks run on Handle's caller.
  explicit Dispatcher(Executor executor);

  // Adds a program, reachable on every transport that uses this dispatcher.
  // Fails if its number is already registered or its version range is empty.
  // REQUIRES: no concurrent Handle() (register everything before serving).
  Status Register(std::shared_ptr<Program> program);

  // Answers one record: a malformed header or credential, a wrong RPC
  // version, an unknown program (PROG_UNAVAIL) or a version outside the
  // program's range (PROG_MISMATCH with its low and high) is answered before
  // Handle returns, on the calling thread; anything else is passed to the
  // program's Dispatch on the executor, or on the calling thread if the
  // program says the call RunsInline.
  //
  // `sink` is called exactly once per record, possibly before Handle
  // returns. A Responder destroyed without being called answers SYSTEM_ERR,
  // so a procedure that loses its call cannot leave the client waiting; a
  // second call of a Responder is ignored. Thread-safe.
  void Handle(Record record, const PeerAddress& peer, ReplySink sink) const;

 private:
  std::shared_ptr<Program> Find(uint32_t program) const;

  Executor executor_;
  std::vector<std::shared_ptr<Program>> programs_;  // a handful: a scan beats a map
};

}  // namespace geofs::rpc
