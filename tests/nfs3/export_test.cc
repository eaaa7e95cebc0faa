#include "nfs3/export.h"

#include <gtest/gtest.h>

#include "nfs3/nfs_test_util.h"
#include "vfs/memory_backend.h"

namespace geofs::nfs3 {
namespace {

using testing::MakePeer;

TEST(CidrTest, ParsesAndMatchesIpv4) {
  Cidr net = *Cidr::Parse("10.0.0.0/8");
  EXPECT_TRUE(net.Contains(MakePeer("10.0.0.1")));
  EXPECT_TRUE(net.Contains(MakePeer("10.255.255.255")));
  EXPECT_FALSE(net.Contains(MakePeer("11.0.0.0")));
  EXPECT_FALSE(net.Contains(MakePeer("9.255.255.255")));
  EXPECT_TRUE(net.Contains(MakePeer("::ffff:10.1.1.1")));  // v4-mapped
  EXPECT_FALSE(net.Contains(MakePeer("::1")));
  EXPECT_EQ(net.ToString(), "10.0.0.0/8");
}

TEST(CidrTest, SingleAddressAndOddPrefixes) {
  Cidr host = *Cidr::Parse("127.0.0.1");
  EXPECT_EQ(host.ToString(), "127.0.0.1/32");
  EXPECT_TRUE(host.Contains(MakePeer("127.0.0.1")));
  EXPECT_FALSE(host.Contains(MakePeer("127.0.0.2")));
  Cidr odd = *Cidr::Parse("192.168.1.77/27");  // host bits are dropped
  EXPECT_EQ(odd.ToString(), "192.168.1.64/27");
  EXPECT_TRUE(odd.Contains(MakePeer("192.168.1.95")));
  EXPECT_FALSE(odd.Contains(MakePeer("192.168.1.96")));
  Cidr all = *Cidr::Parse("0.0.0.0/0");
  EXPECT_TRUE(all.Contains(MakePeer("8.8.8.8")));
  EXPECT_FALSE(all.Contains(MakePeer("2001:db8::1")));
}

TEST(CidrTest, ParsesAndMatchesIpv6) {
  Cidr net = *Cidr::Parse("fd00::/8");
  EXPECT_TRUE(net.Contains(MakePeer("fd12:3456::1")));
  EXPECT_FALSE(net.Contains(MakePeer("fe80::1")));
  EXPECT_FALSE(net.Contains(MakePeer("10.0.0.1")));
  EXPECT_EQ(net.ToString(), "fd00::/8");
  Cidr loop = *Cidr::Parse("::1");
  EXPECT_EQ(loop.ToString(), "::1/128");
  EXPECT_TRUE(loop.Contains(MakePeer("::1")));
  EXPECT_TRUE(Cidr::Parse("::/0")->Contains(MakePeer("2001:db8::7")));
  Cidr mapped = *Cidr::Parse("::ffff:10.0.0.0/104");
  EXPECT_TRUE(mapped.Contains(MakePeer("10.2.3.4")));
}

TEST(CidrTest, RejectsMalformedText) {
  for (const char* bad : {"", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0/8", "host",
                          "10.0.0.0/8/8", "10.0.0.0/-1", "10.0.0.0/ 8", "10.0.0.0/8x"}) {
    EXPECT_FALSE(Cidr::Parse(bad).ok()) << bad;
  }
}

TEST(SquashTest, Parse) {
  EXPECT_EQ(*ParseSquash("root"), Squash::kRoot);
  EXPECT_EQ(*ParseSquash("none"), Squash::kNone);
  EXPECT_EQ(*ParseSquash("all"), Squash::kAll);
  EXPECT_FALSE(ParseSquash("Root").ok());
}

TEST(ExportPathTest, Normalizes) {
  EXPECT_EQ(NormalizeExportPath("/"), "/");
  EXPECT_EQ(NormalizeExportPath(""), "/");
  EXPECT_EQ(NormalizeExportPath("///"), "/");
  EXPECT_EQ(NormalizeExportPath("/a/b/"), "/a/b");
  EXPECT_EQ(NormalizeExportPath("//a//b"), "/a/b");
  EXPECT_EQ(NormalizeExportPath("a"), "/a");
}

TEST(ExportTableTest, AddAndFind) {
  vfs::MemoryBackend backend;
  ExportTable table;
  ExportOptions options;
  options.path = "/data/";
  auto exp = table.Add(options, &backend);
  ASSERT_TRUE(exp.ok());
  EXPECT_EQ((*exp)->options.path, "/data");
  EXPECT_EQ((*exp)->id, ExportIdForPath("/data"));
  EXPECT_EQ(table.FindByPath("//data"), *exp);
  EXPECT_EQ(table.FindById((*exp)->id), *exp);
  EXPECT_EQ(table.FindByPath("/"), nullptr);
  EXPECT_EQ(table.FindById((*exp)->id + 1), nullptr);
  EXPECT_TRUE((*exp)->root == *backend.Root());

  EXPECT_EQ(table.Add(options, &backend).status().code(), StatusCode::kAlreadyExists);
  options.path = "relative";
  EXPECT_EQ(table.Add(options, &backend).status().code(), StatusCode::kInvalidArgument);
  options.path = "/a/../b";
  EXPECT_EQ(table.Add(options, &backend).status().code(), StatusCode::kInvalidArgument);
  options.path = "/a/./b";
  EXPECT_EQ(table.Add(options, &backend).status().code(), StatusCode::kInvalidArgument);
}

TEST(ExportIdTest, IsStableAndDistinct) {
  // Handles embed this id, so it must never change across releases.
  EXPECT_EQ(ExportIdForPath("/"), 0x2a0c975eu);
  EXPECT_EQ(ExportIdForPath("/datasets"), 0xd9a2542fu);
  EXPECT_NE(ExportIdForPath("/a"), ExportIdForPath("/b"));
}

rpc::CallContext SysCall(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids) {
  testing::Caller who = testing::User(uid, gid, std::move(gids));
  return testing::MakeContext(100003, 1, who);
}

TEST(CredentialsTest, RootSquash) {
  Export exp;
  exp.options.anon_uid = 70;
  exp.options.anon_gid = 71;
  vfs::Credentials c = exp.CredentialsFor(SysCall(0, 0, {0, 5}));
  EXPECT_EQ(c.uid, 70u);
  EXPECT_EQ(c.gid, 71u);
  EXPECT_EQ(c.groups, (std::vector<uint32_t>{71, 5}));
  c = exp.CredentialsFor(SysCall(1000, 0, {}));
  EXPECT_EQ(c.uid, 1000u);
  EXPECT_EQ(c.gid, 71u);
  c = exp.CredentialsFor(SysCall(1000, 100, {7}));
  EXPECT_EQ(c.uid, 1000u);
  EXPECT_EQ(c.gid, 100u);
  EXPECT_EQ(c.groups, (std::vector<uint32_t>{7}));
}

TEST(CredentialsTest, NoneAndAllSquash) {
  Export exp;
  exp.options.squash = Squash::kNone;
  vfs::Credentials c = exp.CredentialsFor(SysCall(0, 0, {0}));
  EXPECT_EQ(c.uid, 0u);
  EXPECT_EQ(c.gid, 0u);
  EXPECT_EQ(c.groups, (std::vector<uint32_t>{0}));
  exp.options.squash = Squash::kAll;
  c = exp.CredentialsFor(SysCall(1000, 100, {1, 2}));
  EXPECT_EQ(c.uid, 65534u);
  EXPECT_EQ(c.gid, 65534u);
  EXPECT_TRUE(c.groups.empty());
}

TEST(CredentialsTest, AuthNoneIsAnonymous) {
  Export exp;
  exp.options.squash = Squash::kNone;
  rpc::CallContext ctx = testing::MakeContext(100003, 1, testing::NoAuth());
  vfs::Credentials c = exp.CredentialsFor(ctx);
  EXPECT_EQ(c.uid, 65534u);
  EXPECT_EQ(c.gid, 65534u);
  EXPECT_TRUE(c.groups.empty());
}

TEST(AllowTest, EmptyAllowlistAllowsEveryone) {
  Export exp;
  EXPECT_TRUE(exp.Allows(MakePeer("203.0.113.9")));
  exp.options.allow.push_back(*Cidr::Parse("203.0.113.0/24"));
  exp.options.allow.push_back(*Cidr::Parse("::1"));
  EXPECT_TRUE(exp.Allows(MakePeer("203.0.113.9")));
  EXPECT_TRUE(exp.Allows(MakePeer("::1")));
  EXPECT_FALSE(exp.Allows(MakePeer("127.0.0.1")));
}

}  // namespace
}  // namespace geofs::nfs3

