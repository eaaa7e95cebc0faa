// Hostile or broken input against each running server. After each kind of
// abuse the daemon must still be alive, serve a normal libnfs client, and
// keep its memory bounded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "integration/daemon_test_base.h"
#include "tools/rpc_client.h"
#include "xdr/xdr.h"

namespace geofs::testing {
namespace {

constexpr uint32_t kNfs = 100003;
constexpr uint32_t kMount = 100005;
constexpr uint64_t kMaxRss = uint64_t{300} << 20;

std::vector<uint8_t> RecordMark(uint32_t length, bool last) {
  uint32_t mark = length | (last ? 0x80000000u : 0);
  return {static_cast<uint8_t>(mark >> 24), static_cast<uint8_t>(mark >> 16),
          static_cast<uint8_t>(mark >> 8), static_cast<uint8_t>(mark)};
}

// Closes with a TCP reset rather than an orderly shutdown.
void Abort(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

class BadInputTest : public ServerTest {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "none"})); }

  std::unique_ptr<RpcClient> Connect(uint16_t port,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto c = RpcClient::Connect("127.0.0.1", port, timeout);
    if (!c.ok()) {
      ADD_FAILURE() << c.status().ToString();
      return nullptr;
    }
    return std::move(c).value();
  }

  // The daemon is alive, a fresh libnfs client can write and read a file,
  // and the resident set stays under kMaxRss.
  void ExpectHealthy() {
    std::string how;
    ASSERT_FALSE(daemon_->Exited(&how)) << ServerKindName(server_kind()) << " daemon " << how;
    auto client = Mount();
    ASSERT_NE(client, nullptr) << "a normal client can no longer mount";
    std::string name = "/health-" + std::to_string(++health_checks_);
    GEOFS_ASSERT_OK(client->WriteFile(name, "still serving"));
    GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client->ReadFile(name));
    EXPECT_EQ(data, "still serving");
    GEOFS_ASSERT_OK_AND_ASSIGN(uint64_t rss, daemon_->RssBytes());
    EXPECT_LT(rss, kMaxRss) << "RSS " << (rss >> 20) << " MiB";
  }

  // A valid NFS call header (AUTH_NONE) for `procedure`, without arguments.
  std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t program, uint32_t procedure) {
    RpcCallSpec call;
    call.xid = xid;
    call.program = program;
    call.version = 3;
    call.procedure = procedure;
    return EncodeCall(call);
  }

  int health_checks_ = 0;
};

TEST_P(BadInputTest, RandomBytes) {
  std::mt19937 rng(1813);
  for (int conn = 0; conn < 32; ++conn) {
    auto c = Connect(conn % 2 == 0 ? daemon_->nfs_port() : daemon_->mount_port(),
                     std::chrono::seconds(2));
    ASSERT_NE(c, nullptr);
    std::vector<uint8_t> junk(16 + rng() % 65536);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    // Keep some record marks small, so the junk reaches the call parser too.
    if (conn % 4 == 1) {
      auto mark = RecordMark(static_cast<uint32_t>(junk.size() - 4), true);
      std::copy(mark.begin(), mark.end(), junk.begin());
    }
    // The server may close on us mid-send; that is a fine answer.
    if (c->SendBytes(junk).ok()) (void)c->ShutdownWrite();
    // Whatever comes back must be well-formed replies or a close.
    while (true) {
      auto record = c->ReadRecord(1 << 20);
      if (!record.ok()) break;
      GEOFS_EXPECT_OK(ParseReply(*record));
    }
  }
  ExpectHealthy();
}

TEST_P(BadInputTest, TruncatedRecordsThenClose) {
  std::vector<uint8_t> call = CallHeader(1, kNfs, 0);
  for (int i = 0; i < 50; ++i) {
    auto c = Connect(daemon_->nfs_port());
    ASSERT_NE(c, nullptr);
    auto mark = RecordMark(1000, true);
    GEOFS_ASSERT_OK(c->SendBytes(mark));
    GEOFS_ASSERT_OK(c->SendBytes(std::span(call).first(std::min<size_t>(call.size(), i))));
    if (i % 2 == 0) Abort(c->fd());
  }
  // Half a record mark, then an orderly close.
  {
    auto c = Connect(daemon_->mount_port());
    ASSERT_NE(c, nullptr);
    GEOFS_ASSERT_OK(c->SendBytes(std::vector<uint8_t>{0x80, 0x00}));
    GEOFS_ASSERT_OK(c->ShutdownWrite());
    EXPECT_TRUE(c->WaitForClose());
  }
  ExpectHealthy();
}

