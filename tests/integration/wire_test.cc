// RPC-level behaviour of each running server seen from raw sockets: NULL
// calls, program/version negotiation, fragments, shared ports, and PORTMAP
// (which only the spoke serves).
//
// rpcinfo is not used: even with -n PORT it first asks an rpcbind on ADDR:111
// (to convert the address), so it fails without one and, for 127.0.0.1,
// queries that rpcbind instead of PORT when one runs (see NOTES.md).
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "integration/daemon_test_base.h"
#include "tools/rpc_client.h"
#include "xdr/xdr.h"

namespace geofs::testing {
namespace {

constexpr uint32_t kPortmap = 100000;
constexpr uint32_t kNfs = 100003;
constexpr uint32_t kMount = 100005;
constexpr uint32_t kNfsAcl = 100227;
constexpr uint32_t kTcp = 6;

enum AcceptStat : uint32_t {
  kSuccess = 0,
  kProgUnavail = 1,
  kProgMismatch = 2,
  kProcUnavail = 3,
  kGarbageArgs = 4,
};

std::unique_ptr<RpcClient> ConnectTo(uint16_t port) {
  auto client = RpcClient::Connect("127.0.0.1", port, std::chrono::seconds(10));
  if (!client.ok()) {
    ADD_FAILURE() << client.status().ToString();
    return nullptr;
  }
  return std::move(client).value();
}

class WireTest : public ServerTest {};
class SpokeWireTest : public DaemonTest {};

TEST_P(WireTest, NullCallsSucceedOnBothPorts) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  ASSERT_NE(daemon_->nfs_port(), daemon_->mount_port());
  auto nfs = ConnectTo(daemon_->nfs_port());
  auto mount = ConnectTo(daemon_->mount_port());
  ASSERT_NE(nfs, nullptr);
  ASSERT_NE(mount, nullptr);
  for (const RpcAuth& cred : {RpcAuth::None(), RpcAuth::Sys(1000, 1000, {4, 5})}) {
    GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply n, nfs->Call(kNfs, 3, 0, {}, cred));
    EXPECT_TRUE(n.accepted);
    EXPECT_EQ(n.accept_stat, kSuccess);
    EXPECT_TRUE(n.body.empty());
    GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply m, mount->Call(kMount, 3, 0, {}, cred));
    EXPECT_TRUE(m.accepted);
    EXPECT_EQ(m.accept_stat, kSuccess);
    EXPECT_TRUE(m.body.empty());
  }
}

TEST_P(WireTest, UnknownProgramsAndVersionsAreRejectedProperly) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  auto nfs = ConnectTo(daemon_->nfs_port());
  ASSERT_NE(nfs, nullptr);

  // The Linux client probes NFSACL on the NFS connection.
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply acl, nfs->Call(kNfsAcl, 3, 0));
  EXPECT_TRUE(acl.accepted);
  EXPECT_EQ(acl.accept_stat, kProgUnavail);
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply unknown, nfs->Call(0x20000042, 1, 0));
  EXPECT_EQ(unknown.accept_stat, kProgUnavail);

  for (uint32_t version : {2u, 4u}) {
    GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply r, nfs->Call(kNfs, version, 0));
    EXPECT_TRUE(r.accepted);
    EXPECT_EQ(r.accept_stat, kProgMismatch) << "NFS v" << version;
    EXPECT_EQ(r.mismatch_low, 3u);
    EXPECT_EQ(r.mismatch_high, 3u);
  }
  auto mount = ConnectTo(daemon_->mount_port());
  ASSERT_NE(mount, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply m4, mount->Call(kMount, 4, 0));
  EXPECT_EQ(m4.accept_stat, kProgMismatch);
  EXPECT_LE(m4.mismatch_low, 3u);
  EXPECT_EQ(m4.mismatch_high, 3u);

  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply proc, nfs->Call(kNfs, 3, 22));
  EXPECT_EQ(proc.accept_stat, kProcUnavail);
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply mproc, mount->Call(kMount, 3, 6));
  EXPECT_EQ(mproc.accept_stat, kProcUnavail);

  // GETATTR whose handle is cut short.
  std::vector<uint8_t> short_args = {0, 0, 0, 32, 1, 2, 3};
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply garbage, nfs->Call(kNfs, 3, 1, short_args));
  EXPECT_EQ(garbage.accept_stat, kGarbageArgs);

  // RPC version 3 is denied with RPC_MISMATCH(2, 2).
  RpcCallSpec call;
  call.xid = nfs->NextXid();
  call.program = kNfs;
  call.version = 3;
  call.rpc_version = 3;
  GEOFS_ASSERT_OK(nfs->Send(call));
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply denied, nfs->ReadReply());
  EXPECT_EQ(denied.xid, call.xid);
  EXPECT_FALSE(denied.accepted);
  EXPECT_EQ(denied.reject_stat, 0u);
  EXPECT_EQ(denied.rpc_low, 2u);
  EXPECT_EQ(denied.rpc_high, 2u);

  // The connection is still good after all of that.
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply null, nfs->Call(kNfs, 3, 0));
  EXPECT_EQ(null.accept_stat, kSuccess);
}

