#include "rpc/server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "rpc/test_program.h"
#include "tools/rpc_client.h"
#include "xdr/xdr.h"

namespace geofs::rpc {
namespace {

using testing::RpcAuth;
using testing::RpcCallSpec;
using testing::RpcClient;
using testing::RpcReply;
using testing::TestProgram;
using namespace std::chrono_literals;

constexpr uint32_t kSuccess = 0;
constexpr uint32_t kProgUnavail = 1;
constexpr uint32_t kProgMismatch = 2;
constexpr uint32_t kProcUnavail = 3;
constexpr uint32_t kGarbageArgs = 4;
constexpr uint32_t kSystemErr = 5;

std::vector<uint8_t> DelayedArgs(uint32_t delay_ms, uint32_t value) {
  xdr::Encoder e;
  e.U32(delay_ms);
  e.U32(value);
  return e.Flatten();
}

std::vector<uint8_t> EchoArgs(const std::vector<uint8_t>& payload) {
  xdr::Encoder e;
  e.Opaque(payload);
  return e.Flatten();
}

uint32_t FirstWord(const RpcReply& r) {
  xdr::Decoder d(r.body);
  uint32_t v = 0;
  EXPECT_TRUE(d.U32(&v));
  return v;
}

std::vector<uint8_t> RandomBytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class RpcServerTest : public ::testing::Test {
 protected:
  void StartServer(RpcServerOptions options = {}) {
    options.listen_address = "127.0.0.1";
    if (options.ports.empty()) options.ports = {0};
    server_ = std::make_unique<RpcServer>(options);
    Status s = server_->Register(program_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    port_ = server_->bound_ports().at(0);
    ASSERT_NE(port_, 0);
  }

  std::unique_ptr<RpcClient> Connect(std::chrono::milliseconds timeout = 10s) {
    auto client = RpcClient::Connect("127.0.0.1", port_, timeout);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  // A NULL call on a fresh connection succeeds.
  void ExpectHealthy() {
    auto client = Connect();
    ASSERT_NE(client, nullptr);
    auto reply = client->Call(TestProgram::kNumber, 1, TestProgram::kNull);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_TRUE(reply->accepted);
    EXPECT_EQ(reply->accept_stat, kSuccess);
  }

  std::shared_ptr<TestProgram> program_ = std::make_shared<TestProgram>();
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
};

TEST_F(RpcServerTest, AnswersNullWithAuthNoneAndAuthSys) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  for (RpcAuth cred : {RpcAuth::None(), RpcAuth::Sys(1000, 1000, {4, 24, 27})}) {
    auto reply = client->Call(TestProgram::kNumber, 3, TestProgram::kNull, {}, cred);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_TRUE(reply->accepted);
    EXPECT_EQ(reply->accept_stat, kSuccess);
    EXPECT_TRUE(reply->body.empty());
  }
}

TEST_F(RpcServerTest, UnregisteredProgramsAreProgUnavail) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  for (uint32_t program : {100227u, 100003u, 123456u}) {  // NFSACL first, as Linux probes it
    auto reply = client->Call(program, 3, 0);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_TRUE(reply->accepted);
    EXPECT_EQ(reply->accept_stat, kProgUnavail) << program;
  }
}

TEST_F(RpcServerTest, WrongVersionIsProgMismatchWithTheRange) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  auto reply = client->Call(TestProgram::kNumber, 4, 0);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->accept_stat, kProgMismatch);
  EXPECT_EQ(reply->mismatch_low, 1u);
  EXPECT_EQ(reply->mismatch_high, 3u);
}

TEST_F(RpcServerTest, ProcUnavailGarbageArgsAndLostCalls) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  auto reply = client->Call(TestProgram::kNumber, 1, 42);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->accept_stat, kProcUnavail);
  std::vector<uint8_t> bad = {0, 0, 1, 0, 7};  // a 256-byte opaque with 1 byte
  reply = client->Call(TestProgram::kNumber, 1, TestProgram::kEcho, bad);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->accept_stat, kGarbageArgs);
  reply = client->Call(TestProgram::kNumber, 1, TestProgram::kLoseCall);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->accept_stat, kSystemErr);
}

