#include "tools/free_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>

namespace geofs::testing {
namespace {

// The first port of the ephemeral range, or Linux's default.
uint16_t EphemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned low = 0, high = 0;
  if (in >> low >> high && low > 2048 && low <= 65535) return static_cast<uint16_t>(low);
  return 32768;
}

// True if 127.0.0.1:port can be bound now (as a daemon binds: SO_REUSEADDR,
// so a port in TIME_WAIT counts as free).
bool Bindable(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

Result<uint16_t> PickFreePort() {
  static const uint16_t kLow = EphemeralLow();
  // The half below the ephemeral range; well above the privileged ports
  // and the usual fixed service ports.
  const uint16_t first = kLow / 2 > 1024 ? kLow / 2 : 1024;
  thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> pick(first, kLow - 1);
  for (int attempt = 0; attempt < 200; ++attempt) {
    auto port = static_cast<uint16_t>(pick(rng));
    if (Bindable(port)) return port;
  }
  return Status::Unavailable("no free port in " + std::to_string(first) + "-" +
                             std::to_string(kLow - 1));
}

}  // namespace geofs::testing