namespace geofs::nfs3 {
namespace {

TEST(ParseExportOptionsTest, TurnsDaemonFlagsIntoAPolicy) {
  ExportPolicyText policy;
  policy.read_only = true;
  policy.squash = "all";
  policy.anon_uid = 7;
  policy.anon_gid = 8;
  policy.allow = {"10.0.0.0/8", "::1"};
  auto options = ParseExportOptions("/datasets", policy);
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->path, "/datasets");
  EXPECT_TRUE(options->read_only);
  EXPECT_EQ(options->squash, Squash::kAll);
  EXPECT_EQ(options->anon_uid, 7u);
  EXPECT_EQ(options->anon_gid, 8u);
  ASSERT_EQ(options->allow.size(), 2u);
  EXPECT_EQ(options->allow[0].ToString(), "10.0.0.0/8");
}

TEST(ParseExportOptionsTest, ErrorsNameTheFlag) {
  ExportPolicyText bad_squash;
  bad_squash.squash = "some";
  auto r = ParseExportOptions("/", bad_squash);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--squash some"), std::string_view::npos);

  ExportPolicyText bad_allow;
  bad_allow.allow = {"10.0.0.0/33"};
  r = ParseExportOptions("/", bad_allow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--allow 10.0.0.0/33"), std::string_view::npos);
}

}  // namespace
}  // namespace geofs::nfs3