TEST_P(BadInputTest, RecordMarkClaimingTwoGibibytes) {
  auto c = Connect(daemon_->nfs_port());
  ASSERT_NE(c, nullptr);
  GEOFS_ASSERT_OK(c->SendBytes(RecordMark(0x7fffffff, true)));
  GEOFS_ASSERT_OK(c->SendBytes(CallHeader(7, kNfs, 0)));
  EXPECT_TRUE(c->WaitForClose()) << "an oversize record must close the connection";

  // The same total reached through many non-final fragments.
  auto frag = Connect(daemon_->nfs_port());
  ASSERT_NE(frag, nullptr);
  std::vector<uint8_t> piece(1 << 20, 0);
  bool closed_early = false;
  for (int i = 0; i < 8 && !closed_early; ++i) {
    std::vector<uint8_t> bytes = RecordMark(static_cast<uint32_t>(piece.size()), false);
    bytes.insert(bytes.end(), piece.begin(), piece.end());
    closed_early = !frag->SendBytes(bytes).ok();
  }
  EXPECT_TRUE(closed_early || frag->WaitForClose())
      << "8 MiB of fragments must exceed the record limit and close the connection";
  ExpectHealthy();
}

TEST_P(BadInputTest, FourGibibyteLengthsInsideCalls) {
  auto nfs = Connect(daemon_->nfs_port());
  ASSERT_NE(nfs, nullptr);

  // WRITE whose data length claims 4 GiB - 1.
  std::string handle(32, 'h');
  xdr::Encoder write;
  write.U32(static_cast<uint32_t>(handle.size()));
  write.FixedOpaque(std::span(reinterpret_cast<const uint8_t*>(handle.data()), handle.size()));
  write.U64(0);           // offset
  write.U32(0xffffffff);  // count
  write.U32(0);           // UNSTABLE
  write.U32(0xffffffff);  // opaque data length
  write.U32(0xdeadbeef);  // and a few bytes of it
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply w, nfs->Call(kNfs, 3, 7, write.Flatten()));
  EXPECT_TRUE(w.accepted);
  EXPECT_EQ(w.accept_stat, 4u) << "GARBAGE_ARGS";

  // A file handle whose length claims 4 GiB - 1.
  std::vector<uint8_t> getattr = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply g, nfs->Call(kNfs, 3, 1, getattr));
  EXPECT_EQ(g.accept_stat, 4u) << "GARBAGE_ARGS";

  // MNT with a 4 GiB directory path.
  auto mount = Connect(daemon_->mount_port());
  ASSERT_NE(mount, nullptr);
  std::vector<uint8_t> mnt = {0xff, 0xff, 0xff, 0xff, '/', 0, 0, 0};
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply m, mount->Call(kMount, 3, 1, mnt, RpcAuth::Sys(0, 0)));
  EXPECT_EQ(m.accept_stat, 4u) << "GARBAGE_ARGS";

  // AUTH_SYS credentials whose machine name claims 4 GiB.
  RpcAuth bad_cred;
  bad_cred.flavor = 1;
  bad_cred.body = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'h', 'o', 's', 't'};
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply a, nfs->Call(kNfs, 3, 0, {}, bad_cred));
  EXPECT_FALSE(a.accepted);
  EXPECT_EQ(a.reject_stat, 1u) << "AUTH_ERROR";
  EXPECT_EQ(a.auth_stat, 1u) << "AUTH_BADCRED";

  // An opaque_auth body length of 4 GiB in the header itself.
  RpcCallSpec call;
  call.xid = nfs->NextXid();
  call.program = kNfs;
  call.version = 3;
  std::vector<uint8_t> header = EncodeCall(call);
  // cred.length sits after xid, mtype, rpcvers, prog, vers, proc, flavor.
  header[28] = header[29] = header[30] = header[31] = 0xff;
  GEOFS_ASSERT_OK(nfs->SendBytes(FrameRecord(header)));
  // Either an error reply or a closed connection; not silence.
  auto reply = nfs->ReadReply();
  if (reply.ok()) {
    EXPECT_FALSE(reply->accepted && reply->accept_stat == 0) << "a broken header succeeded";
  } else {
    EXPECT_NE(reply.status().code(), StatusCode::kDeadlineExceeded) << reply.status().ToString();
  }
  ExpectHealthy();
}