TEST_F(RpcServerTest, AuthenticationErrorsAndRpcVersion) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  auto reply = client->Call(TestProgram::kNumber, 1, TestProgram::kWhoAmI, {},
                            RpcAuth::Sys(7, 8, std::vector<uint32_t>(16, 3)));
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->accept_stat, kSuccess);
  xdr::Decoder d(reply->body);
  uint32_t flavor, uid, gid, ngids;
  ASSERT_TRUE(d.U32(&flavor) && d.U32(&uid) && d.U32(&gid) && d.U32(&ngids));
  EXPECT_EQ(uid, 7u);
  EXPECT_EQ(gid, 8u);
  EXPECT_EQ(ngids, 16u);

  reply = client->Call(TestProgram::kNumber, 1, TestProgram::kWhoAmI, {},
                       RpcAuth::Sys(7, 8, std::vector<uint32_t>(17, 3)));
  ASSERT_TRUE(reply.ok());
  EXPECT_FALSE(reply->accepted);
  EXPECT_EQ(reply->reject_stat, 1u);
  EXPECT_EQ(reply->auth_stat, 1u);  // AUTH_BADCRED

  reply = client->Call(TestProgram::kNumber, 1, 0, {}, RpcAuth{6, {0, 0, 0, 1}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->auth_stat, 5u);  // RPCSEC_GSS: AUTH_TOOWEAK

  RpcCallSpec v3;
  v3.xid = 5;
  v3.rpc_version = 3;
  v3.program = TestProgram::kNumber;
  v3.version = 1;
  ASSERT_TRUE(client->Send(v3).ok());
  reply = client->ReadReply();
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->xid, 5u);
  EXPECT_EQ(reply->reject_stat, 0u);
  EXPECT_EQ(reply->rpc_low, 2u);
  EXPECT_EQ(reply->rpc_high, 2u);
}

TEST_F(RpcServerTest, RepliesComeBackAsProceduresFinish) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  RpcCallSpec slow;
  slow.xid = 1;
  slow.program = TestProgram::kNumber;
  slow.version = 1;
  slow.procedure = TestProgram::kDelayed;
  slow.args = DelayedArgs(700, 1);
  ASSERT_TRUE(client->Send(slow).ok());
  for (uint32_t i = 0; i < 20; ++i) {
    RpcCallSpec fast = slow;
    fast.xid = 100 + i;
    fast.args = DelayedArgs(0, 100 + i);
    ASSERT_TRUE(client->Send(fast).ok());
  }
  std::vector<uint32_t> order;
  for (int i = 0; i < 21; ++i) {
    auto reply = client->ReadReply();
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    ASSERT_EQ(reply->accept_stat, kSuccess);
    EXPECT_EQ(FirstWord(*reply), reply->xid);
    order.push_back(reply->xid);
  }
  EXPECT_EQ(order.back(), 1u) << "the slow call, sent first, is answered last";
}

TEST_F(RpcServerTest, ManyConcurrentCallsOnOneConnection) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  constexpr uint32_t kCalls = 400;  // more than max_calls_in_flight
  std::vector<uint8_t> stream;
  for (uint32_t i = 0; i < kCalls; ++i) {
    RpcCallSpec c;
    c.xid = 1000 + i;
    c.program = TestProgram::kNumber;
    c.version = 2;
    c.procedure = TestProgram::kDelayed;
    c.args = DelayedArgs((i * 7) % 11, i);
    auto framed = testing::FrameRecord(testing::EncodeCall(c));
    stream.insert(stream.end(), framed.begin(), framed.end());
  }
  ASSERT_TRUE(client->SendBytes(stream).ok());
  std::map<uint32_t, uint32_t> values;
  bool out_of_order = false;
  uint32_t last_xid = 0;
  for (uint32_t i = 0; i < kCalls; ++i) {
    auto reply = client->ReadReply();
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    ASSERT_EQ(reply->accept_stat, kSuccess);
    values[reply->xid] = FirstWord(*reply);
    if (reply->xid < last_xid) out_of_order = true;
    last_xid = reply->xid;
  }
  ASSERT_EQ(values.size(), kCalls);
  for (uint32_t i = 0; i < kCalls; ++i) EXPECT_EQ(values[1000 + i], i);
  EXPECT_TRUE(out_of_order);
  EXPECT_LE(program_->max_concurrency(), 16) << "bounded by the worker pool";
}

