#include "delay_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace geofs::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadSize = 256 << 10;

Result<sockaddr_in> ParseAddress(const std::string& host, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address: " + host);
  }
  return addr;
}

void SetNoDelay(int fd) {
  const int one = 1;
  // Best effort: without it small replies wait for Nagle, which would add
  // latency the benchmark did not ask for.
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// One direction of a connection: a reader that timestamps what it reads and
// a writer that forwards each piece once its due time has come.
class Pump {
 public:
  Pump(int src, int dst, std::chrono::microseconds delay, size_t window,
       std::atomic<uint64_t>* forwarded)
      : src_(src), dst_(dst), delay_(delay), window_(window), forwarded_(forwarded) {}

  // `on_error` runs (on a pump thread) when either side fails.
  void Start(std::function<void()> on_error) {
    on_error_ = std::move(on_error);
    reader_ = std::thread([this] { ReadLoop(); });
    writer_ = std::thread([this] { WriteLoop(); });
  }

  // Makes both threads return soon. The caller also shuts the sockets down
  // so that blocked reads and writes return.
  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

  void Join() {
    if (reader_.joinable()) reader_.join();
    if (writer_.joinable()) writer_.join();
  }

  bool Done() const { return finished_threads_.load() == 2; }

 private:
  struct Piece {
    Clock::time_point due;
    std::vector<char> bytes;  // empty: end of stream
  };

  void ReadLoop() {
    std::vector<char> buf(kReadSize);
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return aborted_ || held_ < window_; });
        if (aborted_) break;
      }
      const ssize_t n = recv(src_, buf.data(), std::min(buf.size(), window_), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        on_error_();
        break;
      }
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({Clock::now() + delay_, std::vector<char>(buf.data(), buf.data() + n)});
      held_ += static_cast<size_t>(n);
      cv_.notify_all();
      if (n == 0) break;
    }
    finished_threads_.fetch_add(1);
  }

  void WriteLoop() {
    for (;;) {
      Piece piece;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return aborted_ || !queue_.empty(); });
        if (aborted_) break;
        const Clock::time_point due = queue_.front().due;
        if (cv_.wait_until(lock, due, [this] { return aborted_; })) break;
        piece = std::move(queue_.front());
        queue_.pop_front();
      }
      if (piece.bytes.empty()) {
        shutdown(dst_, SHUT_WR);
        break;
      }
      if (!SendAll(piece.bytes)) {
        on_error_();
        break;
      }
      forwarded_->fetch_add(piece.bytes.size());
      std::lock_guard<std::mutex> lock(mu_);
      held_ -= piece.bytes.size();
      cv_.notify_all();
    }
    finished_threads_.fetch_add(1);
  }

  bool SendAll(const std::vector<char>& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(dst_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  const int src_;
  const int dst_;
  const std::chrono::microseconds delay_;
  const size_t window_;
  std::atomic<uint64_t>* const forwarded_;
  std::function<void()> on_error_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Piece> queue_;  // GUARDED_BY(mu_)
  size_t held_ = 0;          // GUARDED_BY(mu_): bytes in queue_
  bool aborted_ = false;     // GUARDED_BY(mu_)
  std::atomic<int> finished_threads_{0};
  std::thread reader_;
  std::thread writer_;
};

// A client connection and its connection to the target. Owns both sockets.
class Connection {
 public:
  Connection(int client, int target, const DelayProxyOptions& options,
             std::atomic<uint64_t>* upstream, std::atomic<uint64_t>* downstream)
      : client_(client),
        target_(target),
        up_(client, target, options.one_way_delay, options.window_bytes, upstream),
        down_(target, client, options.one_way_delay, options.window_bytes, downstream) {}

  ~Connection() {
    Abort();
    up_.Join();
    down_.Join();
    close(client_);
    close(target_);
  }

  void Start() {
    up_.Start([this] { Abort(); });
    down_.Start([this] { Abort(); });
  }

  // Drops everything: both sockets are shut down, which wakes blocked calls.
  void Abort() {
    shutdown(client_, SHUT_RDWR);
    shutdown(target_, SHUT_RDWR);
    up_.Abort();
    down_.Abort();
  }

  bool Done() const { return up_.Done() && down_.Done(); }

 private:
  const int client_;
  const int target_;
  Pump up_;
  Pump down_;
};

}  // namespace

class DelayProxy::Impl {
 public:
  Impl(const DelayProxyOptions& options, int listen_fd, int stop_fd, sockaddr_in target,
       uint16_t port)
      : options_(options), listen_fd_(listen_fd), stop_fd_(stop_fd), target_(target), port_(port) {
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~Impl() {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    acceptor_.join();
    connections_.clear();
    close(listen_fd_);
    close(stop_fd_);
  }

  uint16_t port() const { return port_; }

  DelayProxyCounters Counters() const {
    return {accepted_.load(), upstream_.load(), downstream_.load()};
  }

 private:
  void AcceptLoop() {
    for (;;) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      const int ready = poll(fds, 2, 1000);
      connections_.remove_if([](const std::unique_ptr<Connection>& c) { return c->Done(); });
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0 || (fds[1].revents & POLLIN)) return;
      if (!(fds[0].revents & POLLIN)) continue;
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      accepted_.fetch_add(1);
      const int target = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (target < 0 ||
          connect(target, reinterpret_cast<const sockaddr*>(&target_), sizeof(target_)) != 0) {
        if (target >= 0) close(target);
        close(client);
        continue;
      }
      SetNoDelay(client);
      SetNoDelay(target);
      connections_.push_back(
          std::make_unique<Connection>(client, target, options_, &upstream_, &downstream_));
      connections_.back()->Start();
    }
  }

  const DelayProxyOptions options_;
  const int listen_fd_;
  const int stop_fd_;  // eventfd: written once to stop the acceptor
  const sockaddr_in target_;
  const uint16_t port_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> upstream_{0};
  std::atomic<uint64_t> downstream_{0};
  std::list<std::unique_ptr<Connection>> connections_;  // acceptor thread only
  std::thread acceptor_;
};

Result<std::unique_ptr<DelayProxy>> DelayProxy::Start(const DelayProxyOptions& options) {
  if (options.window_bytes == 0) return Status::InvalidArgument("window_bytes must be > 0");
  if (options.one_way_delay.count() < 0) return Status::InvalidArgument("negative delay");
  GEOFS_ASSIGN_OR_RETURN(const sockaddr_in listen_addr,
                         ParseAddress(options.listen_host, options.listen_port));
  GEOFS_ASSIGN_OR_RETURN(const sockaddr_in target,
                         ParseAddress(options.target_host, options.target_port));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  const int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&listen_addr), sizeof(listen_addr)) != 0 ||
      listen(fd, 128) != 0) {
    const Status status = Status::FromErrno(errno, "bind/listen " + options.listen_host);
    close(fd);
    return status;
  }
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int stop_fd = eventfd(0, EFD_CLOEXEC);
  if (stop_fd < 0) {
    const Status status = Status::FromErrno(errno, "eventfd");
    close(fd);
    return status;
  }
  return std::unique_ptr<DelayProxy>(
      new DelayProxy(std::make_unique<Impl>(options, fd, stop_fd, target, ntohs(bound.sin_port))));
}

DelayProxy::DelayProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DelayProxy::~DelayProxy() = default;
uint16_t DelayProxy::port() const { return impl_->port(); }
DelayProxyCounters DelayProxy::Counters() const { return impl_->Counters(); }

}  // namespace geofs::bench
