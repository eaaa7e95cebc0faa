#include "rpc/server.h"

// Boost 1.74 Asio on g++ 12 misses std::exchange unless <utility> comes first.
// clang-format off
#include <utility>
#include <boost/asio.hpp>
// clang-format on

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <thread>
#include <unordered_map>

#include "common/logging.h"
#include "rpc/dispatcher.h"
#include "rpc/message.h"
#include "rpc/record.h"
#include "rpc/reply_writer.h"

namespace geofs::rpc {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;

PeerAddress ToPeerAddress(const tcp::endpoint& endpoint) {
  PeerAddress peer;
  peer.port = endpoint.port();
  asio::ip::address address = endpoint.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  if (address.is_v4()) {
    auto bytes = address.to_v4().to_bytes();
    std::copy(bytes.begin(), bytes.end(), peer.bytes.begin());
  } else {
    peer.is_v4 = false;
    auto bytes = address.to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), peer.bytes.begin());
  }
  return peer;
}

// The door through which replies computed on worker (or backend) threads
// reach a network thread. Connections share it, so a reply that arrives after
// Stop() finds the door shut instead of an io_context nobody runs.
struct ReplyInbox {
  explicit ReplyInbox(std::shared_ptr<asio::io_context> c) : ctx(std::move(c)) {}
  std::shared_ptr<asio::io_context> ctx;
  std::shared_mutex mu;
  bool open = true;  // GUARDED_BY(mu)
};

class Connection;

// One network thread: its io_context (run by that thread alone, so its
// connections need no locks) and the connections it serves.
struct NetThread {
  std::shared_ptr<ReplyInbox> inbox;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  // Open connections; touched only on this thread.
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections;
};

// What a connection needs from the server. Only used on network threads,
// which the server joins before it goes away.
struct ServerCore {
  const RpcServerOptions& options;
  const Dispatcher& dispatcher;
  std::atomic<size_t>& open_connections;
  std::shared_ptr<spdlog::logger> log;
};

