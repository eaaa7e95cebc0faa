#include "spoke/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace geofs::spoke {
namespace {

// Requests are tiny; anything longer is not a scrape.
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

std::string Response(std::string_view status, std::string_view content_type,
                     std::string_view body) {
  std::string out = "HTTP/1.0 ";
  out += status;
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  out += body;
  return out;
}

}  // namespace

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& address,
                                                                    uint16_t port,
                                                                    std::vector<HttpRoute> routes) {
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
      new MetricsHttpServer(fd, ntohs(addr.sin_port), std::move(routes)));
}

MetricsHttpServer::MetricsHttpServer(int fd, uint16_t port, std::vector<HttpRoute> routes)
    : fd_(fd), port_(port), routes_(std::move(routes)) {
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
    if (ReadHead(client, &head)) SendAll(client, Respond(head));
    ::close(client);
  }
}

std::string MetricsHttpServer::Respond(const std::string& head) const {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  // Request line: METHOD SP TARGET SP VERSION.
  const size_t method_end = head.find(' ');
  const size_t target_end = head.find_first_of(" \r", method_end + 1);
  if (method_end == std::string::npos || target_end == std::string::npos) {
    return Response("400 Bad Request", kText, "bad request line\n");
  }
  if (head.compare(0, method_end, "GET") != 0) {
    return Response("405 Method Not Allowed", kText, "only GET\n");
  }
  std::string_view target(head.data() + method_end + 1, target_end - method_end - 1);
  target = target.substr(0, target.find('?'));
  for (const HttpRoute& route : routes_) {
    if (target == route.path) return Response("200 OK", route.content_type, route.render());
  }
  return Response("404 Not Found", kText, "no such path\n");
}

}  // namespace geofs::spoke
