// MetricsHttpServer: a Prometheus text endpoint ("GET /metrics") on its own
// thread. It answers every GET with the text `render` returns, one request
// per connection (HTTP/1.0 style), and closes.
//
// Thread-safe to construct and destroy; `render` runs on the server thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "geofs/status.h"

namespace geofs::spoke {

class MetricsHttpServer {
 public:
  // Listens on address:port (port 0: a free one).
  static Result<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address, uint16_t port,
                                                          std::function<std::string()> render);
  ~MetricsHttpServer();  // stops the thread and closes the socket

  uint16_t port() const { return port_; }

 private:
  MetricsHttpServer(int fd, uint16_t port, std::function<std::string()> render);
  void Serve(std::stop_token stop);

  int fd_;
  uint16_t port_;
  std::function<std::string()> render_;
  std::jthread thread_;
};

}  // namespace geofs::spoke
