#include "rpc/message.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/rpc_client.h"

namespace geofs::rpc {
namespace {

using testing::EncodeCall;
using testing::ParseReply;
using testing::RpcAuth;
using testing::RpcCallSpec;

RpcCallSpec Spec() {
  RpcCallSpec c;
  c.xid = 0xabcdef01;
  c.program = 100003;
  c.version = 3;
  c.procedure = 1;
  c.args = {1, 2, 3, 4};
  return c;
}

std::vector<uint32_t> Gids(size_t n) {
  std::vector<uint32_t> g(n);
  for (size_t i = 0; i < n; ++i) g[i] = 1000 + static_cast<uint32_t>(i);
  return g;
}

TEST(ParseCallTest, AuthNoneCall) {
  std::vector<uint8_t> record = EncodeCall(Spec());
  CallHeader h = ParseCall(record);
  ASSERT_EQ(h.disposition, CallDisposition::kDispatch);
  EXPECT_EQ(h.xid, 0xabcdef01u);
  EXPECT_EQ(h.program, 100003u);
  EXPECT_EQ(h.version, 3u);
  EXPECT_EQ(h.procedure, 1u);
  EXPECT_EQ(h.flavor, AuthFlavor::kNone);
  EXPECT_FALSE(h.auth_sys.has_value());
  ASSERT_EQ(h.args_offset, record.size() - 4);
  EXPECT_EQ(record[h.args_offset], 1);
}

TEST(ParseCallTest, AuthSysWithSixteenGids) {
  RpcCallSpec c = Spec();
  c.cred = RpcAuth::Sys(501, 20, Gids(16), std::string(255, 'm'), 77);
  std::vector<uint8_t> record = EncodeCall(c);
  CallHeader h = ParseCall(record);
  ASSERT_EQ(h.disposition, CallDisposition::kDispatch);
  EXPECT_EQ(h.flavor, AuthFlavor::kSys);
  ASSERT_TRUE(h.auth_sys.has_value());
  EXPECT_EQ(h.auth_sys->stamp, 77u);
  EXPECT_EQ(h.auth_sys->machine_name, std::string(255, 'm'));
  EXPECT_EQ(h.auth_sys->uid, 501u);
  EXPECT_EQ(h.auth_sys->gid, 20u);
  EXPECT_EQ(h.auth_sys->gids, Gids(16));
  EXPECT_EQ(h.args_offset, record.size() - 4);
}

TEST(ParseCallTest, MalformedAuthSysIsBadCred) {
  auto parse_cred = [](RpcAuth cred) {
    RpcCallSpec c = Spec();
    c.cred = std::move(cred);
    return ParseCall(EncodeCall(c));
  };
  struct Case {
    const char* what;
    RpcAuth cred;
  };
  RpcAuth trailing = RpcAuth::Sys(1, 1);
  trailing.body.insert(trailing.body.end(), {0, 0, 0, 0});
  RpcAuth truncated = RpcAuth::Sys(1, 1, Gids(3));
  truncated.body.resize(truncated.body.size() - 4);
  std::vector<Case> cases = {
      {"17 gids", RpcAuth::Sys(1, 1, Gids(17))},
      {"256-byte machine name", RpcAuth::Sys(1, 1, {}, std::string(256, 'm'))},
      {"trailing bytes", trailing},
      {"gids cut short", truncated},
      {"empty body", RpcAuth{1, {}}},
  };
  for (const Case& c : cases) {
    CallHeader h = parse_cred(c.cred);
    EXPECT_EQ(h.disposition, CallDisposition::kAuthError) << c.what;
    EXPECT_EQ(h.auth_error, AuthStat::kBadCred) << c.what;
    EXPECT_EQ(h.xid, 0xabcdef01u) << c.what;
  }
}

TEST(ParseCallTest, TruncatedCredentialIsBadCred) {
  RpcCallSpec c = Spec();
  c.cred = RpcAuth::Sys(1, 2, Gids(4));
  c.args.clear();
  std::vector<uint8_t> record = EncodeCall(c);
  // Cut inside the credential (6 header words + flavor + length + a bit).
  for (size_t cut : {24u, 28u, 32u, 40u}) {
    std::vector<uint8_t> shorter(record.begin(), record.begin() + cut);
    CallHeader h = ParseCall(shorter);
    EXPECT_EQ(h.disposition, CallDisposition::kAuthError) << cut;
    EXPECT_EQ(h.auth_error, AuthStat::kBadCred) << cut;
  }
}

TEST(ParseCallTest, CredentialLongerThan400BytesIsBadCred) {
  RpcCallSpec c = Spec();
  c.cred = RpcAuth{0, std::vector<uint8_t>(404, 0)};
  CallHeader h = ParseCall(EncodeCall(c));
  EXPECT_EQ(h.disposition, CallDisposition::kAuthError);
  EXPECT_EQ(h.auth_error, AuthStat::kBadCred);
}

TEST(ParseCallTest, BadVerifierIsBadVerf) {
  RpcCallSpec c = Spec();
  c.verf = RpcAuth{0, std::vector<uint8_t>(404, 0)};
  CallHeader h = ParseCall(EncodeCall(c));
  EXPECT_EQ(h.auth_error, AuthStat::kBadVerf);

  c = Spec();
  c.args.clear();
  std::vector<uint8_t> record = EncodeCall(c);
  record.resize(record.size() - 2);  // the verifier's length word is cut
  h = ParseCall(record);
  EXPECT_EQ(h.disposition, CallDisposition::kAuthError);
  EXPECT_EQ(h.auth_error, AuthStat::kBadVerf);
}

TEST(ParseCallTest, OtherFlavorsAreRefused) {
  RpcCallSpec c = Spec();
  c.cred = RpcAuth{2, {1, 2, 3, 4}};  // AUTH_SHORT
  EXPECT_EQ(ParseCall(EncodeCall(c)).auth_error, AuthStat::kRejectedCred);
  for (uint32_t flavor : {3u, 6u, 390003u, 0xffffffffu}) {
    c.cred = RpcAuth{flavor, {}};
    CallHeader h = ParseCall(EncodeCall(c));
    EXPECT_EQ(h.disposition, CallDisposition::kAuthError) << flavor;
    EXPECT_EQ(h.auth_error, AuthStat::kTooWeak) << flavor;
  }
}

TEST(ParseCallTest, WrongRpcVersionIsRpcMismatch) {
  RpcCallSpec c = Spec();
  c.rpc_version = 3;
  CallHeader h = ParseCall(EncodeCall(c));
  EXPECT_EQ(h.disposition, CallDisposition::kRpcMismatch);
  EXPECT_EQ(h.xid, 0xabcdef01u);
}

TEST(ParseCallTest, DropsWhatCannotBeAnswered) {
  std::vector<uint8_t> record = EncodeCall(Spec());
  for (size_t cut : {0u, 3u, 4u, 8u, 12u, 16u, 20u}) {
    std::vector<uint8_t> shorter(record.begin(), record.begin() + cut);
    EXPECT_EQ(ParseCall(shorter).disposition, CallDisposition::kDrop) << cut;
  }
  record[7] = 1;  // mtype REPLY
  EXPECT_EQ(ParseCall(record).disposition, CallDisposition::kDrop);
}

TEST(ReplyHeaderTest, AcceptedSuccessWithBody) {
  OutgoingReply reply{ReplyHeader::Accepted(7, AcceptStat::kSuccess), {}};
  reply.body.U32(0xdeadbeef);
  ASSERT_TRUE(reply.header.SetBodySize(reply.body.size()));
  std::vector<uint8_t> wire = reply.Flatten();
  std::vector<uint8_t> expected = {
      0x80, 0,    0,    28,  // one fragment: 6 header words + 1 body word
      0,    0,    0,    7,   // xid
      0,    0,    0,    1,   // REPLY
      0,    0,    0,    0,   // MSG_ACCEPTED
      0,    0,    0,    0,   // verifier AUTH_NONE
      0,    0,    0,    0,   // ... empty
      0,    0,    0,    0,   // SUCCESS
      0xde, 0xad, 0xbe, 0xef};
  EXPECT_EQ(wire, expected);
}

TEST(ReplyHeaderTest, EveryKindDecodes) {
  auto decode = [](const ReplyHeader& h) {
    std::span<const uint8_t> b = h.bytes();
    uint32_t mark = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    EXPECT_EQ(mark, 0x80000000u | (b.size() - 4));
    auto r = ParseReply(b.subspan(4));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : testing::RpcReply{};
  };
  testing::RpcReply r = decode(ReplyHeader::Accepted(1, AcceptStat::kGarbageArgs));
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.accept_stat, 4u);
  r = decode(ReplyHeader::ProgMismatch(2, 3, 4));
  EXPECT_EQ(r.xid, 2u);
  EXPECT_EQ(r.accept_stat, 2u);
  EXPECT_EQ(r.mismatch_low, 3u);
  EXPECT_EQ(r.mismatch_high, 4u);
  r = decode(ReplyHeader::RpcMismatch(5));
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.reject_stat, 0u);
  EXPECT_EQ(r.rpc_low, 2u);
  EXPECT_EQ(r.rpc_high, 2u);
  r = decode(ReplyHeader::AuthError(6, AuthStat::kTooWeak));
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.reject_stat, 1u);
  EXPECT_EQ(r.auth_stat, 5u);
}

TEST(ReplyHeaderTest, RefusesABodyThatDoesNotFitInAFragment) {
  ReplyHeader h = ReplyHeader::Accepted(1, AcceptStat::kSuccess);
  EXPECT_FALSE(h.SetBodySize(size_t{1} << 31));
  EXPECT_TRUE(h.SetBodySize((size_t{1} << 31) - 1 - 24));
}

}  // namespace
}  // namespace geofs::rpc
