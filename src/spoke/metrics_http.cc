#include "spoke/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace geofs::spoke {
namespace {

// Requests are tiny; anything longer is not a metrics scrape.
constexpr size_t kMaxRequestBytes = 8192;
constexpr int kPollMs = 200;
constexpr int kClientTimeoutMs = 2000;

void SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads until the end of the request head; false on timeout or error.
bool ReadHead(int fd, std::string* head) {
  char buf[1024];
  while (head->find("\r\n\r\n") == std::string::npos && head->size() < kMaxRequestBytes) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kClientTimeoutMs) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    head->append(buf, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, uint16_t port, std::function<std::string()> render) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "metrics socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return Status::InvalidArgument("metrics address " + address + ": not an IPv4 address");
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0) {
    Status s = Status::FromErrno(errno, "metrics " + address + ":" + std::to_string(port));
    ::close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<MetricsHttpServer>(
      new MetricsHttpServer(fd, ntohs(addr.sin_port), std::move(render)));
}

MetricsHttpServer::MetricsHttpServer(int fd, uint16_t port, std::function<std::string()> render)
    : fd_(fd), port_(port), render_(std::move(render)) {
  thread_ = std::jthread([this](std::stop_token stop) { Serve(stop); });
}

MetricsHttpServer::~MetricsHttpServer() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

void MetricsHttpServer::Serve(std::stop_token stop) {
  while (!stop.stop_requested()) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::string head;
    if (ReadHead(client, &head)) {
      std::string body;
      std::string status = "200 OK";
      if (head.rfind("GET ", 0) == 0) {
        body = render_();
      } else {
        status = "405 Method Not Allowed";
      }
      SendAll(client, "HTTP/1.0 " + status +
                          "\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    }
    ::close(client);
  }
}

}  // namespace geofs::spoke