// One client connection. All methods except DeliverReply run on the owning
// network thread.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ServerCore& core, NetThread& home, tcp::socket socket, PeerAddress peer)
      : core_(core),
        home_(home),
        inbox_(home.inbox),
        socket_(std::move(socket)),
        idle_timer_(*inbox_->ctx),
        peer_(peer),
        reader_(core.options.max_record_bytes),
        last_activity_(std::chrono::steady_clock::now()) {}

  void Start() {
    // ReplyWriter writes with its own non-blocking system calls.
    boost::system::error_code ec;
    socket_.native_non_blocking(true, ec);
    if (ec) {
      core_.log->warn("{}: cannot make the socket non-blocking: {}", peer_.ToString(), ec.message());
      Close();
      return;
    }
    Pump();
    WaitForIdle();
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
    idle_timer_.cancel();
    core_.open_connections.fetch_sub(1, std::memory_order_relaxed);
    home_.connections.erase(this);  // the caller's handler still holds a reference
  }

  // Called from any thread, exactly once per dispatched record. Replies
  // finished on other threads gather in an outbox; only the first one into an
  // empty outbox wakes the network thread, which then takes them all.
  void DeliverReply(std::optional<OutgoingReply> reply) {
    if (inbox_->ctx->get_executor().running_in_this_thread()) {
      OnReply(std::move(reply));
      return;
    }
    {
      std::lock_guard lock(outbox_mu_);
      outbox_.push_back(std::move(reply));
      if (outbox_.size() > 1) return;  // a flush is already on its way
    }
    std::shared_lock lock(inbox_->mu);
    if (!inbox_->open) return;
    asio::post(*inbox_->ctx, [self = shared_from_this()] { self->FlushOutbox(); });
  }

 private:
  // Dispatches staged records while the in-flight limit allows, and reads
  // more once every staged record is taken. Re-entered (through synchronous
  // replies) while dispatching, it returns at once: the outer loop goes on.
  void Pump() {
    if (pumping_) return;
    pumping_ = true;
    const size_t limit = core_.options.max_calls_in_flight;
    while (!closed_ && in_flight_ < limit) {
      batch_.clear();
      if (Status s = reader_.Take(limit - in_flight_, &batch_); !s.ok()) {
        core_.log->info("{}: {}; closing the connection", peer_.ToString(), s.ToString());
        Close();
        break;
      }
      if (batch_.empty()) {
        ReadMore();
        break;
      }
      for (Record& record : batch_) {
        ++in_flight_;
        core_.dispatcher.Handle(std::move(record), peer_,
                                [self = shared_from_this()](std::optional<OutgoingReply> reply) {
                                  self->DeliverReply(std::move(reply));
                                });
      }
    }
    batch_.clear();
    pumping_ = false;
  }

  // REQUIRES: every staged record has been taken.
  void ReadMore() {
    if (closed_ || reading_ || peer_done_) return;
    reading_ = true;
    std::span<uint8_t> target = reader_.ReadTarget();
    socket_.async_read_some(asio::buffer(target.data(), target.size()),
                            [self = shared_from_this()](const boost::system::error_code& ec,
                                                        size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(const boost::system::error_code& ec, size_t n) {
    reading_ = false;
    if (closed_) return;
    if (ec == asio::error::eof) {
      peer_done_ = true;
      if (!reader_.AtRecordBoundary()) {
        core_.log->debug("{} closed in the middle of a record", peer_.ToString());
      }
      // Calls already read are still answered; then the connection closes.
      if (in_flight_ == 0) Close();
      return;
    }
    if (ec) {
      core_.log->debug("{}: read failed: {}", peer_.ToString(), ec.message());
      Close();
      return;
    }
    last_activity_ = std::chrono::steady_clock::now();
    reader_.Commit(n);
    Pump();
  }

  void FlushOutbox() {
    {
      std::lock_guard lock(outbox_mu_);
      std::swap(outbox_, flushing_);
    }
    for (std::optional<OutgoingReply>& reply : flushing_) OnReply(std::move(reply));
    flushing_.clear();
  }

  void OnReply(std::optional<OutgoingReply> reply) {
    if (closed_) return;
    if (!reply) {
      CallsFinished(1);
      return;
    }
    queued_.push_back(std::move(*reply));
    WriteMore();
  }

  void WriteMore() {
    if (writing_ || queued_.empty() || closed_) return;
    writing_ = true;
    std::swap(queued_, in_write_);
    writer_.Reset(in_write_);
    ContinueWrite();
  }

  void ContinueWrite() {
    Result<bool> finished = writer_.WriteSome(socket_.native_handle());
    if (!finished.ok()) {
      core_.log->debug("{}: write failed: {}", peer_.ToString(), finished.status().ToString());
      Close();
      return;
    }
    if (!*finished) {
      socket_.async_wait(tcp::socket::wait_write,
                         [self = shared_from_this()](const boost::system::error_code& ec) {
                           if (self->closed_) return;
                           if (ec) {
                             self->core_.log->debug("{}: write wait failed: {}",
                                                    self->peer_.ToString(), ec.message());
                             self->Close();
                             return;
                           }
                           self->ContinueWrite();
                         });
      return;
    }
    // Finish on a later turn of the loop, as an Asio write would: replies
    // that procedures answer inline meanwhile gather in queued_ and leave
    // together in the next write.
    asio::post(*inbox_->ctx, [self = shared_from_this()] { self->OnWritten(); });
  }

  void OnWritten() {
    writing_ = false;
    size_t written = in_write_.size();
    in_write_.clear();
    if (closed_) return;
    last_activity_ = std::chrono::steady_clock::now();
    CallsFinished(written);
    WriteMore();
  }

  void CallsFinished(size_t n) {
    in_flight_ -= n;
    if (peer_done_ && in_flight_ == 0) {
      Close();
      return;
    }
    Pump();
  }

  void WaitForIdle() {
    idle_timer_.expires_at(last_activity_ + core_.options.idle_timeout);
    idle_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      self->OnIdleTimer();
    });
  }

  void OnIdleTimer() {
    SteadyTime now = std::chrono::steady_clock::now();
    // Waiting on procedures is not idleness; waiting on a peer that does not
    // read its replies is.
    if (in_flight_ > queued_.size() + in_write_.size()) last_activity_ = now;
    if (now - last_activity_ >= core_.options.idle_timeout) {
      core_.log->debug("{} idle; closing the connection", peer_.ToString());
      Close();
      return;
    }
    WaitForIdle();
  }

  ServerCore& core_;
  NetThread& home_;
  // Declared before socket_ so the io_context outlives it even when a late
  // Responder keeps this connection alive after the server is gone.
  const std::shared_ptr<ReplyInbox> inbox_;
  tcp::socket socket_;
  asio::steady_timer idle_timer_;
  const PeerAddress peer_;

  RecordReader reader_;
  std::vector<Record> batch_;  // reused across reads
  bool pumping_ = false;
  bool reading_ = false;
  bool peer_done_ = false;  // the peer shut down its sending side
  bool closed_ = false;
  size_t in_flight_ = 0;
  SteadyTime last_activity_;

  std::mutex outbox_mu_;
  std::vector<std::optional<OutgoingReply>> outbox_;  // GUARDED_BY(outbox_mu_)
  std::vector<std::optional<OutgoingReply>> flushing_;

  std::vector<OutgoingReply> queued_;    // replies waiting for the next write
  std::vector<OutgoingReply> in_write_;  // replies the current write is sending
  ReplyWriter writer_;  // sends in_write_
  bool writing_ = false;
};