TEST_F(RpcServerTest, CallsInFlightPerConnectionAreBounded) {
  RpcServerOptions options;
  options.max_calls_in_flight = 3;
  StartServer(options);
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  std::vector<uint8_t> stream;
  for (uint32_t i = 0; i < 24; ++i) {
    RpcCallSpec c;
    c.xid = i;
    c.program = TestProgram::kNumber;
    c.version = 1;
    c.procedure = TestProgram::kDelayed;
    c.args = DelayedArgs(20, i);
    auto framed = testing::FrameRecord(testing::EncodeCall(c));
    stream.insert(stream.end(), framed.begin(), framed.end());
  }
  ASSERT_TRUE(client->SendBytes(stream).ok());  // all in one go, likely one read
  for (int i = 0; i < 24; ++i) {
    auto reply = client->ReadReply();
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(reply->accept_stat, kSuccess);
  }
  EXPECT_LE(program_->max_concurrency(), 3);
  EXPECT_GE(program_->max_concurrency(), 2);
}

TEST_F(RpcServerTest, MultiFragmentAndLargeCalls) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  std::mt19937 rng(7);
  std::vector<uint8_t> payload = RandomBytes(rng, 300'001);
  RpcCallSpec c;
  c.xid = 77;
  c.program = TestProgram::kNumber;
  c.version = 1;
  c.procedure = TestProgram::kEcho;
  c.args = EchoArgs(payload);
  ASSERT_TRUE(client->Send(c, 1000).ok());  // 301 fragments, like a libtirpc client
  auto reply = client->ReadReply();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->accept_stat, kSuccess);
  EXPECT_EQ(reply->body, c.args);

  payload = RandomBytes(rng, 1 << 20);  // a full-size WRITE's worth, one fragment
  c.xid = 78;
  c.args = EchoArgs(payload);
  ASSERT_TRUE(client->Send(c).ok());
  reply = client->ReadReply();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->xid, 78u);
  EXPECT_EQ(reply->body, c.args);
}

TEST_F(RpcServerTest, RandomBytesAndTruncatedRecordsCostOnlyTheirConnection) {
  StartServer();
  auto bystander = Connect();
  ASSERT_NE(bystander, nullptr);
  std::mt19937 rng(1234);
  for (int i = 0; i < 30; ++i) {
    auto abuser = Connect();
    ASSERT_NE(abuser, nullptr);
    ASSERT_TRUE(abuser->SendBytes(RandomBytes(rng, 1 + rng() % 8192)).ok());
  }  // each closes, most mid-record
  for (int i = 0; i < 5; ++i) {
    auto abuser = Connect();
    ASSERT_NE(abuser, nullptr);
    std::vector<uint8_t> partial = {0x80, 0, 0x10, 0};  // claims 4 KiB
    partial.resize(100, 0xab);
    ASSERT_TRUE(abuser->SendBytes(partial).ok());
  }
  // A well-framed record of random bytes (mostly dropped or rejected calls).
  for (int i = 0; i < 30; ++i) {
    auto abuser = Connect();
    ASSERT_NE(abuser, nullptr);
    ASSERT_TRUE(abuser->SendBytes(testing::FrameRecord(RandomBytes(rng, rng() % 200))).ok());
    ASSERT_TRUE(abuser->ShutdownWrite().ok());
    EXPECT_TRUE(abuser->WaitForClose()) << "closed once its calls are answered";
  }
  auto reply = bystander->Call(TestProgram::kNumber, 1, TestProgram::kNull);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->accept_stat, kSuccess);
  ExpectHealthy();
}

TEST_F(RpcServerTest, AClientLeavingMidRecordIsClosed) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  std::vector<uint8_t> partial = {0x80, 0, 0x03, 0xe8};  // claims 1000 bytes
  partial.resize(14, 1);
  ASSERT_TRUE(client->SendBytes(partial).ok());
  ASSERT_TRUE(client->ShutdownWrite().ok());
  EXPECT_TRUE(client->WaitForClose());
  ExpectHealthy();
}

TEST_F(RpcServerTest, CallsSentBeforeAHalfCloseAreStillAnswered) {
  StartServer();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  for (uint32_t i = 0; i < 3; ++i) {
    RpcCallSpec c;
    c.xid = 50 + i;
    c.program = TestProgram::kNumber;
    c.version = 1;
    c.procedure = TestProgram::kDelayed;
    c.args = DelayedArgs(50, i);
    ASSERT_TRUE(client->Send(c).ok());
  }
  ASSERT_TRUE(client->ShutdownWrite().ok());
  for (int i = 0; i < 3; ++i) {
    auto reply = client->ReadReply();
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(reply->accept_stat, kSuccess);
  }
  EXPECT_TRUE(client->WaitForClose());
}

