// HubLink: the spoke's connection to its hub.
//
//  - Unary calls go out on gRPC's callback API, so thousands of NFS requests
//    can wait on the WAN without a thread each. Every call has a deadline and
//    carries the session id in the metadata "geofs-session" while a session
//    is open; its completion reports the Grant the reply came with (the lease
//    the hub gave the session on the inodes the reply describes).
//  - The Session stream (proto/hub.proto, coherence) runs on a thread of its
//    own: Hello (the spoke id kept in `state_dir`, the previous session),
//    Welcome, Invalidations handed to the invalidation handler and then
//    acknowledged, LeaseRenewal batches every ttl/3 for the inodes the
//    renewal source names, AcquireWrite/ReleaseWrite. When the stream breaks
//    it reconnects with exponential backoff. A hub that does not implement
//    Session (UNIMPLEMENTED) means "no leases": calls carry no session and
//    their Grants lease nothing, so the cache revalidates every time.
//  - A lease counts from the moment the request was sent: its expiry is
//    sent + ttl - margin, never later than the hub's view of it.
//  - Link state: a transport failure (UNAVAILABLE, or a deadline with no
//    answer) marks the link down since that moment; any answer marks it up.
//
// Thread-safe. Completion callbacks run on gRPC threads and must not block.
// REQUIRES: every call has completed before the HubLink is destroyed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "geofs/buffer.h"
#include "geofs/clock.h"
#include "geofs/status.h"
#include "hub.grpc.pb.h"