TEST_P(BadInputTest, UnknownProgramsInBulk) {
  auto c = Connect(daemon_->nfs_port());
  ASSERT_NE(c, nullptr);
  // Pipelined: 1,000 calls out before any reply is read.
  constexpr int kCalls = 1000;
  std::vector<uint8_t> burst;
  for (int i = 0; i < kCalls; ++i) {
    RpcCallSpec call;
    call.xid = 10000 + i;
    call.program = 200000 + i;
    call.version = static_cast<uint32_t>(i % 5);
    call.procedure = static_cast<uint32_t>(i % 30);
    auto framed = FrameRecord(EncodeCall(call));
    burst.insert(burst.end(), framed.begin(), framed.end());
  }
  std::thread sender([&] { GEOFS_EXPECT_OK(c->SendBytes(burst)); });
  int answered = 0;
  for (int i = 0; i < kCalls; ++i) {
    auto reply = c->ReadReply();
    if (!reply.ok()) {
      ADD_FAILURE() << "after " << answered << " replies: " << reply.status().ToString();
      break;
    }
    EXPECT_TRUE(reply->accepted);
    EXPECT_EQ(reply->accept_stat, 1u) << "PROG_UNAVAIL";
    ++answered;
  }
  sender.join();
  EXPECT_EQ(answered, kCalls);
  ExpectHealthy();
}

TEST_P(BadInputTest, ClientsVanishingMidRecordAndMidReply) {
  auto writer = Mount();
  ASSERT_NE(writer, nullptr);
  GEOFS_ASSERT_OK(writer->WriteFile("/big", std::string(4 << 20, 'b')));
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(auto big, raw->Lookup(raw->root(), "big"));
  ASSERT_NFS_STATUS(NFS3_OK, big.status);

  for (int i = 0; i < 20; ++i) {
    // Half of a 1 MiB WRITE, then a reset.
    auto c = Connect(daemon_->nfs_port());
    ASSERT_NE(c, nullptr);
    std::vector<uint8_t> call = CallHeader(100 + i, kNfs, 7);
    GEOFS_ASSERT_OK(c->SendBytes(RecordMark(static_cast<uint32_t>(call.size()) + (1 << 20), true)));
    GEOFS_ASSERT_OK(c->SendBytes(call));
    GEOFS_ASSERT_OK(c->SendBytes(std::vector<uint8_t>(512 << 10, 'w')));
    Abort(c->fd());
  }
  for (int i = 0; i < 10; ++i) {
    // Many 1 MiB READs queued, then gone before reading a byte of the replies.
    auto c = Connect(daemon_->nfs_port());
    ASSERT_NE(c, nullptr);
    std::vector<uint8_t> burst;
    for (int j = 0; j < 32; ++j) {
      xdr::Encoder args;
      args.Opaque(std::span(reinterpret_cast<const uint8_t*>(big.fh.data()), big.fh.size()));
      args.U64((j % 4) * (1 << 20));
      args.U32(1 << 20);
      RpcCallSpec call;
      call.xid = 5000 + j;
      call.program = kNfs;
      call.version = 3;
      call.procedure = 6;
      call.cred = RpcAuth::Sys(0, 0);
      call.args = args.Flatten();
      auto framed = FrameRecord(EncodeCall(call));
      burst.insert(burst.end(), framed.begin(), framed.end());
    }
    GEOFS_ASSERT_OK(c->SendBytes(burst));
    if (i % 2 == 0) Abort(c->fd());
  }
  ExpectHealthy();
}

TEST_P(BadInputTest, FiveHundredConnectionsAtOnce) {
  constexpr int kConnections = 500;
  std::vector<std::unique_ptr<RpcClient>> conns;
  for (int i = 0; i < kConnections; ++i) {
    auto c = Connect(i % 2 == 0 ? daemon_->nfs_port() : daemon_->mount_port());
    ASSERT_NE(c, nullptr) << "connection " << i;
    conns.push_back(std::move(c));
  }
  // Every connection has a call outstanding at the same time.
  for (int i = 0; i < kConnections; ++i) {
    RpcCallSpec call;
    call.xid = 70000 + i;
    call.program = i % 2 == 0 ? kNfs : kMount;
    call.version = 3;
    GEOFS_ASSERT_OK(conns[i]->Send(call));
  }
  // Meanwhile a normal client still gets through.
  ExpectHealthy();
  int answered = 0;
  for (int i = 0; i < kConnections; ++i) {
    auto reply = conns[i]->ReadReply();
    if (!reply.ok()) {
      ADD_FAILURE() << "connection " << i << ": " << reply.status().ToString();
      continue;
    }
    EXPECT_EQ(reply->xid, static_cast<uint32_t>(70000 + i));
    EXPECT_EQ(reply->accept_stat, 0u);
    ++answered;
  }
  EXPECT_EQ(answered, kConnections);
  conns.clear();
  ExpectHealthy();
}

GEOFS_INSTANTIATE_FOR_EACH_SERVER(BadInputTest);

}  // namespace
}  // namespace geofs::testing
