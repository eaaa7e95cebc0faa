// geofsctl --spoke ADDR stats [--json] against real geofs-hubd and
// geofs-spoked processes: the counters move as reads and writes go through
// the spoke, the JSON parses and agrees with the Prometheus text, and an
// unreachable or wrong address fails with a message naming it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "hub_process.h"
#include "spoke/metrics_http.h"
#include "spoke_process.h"
#include "tools/nfs_client.h"

namespace geofs::spoke::testing {
namespace {

using geofs::testing::NfsClient;
using hub::testing::CommandResult;
using hub::testing::HubOptions;
using hub::testing::HubProcess;
using hub::testing::TempDir;

constexpr size_t kFileBytes = 3 << 20;  // several chunks

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

CommandResult Geofsctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {hub::testing::GeofsctlPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = hub::testing::RunCommand(argv, std::nullopt, std::chrono::seconds(60));
  if (!r.ok()) {
    ADD_FAILURE() << r.status().ToString();
    return {};
  }
  return *r;
}

// A port on 127.0.0.1 where nothing listens (bound, then released).
uint16_t UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

class GeofsctlSpokeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hub = HubProcess::Create(HubOptions{});
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
    ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();
    std::ofstream(src_.path() + "/big.bin", std::ios::binary) << data_;
    auto imported = hub_->Ctl({"import", src_.path(), "/datasets"});
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_EQ(imported->exit_code, 0) << imported->err;

    SpokeProcessOptions options;
    options.hub_address = hub_->grpc_address();
    options.extra_args = {"--squash", "none"};
    auto spoke = SpokeProcess::Create(options);
    ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
    spoke_ = std::move(spoke).value();
    ASSERT_TRUE(spoke_->Start().ok()) << spoke_->Log();
    std::smatch m;
    const std::string log = spoke_->Log();
    ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(metrics on (\S+:\d+))"))) << log;
    metrics_address_ = m[1];
  }

  void TearDown() override {
    if (spoke_) {
      EXPECT_TRUE(spoke_->Stop().ok()) << spoke_->Log();
    }
    if (hub_ && hub_->running()) {
      EXPECT_TRUE(hub_->Stop().ok()) << hub_->Log();
    }
  }

