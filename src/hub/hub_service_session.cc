// HubService: the coherence Session stream, and leases for tagged calls.
#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "common/logging.h"
#include "hub/hub_service.h"
#include "hub/service_util.h"

namespace geofs::hub {

using service::HandleOf;

namespace {

// Reads repeated because the reply named inodes not yet leased: past this,
// the names read are changing faster than they can be leased.
constexpr int kMaxLeasedReads = 8;

using Stream = grpc::ServerReaderWriter<v1::HubMessage, v1::SpokeMessage>;

// Messages to one spoke, written in order by a thread of their own, so
// that a change never blocks on a spoke's flow control while it sends
// invalidations. Thread-safe.
class Outbox {
 public:
  Outbox(grpc::ServerContext* ctx, Stream* stream)
      : ctx_(ctx), stream_(stream), writer_([this] { Run(); }) {}
  ~Outbox() { Close(); }

  // Queues `m`; dropped once closed or the stream failed.
  void Push(v1::HubMessage m) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    queue_.push_back(std::move(m));
    cv_.notify_one();
  }

  // Drops what is queued, interrupts a blocked write and stops the writer.
  // Afterwards the stream is not touched again.
  void Close() {
    {
      std::lock_guard lock(mu_);
      if (closed_ && !writer_.joinable()) return;
      closed_ = true;
      queue_.clear();
      if (writing_) ctx_->TryCancel();
      cv_.notify_one();
    }
    if (writer_.joinable()) writer_.join();
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
      if (closed_) return;
      v1::HubMessage m = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      lock.unlock();
      const bool ok = stream_->Write(m);
      lock.lock();
      writing_ = false;
      if (!ok) {
        closed_ = true;
        queue_.clear();
        return;
      }
    }
  }

  grpc::ServerContext* const ctx_;
  Stream* const stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::HubMessage> queue_;  // guarded by mu_
  bool closed_ = false;               // guarded by mu_
  bool writing_ = false;              // guarded by mu_
  std::thread writer_;
};

// The session a call is tagged with; 0 if untagged.
Result<uint64_t> SessionOf(const grpc::ServerContextBase* ctx) {
  const auto& metadata = ctx->client_metadata();
  auto it = metadata.find(kSessionKey);
  if (it == metadata.end()) return uint64_t{0};
  const std::string_view text(it->second.data(), it->second.size());
  uint64_t session = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), session);
  if (ec != std::errc() || end != text.data() + text.size() || session == 0) {
    return Status::InvalidArgument(std::string(kSessionKey) + " must be a session id, not \"" +
                                   std::string(text.substr(0, 32)) + "\"");
  }
  return session;
}

grpc::Status NoSession(grpc::ServerContextBase* ctx, uint64_t session) {
  ctx->AddTrailingMetadata(kGeofsCodeKey, kNoSessionToken);
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      std::string(kNoSessionToken) + ": session " + std::to_string(session) +
                          " is not open; open a new Session");
}

v1::HubMessage WriteGrantedMessage(uint64_t seq, const v1::FileRef& ref, const Status& s) {
  v1::HubMessage m;
  v1::WriteGranted* g = m.mutable_write_granted();
  g->set_seq(seq);
  *g->mutable_ref() = ref;
  g->set_granted(s.ok());
  if (!s.ok()) g->set_error(std::string(CodeToken(s.code())));
  return m;
}

}  // namespace

grpc::Status HubService::RunLeased(grpc::ServerContext* ctx, Inos first,
                                   const std::function<Result<Inos>()>& read) {
  uint64_t session = 0;
  if (options_.leases != nullptr) {
    Result<uint64_t> tagged = SessionOf(ctx);
    if (!tagged.ok()) return ToGrpcStatus(tagged.status(), ctx);
    session = *tagged;
  }
  if (session == 0) return ToGrpcStatus(read().status(), ctx);

  LeaseManager& leases = *options_.leases;
  Inos granted;
  Inos wanted = std::move(first);
  for (int attempt = 0; attempt < kMaxLeasedReads; ++attempt) {
    if (!wanted.empty()) {
      Status s = leases.Grant(session, wanted);
      if (s.code() == StatusCode::kNotFound) return NoSession(ctx, session);
      if (!s.ok()) return ToGrpcStatus(s, ctx);
      granted.insert(granted.end(), wanted.begin(), wanted.end());
      std::sort(granted.begin(), granted.end());
    }
    Result<Inos> described = read();
    if (!described.ok()) return ToGrpcStatus(described.status(), ctx);
    wanted.clear();
    for (uint64_t ino : *described) {
      if (!std::binary_search(granted.begin(), granted.end(), ino)) wanted.push_back(ino);
    }
    if (wanted.empty()) return grpc::Status::OK;
  }
  return ToGrpcStatus(Status::Unavailable("the names read keep changing; retry"), ctx);
}