// Accepts on one port and hands connections to the network threads in turn.
struct Listener {
  explicit Listener(asio::io_context& ctx) : acceptor(ctx), retry_timer(ctx) {}
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;  // backs off when accept fails (e.g. out of fds)
};

}  // namespace

class RpcServer::Impl {
 public:
  explicit Impl(RpcServerOptions options)
      : options_(std::move(options)),
        dispatcher_([this](Dispatcher::Task task) { asio::post(*workers_, std::move(task)); }),
        core_{options_, dispatcher_, open_connections_, GetLogger("rpc")} {}

  ~Impl() { Stop(); }

  Status Register(std::shared_ptr<Program> program) {
    if (started_) return Status::InvalidArgument("Register() after Start()");
    return dispatcher_.Register(std::move(program));
  }

  Status Start() {
    if (started_) return Status::InvalidArgument("Start() called twice");
    GEOFS_RETURN_IF_ERROR(CheckOptions());
    boost::system::error_code ec;
    asio::ip::address address = asio::ip::make_address(options_.listen_address, ec);
    if (ec) return Status::InvalidArgument("bad listen address " + options_.listen_address);

    for (size_t i = 0; i < options_.network_threads; ++i) {
      auto thread = std::make_unique<NetThread>();
      thread->inbox = std::make_shared<ReplyInbox>(std::make_shared<asio::io_context>(1));
      threads_.push_back(std::move(thread));
    }
    asio::io_context& accept_ctx = *threads_[0]->inbox->ctx;
    for (uint16_t port : options_.ports) {
      listeners_.push_back(std::make_unique<Listener>(accept_ctx));
      tcp::acceptor& acceptor = listeners_.back()->acceptor;
      tcp::endpoint endpoint(address, port);
      if (acceptor.open(endpoint.protocol(), ec) ||
          acceptor.set_option(tcp::acceptor::reuse_address(true), ec) ||
          acceptor.bind(endpoint, ec) ||
          acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
        listeners_.clear();  // before the io_contexts they use
        threads_.clear();
        bound_ports_.clear();
        return Status::FromErrno(
            ec.value(), "listen on " + options_.listen_address + ":" + std::to_string(port));
      }
      bound_ports_.push_back(acceptor.local_endpoint().port());
      core_.log->info("listening on {}:{}", options_.listen_address, bound_ports_.back());
    }

    workers_ = std::make_unique<asio::thread_pool>(options_.worker_threads);
    for (auto& listener : listeners_) Accept(*listener);
    for (auto& thread : threads_) {
      asio::io_context& ctx = *thread->inbox->ctx;
      thread->work.emplace(ctx.get_executor());
      thread->thread = std::thread([&ctx] {
        // sendfile(2) has no MSG_NOSIGNAL: a peer that resets its connection
        // would raise SIGPIPE, which kills the process wherever it is not
        // ignored. Blocked here, it stays pending and the call fails EPIPE.
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
        ctx.run();
      });
    }
    started_ = true;
    return Status::Ok();
  }

  const std::vector<uint16_t>& bound_ports() const { return bound_ports_; }

