// The hub end to end over an S3 object store (s3rver): import, fsck with
// chunk verification, a restart, and a re-import that sends nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hub_process.h"
#include "hub_test_tree.h"
#include "object/s3rver_process.h"
#include "tools/nfs_client.h"

namespace geofs::hub::testing {
namespace {

TEST(HubS3Test, ImportFsckRestartOverS3) {
  auto s3 = objtest::S3rverProcess::Start("geofs-hub");
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  HubOptions options;
  options.nfs = true;
  options.object_store = "s3://geofs-hub/chunks?endpoint=" + (*s3)->endpoint();
  options.env = {std::string("AWS_ACCESS_KEY_ID=") + objtest::S3rverProcess::kAccessKey,
                 std::string("AWS_SECRET_ACCESS_KEY=") + objtest::S3rverProcess::kSecretKey};
  auto hub = HubProcess::Create(options);
  ASSERT_TRUE(hub.ok());
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();

  TempDir dir;
  SourceTree tree(dir.path() + "/src");
  tree.File("x/random.bin", RandomBytes(6 << 20, 1));
  tree.File("x/copy.bin", tree.files().at("x/random.bin"));
  tree.File("text", SourceTree::Text(1 << 20, 2));
  auto first = (*hub)->Ctl({"import", tree.root(), "/s3"});
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->exit_code, 0) << first->out << first->err;

  auto stats = (*hub)->Ctl({"stats", "--json", "--list-store"});
  ASSERT_TRUE(stats.ok());
  auto json = nlohmann::json::parse(stats->out, nullptr, false);
  EXPECT_TRUE(json["object_store"].get<std::string>().starts_with("s3://geofs-hub/chunks"))
      << json["object_store"];
  EXPECT_GT(json["listed_objects"].get<uint64_t>(), 0u);
  // The namespace's count of the stored bytes matches the bucket's.
  EXPECT_EQ(json["stored_bytes"], json["listed_bytes"]);
  EXPECT_EQ(json["unsized_chunks"], 0u);
  EXPECT_LT(json["stored_bytes"].get<uint64_t>(), (6u << 20) + (1u << 20));

  ASSERT_TRUE((*hub)->Stop().ok()) << (*hub)->Log();
  ASSERT_TRUE((*hub)->Start().ok()) << (*hub)->Log();
  auto fsck = (*hub)->Ctl({"fsck", "--verify-data"});
  ASSERT_TRUE(fsck.ok());
  EXPECT_EQ(fsck->exit_code, 0) << fsck->out << fsck->err;
  auto again = (*hub)->Ctl({"import", tree.root(), "/s3"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->exit_code, 0) << again->err;
  EXPECT_NE(again->out.find("new bytes stored: 0 B (0;"), std::string::npos) << again->out;

  auto nfs = geofs::testing::NfsClient::Mount((*hub)->NfsUrl());
  ASSERT_TRUE(nfs.ok());
  for (const auto& [rel, content] : tree.files()) {
    auto back = (*nfs)->ReadFile("/s3/" + rel);
    ASSERT_TRUE(back.ok()) << rel;
    EXPECT_TRUE(*back == content) << rel;
  }
}

}  // namespace
}  // namespace geofs::hub::testing