TEST_F(RpcServerTest, ARecordClaimingGigabytesIsClosedAtOnce) {
  StartServer();
  for (std::vector<uint8_t> mark :
       {std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff}, std::vector<uint8_t>{0x7f, 0xff, 0xff, 0xff},
        std::vector<uint8_t>{0x80, 0x11, 0x00, 0x01}}) {
    auto client = Connect(5s);
    ASSERT_NE(client, nullptr);
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(client->SendBytes(mark).ok());
    EXPECT_TRUE(client->WaitForClose());
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  }
  ExpectHealthy();
}

TEST_F(RpcServerTest, FiveHundredConnectionsAtOnce) {
  StartServer();
  constexpr int kConnections = 500;
  std::vector<std::unique_ptr<RpcClient>> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(Connect());
    ASSERT_NE(clients.back(), nullptr) << i;
  }
  for (int i = 0; i < kConnections; ++i) {
    RpcCallSpec c;
    c.xid = static_cast<uint32_t>(i);
    c.program = TestProgram::kNumber;
    c.version = 1;
    c.procedure = TestProgram::kNull;
    ASSERT_TRUE(clients[i]->Send(c).ok()) << i;
  }
  for (int i = 0; i < kConnections; ++i) {
    auto reply = clients[i]->ReadReply();
    ASSERT_TRUE(reply.ok()) << i << ": " << reply.status().ToString();
    EXPECT_EQ(reply->xid, static_cast<uint32_t>(i));
    EXPECT_EQ(reply->accept_stat, kSuccess);
  }
}

TEST_F(RpcServerTest, ConnectionsBeyondTheLimitAreClosed) {
  RpcServerOptions options;
  options.max_connections = 3;
  StartServer(options);
  std::vector<std::unique_ptr<RpcClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(Connect());
    ASSERT_NE(clients.back(), nullptr);
    ASSERT_TRUE(clients.back()->Call(TestProgram::kNumber, 1, 0).ok());
  }
  auto extra = Connect();
  ASSERT_NE(extra, nullptr);
  EXPECT_TRUE(extra->WaitForClose());

  clients.pop_back();  // frees a slot once the server notices
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    auto again = Connect(1s);
    served = again && again->Call(TestProgram::kNumber, 1, 0).ok();
    if (!served) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(served);
}

TEST_F(RpcServerTest, IdleConnectionsAreClosedButBusyOnesAreNot) {
  RpcServerOptions options;
  options.idle_timeout = 300ms;
  StartServer(options);
  auto idle = Connect(5s);
  ASSERT_NE(idle, nullptr);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle->WaitForClose());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);

  auto busy = Connect(5s);
  ASSERT_NE(busy, nullptr);
  auto reply = busy->Call(TestProgram::kNumber, 1, TestProgram::kDelayed, DelayedArgs(900, 9));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(FirstWord(*reply), 9u);
}

TEST_F(RpcServerTest, APeerThatStopsReadingRepliesIsClosedWhenIdle) {
  RpcServerOptions options;
  options.idle_timeout = 300ms;
  StartServer(options);
  auto client = Connect(5s);
  ASSERT_NE(client, nullptr);
  constexpr uint32_t kCalls = 100;  // 100 MiB of replies, far beyond socket buffers
  std::vector<uint8_t> stream;
  for (uint32_t i = 0; i < kCalls; ++i) {
    RpcCallSpec c;
    c.xid = i;
    c.program = TestProgram::kNumber;
    c.version = 1;
    c.procedure = TestProgram::kFill;
    xdr::Encoder args;
    args.U32(1 << 20);
    c.args = args.Flatten();
    auto framed = testing::FrameRecord(testing::EncodeCall(c));
    stream.insert(stream.end(), framed.begin(), framed.end());
  }
  ASSERT_TRUE(client->SendBytes(stream).ok());
  std::this_thread::sleep_for(1500ms);  // read nothing
  size_t received = 0;
  std::vector<uint8_t> sink(1 << 20);
  while (true) {
    ssize_t n = recv(client->fd(), sink.data(), sink.size(), 0);
    if (n <= 0) break;
    received += static_cast<size_t>(n);
  }
  EXPECT_LT(received, size_t{kCalls} << 19) << "closed long before every reply was sent";
  ExpectHealthy();
}