  // geofsctl --spoke <spoke> stats --json, parsed: the one export's object.
  nlohmann::json JsonStats() {
    CommandResult r = Geofsctl({"--spoke", metrics_address_, "stats", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << r.out;
    if (doc.is_discarded() || !doc.contains("exports") || doc["exports"].size() != 1) {
      ADD_FAILURE() << "unexpected document:\n" << r.out;
      return nlohmann::json::object();
    }
    return doc["exports"][0];
  }

  uint64_t Count(const nlohmann::json& e, const char* key) {
    EXPECT_TRUE(e.contains(key) && e[key].is_number_unsigned()) << key << " in " << e.dump();
    return e.value(key, uint64_t{0});
  }

  TempDir src_;
  const std::string data_ = RandomBytes(kFileBytes, 1);
  std::unique_ptr<HubProcess> hub_;
  std::unique_ptr<SpokeProcess> spoke_;
  std::string metrics_address_;
};

TEST_F(GeofsctlSpokeTest, CountersMoveWithReadsAndWrites) {
  nlohmann::json before = JsonStats();
  EXPECT_EQ(before["export"], "/datasets");
  EXPECT_EQ(before["hub"], hub_->grpc_address());
  EXPECT_EQ(before["hub_link"], "up");
  EXPECT_EQ(before["mode"], "strict");
  EXPECT_GT(Count(before, "session"), 0u);
  EXPECT_EQ(Count(before, "journal_files"), 0u);
  EXPECT_EQ(Count(before, "journal_bytes"), 0u);

  auto nfs = NfsClient::Mount(spoke_->NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString() << "\n" << spoke_->Log();
  auto first = (*nfs)->ReadFile("/big.bin");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(*first == data_);
  nlohmann::json cold = JsonStats();
  // Random bytes do not compress: their stored form is at least as large.
  EXPECT_GE(Count(cold, "bytes_from_hub") - Count(before, "bytes_from_hub"), kFileBytes);
  EXPECT_GT(Count(cold, "chunk_misses"), Count(before, "chunk_misses"));
  EXPECT_GT(Count(cold, "metadata_misses"), Count(before, "metadata_misses"));
  EXPECT_GT(Count(cold, "leases_held"), 0u);

  auto second = (*nfs)->ReadFile("/big.bin");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_TRUE(*second == data_);
  nlohmann::json warm = JsonStats();
  EXPECT_EQ(Count(warm, "bytes_from_hub"), Count(cold, "bytes_from_hub"));
  EXPECT_EQ(Count(warm, "chunk_misses"), Count(cold, "chunk_misses"));
  EXPECT_GT(Count(warm, "chunk_hits"), Count(cold, "chunk_hits"));
  EXPECT_GE(Count(warm, "bytes_from_cache") - Count(cold, "bytes_from_cache"), kFileBytes);
  EXPECT_GT(Count(warm, "metadata_hits"), Count(cold, "metadata_hits"));

  // A change made at the hub reaches the spoke as an invalidation.
  const std::string changed = RandomBytes(kFileBytes / 2, 2);
  std::ofstream(src_.path() + "/big.bin", std::ios::binary | std::ios::trunc) << changed;
  auto reimported = hub_->Ctl({"import", src_.path(), "/datasets"});
  ASSERT_TRUE(reimported.ok()) << reimported.status().ToString();
  ASSERT_EQ(reimported->exit_code, 0) << reimported->err;
  EXPECT_GT(Count(JsonStats(), "invalidations"), Count(warm, "invalidations"));

  // A write through the spoke drains from its journal to the hub.
  const std::string written = RandomBytes(1 << 20, 3);
  ASSERT_TRUE((*nfs)->WriteFile("/written.bin", written).ok()) << (*nfs)->Error();
  nlohmann::json drained;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    drained = JsonStats();
    if (Count(drained, "journal_bytes") == 0 && Count(drained, "journal_files") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(Count(drained, "journal_bytes"), 0u) << spoke_->Log();
  EXPECT_EQ(Count(drained, "journal_files"), 0u);
  // Creating it was a namespace change, sent in some hub call.
  EXPECT_GE(Count(drained, "hub_changes"), 1u);
  EXPECT_GE(Count(drained, "hub_change_calls"), 1u);
  EXPECT_LE(Count(drained, "hub_change_calls"), Count(drained, "hub_changes"));
  EXPECT_EQ(Count(drained, "changes_deferred"), 0u) << "no other spoke holds anything";
  auto at_hub = hub_->Ctl({"stats", "--json"});
  ASSERT_TRUE(at_hub.ok());
  EXPECT_EQ(nlohmann::json::parse(at_hub->out)["logical_bytes"].get<uint64_t>(),
            changed.size() + written.size());

  // The Prometheus text renders the same counters (idle now, so equal).
  auto metrics = spoke_->Metrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  nlohmann::json now = JsonStats();
  for (const char* key : {"bytes_from_hub", "bytes_from_cache", "chunk_misses", "journal_bytes"}) {
    const std::string name =
        std::string("geofs_spoke_") + key + (std::string(key) == "journal_bytes" ? "" : "_total");
    EXPECT_EQ(static_cast<uint64_t>((*metrics)[name]), Count(now, key)) << name;
  }
}

TEST_F(GeofsctlSpokeTest, HumanTableShowsTheExport) {
  auto nfs = NfsClient::Mount(spoke_->NfsUrl());
  ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
  ASSERT_TRUE((*nfs)->ReadFile("/big.bin").ok());
  CommandResult r = Geofsctl({"--spoke", metrics_address_, "stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("export /datasets (strict) from hub " + hub_->grpc_address()),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(hub link +up for [0-9.]+ s, session [1-9])")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(chunks +\d+ hits, [1-9]\d* misses)"))) << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(bytes +.* from the cache, 3\.\d MiB from the hub)")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(journal +0 files, 0 B pending)"))) << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(changes +0 in 0 hub calls, 0 waited for other spokes)")))
      << r.out;
}

TEST(GeofsctlSpokeErrorsTest, UnreachableAddressFailsNamingIt) {
  const std::string address = "127.0.0.1:" + std::to_string(UnusedPort());
  for (bool json : {false, true}) {
    std::vector<std::string> args = {"--spoke", address, "stats"};
    if (json) args.push_back("--json");
    CommandResult r = Geofsctl(args);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(address), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(GeofsctlSpokeErrorsTest, WrongOrMalformedReplyFailsNamingTheAddress) {
  // Something that is not a spoke's stats endpoint: Prometheus text where
  // JSON belongs, and no /stats.json on a second server.
  auto not_json = MetricsHttpServer::Start(
      "127.0.0.1", 0,
      {{"/stats.json", "application/json", [] { return std::string("geofs_spoke_x 1\n"); }}});
  ASSERT_TRUE(not_json.ok()) << not_json.status().ToString();
  const std::string bad = "127.0.0.1:" + std::to_string((*not_json)->port());
  CommandResult r = Geofsctl({"--spoke", bad, "stats", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("malformed"), std::string::npos) << r.err;

  auto no_route = MetricsHttpServer::Start(
      "127.0.0.1", 0, {{"/metrics", "text/plain", [] { return std::string("x 1\n"); }}});
  ASSERT_TRUE(no_route.ok()) << no_route.status().ToString();
  const std::string other = "127.0.0.1:" + std::to_string((*no_route)->port());
  r = Geofsctl({"--spoke", other, "stats"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(other), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HTTP 404"), std::string::npos) << r.err;
}

TEST(GeofsctlSpokeErrorsTest, UsageErrors) {
  EXPECT_EQ(Geofsctl({"stats"}).exit_code, 2);
  EXPECT_EQ(Geofsctl({"--spoke", "127.0.0.1:1", "fsck"}).exit_code, 2);
  EXPECT_NE(Geofsctl({"--spoke", "127.0.0.1:1", "--hub", "127.0.0.1:2", "stats"}).exit_code, 0);
}

}  // namespace
}  // namespace geofs::spoke::testing