std::optional<grpc::Status> HubService::ChangeOrigin(grpc::ServerContextBase* ctx,
                                                     uint64_t* origin) {
  *origin = 0;
  if (options_.leases == nullptr) return std::nullopt;
  Result<uint64_t> tagged = SessionOf(ctx);
  if (!tagged.ok()) return ToGrpcStatus(tagged.status(), ctx);
  if (*tagged != 0 && !options_.leases->IsOpen(*tagged)) return NoSession(ctx, *tagged);
  *origin = *tagged;
  return std::nullopt;
}

grpc::Status HubService::Session(grpc::ServerContext* ctx, Stream* stream) {
  if (options_.leases == nullptr) {
    return ToGrpcStatus(Status::NotSupported("this hub runs without coherence"), ctx);
  }
  LeaseManager& leases = *options_.leases;
  v1::SpokeMessage msg;
  if (!stream->Read(&msg) || !msg.has_hello()) {
    return ToGrpcStatus(Status::InvalidArgument("a Session starts with a hello"), ctx);
  }
  const v1::SessionHello hello = msg.hello();
  auto outbox = std::make_shared<Outbox>(ctx, stream);
  const uint64_t id = leases.OpenSession(hello.spoke_id(), hello.portal(), hello.previous_session(),
                                         [outbox](const Invalidation& inv) {
                                           v1::HubMessage m;
                                           m.mutable_invalidate()->set_seq(inv.seq);
                                           for (uint64_t ino : inv.inos)
                                             m.mutable_invalidate()->add_inos(ino);
                                           outbox->Push(std::move(m));
                                         });
  auto log = GetLogger("hub.session");
  log->info("session {} opened by spoke \"{}\" for portal \"{}\" (previous {}) from {}", id,
            hello.spoke_id(), hello.portal(), hello.previous_session(), ctx->peer());
  {
    v1::HubMessage welcome;
    welcome.mutable_welcome()->set_session(id);
    welcome.mutable_welcome()->set_lease_ttl_ms(static_cast<uint32_t>(leases.lease_ttl().count()));
    outbox->Push(std::move(welcome));
  }

  Status ended = Status::Ok();
  while (ended.ok() && stream->Read(&msg)) {
    switch (msg.body_case()) {
      case v1::SpokeMessage::kRenew: {
        const v1::LeaseRenewal& renew = msg.renew();
        std::vector<uint64_t> lost =
            leases.Renew(id, std::span(renew.inos().data(), renew.inos().size()),
                         std::span(renew.write_inos().data(), renew.write_inos().size()));
        v1::HubMessage m;
        m.mutable_renewed()->set_seq(renew.seq());
        for (uint64_t ino : lost) m.mutable_renewed()->add_lost(ino);
        outbox->Push(std::move(m));
        break;
      }
      case v1::SpokeMessage::kAck:
        leases.Ack(id, msg.ack().seq());
        break;
      case v1::SpokeMessage::kAcquireWrite: {
        const uint64_t seq = msg.acquire_write().seq();
        const v1::FileRef ref = msg.acquire_write().ref();
        if (Status live = ns_->GetAttr(HandleOf(ref)).status(); !live.ok()) {
          outbox->Push(WriteGrantedMessage(seq, ref, live));
          break;
        }
        leases.AcquireWrite(id, ref.ino(), [outbox, seq, ref](const Status& s) {
          outbox->Push(WriteGrantedMessage(seq, ref, s));
        });
        break;
      }
      case v1::SpokeMessage::kReleaseWrite:
        leases.ReleaseWrite(id, msg.release_write().ref().ino());
        break;
      case v1::SpokeMessage::kHello:
        ended = Status::InvalidArgument("a second hello on session " + std::to_string(id));
        break;
      case v1::SpokeMessage::BODY_NOT_SET:
        ended = Status::InvalidArgument("an empty message on session " + std::to_string(id));
        break;
    }
  }
  leases.DetachSession(id);
  outbox->Close();
  log->info("session {} of spoke \"{}\" detached{}", id, hello.spoke_id(),
            ended.ok() ? "" : ": " + ended.ToString());
  return ToGrpcStatus(ended, ctx);
}

}  // namespace geofs::hub
