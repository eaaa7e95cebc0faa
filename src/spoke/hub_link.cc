#include "spoke/hub_link.h"

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/logging.h"
#include "hub/grpc_status.h"

namespace geofs::spoke {
namespace {

// Chunks are at most 4 MiB by default (64 MiB with unusual chunker settings).
constexpr int kMaxMessageBytes = 64 << 20;
// Inodes per LeaseRenewal message, to stay well below the message limit.
constexpr size_t kRenewBatch = 65536;

std::string RandomId() {
  std::random_device rd;
  std::ostringstream out;
  out << std::hex;
  for (int i = 0; i < 4; ++i) out << rd();
  return out.str();
}

}  // namespace

// The open Session stream. Writes are serialized; none happens after close.
class HubLink::Stream {
 public:
  std::unique_ptr<grpc::ClientReaderWriter<v1::SpokeMessage, v1::HubMessage>> rw;

  bool Write(const v1::SpokeMessage& msg) {
    std::lock_guard lock(write_mu_);
    return !closed_ && rw->Write(msg);
  }
  void Close() {
    std::lock_guard lock(write_mu_);
    closed_ = true;
  }

 private:
  std::mutex write_mu_;
  bool closed_ = false;
};

// One ReadChunks call on the callback API; deletes itself when done. Each
// chunk is handed on as it arrives, so a reader waiting for the first chunk
// of a large batch does not wait for the rest.
class HubLink::ChunkReader : public grpc::ClientReadReactor<v1::ChunkData> {
 public:
  ChunkReader(HubLink* link, std::vector<std::string> ids, ChunkHandler on_chunk,
              std::function<void(Status)> done)
      : link_(link), on_chunk_(std::move(on_chunk)), done_(std::move(done)) {
    for (std::string& id : ids) req_.add_chunk_ids(std::move(id));
    req_.add_accept(v1::ZSTD);
    Grant unused;
    link_->Prepare(&ctx_, &unused);
    link_->stub_->async()->ReadChunks(&ctx_, &req_, this);
    StartRead(&msg_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    link_->chunk_bytes_received_ += msg_.data().size();
    on_chunk_(std::move(msg_));
    msg_.Clear();
    StartRead(&msg_);
  }

  void OnDone(const grpc::Status& s) override {
    done_(link_->Finish(s, ctx_));
    delete this;
  }

 private:
  HubLink* const link_;
  ChunkHandler on_chunk_;
  std::function<void(Status)> done_;
  grpc::ClientContext ctx_;
  v1::ReadChunksRequest req_;
  v1::ChunkData msg_;
};

HubLink::HubLink(HubLinkOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect quickly once the hub is back (the default backoff grows to 2 min).
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options_.backoff_max.count()));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(options_.backoff_initial.count()));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(options_.backoff_initial.count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options_.keepalive_time.count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(options_.keepalive_timeout.count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Keep pinging while no data flows (the default stops after two pings).
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  channel_ = grpc::CreateCustomChannel(options_.address, grpc::InsecureChannelCredentials(), args);
  stub_ = v1::Hub::NewStub(channel_);
  state_.since = options_.clock->Now();
  LoadOrCreateSpokeId();
}

HubLink::~HubLink() { Stop(); }

void HubLink::Stop() {
  session_thread_.request_stop();
  {
    std::lock_guard lock(mu_);
    if (session_ctx_) session_ctx_->TryCancel();
  }
  cv_.notify_all();
  if (session_thread_.joinable()) session_thread_.join();
}

void HubLink::LoadOrCreateSpokeId() {
  auto log = GetLogger("hub_link");
  std::error_code ec;
  std::filesystem::create_directories(options_.state_dir, ec);
  std::string id_path = options_.state_dir + "/spoke-id";
  std::ifstream in(id_path);
  if (!(in >> spoke_id_) || spoke_id_.empty()) {
    spoke_id_ = RandomId();
    std::string tmp = id_path + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << spoke_id_ << "\n";
    out.close();
    std::filesystem::rename(tmp, id_path, ec);
    if (ec || !out) log->warn("cannot keep the spoke id in {}: {}", id_path, ec.message());
  }
  std::ifstream session_in(options_.state_dir + "/session");
  if (!(session_in >> previous_session_)) previous_session_ = 0;
}

void HubLink::SaveSession(uint64_t session) {
  std::string path = options_.state_dir + "/session";
  std::ofstream out(path + ".tmp", std::ios::trunc);
  out << session << "\n";
  out.close();
  std::error_code ec;
  std::filesystem::rename(path + ".tmp", path, ec);
}

void HubLink::Start(SessionHandlers handlers) {
  handlers_ = std::move(handlers);
  session_thread_ = std::jthread([this](std::stop_token stop) { SessionLoop(stop); });
}

bool HubLink::WaitForSessionAttempt(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return attempted_; });
  return state_.session != 0;
}

