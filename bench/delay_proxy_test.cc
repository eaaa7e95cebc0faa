#include "delay_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>
#include <vector>

namespace geofs::bench {
namespace {

using Clock = std::chrono::steady_clock;

int Listen(uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Reads until EOF.
std::vector<char> ReadAll(int fd) {
  std::vector<char> out;
  char buf[65536];
  for (;;) {
    const ssize_t k = recv(fd, buf, sizeof(buf), 0);
    if (k <= 0) return out;
    out.insert(out.end(), buf, buf + k);
  }
}

// Echoes one connection until the client half-closes, then closes.
class EchoServer {
 public:
  EchoServer() : listen_fd_(Listen(&port_)) {
    thread_ = std::thread([this] {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      char buf[65536];
      for (;;) {
        const ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k <= 0 || !SendAll(fd, buf, static_cast<size_t>(k))) break;
      }
      close(fd);
    });
  }
  ~EchoServer() {
    thread_.join();
    close(listen_fd_);
  }
  uint16_t port() const { return port_; }

 private:
  uint16_t port_ = 0;
  const int listen_fd_;
  std::thread thread_;
};

DelayProxyOptions Options(uint16_t target_port, std::chrono::milliseconds delay) {
  DelayProxyOptions o;
  o.target_host = "127.0.0.1";
  o.target_port = target_port;
  o.one_way_delay = delay;
  return o;
}

TEST(DelayProxyTest, ForwardsBytesBothWaysAndPropagatesEof) {
  EchoServer echo;
  auto proxy = DelayProxy::Start(Options(echo.port(), std::chrono::milliseconds(5)));
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  std::vector<char> data(3 << 20);
  std::mt19937_64 rng(7);
  for (char& c : data) c = static_cast<char>(rng());

  const int fd = Connect((*proxy)->port());
  std::thread sender([&] {
    EXPECT_TRUE(SendAll(fd, data.data(), data.size()));
    shutdown(fd, SHUT_WR);
  });
  const std::vector<char> echoed = ReadAll(fd);
  sender.join();
  close(fd);

  EXPECT_EQ(echoed, data);
  const DelayProxyCounters c = (*proxy)->Counters();
  EXPECT_EQ(c.connections, 1u);
  EXPECT_EQ(c.upstream_bytes, data.size());
  EXPECT_EQ(c.downstream_bytes, data.size());
}

TEST(DelayProxyTest, RoundTripTakesTwiceTheOneWayDelay) {
  EchoServer echo;
  constexpr auto kDelay = std::chrono::milliseconds(40);
  auto proxy = DelayProxy::Start(Options(echo.port(), kDelay));
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  const int fd = Connect((*proxy)->port());

  char ping = 'x';
  char pong = 0;
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(SendAll(fd, &ping, 1));
  ASSERT_EQ(recv(fd, &pong, 1, MSG_WAITALL), 1);
  const auto rtt = Clock::now() - t0;
  shutdown(fd, SHUT_WR);
  EXPECT_TRUE(ReadAll(fd).empty());
  close(fd);

  EXPECT_EQ(pong, 'x');
  EXPECT_GE(rtt, 2 * kDelay);
  EXPECT_LT(rtt, 2 * kDelay + std::chrono::milliseconds(500));
}

TEST(DelayProxyTest, SmallWindowStillDeliversEverything) {
  EchoServer echo;
  DelayProxyOptions o = Options(echo.port(), std::chrono::milliseconds(1));
  o.window_bytes = 4096;  // far below one read: the reader must wait for the writer
  auto proxy = DelayProxy::Start(o);
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  std::vector<char> data(256 << 10, 'a');
  const int fd = Connect((*proxy)->port());
  std::thread sender([&] {
    EXPECT_TRUE(SendAll(fd, data.data(), data.size()));
    shutdown(fd, SHUT_WR);
  });
  const std::vector<char> echoed = ReadAll(fd);
  sender.join();
  close(fd);
  EXPECT_EQ(echoed.size(), data.size());
}

TEST(DelayProxyTest, RejectsBadAddresses) {
  DelayProxyOptions o;
  o.target_host = "not-an-ip";
  o.target_port = 1;
  EXPECT_FALSE(DelayProxy::Start(o).ok());
  o.target_host = "127.0.0.1";
  o.window_bytes = 0;
  EXPECT_FALSE(DelayProxy::Start(o).ok());
}

}  // namespace
}  // namespace geofs::bench
