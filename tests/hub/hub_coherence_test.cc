// Coherence against a real geofs-hubd: two raw gRPC "spokes" (the generated
// stub, no spoke code) hold Session streams; changes through gRPC and
// through the hub's NFS export must invalidate the other spoke's leases
// before they return.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "hub.grpc.pb.h"
#include "hub/grpc_status.h"
#include "hub/hub_service.h"
#include "hub_process.h"
#include "tools/nfs_client.h"

namespace geofs::hub::testing {
namespace {

using geofs::testing::NfsClient;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kTtl(1000);
constexpr milliseconds kPrompt(5000);

struct Received {
  v1::HubMessage message;
  Clock::time_point at;
};

// One spoke's Session stream, read by a thread of its own. Invalidations
// are acknowledged after `ack_delay`, or never when `silent`.
class RawSpoke {
 public:
  RawSpoke(std::shared_ptr<grpc::Channel> channel, std::string spoke_id, bool silent = false,
           milliseconds ack_delay = milliseconds(0))
      : stub_(v1::Hub::NewStub(channel)), silent_(silent), ack_delay_(ack_delay) {
    stream_ = stub_->Session(&stream_ctx_);
    v1::SpokeMessage hello;
    hello.mutable_hello()->set_spoke_id(std::move(spoke_id));
    hello.mutable_hello()->set_portal("/");
    Send(hello);
    v1::HubMessage welcome;
    if (stream_->Read(&welcome) && welcome.has_welcome()) {
      session_ = welcome.welcome().session();
      ttl_ms_ = welcome.welcome().lease_ttl_ms();
    }
    reader_ = std::thread([this] { ReadLoop(); });
  }
  ~RawSpoke() {
    stream_ctx_.TryCancel();
    reader_.join();
  }

  uint64_t session() const { return session_; }
  uint32_t ttl_ms() const { return ttl_ms_; }
  v1::Hub::Stub& stub() { return *stub_; }

  // A context for a unary call tagged with this session.
  void Tag(grpc::ClientContext* ctx) const {
    ctx->AddMetadata(kSessionKey, std::to_string(session_));
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }

  void Send(const v1::SpokeMessage& m) {
    std::lock_guard lock(write_mu_);
    stream_->Write(m);
  }

  // The next message of `kind` (removing it), waiting up to `timeout`.
  std::optional<Received> Next(v1::HubMessage::BodyCase kind, milliseconds timeout = kPrompt) {
    std::unique_lock lock(mu_);
    std::optional<Received> out;
    cv_.wait_for(lock, timeout, [&] {
      auto it = std::find_if(inbox_.begin(), inbox_.end(),
                             [&](const Received& r) { return r.message.body_case() == kind; });
      if (it == inbox_.end()) return false;
      out = *it;
      inbox_.erase(it);
      return true;
    });
    return out;
  }

  std::vector<uint64_t> Renew(uint64_t seq, const std::vector<uint64_t>& inos) {
    v1::SpokeMessage m;
    m.mutable_renew()->set_seq(seq);
    for (uint64_t ino : inos) m.mutable_renew()->add_inos(ino);
    Send(m);
    auto renewed = Next(v1::HubMessage::kRenewed);
    EXPECT_TRUE(renewed);
    if (!renewed) return {};
    EXPECT_EQ(renewed->message.renewed().seq(), seq);
    return {renewed->message.renewed().lost().begin(), renewed->message.renewed().lost().end()};
  }

  // Time the last acknowledgement was sent.
  Clock::time_point last_ack() const {
    std::lock_guard lock(mu_);
    return last_ack_;
  }

 private:
  void ReadLoop() {
    v1::HubMessage m;
    while (stream_->Read(&m)) {
      const auto at = Clock::now();
      {
        std::lock_guard lock(mu_);
        inbox_.push_back(Received{m, at});
        cv_.notify_all();
      }
      if (m.has_invalidate() && !silent_) {
        std::this_thread::sleep_for(ack_delay_);
        v1::SpokeMessage ack;
        ack.mutable_ack()->set_seq(m.invalidate().seq());
        {
          std::lock_guard lock(mu_);
          last_ack_ = Clock::now();
        }
        Send(ack);
      }
    }
  }