LinkState HubLink::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void HubLink::Prepare(grpc::ClientContext* ctx, Grant* grant) const {
  ctx->set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
  std::lock_guard lock(mu_);
  grant->sent = options_.clock->Now();
  if (state_.session == 0) return;
  ctx->AddMetadata(kSessionKey, std::to_string(state_.session));
  grant->session = state_.session;
  auto margin = std::min<std::chrono::milliseconds>(options_.lease_margin, state_.lease_ttl / 4);
  grant->expiry = grant->sent + state_.lease_ttl - margin;
}

void HubLink::Decorate(grpc::ClientContext* ctx) const {
  std::lock_guard lock(mu_);
  if (state_.session != 0) ctx->AddMetadata(kSessionKey, std::to_string(state_.session));
}

bool HubLink::AnsweredByHub(const grpc::ClientContext& ctx) {
  return ctx.GetServerTrailingMetadata().count(hub::kGeofsCodeKey) > 0;
}

Status HubLink::Finish(const grpc::Status& status, const grpc::ClientContext& ctx) {
  bool from_hub = AnsweredByHub(ctx);
  bool transport_failure =
      !from_hub && (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                    status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  MarkConnected(!transport_failure);
  if (transport_failure) {
    return Status::Unavailable("hub " + options_.address +
                               " unreachable: " + status.error_message());
  }
  return hub::FromGrpcStatus(status, &ctx);
}

void HubLink::MarkConnected(bool up) {
  std::lock_guard lock(mu_);
  if (state_.connected == up) return;
  state_.connected = up;
  state_.since = options_.clock->Now();
  GetLogger("hub_link")->info("hub {} {}", options_.address, up ? "reachable" : "unreachable");
}

void HubLink::ReadChunks(std::vector<std::string> ids, ChunkHandler on_chunk,
                         std::function<void(Status)> done) {
  new ChunkReader(this, std::move(ids), std::move(on_chunk), std::move(done));
}

bool HubLink::Send(const v1::SpokeMessage& msg) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard lock(mu_);
    stream = stream_;
  }
  return stream && stream->Write(msg);
}

Result<bool> HubLink::AcquireWrite(const v1::FileRef& ref) {
  auto promise = std::make_shared<std::promise<Result<bool>>>();
  auto future = promise->get_future();
  v1::SpokeMessage msg;
  uint64_t seq;
  {
    std::lock_guard lock(mu_);
    if (!stream_) return false;
    seq = next_seq_++;
    acquires_[seq] = promise;
  }
  msg.mutable_acquire_write()->set_seq(seq);
  *msg.mutable_acquire_write()->mutable_ref() = ref;
  if (!Send(msg)) {
    std::lock_guard lock(mu_);
    acquires_.erase(seq);
    return Status::Unavailable("session to hub " + options_.address + " closed");
  }
  if (future.wait_for(options_.call_timeout) != std::future_status::ready) {
    std::lock_guard lock(mu_);
    acquires_.erase(seq);
    return Status::Unavailable("no write lease on inode " + std::to_string(ref.ino()) + " in time");
  }
  return future.get();
}

void HubLink::ReleaseWrite(const v1::FileRef& ref) {
  v1::SpokeMessage msg;
  *msg.mutable_release_write()->mutable_ref() = ref;
  Send(msg);
}

void HubLink::SessionLoop(std::stop_token stop) {
  auto log = GetLogger("hub_link");
  auto backoff = options_.backoff_initial;
  while (!stop.stop_requested()) {
    bool welcomed = false;
    grpc::Status status = RunSession(stop, &welcomed);
    {
      std::lock_guard lock(mu_);
      attempted_ = true;
      state_.session = 0;
    }
    cv_.notify_all();
    if (stop.stop_requested()) break;
    std::chrono::milliseconds wait = backoff;
    if (welcomed) {
      backoff = options_.backoff_initial;
      wait = backoff;
      log->warn("session with hub {} ended: {}", options_.address, status.error_message());
    } else if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      // The hub grants no leases: every call revalidates.
      wait = options_.unimplemented_retry;
      log->info("hub {} has no sessions; caching nothing beyond each call", options_.address);
    } else {
      backoff = std::min(backoff * 2, options_.backoff_max);
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, stop, wait, [] { return false; });
  }
}

