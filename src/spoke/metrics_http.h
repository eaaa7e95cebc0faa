// MetricsHttpServer: a tiny HTTP endpoint for the spoke's counters on its own
// thread: GET of a route's path (query ignored) answers 200 with what the
// route renders, an unknown path 404, any other method 405; one request per
// connection (HTTP/1.0 style), then it closes.
//
// Thread-safe to construct and destroy; renderers run on the server thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "geofs/status.h"

namespace geofs::spoke {

struct HttpRoute {
  std::string path;          // e.g. "/metrics"
  std::string content_type;  // e.g. "text/plain; version=0.0.4"
  std::function<std::string()> render;
};

class MetricsHttpServer {
 public:
  // Listens on address:port (port 0: a free one).
  static Result<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address, uint16_t port,
                                                          std::vector<HttpRoute> routes);
  ~MetricsHttpServer();  // stops the thread and closes the socket

  uint16_t port() const { return port_; }

 private:
  MetricsHttpServer(int fd, uint16_t port, std::vector<HttpRoute> routes);
  void Serve(std::stop_token stop);
  // The full response to one request head.
  std::string Respond(const std::string& head) const;

  int fd_;
  uint16_t port_;
  const std::vector<HttpRoute> routes_;
  std::jthread thread_;
};

}  // namespace geofs::spoke