TEST_F(RpcServerTest, ListensOnEveryRequestedPort) {
  RpcServerOptions options;
  options.ports = {0, 0};
  StartServer(options);
  ASSERT_EQ(server_->bound_ports().size(), 2u);
  EXPECT_NE(server_->bound_ports()[0], server_->bound_ports()[1]);
  for (uint16_t port : server_->bound_ports()) {
    auto client = RpcClient::Connect("127.0.0.1", port);
    ASSERT_TRUE(client.ok());
    auto reply = (*client)->Call(TestProgram::kNumber, 1, 0);
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply->accept_stat, kSuccess);
  }
}

TEST_F(RpcServerTest, StartFailsOnAPortInUseAndOnBadOptions) {
  StartServer();
  RpcServerOptions taken;
  taken.listen_address = "127.0.0.1";
  taken.ports = {port_};
  RpcServer second(taken);
  EXPECT_FALSE(second.Start().ok());

  RpcServerOptions bad_address;
  bad_address.listen_address = "not-an-address";
  EXPECT_EQ(RpcServer(bad_address).Start().code(), StatusCode::kInvalidArgument);
  RpcServerOptions no_workers;
  no_workers.listen_address = "127.0.0.1";
  no_workers.worker_threads = 0;
  EXPECT_EQ(RpcServer(no_workers).Start().code(), StatusCode::kInvalidArgument);
  ExpectHealthy();
}

TEST_F(RpcServerTest, StopClosesConnectionsEvenWithCallsInFlight) {
  StartServer();
  auto client = Connect(5s);
  ASSERT_NE(client, nullptr);
  RpcCallSpec c;
  c.xid = 1;
  c.program = TestProgram::kNumber;
  c.version = 1;
  c.procedure = TestProgram::kDelayed;
  c.args = DelayedArgs(300, 1);
  ASSERT_TRUE(client->Send(c).ok());
  std::this_thread::sleep_for(50ms);  // let the call reach a worker
  server_->Stop();
  EXPECT_TRUE(client->WaitForClose());
  server_->Stop();  // idempotent
  EXPECT_FALSE(RpcClient::Connect("127.0.0.1", port_, 1s).ok());
}

// Keeps every Responder it is given, to be called whenever the test likes.
class StashingProgram : public Program {
 public:
  uint32_t program() const override { return 400100; }
  uint32_t min_version() const override { return 1; }
  uint32_t max_version() const override { return 1; }
  void Dispatch(const CallContext& ctx, std::span<const uint8_t>, Responder respond) override {
    std::lock_guard lock(mu);
    stashed.push_back(std::move(respond));
    stashed_xids.push_back(ctx.xid);
  }
  std::mutex mu;
  std::vector<Responder> stashed;  // in arrival order, which workers may swap
  std::vector<uint32_t> stashed_xids;
};

TEST(RpcServerLifetimeTest, RespondersMayOutliveTheServer) {
  auto program = std::make_shared<StashingProgram>();
  RpcServerOptions options;
  options.listen_address = "127.0.0.1";
  auto server = std::make_unique<RpcServer>(options);
  ASSERT_TRUE(server->Register(program).ok());
  ASSERT_TRUE(server->Start().ok());
  auto client = RpcClient::Connect("127.0.0.1", server->bound_ports()[0], 5s);
  ASSERT_TRUE(client.ok());
  for (uint32_t xid = 1; xid <= 2; ++xid) {
    RpcCallSpec c;
    c.xid = xid;
    c.program = 400100;
    c.version = 1;
    ASSERT_TRUE((*client)->Send(c).ok());
  }
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard lock(program->mu);
      if (program->stashed.size() == 2) break;
    }
    std::this_thread::sleep_for(2ms);
  }
  std::lock_guard lock(program->mu);
  ASSERT_EQ(program->stashed.size(), 2u);
  program->stashed[0](Reply());  // answered while the server runs
  auto reply = (*client)->ReadReply();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->xid, program->stashed_xids[0]);

  server.reset();
  program->stashed[1](Reply());  // after the server is gone: discarded
  program->stashed.clear();
  EXPECT_TRUE((*client)->WaitForClose());
}

}  // namespace
}  // namespace geofs::rpc