grpc::Status HubLink::RunSession(std::stop_token stop, bool* welcomed) {
  grpc::ClientContext ctx;
  auto stream = std::make_shared<Stream>();
  {
    std::lock_guard lock(mu_);
    if (stop.stop_requested()) return grpc::Status::CANCELLED;
    session_ctx_ = &ctx;
  }
  stream->rw = stub_->Session(&ctx);
  v1::SpokeMessage hello;
  hello.mutable_hello()->set_spoke_id(spoke_id_);
  hello.mutable_hello()->set_portal(options_.portal);
  hello.mutable_hello()->set_previous_session(previous_session_);
  v1::HubMessage msg;
  if (stream->rw->Write(hello) && stream->rw->Read(&msg) && msg.has_welcome()) {
    uint64_t session = msg.welcome().session();
    {
      std::lock_guard lock(mu_);
      if (previous_session_ != 0) ++state_.reconnects;
      state_.session = session;
      state_.lease_ttl = std::chrono::milliseconds(msg.welcome().lease_ttl_ms());
      stream_ = stream;
      attempted_ = true;
    }
    cv_.notify_all();
    MarkConnected(true);
    *welcomed = true;
    if (handlers_.session_changed) handlers_.session_changed();
    previous_session_ = session;
    SaveSession(session);
    GetLogger("hub_link")
        ->info("session {} with hub {} (lease ttl {} ms)", session, options_.address,
               msg.welcome().lease_ttl_ms());

    std::jthread renewer([this](std::stop_token s) { RenewLoop(s); });
    while (stream->rw->Read(&msg)) {
      if (msg.has_invalidate()) {
        std::vector<uint64_t> inos(msg.invalidate().inos().begin(), msg.invalidate().inos().end());
        if (handlers_.invalidate) handlers_.invalidate(inos);
        {
          std::lock_guard lock(mu_);
          ++state_.invalidations;
        }
        v1::SpokeMessage ack;
        ack.mutable_ack()->set_seq(msg.invalidate().seq());
        stream->Write(ack);
      } else if (msg.has_renewed()) {
        Renewal renewal;
        std::chrono::milliseconds ttl;
        {
          std::lock_guard lock(mu_);
          auto it = renewals_.find(msg.renewed().seq());
          if (it == renewals_.end()) continue;
          renewal = std::move(it->second);
          renewals_.erase(it);
          ttl = state_.lease_ttl;
        }
        std::vector<uint64_t> lost(msg.renewed().lost().begin(), msg.renewed().lost().end());
        std::sort(lost.begin(), lost.end());
        std::vector<uint64_t> kept;
        for (uint64_t ino : renewal.inos) {
          if (!std::binary_search(lost.begin(), lost.end(), ino)) kept.push_back(ino);
        }
        auto margin = std::min<std::chrono::milliseconds>(options_.lease_margin, ttl / 4);
        if (handlers_.renewed) handlers_.renewed(kept, renewal.sent + ttl - margin, lost);
      } else if (msg.has_write_granted()) {
        std::shared_ptr<std::promise<Result<bool>>> promise;
        {
          std::lock_guard lock(mu_);
          auto it = acquires_.find(msg.write_granted().seq());
          if (it == acquires_.end()) continue;
          promise = std::move(it->second);
          acquires_.erase(it);
        }
        if (msg.write_granted().granted()) {
          promise->set_value(true);
        } else {
          promise->set_value(Status::Stale(msg.write_granted().error()));
        }
      }
    }
    renewer.request_stop();
    cv_.notify_all();
  }
  stream->Close();
  {
    std::lock_guard lock(mu_);
    stream_.reset();
    session_ctx_ = nullptr;
    renewals_.clear();
    for (auto& [seq, promise] : acquires_) {
      promise->set_value(Status::Unavailable("session to hub " + options_.address + " closed"));
    }
    acquires_.clear();
  }
  grpc::Status status = stream->rw->Finish();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) MarkConnected(false);
  return status;
}

void HubLink::RenewLoop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::chrono::milliseconds period;
    {
      std::unique_lock lock(mu_);
      period =
          std::max<std::chrono::milliseconds>(state_.lease_ttl / 3, std::chrono::milliseconds(10));
      if (cv_.wait_for(lock, stop, period, [] { return false; })) return;
      if (stop.stop_requested()) return;
    }
    std::vector<uint64_t> held = handlers_.held ? handlers_.held() : std::vector<uint64_t>();
    for (size_t i = 0; i < held.size(); i += kRenewBatch) {
      std::vector<uint64_t> batch(held.begin() + i,
                                  held.begin() + std::min(held.size(), i + kRenewBatch));
      v1::SpokeMessage msg;
      {
        std::lock_guard lock(mu_);
        uint64_t seq = next_seq_++;
        msg.mutable_renew()->set_seq(seq);
        renewals_[seq] = Renewal{options_.clock->Now(), batch};
      }
      for (uint64_t ino : batch) msg.mutable_renew()->add_inos(ino);
      if (!Send(msg)) return;
    }
  }
}

}  // namespace geofs::spoke
