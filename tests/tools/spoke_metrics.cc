#include "tools/spoke_metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace geofs::testing {
namespace {

// GET `path` from 127.0.0.1:port over HTTP/1.0: the body of a 200 answer.
Result<std::string> HttpGet(uint16_t port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno(err, "connect to metrics port " + std::to_string(port));
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    int err = errno;
    close(fd);
    return Status::FromErrno(err, "send to metrics port");
  }
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos ||
      body == std::string::npos) {
    return Status::IoError("metrics answered: " + response.substr(0, 200));
  }
  return response.substr(body + 4);
}

}  // namespace

Result<std::map<std::string, double>> FetchSpokeMetrics(uint16_t port) {
  GEOFS_ASSIGN_OR_RETURN(std::string text, HttpGet(port, "/metrics"));
  std::map<std::string, double> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const size_t name_end = std::min(line.find('{'), space);
    out[line.substr(0, name_end)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

}  // namespace geofs::testing