namespace geofs::spoke {

using SteadyTime = std::chrono::steady_clock::time_point;

inline constexpr char kSessionKey[] = "geofs-session";

struct HubLinkOptions {
  std::string address;    // "HOST:PORT"
  std::string portal;     // the hub path served (told to the hub in Hello)
  std::string state_dir;  // keeps the spoke id and the last session id
  std::chrono::milliseconds call_timeout{30'000};
  // Subtracted from every lease so that clock drift between the request's
  // departure and the hub's grant never makes the spoke trust a lease the
  // hub has already let go. Capped at a quarter of the ttl.
  std::chrono::milliseconds lease_margin{500};
  // HTTP/2 pings on the connection: a hub that stops answering them for
  // keepalive_timeout (stopped, or cut off without a reset) fails every
  // call in flight at once instead of at its deadline, and marks the link
  // down (its leases then run out and the portal answers JUKEBOX).
  std::chrono::milliseconds keepalive_time{2'000};
  std::chrono::milliseconds keepalive_timeout{3'000};
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{10'000};
  // How often to ask again for a session from a hub that lacks them.
  std::chrono::milliseconds unimplemented_retry{30'000};
  Clock* clock = Clock::Real();  // REQUIRES: outlives the link
};

// The lease a reply came with. session == 0: none (nothing may be cached
// beyond the call that fetched it).
struct Grant {
  uint64_t session = 0;
  SteadyTime sent{};
  SteadyTime expiry{};  // meaningful only with a session
  bool leased() const { return session != 0; }
};

struct LinkState {
  bool connected = false;
  SteadyTime since{};    // when `connected` last changed
  uint64_t session = 0;  // 0: no session (none yet, or the hub lacks them)
  std::chrono::milliseconds lease_ttl{0};
  uint64_t reconnects = 0;
  uint64_t invalidations = 0;  // Invalidation messages received
};

// What the cache tells the link and hears from it.
struct SessionHandlers {
  // Drop what is cached of `inos`; runs before the acknowledgement is sent.
  std::function<void(const std::vector<uint64_t>& inos)> invalidate;
  // The inodes whose read leases to renew now.
  std::function<std::vector<uint64_t>()> held;
  // Renewal answered: `renewed` are leased until `expiry`; `lost` must go.
  std::function<void(const std::vector<uint64_t>& renewed, SteadyTime expiry,
                     const std::vector<uint64_t>& lost)>
      renewed;
  // A new session replaced the previous one (whose leases the hub drops):
  // forget every lease.
  std::function<void()> session_changed;
};

class HubLink {
 public:
  template <typename Req, typename Resp>
  using AsyncMethod = void (v1::Hub::Stub::async::*)(grpc::ClientContext*, const Req*, Resp*,
                                                     std::function<void(grpc::Status)>);
  template <typename Resp>
  using Done = std::function<void(Result<Resp>, Grant)>;

  explicit HubLink(HubLinkOptions options);
  ~HubLink();  // Stop()
  HubLink(const HubLink&) = delete;
  HubLink& operator=(const HubLink&) = delete;

  // Starts the session thread. REQUIRES: called once, handlers set.
  void Start(SessionHandlers handlers);
  // Ends the session and its thread: no handler runs after it returns.
  // Idempotent.
  void Stop();
  // Waits until the first session attempt has an outcome (welcomed or
  // refused) or `timeout` passes; true if a session is open.
  bool WaitForSessionAttempt(std::chrono::milliseconds timeout);

  // One unary call: `done` runs once, on a gRPC thread. Its Grant is empty
  // unless the hub answered: a read the hub answered with an error still
  // leased what it was asked for first (a lookup of a missing name leases
  // the directory).
  template <typename Req, typename Resp>
  void Call(AsyncMethod<Req, Resp> method, Req req, std::type_identity_t<Done<Resp>> done);
  // The same, waiting for the answer. REQUIRES: not on a gRPC thread.
  template <typename Req, typename Resp>
  Result<Resp> CallSync(AsyncMethod<Req, Resp> method, Req req, Grant* grant = nullptr);

  // Fetches chunks in stored form (at most 1024 ids), accepting ZSTD.
  // `on_chunk` runs for each chunk as it arrives, in the order the hub
  // sends them; then `done` once, with the call's outcome (ids the hub did
  // not send before an error are the caller's to fail).
  using ChunkHandler = std::function<void(v1::ChunkData&&)>;
  void ReadChunks(std::vector<std::string> ids, ChunkHandler on_chunk,
                  std::function<void(Status)> done);

  // The write lease on a file, when a session is open: true once granted
  // (after waiting for another holder), false without a session (writes
  // then go to the hub unserialized, as from any plain client).
  // REQUIRES: not on a gRPC thread.
  Result<bool> AcquireWrite(const v1::FileRef& ref);
  void ReleaseWrite(const v1::FileRef& ref);

  // For clients that make their own calls (the JournalUploader): the
  // channel, and Decorate() to tag each call with the open session, if any, so the
  // hub does not invalidate this spoke for its own changes.
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  void Decorate(grpc::ClientContext* ctx) const;

  LinkState state() const;
  const std::string& spoke_id() const { return spoke_id_; }
  const std::string& address() const { return options_.address; }
  // Bytes of stored-form chunk data received (the WAN cost of reads).
  uint64_t chunk_bytes_received() const { return chunk_bytes_received_.load(); }

 private:
  class ChunkReader;
  class Stream;

  // Deadline, session tag, and the grant the reply will carry.
  void Prepare(grpc::ClientContext* ctx, Grant* grant) const;
  // Translates the outcome and updates the link state.
  Status Finish(const grpc::Status& status, const grpc::ClientContext& ctx);
  // True if the hub itself answered the call (not the transport).
  static bool AnsweredByHub(const grpc::ClientContext& ctx);
  void MarkConnected(bool up);

  void SessionLoop(std::stop_token stop);
  // Runs one session until the stream ends; the stream's final status.
  grpc::Status RunSession(std::stop_token stop, bool* welcomed);
  void RenewLoop(std::stop_token stop);
  bool Send(const v1::SpokeMessage& msg);
  void LoadOrCreateSpokeId();
  void SaveSession(uint64_t session);

  const HubLinkOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Hub::Stub> stub_;
  std::string spoke_id_;
  uint64_t previous_session_ = 0;
  SessionHandlers handlers_;
  std::atomic<uint64_t> chunk_bytes_received_{0};

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  LinkState state_;                             // guarded by mu_
  bool attempted_ = false;                      // guarded by mu_: first session attempt finished
  std::shared_ptr<Stream> stream_;              // guarded by mu_: the open session stream
  grpc::ClientContext* session_ctx_ = nullptr;  // guarded by mu_: to cancel on stop
  uint64_t next_seq_ = 1;                       // guarded by mu_
  struct Renewal {
    SteadyTime sent;
    std::vector<uint64_t> inos;
  };
  std::map<uint64_t, Renewal> renewals_;  // guarded by mu_: by seq
  std::map<uint64_t, std::shared_ptr<std::promise<Result<bool>>>> acquires_;  // guarded by mu_

  std::jthread session_thread_;  // last: stopped first
};

template <typename Req, typename Resp>
void HubLink::Call(AsyncMethod<Req, Resp> method, Req req, std::type_identity_t<Done<Resp>> done) {
  struct Pending {
    grpc::ClientContext ctx;
    Req req;
    Resp resp;
    Grant grant;
  };
  auto p = std::make_shared<Pending>();
  p->req = std::move(req);
  Prepare(&p->ctx, &p->grant);
  (stub_->async()->*method)(&p->ctx, &p->req, &p->resp,
                            [this, p, done = std::move(done)](grpc::Status s) {
                              Status status = Finish(s, p->ctx);
                              if (!status.ok()) {
                                return done(status, AnsweredByHub(p->ctx) ? p->grant : Grant{});
                              }
                              done(std::move(p->resp), p->grant);
                            });
}

template <typename Req, typename Resp>
Result<Resp> HubLink::CallSync(AsyncMethod<Req, Resp> method, Req req, Grant* grant) {
  std::promise<std::pair<Result<Resp>, Grant>> promise;
  auto future = promise.get_future();
  Call(method, std::move(req), [&promise](Result<Resp> r, Grant g) {
    promise.set_value({std::move(r), g});
  });
  auto [result, g] = future.get();
  if (grant) *grant = g;
  return std::move(result);
}

}  // namespace geofs::spoke
