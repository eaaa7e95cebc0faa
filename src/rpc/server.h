// RpcServer: ONC RPC v2 over TCP (RFC 5531) for any set of Programs.
//
// Network threads read, reassemble records and check call headers; a worker
// pool runs the procedures (which may block on disk or network), except the
// calls a program says RunsInline, which the network thread runs; replies go
// back through a per-connection write queue as gather writes, in whatever
// order the procedures finish. A misbehaving peer (oversize or truncated
// record, reset, idleness) costs only its own connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "geofs/status.h"
#include "rpc/program.h"

namespace geofs::rpc {

struct RpcServerOptions {
  // An IPv4 or IPv6 literal ("0.0.0.0", "127.0.0.1", "::").
  std::string listen_address = "0.0.0.0";
  // Ports to listen on, each serving every registered program; 0 picks a
  // free port (see RpcServer::bound_ports()).
  std::vector<uint16_t> ports = {0};
  // Threads doing socket I/O, record reassembly and header checks.
  size_t network_threads = 2;
  // Threads running Program::Dispatch; procedures may block on backend I/O.
  size_t worker_threads = 16;
  // Largest call record accepted: a 1 MiB WRITE plus headers. A peer that
  // announces a larger one is disconnected before anything is allocated.
  size_t max_record_bytes = (1 << 20) + (64 << 10);
  // Connections beyond this are accepted and closed at once.
  size_t max_connections = 1024;
  // Calls read from one connection whose replies have not been written yet.
  // At the limit the server stops reading that connection until replies
  // drain (TCP backpressure); one read's worth of small calls may overshoot.
  size_t max_calls_in_flight = 128;
  // A connection is closed after this long without reading a byte or
  // finishing a write, unless a procedure is still working on one of its
  // calls (a peer that stops reading its replies counts as idle). The Linux
  // client drops idle connections itself after 5 minutes.
  std::chrono::milliseconds idle_timeout = std::chrono::minutes(6);
};

// Thread-safety: Register() and Start() from one thread before serving;
// bound_ports() after Start(); Stop() from any thread that is not one of the
// server's own (a signal-waiting thread is fine), any number of times.
class RpcServer {
 public:
  explicit RpcServer(RpcServerOptions options);
  ~RpcServer();  // Stop()s
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // REQUIRES: before Start().
  Status Register(std::shared_ptr<Program> program);

  // Binds every port, then starts the threads. Fails (serving nothing) if an
  // option is invalid or a port cannot be bound.
  Status Start();

  // The bound ports, in the order of options.ports. REQUIRES: Start() ok.
  const std::vector<uint16_t>& bound_ports() const;

  // Stops accepting, closes every connection, waits for running procedures
  // and joins all threads. Replies produced after Stop() are discarded; a
  // Responder may still be called afterwards (even after the server is
  // destroyed) without harm.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace geofs::rpc
