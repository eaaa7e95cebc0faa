// FakeHttpServer: a scripted HTTP/1.1 server on 127.0.0.1 (port 0), for
// testing the S3 client's retries, timeouts, signing headers and concurrency
// without a real S3. Keep-alive connections, Content-Length bodies only.
//
// Replies come from a queue of scripted responses, one per request in arrival
// order; when the queue is empty the default response is used. Every request
// is recorded. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace geofs::objtest {

struct FakeRequest {
  std::string method;
  std::string target;                          // path and query, as sent
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

struct FakeResponse {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Wait this long before answering (a slow or stalled server).
  std::chrono::milliseconds delay{0};
  // Close the connection instead of answering.
  bool drop = false;
};

class FakeHttpServer {
 public:
  FakeHttpServer();
  ~FakeHttpServer();
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  uint16_t port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void Enqueue(FakeResponse response);
  void SetDefault(FakeResponse response);

  std::vector<FakeRequest> requests() const;
  size_t request_count() const;
  size_t connections_accepted() const;
  // Most requests ever being handled at the same moment.
  int max_in_flight() const;

 private:
  void AcceptLoop();
  void Serve(int fd);
  // Reads one request from `fd` (bytes already read are in `buffer`) and
  // answers it; false when the connection is to be closed.
  bool ServeOne(int fd, std::string* buffer);
  FakeResponse NextResponse();

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;

  mutable std::mutex mu_;
  std::condition_variable stopped_cv_;
  bool stopping_ = false;                 // GUARDED_BY(mu_)
  std::deque<FakeResponse> script_;       // GUARDED_BY(mu_)
  FakeResponse default_;                  // GUARDED_BY(mu_)
  std::vector<FakeRequest> requests_;     // GUARDED_BY(mu_)
  std::vector<int> connection_fds_;       // GUARDED_BY(mu_)
  std::vector<std::thread> connections_;  // GUARDED_BY(mu_)
  size_t accepted_ = 0;                   // GUARDED_BY(mu_)
  int in_flight_ = 0;                     // GUARDED_BY(mu_)
  int max_in_flight_ = 0;                 // GUARDED_BY(mu_)
};

}  // namespace geofs::objtest