TEST_P(WireTest, MultiFragmentCallsAreReassembled) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  auto mount = ConnectTo(daemon_->mount_port());
  ASSERT_NE(mount, nullptr);
  // MNT of the export split into 4-byte fragments, as libtirpc may send it.
  xdr::Encoder args;
  args.String(daemon_->export_path());
  RpcCallSpec call;
  call.xid = mount->NextXid();
  call.program = kMount;
  call.version = 3;
  call.procedure = 1;
  call.cred = RpcAuth::Sys(0, 0);
  call.args = args.Flatten();
  GEOFS_ASSERT_OK(mount->Send(call, 4));
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply reply, mount->ReadReply());
  EXPECT_EQ(reply.xid, call.xid);
  ASSERT_EQ(reply.accept_stat, kSuccess);
  xdr::Decoder d(reply.body);
  uint32_t status = 99;
  ASSERT_TRUE(d.U32(&status));
  EXPECT_EQ(status, 0u) << "MNT3_OK";
}

TEST_P(WireTest, SharedPortServesBothPrograms) {
  DaemonOptions options;
  options.shared_port = true;
  options.extra_args = {"--squash", "none"};
  ASSERT_NO_FATAL_FAILURE(StartDaemonWith(options));
  ASSERT_EQ(daemon_->nfs_port(), daemon_->mount_port());
  auto conn = ConnectTo(daemon_->nfs_port());
  ASSERT_NE(conn, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply n, conn->Call(kNfs, 3, 0));
  EXPECT_EQ(n.accept_stat, kSuccess);
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply m, conn->Call(kMount, 3, 0));
  EXPECT_EQ(m.accept_stat, kSuccess);
  auto client = Mount();
  ASSERT_NE(client, nullptr);
  GEOFS_ASSERT_OK(client->WriteFile("/one-port", "works"));
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string data, client->ReadFile("/one-port"));
  EXPECT_EQ(data, "works");
}

// Decodes a MOUNT DUMP reply: (host, directory) pairs.
std::set<std::pair<std::string, std::string>> DecodeMountList(const std::vector<uint8_t>& body) {
  std::set<std::pair<std::string, std::string>> out;
  xdr::Decoder d(body);
  bool more = false;
  while (d.Present(&more) && more) {
    std::string_view host, dir;
    if (!d.String(255, &host) || !d.String(1024, &dir)) break;
    out.emplace(host, dir);
  }
  EXPECT_TRUE(d.ok() && d.remaining() == 0) << "malformed mount list";
  return out;
}

std::vector<uint8_t> DirPath(const std::string& path) {
  xdr::Encoder e;
  e.String(path);
  return e.Flatten();
}

