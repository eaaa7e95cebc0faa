// DelayProxy: a TCP forwarder that delays each direction by a fixed one-way
// delay, to emulate WAN latency where the kernel has no netem (bandwidth is
// shaped separately with `tc tbf`, see bench/wan_bench.sh).
//
// Every accepted connection gets one connection to the target. Bytes read on
// one side are written to the other `one_way_delay` after they were read, in
// order; a half-close (EOF) travels the same way. At most `window_bytes` per
// direction and connection are held (read but not yet written): when full,
// the proxy stops reading, so the sender is held back by TCP flow control as
// on a real path whose bandwidth-delay product is that window.
//
// Limits, by design: the proxy terminates TCP, so loss and the congestion
// window's ramp-up over the long path are not emulated; only the delay of
// every byte and of every request/response round trip is.
//
// Thread-safe. Two threads per direction and connection (a reader and a
// writer), plus the acceptor: meant for a benchmark's few connections.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "geofs/status.h"

namespace geofs::bench {

struct DelayProxyOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;  // 0: pick a free port (see DelayProxy::port())
  std::string target_host;   // numeric IPv4 address
  uint16_t target_port = 0;
  std::chrono::microseconds one_way_delay{10000};
  // Bytes per direction and connection in flight inside the proxy. 16 MiB
  // holds 1 Gbit/s x 100 ms: large enough never to be the limit at the rates
  // the WAN benchmark shapes to.
  size_t window_bytes = 16u << 20;
};

struct DelayProxyCounters {
  uint64_t connections = 0;       // accepted so far
  uint64_t upstream_bytes = 0;    // written to the target (client -> target)
  uint64_t downstream_bytes = 0;  // written to clients (target -> client)
};

class DelayProxy {
 public:
  // Binds, listens and starts accepting. Connecting to the target happens
  // per accepted connection; a client whose target connection fails is
  // closed.
  static Result<std::unique_ptr<DelayProxy>> Start(const DelayProxyOptions& options);
  // Stops accepting, closes every connection (bytes still held are
  // dropped) and joins all threads.
  ~DelayProxy();
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  uint16_t port() const;
  DelayProxyCounters Counters() const;

  class Impl;

 private:
  explicit DelayProxy(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace geofs::bench
