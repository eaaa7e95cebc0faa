#include "object/fake_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace geofs::objtest {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

bool SendAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

FakeHttpServer::FakeHttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FakeHttpServer::~FakeHttpServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (int fd : connection_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  stopped_cv_.notify_all();
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(connections_);
  }
  for (std::thread& t : threads) t.join();
  for (int fd : connection_fds_) ::close(fd);
}

void FakeHttpServer::Enqueue(FakeResponse response) {
  std::lock_guard lock(mu_);
  script_.push_back(std::move(response));
}

void FakeHttpServer::SetDefault(FakeResponse response) {
  std::lock_guard lock(mu_);
  default_ = std::move(response);
}

std::vector<FakeRequest> FakeHttpServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

size_t FakeHttpServer::request_count() const {
  std::lock_guard lock(mu_);
  return requests_.size();
}

size_t FakeHttpServer::connections_accepted() const {
  std::lock_guard lock(mu_);
  return accepted_;
}

int FakeHttpServer::max_in_flight() const {
  std::lock_guard lock(mu_);
  return max_in_flight_;
}

FakeResponse FakeHttpServer::NextResponse() {
  if (script_.empty()) return default_;
  FakeResponse r = std::move(script_.front());
  script_.pop_front();
  return r;
}

void FakeHttpServer::AcceptLoop() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;  // shut down
    std::lock_guard lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    ++accepted_;
    connection_fds_.push_back(fd);
    connections_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeHttpServer::Serve(int fd) {
  std::string buffer;
  while (ServeOne(fd, &buffer)) {
  }
  // The descriptor stays open (and listed) until the destructor, so its
  // shutdown there never hits a reused descriptor number.
  ::shutdown(fd, SHUT_RDWR);
}

bool FakeHttpServer::ServeOne(int fd, std::string* buffer) {
  char chunk[65536];
  size_t head_end;
  while ((head_end = buffer->find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
  }
  FakeRequest req;
  std::string head = buffer->substr(0, head_end);
  buffer->erase(0, head_end + 4);
  size_t line_end = std::min(head.find("\r\n"), head.size());
  std::string request_line = head.substr(0, line_end);
  size_t sp1 = request_line.find(' ');
  size_t sp2 = request_line.rfind(' ');
  if (sp1 == std::string::npos || sp2 <= sp1) return false;
  req.method = request_line.substr(0, sp1);
  req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  for (size_t pos = line_end + 2; pos < head.size();) {
    size_t end = std::min(head.find("\r\n", pos), head.size());
    std::string line = head.substr(pos, end - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      req.headers[Lower(line.substr(0, colon))] = Trim(line.substr(colon + 1));
    }
    pos = end + 2;
  }
  size_t length = 0;
  if (auto it = req.headers.find("content-length"); it != req.headers.end()) {
    length = std::strtoull(it->second.c_str(), nullptr, 10);
  }
  while (buffer->size() < length) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
  }
  req.body = buffer->substr(0, length);
  buffer->erase(0, length);

  bool is_head = req.method == "HEAD";
  std::unique_lock lock(mu_);
  requests_.push_back(std::move(req));
  FakeResponse resp = NextResponse();
  max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
  if (resp.delay.count() > 0) {
    stopped_cv_.wait_for(lock, resp.delay, [&] { return stopping_; });
  }
  --in_flight_;
  if (stopping_ || resp.drop) return false;
  lock.unlock();
  std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + Reason(resp.status) +
                    "\r\nContent-Length: " + std::to_string(resp.body.size()) + "\r\n";
  for (const auto& [name, value] : resp.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  if (!is_head) out += resp.body;
  return SendAll(fd, out);
}

}  // namespace geofs::objtest