TEST_P(WireTest, MountProceduresMntDumpUmntExport) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"--allow", "10.0.0.0/8", "--allow", "127.0.0.0/8"}));
  auto mount = ConnectTo(daemon_->mount_port());
  ASSERT_NE(mount, nullptr);
  const RpcAuth cred = RpcAuth::Sys(0, 0);
  const std::string root = daemon_->export_path();

  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply mnt, mount->Call(kMount, 3, 1, DirPath(root), cred));
  ASSERT_EQ(mnt.accept_stat, kSuccess);
  {
    xdr::Decoder d(mnt.body);
    uint32_t status = 99, flavors = 0;
    std::span<const uint8_t> fh;
    ASSERT_TRUE(d.U32(&status) && status == 0) << "MNT status " << status;
    ASSERT_TRUE(d.Opaque(64, &fh));
    EXPECT_GT(fh.size(), 0u);
    ASSERT_TRUE(d.U32(&flavors));
    std::set<uint32_t> listed;
    for (uint32_t i = 0; i < flavors; ++i) {
      uint32_t f = 0;
      ASSERT_TRUE(d.U32(&f));
      listed.insert(f);
    }
    EXPECT_EQ(listed.count(1), 1u) << "AUTH_SYS must be offered";
    EXPECT_EQ(d.remaining(), 0u);
  }
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply missing,
                             mount->Call(kMount, 3, 1, DirPath("/not/exported"), cred));
  ASSERT_EQ(missing.accept_stat, kSuccess);
  ASSERT_GE(missing.body.size(), 4u);
  EXPECT_EQ(missing.body[3], 2u) << "MNT3ERR_NOENT";

  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply dump, mount->Call(kMount, 3, 2));
  ASSERT_EQ(dump.accept_stat, kSuccess);
  EXPECT_EQ(DecodeMountList(dump.body).count({"127.0.0.1", root}), 1u);

  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply umnt, mount->Call(kMount, 3, 3, DirPath(root), cred));
  EXPECT_EQ(umnt.accept_stat, kSuccess);
  EXPECT_TRUE(umnt.body.empty());
  GEOFS_ASSERT_OK_AND_ASSIGN(dump, mount->Call(kMount, 3, 2));
  EXPECT_EQ(DecodeMountList(dump.body).count({"127.0.0.1", root}), 0u);

  GEOFS_ASSERT_OK_AND_ASSIGN(mnt, mount->Call(kMount, 3, 1, DirPath(root), cred));
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply umntall, mount->Call(kMount, 3, 4, {}, cred));
  EXPECT_EQ(umntall.accept_stat, kSuccess);
  GEOFS_ASSERT_OK_AND_ASSIGN(dump, mount->Call(kMount, 3, 2));
  EXPECT_TRUE(DecodeMountList(dump.body).empty());

  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply exports, mount->Call(kMount, 3, 5));
  ASSERT_EQ(exports.accept_stat, kSuccess);
  xdr::Decoder d(exports.body);
  std::map<std::string, std::set<std::string>> listed;
  bool more = false;
  while (d.Present(&more) && more) {
    std::string_view dir;
    ASSERT_TRUE(d.String(1024, &dir));
    auto& groups = listed[std::string(dir)];
    bool more_groups = false;
    while (d.Present(&more_groups) && more_groups) {
      std::string_view group;
      ASSERT_TRUE(d.String(255, &group));
      groups.emplace(group);
    }
  }
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed.begin()->first, root);
  EXPECT_EQ(listed.begin()->second, (std::set<std::string>{"10.0.0.0/8", "127.0.0.0/8"}));
}

uint32_t GetPort(RpcClient& pm, uint32_t program, uint32_t version) {
  xdr::Encoder args;
  args.U32(program);
  args.U32(version);
  args.U32(kTcp);
  args.U32(0);
  auto reply = pm.Call(kPortmap, 2, 3, args.Flatten());
  if (!reply.ok()) {
    ADD_FAILURE() << reply.status().ToString();
    return 0;
  }
  EXPECT_EQ(reply->accept_stat, kSuccess);
  xdr::Decoder d(reply->body);
  uint32_t port = 0;
  EXPECT_TRUE(d.U32(&port));
  EXPECT_EQ(d.remaining(), 0u);
  return port;
}

TEST_F(SpokeWireTest, PortmapAnswersGetportAndDump) {
  DaemonOptions options;
  options.portmap = true;
  ASSERT_NO_FATAL_FAILURE(StartDaemonWith(options));
  auto pm = ConnectTo(daemon_->portmap_port());
  ASSERT_NE(pm, nullptr);
  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply null, pm->Call(kPortmap, 2, 0));
  EXPECT_EQ(null.accept_stat, kSuccess);

  EXPECT_EQ(GetPort(*pm, kNfs, 3), daemon_->nfs_port());
  EXPECT_EQ(GetPort(*pm, kMount, 3), daemon_->mount_port());
  EXPECT_EQ(GetPort(*pm, kNfsAcl, 3), 0u);
  EXPECT_EQ(GetPort(*pm, kNfs, 4), 0u);

  GEOFS_ASSERT_OK_AND_ASSIGN(RpcReply dump, pm->Call(kPortmap, 2, 4));
  ASSERT_EQ(dump.accept_stat, kSuccess);
  xdr::Decoder d(dump.body);
  std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>> mappings;
  bool more = false;
  while (d.Present(&more) && more) {
    uint32_t prog, vers, prot, port;
    ASSERT_TRUE(d.U32(&prog) && d.U32(&vers) && d.U32(&prot) && d.U32(&port));
    mappings.emplace(prog, vers, prot, port);
  }
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  EXPECT_EQ(mappings.count({kNfs, 3, kTcp, daemon_->nfs_port()}), 1u);
  EXPECT_EQ(mappings.count({kMount, 3, kTcp, daemon_->mount_port()}), 1u);
}

GEOFS_INSTANTIATE_FOR_EACH_SERVER(WireTest);

}  // namespace
}  // namespace geofs::testing