  void Stop() {
    std::lock_guard lock(stop_mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    stopping_.store(true);

    // 1. Stop accepting and close every connection, each on its own thread.
    asio::post(*threads_[0]->inbox->ctx, [this] {
      for (auto& listener : listeners_) {
        boost::system::error_code ignored;
        listener->acceptor.close(ignored);
        listener->retry_timer.cancel();
      }
    });
    for (auto& thread : threads_) {
      asio::post(*thread->inbox->ctx, [t = thread.get()] {
        std::vector<std::shared_ptr<Connection>> open;
        for (auto& [ptr, conn] : t->connections) open.push_back(conn);
        for (auto& conn : open) conn->Close();
      });
    }
    // 2. Let running procedures finish; queued ones are discarded (their
    // calls are answered SYSTEM_ERR into connections that are gone).
    workers_->stop();
    workers_->join();
    // 3. Shut the reply doors, then let each network thread run out of work.
    for (auto& thread : threads_) {
      std::unique_lock inbox_lock(thread->inbox->mu);
      thread->inbox->open = false;
    }
    for (auto& thread : threads_) thread->work.reset();
    for (auto& thread : threads_) thread->thread.join();
    listeners_.clear();
  }

 private:
  Status CheckOptions() const {
    if (options_.ports.empty()) return Status::InvalidArgument("no port to listen on");
    if (options_.network_threads == 0 || options_.worker_threads == 0) {
      return Status::InvalidArgument("network_threads and worker_threads must be positive");
    }
    if (options_.max_calls_in_flight == 0 || options_.max_connections == 0) {
      return Status::InvalidArgument("max_calls_in_flight and max_connections must be positive");
    }
    if (options_.max_record_bytes < 1024 || options_.max_record_bytes > kMaxFragmentBytes) {
      return Status::InvalidArgument("max_record_bytes must be within [1 KiB, 2 GiB)");
    }
    if (options_.idle_timeout.count() <= 0) {
      return Status::InvalidArgument("idle_timeout must be positive");
    }
    return Status::Ok();
  }

  void Accept(Listener& listener) {
    NetThread& home = *threads_[next_thread_++ % threads_.size()];
    listener.acceptor.async_accept(
        *home.inbox->ctx,
        [this, &listener, &home](const boost::system::error_code& ec, tcp::socket socket) {
          if (ec == asio::error::operation_aborted || stopping_.load()) return;
          if (ec) {
            core_.log->warn("accept failed: {}; retrying shortly", ec.message());
            listener.retry_timer.expires_after(std::chrono::milliseconds(100));
            listener.retry_timer.async_wait([this, &listener](const boost::system::error_code& e) {
              if (!e && !stopping_.load()) Accept(listener);
            });
            return;
          }
          Admit(home, std::move(socket));
          Accept(listener);
        });
  }

  // Runs on the accepting thread; the connection starts on its own thread.
  void Admit(NetThread& home, tcp::socket socket) {
    boost::system::error_code ec;
    tcp::endpoint remote = socket.remote_endpoint(ec);
    if (ec) return;  // already reset by the peer
    if (open_connections_.load(std::memory_order_relaxed) >= options_.max_connections) {
      core_.log->info("refusing {}: {} connections open", ToPeerAddress(remote).ToString(),
                      options_.max_connections);
      socket.close(ec);
      return;
    }
    open_connections_.fetch_add(1, std::memory_order_relaxed);
    socket.set_option(tcp::no_delay(true), ec);
    auto conn = std::make_shared<Connection>(core_, home, std::move(socket), ToPeerAddress(remote));
    asio::post(*home.inbox->ctx, [this, &home, conn = std::move(conn)] {
      home.connections.emplace(conn.get(), conn);
      // Stop() may have swept this thread's connections before we got here.
      if (stopping_.load()) {
        conn->Close();
        return;
      }
      conn->Start();
    });
  }

  const RpcServerOptions options_;
  Dispatcher dispatcher_;
  std::atomic<size_t> open_connections_{0};
  ServerCore core_;

  std::vector<std::unique_ptr<NetThread>> threads_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::unique_ptr<asio::thread_pool> workers_;
  std::vector<uint16_t> bound_ports_;
  size_t next_thread_ = 0;  // only touched on the accepting thread

  bool started_ = false;
  std::mutex stop_mu_;
  bool stopped_ = false;  // GUARDED_BY(stop_mu_)
  std::atomic<bool> stopping_{false};
};

RpcServer::RpcServer(RpcServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

RpcServer::~RpcServer() = default;

Status RpcServer::Register(std::shared_ptr<Program> program) {
  return impl_->Register(std::move(program));
}

Status RpcServer::Start() { return impl_->Start(); }

const std::vector<uint16_t>& RpcServer::bound_ports() const { return impl_->bound_ports(); }

void RpcServer::Stop() { impl_->Stop(); }

}  // namespace geofs::rpc