  std::unique_ptr<v1::Hub::Stub> stub_;
  const bool silent_;
  const milliseconds ack_delay_;
  grpc::ClientContext stream_ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SpokeMessage, v1::HubMessage>> stream_;
  uint64_t session_ = 0;
  uint32_t ttl_ms_ = 0;
  std::mutex write_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Received> inbox_;  // guarded by mu_
  Clock::time_point last_ack_;  // guarded by mu_
  std::thread reader_;
};

bool Names(const Received& r, uint64_t ino) {
  const auto& inos = r.message.invalidate().inos();
  return std::find(inos.begin(), inos.end(), ino) != inos.end();
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

class HubCoherenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HubOptions options;
    options.nfs = true;
    options.extra_args = {"--lease-ttl", "1"};
    auto hub = HubProcess::Create(options);
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
    ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();
    channel_ = grpc::CreateChannel(hub_->grpc_address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Hub::NewStub(channel_);

    grpc::ClientContext ctx;
    v1::ResolvePathRequest req;
    req.set_path("/");
    v1::ResolvePathResponse resp;
    ASSERT_TRUE(stub_->ResolvePath(&ctx, req, &resp).ok());
    root_ = resp.object().ref();
    file_ = CreateFile("f");
  }
  void TearDown() override {
    // Open client connections hold the hub's gRPC shutdown to its grace.
    stub_.reset();
    channel_.reset();
    if (hub_ && hub_->running()) {
      EXPECT_TRUE(hub_->Stop().ok()) << hub_->Log();
    }
  }

  v1::FileRef CreateFile(const std::string& name) {
    grpc::ClientContext ctx;
    v1::CreateRequest req;
    *req.mutable_dir() = root_;
    req.set_name(name);
    req.set_type(v1::REGULAR);
    req.mutable_attrs()->set_mode(0666);
    v1::CreateResponse resp;
    grpc::Status s = stub_->Create(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.object().ref();
  }

  // GetAttr of `ref` tagged with `spoke`'s session (leases it).
  void Lease(RawSpoke& spoke, const v1::FileRef& ref) {
    grpc::ClientContext ctx;
    spoke.Tag(&ctx);
    v1::GetAttrRequest req;
    *req.mutable_ref() = ref;
    v1::GetAttrResponse resp;
    grpc::Status s = spoke.stub().GetAttr(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // SetAttr(mode) of `ref` tagged with `spoke`'s session.
  grpc::Status Chmod(RawSpoke& spoke, const v1::FileRef& ref, uint32_t mode) {
    grpc::ClientContext ctx;
    spoke.Tag(&ctx);
    v1::SetAttrRequest req;
    *req.mutable_ref() = ref;
    req.mutable_attrs()->set_mode(mode);
    v1::SetAttrResponse resp;
    return spoke.stub().SetAttr(&ctx, req, &resp);
  }

  std::unique_ptr<HubProcess> hub_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Hub::Stub> stub_;
  v1::FileRef root_;
  v1::FileRef file_;
};

TEST_F(HubCoherenceTest, GrpcChangeInvalidatesOtherSpokeAndWaitsForItsAck) {
  constexpr milliseconds kAckDelay(300);
  RawSpoke a(channel_, "spoke-a", /*silent=*/false, kAckDelay);
  RawSpoke b(channel_, "spoke-b");
  ASSERT_NE(a.session(), 0u);
  ASSERT_NE(b.session(), a.session());
  EXPECT_EQ(a.ttl_ms(), kTtl.count());
  Lease(a, file_);
  Lease(b, file_);

  const auto start = Clock::now();
  grpc::Status s = Chmod(b, file_, 0600);
  const auto end = Clock::now();
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto inv = a.Next(v1::HubMessage::kInvalidate, milliseconds(0));
  ASSERT_TRUE(inv) << "A's invalidation must arrive before B's call returns";
  EXPECT_TRUE(Names(*inv, file_.ino()));
  EXPECT_LT(inv->at, end);
  EXPECT_LT(a.last_ack(), end);
  EXPECT_GE(end - start, kAckDelay) << "B's change waits for A's acknowledgement";
  EXPECT_LT(end - start, kTtl) << "and not for the lease to expire";
  EXPECT_FALSE(b.Next(v1::HubMessage::kInvalidate, milliseconds(100)))
      << "the changer is not invalidated";
  // B's change leased the file to B; A lost its lease.
  EXPECT_TRUE(b.Renew(1, {file_.ino()}).empty());
  EXPECT_EQ(a.Renew(1, {file_.ino()}), std::vector<uint64_t>{file_.ino()});
}

TEST_F(HubCoherenceTest, MetadataChangesInvalidateDirectoryAndObject) {
  RawSpoke a(channel_, "spoke-a");
  RawSpoke b(channel_, "spoke-b");
  // A lists the root (leasing it and its entries).
  {
    grpc::ClientContext ctx;
    a.Tag(&ctx);
    v1::ReadDirRequest req;
    *req.mutable_dir() = root_;
    v1::ReadDirResponse resp;
    ASSERT_TRUE(a.stub().ReadDir(&ctx, req, &resp).ok());
  }
  // B removes f: A must drop both the directory and f.
  grpc::ClientContext ctx;
  b.Tag(&ctx);
  v1::RemoveRequest req;
  *req.mutable_dir() = root_;
  req.set_name("f");
  v1::RemoveResponse resp;
  ASSERT_TRUE(b.stub().Remove(&ctx, req, &resp).ok());
  auto inv = a.Next(v1::HubMessage::kInvalidate, milliseconds(0));
  ASSERT_TRUE(inv);
  EXPECT_TRUE(Names(*inv, root_.ino()));
  EXPECT_TRUE(Names(*inv, file_.ino()));
  EXPECT_EQ(a.Renew(1, {root_.ino(), file_.ino()}),
            (std::vector<uint64_t>{root_.ino(), file_.ino()}));
}

TEST_F(HubCoherenceTest, NfsChangeOnTheHubInvalidatesSpokes) {
  RawSpoke a(channel_, "spoke-a");
  Lease(a, file_);
  auto nfs = NfsClient::Mount(hub_->NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
  const auto start = Clock::now();
  ASSERT_TRUE((*nfs)->WriteFile("/f", std::string(100000, 'x')).ok());
  const auto end = Clock::now();
  auto inv = a.Next(v1::HubMessage::kInvalidate, milliseconds(0));
  ASSERT_TRUE(inv) << "the NFS write's commit must invalidate A before it is answered";
  EXPECT_TRUE(Names(*inv, file_.ino()));
  EXPECT_LT(inv->at, end);
  EXPECT_LT(end - start, kTtl);

  // A fresh lease sees the committed size.
  grpc::ClientContext ctx;
  a.Tag(&ctx);
  v1::GetChunkMapRequest req;
  *req.mutable_ref() = file_;
  v1::GetChunkMapResponse resp;
  ASSERT_TRUE(a.stub().GetChunkMap(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.attr().size(), 100000u);
  // And a change through NFS of the directory (create) invalidates it too.
  {
    grpc::ClientContext lctx;
    a.Tag(&lctx);
    v1::LookupRequest lreq;
    *lreq.mutable_dir() = root_;
    lreq.set_name("f");
    v1::LookupResponse lresp;
    ASSERT_TRUE(a.stub().Lookup(&lctx, lreq, &lresp).ok());
  }
  ASSERT_TRUE((*nfs)->WriteFile("/g", "new").ok());
  auto dir_inv = a.Next(v1::HubMessage::kInvalidate, milliseconds(0));
  ASSERT_TRUE(dir_inv);
  EXPECT_TRUE(Names(*dir_inv, root_.ino()));
}

TEST_F(HubCoherenceTest, SilentSpokeDelaysChangeByAboutTheLeaseTtl) {
  RawSpoke a(channel_, "spoke-a", /*silent=*/true);
  RawSpoke b(channel_, "spoke-b");
  Lease(a, file_);
  const auto start = Clock::now();
  grpc::Status s = Chmod(b, file_, 0640);
  const auto took = Clock::now() - start;
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(a.Next(v1::HubMessage::kInvalidate, milliseconds(0)));
  EXPECT_GE(took, kTtl * 7 / 10) << Ms(took) << " ms";
  EXPECT_LE(took, kTtl * 2) << Ms(took) << " ms";
  std::printf("change delayed by a silent spoke: %.0f ms (lease TTL %lld ms)\n", Ms(took),
              static_cast<long long>(kTtl.count()));
}

TEST_F(HubCoherenceTest, RenewalsExtendLeasesAndReportLostOnes) {
  RawSpoke a(channel_, "spoke-a");
  RawSpoke b(channel_, "spoke-b");
  const v1::FileRef g = CreateFile("g");
  Lease(a, file_);
  Lease(a, g);
  // Renewed every 0.4 TTL for 1.6 TTLs: still held.
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    std::this_thread::sleep_for(kTtl * 4 / 10);
    EXPECT_TRUE(a.Renew(seq, {file_.ino(), g.ino()}).empty()) << "round " << seq;
  }
  ASSERT_TRUE(Chmod(b, file_, 0600).ok());
  EXPECT_EQ(a.Renew(10, {file_.ino(), g.ino(), 999999}),
            (std::vector<uint64_t>{file_.ino(), 999999}))
      << "f was invalidated; 999999 was never leased";
  // A lease left alone expires.
  std::this_thread::sleep_for(kTtl + milliseconds(100));
  EXPECT_EQ(a.Renew(11, {g.ino()}), std::vector<uint64_t>{g.ino()});
}

TEST_F(HubCoherenceTest, CallsTaggedWithUnknownSessionAreRefused) {
  grpc::ClientContext ctx;
  ctx.AddMetadata(kSessionKey, "12345");
  v1::GetAttrRequest req;
  *req.mutable_ref() = file_;
  v1::GetAttrResponse resp;
  grpc::Status s = stub_->GetAttr(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  auto code = ctx.GetServerTrailingMetadata().find(kGeofsCodeKey);
  ASSERT_NE(code, ctx.GetServerTrailingMetadata().end());
  EXPECT_EQ(std::string(code->second.data(), code->second.size()), kNoSessionToken);
}

TEST_F(HubCoherenceTest, WriteLeaseGoesToOneSessionAtATime) {
  RawSpoke a(channel_, "spoke-a");
  RawSpoke b(channel_, "spoke-b");
  v1::SpokeMessage acquire;
  acquire.mutable_acquire_write()->set_seq(7);
  *acquire.mutable_acquire_write()->mutable_ref() = file_;
  a.Send(acquire);
  auto granted = a.Next(v1::HubMessage::kWriteGranted);
  ASSERT_TRUE(granted);
  EXPECT_TRUE(granted->message.write_granted().granted());
  EXPECT_EQ(granted->message.write_granted().seq(), 7u);

  b.Send(acquire);
  EXPECT_FALSE(b.Next(v1::HubMessage::kWriteGranted, milliseconds(300)));
  v1::SpokeMessage release;
  *release.mutable_release_write()->mutable_ref() = file_;
  a.Send(release);
  auto b_granted = b.Next(v1::HubMessage::kWriteGranted);
  ASSERT_TRUE(b_granted);
  EXPECT_TRUE(b_granted->message.write_granted().granted());

  // A file that is gone is refused with its geofs code.
  v1::FileRef gone = file_;
  gone.set_gen(file_.gen() + 1);
  *acquire.mutable_acquire_write()->mutable_ref() = gone;
  a.Send(acquire);
  auto refused = a.Next(v1::HubMessage::kWriteGranted);
  ASSERT_TRUE(refused);
  EXPECT_FALSE(refused->message.write_granted().granted());
  EXPECT_EQ(refused->message.write_granted().error(), "stale");
}

TEST_F(HubCoherenceTest, InvalidationLatency) {
  RawSpoke a(channel_, "spoke-a");
  RawSpoke b(channel_, "spoke-b");
  constexpr int kRounds = 60;
  std::vector<double> latencies;
  for (int i = 0; i < kRounds; ++i) {
    Lease(a, file_);
    const auto start = Clock::now();
    ASSERT_TRUE(Chmod(b, file_, i % 2 ? 0600 : 0644).ok());
    const auto end = Clock::now();
    auto inv = a.Next(v1::HubMessage::kInvalidate, milliseconds(0));
    ASSERT_TRUE(inv) << "round " << i;
    EXPECT_LT(inv->at, end);
    latencies.push_back(Ms(inv->at - start));
  }
  std::sort(latencies.begin(), latencies.end());
  const double p50 = latencies[latencies.size() / 2];
  const double p99 = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
  std::printf(
      "invalidation latency (change call start -> invalidation received), %d rounds: "
      "p50 %.3f ms, p99 %.3f ms\n",
      kRounds, p50, p99);
  EXPECT_LT(p50, 100.0);

  grpc::ClientContext ctx;
  v1::StatsResponse stats;
  ASSERT_TRUE(stub_->Stats(&ctx, v1::StatsRequest(), &stats).ok());
  EXPECT_EQ(stats.sessions(), 2u);
  EXPECT_GE(stats.invalidations_sent(), static_cast<uint64_t>(kRounds));
  EXPECT_GE(stats.read_leases(), 1u);
}

}  // namespace
}  // namespace geofs::hub::testing
