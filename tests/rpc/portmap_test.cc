#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "portmap/portmap_program.h"
#include "rpc/server.h"
#include "tools/rpc_client.h"
#include "xdr/xdr.h"

namespace geofs::portmap {
namespace {

using testing::RpcClient;

std::vector<uint8_t> MappingArgs(uint32_t program, uint32_t version, uint32_t protocol) {
  xdr::Encoder e;
  e.U32(program);
  e.U32(version);
  e.U32(protocol);
  e.U32(0);
  return e.Flatten();
}

class PortmapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rpc::RpcServerOptions options;
    options.listen_address = "127.0.0.1";
    options.network_threads = 1;
    options.worker_threads = 2;
    server_ = std::make_unique<rpc::RpcServer>(options);
    ASSERT_TRUE(server_->Register(std::make_shared<PortmapProgram>(table_)).ok());
    ASSERT_TRUE(server_->Start().ok());
    auto client = RpcClient::Connect("127.0.0.1", server_->bound_ports()[0]);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  uint32_t CallForWord(Procedure proc, std::vector<uint8_t> args) {
    auto reply = client_->Call(kProgram, kVersion, static_cast<uint32_t>(proc), args);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok()) return 0xdead;
    EXPECT_EQ(reply->accept_stat, 0u);
    EXPECT_EQ(reply->body.size(), 4u);
    xdr::Decoder d(reply->body);
    uint32_t v = 0xdead;
    d.U32(&v);
    return v;
  }

  const std::vector<Mapping> table_ = {
      {100003, 3, kProtocolTcp, 2049},
      {100005, 3, kProtocolTcp, 20048},
      {100005, 1, kProtocolTcp, 20048},
  };
  std::unique_ptr<rpc::RpcServer> server_;
  std::unique_ptr<RpcClient> client_;
};

TEST_F(PortmapTest, GetPortAnswersFromTheTable) {
  EXPECT_EQ(CallForWord(Procedure::kGetPort, MappingArgs(100003, 3, kProtocolTcp)), 2049u);
  EXPECT_EQ(CallForWord(Procedure::kGetPort, MappingArgs(100005, 1, kProtocolTcp)), 20048u);
  EXPECT_EQ(CallForWord(Procedure::kGetPort, MappingArgs(100003, 3, kProtocolUdp)), 0u);
  EXPECT_EQ(CallForWord(Procedure::kGetPort, MappingArgs(100003, 4, kProtocolTcp)), 0u);
  EXPECT_EQ(CallForWord(Procedure::kGetPort, MappingArgs(100227, 3, kProtocolTcp)), 0u);
}

TEST_F(PortmapTest, DumpListsEveryMapping) {
  auto reply = client_->Call(kProgram, kVersion, static_cast<uint32_t>(Procedure::kDump));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->accept_stat, 0u);
  xdr::Decoder d(reply->body);
  std::vector<Mapping> listed;
  bool more = false;
  while (d.Present(&more) && more) {
    Mapping m;
    ASSERT_TRUE(d.U32(&m.program) && d.U32(&m.version) && d.U32(&m.protocol) && d.U32(&m.port));
    listed.push_back(m);
  }
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  ASSERT_EQ(listed.size(), table_.size());
  for (size_t i = 0; i < listed.size(); ++i) {
    EXPECT_EQ(listed[i].program, table_[i].program);
    EXPECT_EQ(listed[i].version, table_[i].version);
    EXPECT_EQ(listed[i].protocol, table_[i].protocol);
    EXPECT_EQ(listed[i].port, table_[i].port);
  }
}

TEST_F(PortmapTest, SetAndUnsetAreRefused) {
  EXPECT_EQ(CallForWord(Procedure::kSet, MappingArgs(300000, 1, kProtocolTcp)), 0u);
  EXPECT_EQ(CallForWord(Procedure::kUnset, MappingArgs(100003, 3, kProtocolTcp)), 0u);
  EXPECT_EQ(CallForWord(Procedure::kGetPort, MappingArgs(100003, 3, kProtocolTcp)), 2049u);
}

TEST_F(PortmapTest, NullCallItGarbageAndOtherVersions) {
  auto reply = client_->Call(kProgram, kVersion, static_cast<uint32_t>(Procedure::kNull));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->accept_stat, 0u);
  EXPECT_TRUE(reply->body.empty());

  reply = client_->Call(kProgram, kVersion, static_cast<uint32_t>(Procedure::kCallIt),
                        MappingArgs(1, 2, 3));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->accept_stat, 3u);  // PROC_UNAVAIL

  std::vector<uint8_t> short_args = {0, 0, 0, 1};
  reply = client_->Call(kProgram, kVersion, static_cast<uint32_t>(Procedure::kGetPort), short_args);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->accept_stat, 4u);  // GARBAGE_ARGS

  reply = client_->Call(kProgram, 4, static_cast<uint32_t>(Procedure::kNull));  // rpcbind v4
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->accept_stat, 2u);
  EXPECT_EQ(reply->mismatch_low, 2u);
  EXPECT_EQ(reply->mismatch_high, 2u);
}

}  // namespace
}  // namespace geofs::portmap
