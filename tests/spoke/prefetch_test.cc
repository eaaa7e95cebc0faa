// The prefetcher through a real spoke whose hub sits behind a delay proxy
// (20 ms round trip): a shuffled epoch over a small image folder read one
// file at a time, and a shard streamed front to back, are served from data
// fetched ahead of the reader; the same epoch with --no-prefetch is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "delay_proxy.h"
#include "hub_process.h"
#include "spoke_process.h"
#include "test_bytes.h"
#include "tools/nfs_client.h"

namespace geofs::spoke::testing {
namespace {

using geofs::testing::NfsClient;
using hub::testing::HubOptions;
using hub::testing::HubProcess;
using hub::testing::TempDir;

constexpr int kDirs = 2;
constexpr int kFilesPerDir = 100;

class PrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hub = HubProcess::Create(HubOptions{});
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
    ASSERT_TRUE(hub_->Start().ok()) << hub_->Log();
    std::mt19937 rng(7);
    for (int d = 0; d < kDirs; ++d) {
      for (int f = 0; f < kFilesPerDir; ++f) {
        std::string rel = "train/c" + std::to_string(d) + "/img" + std::to_string(f) + ".jpg";
        files_[rel] = RandomBytes(16384 + rng() % 32768, static_cast<uint32_t>(d * 1000 + f));
      }
    }
    files_["shards/shard-0.tar"] = RandomBytes(12 << 20, 99);
    for (const auto& [rel, data] : files_) {
      std::filesystem::path p = src_.path() + "/" + rel;
      std::filesystem::create_directories(p.parent_path());
      std::ofstream(p, std::ios::binary) << data;
    }
    auto imported = hub_->Ctl({"import", src_.path(), "/datasets"});
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    ASSERT_EQ(imported->exit_code, 0) << imported->err;

    const std::string addr = hub_->grpc_address();
    bench::DelayProxyOptions proxy;
    proxy.target_host = "127.0.0.1";
    proxy.target_port = static_cast<uint16_t>(std::stoi(addr.substr(addr.rfind(':') + 1)));
    proxy.one_way_delay = std::chrono::milliseconds(10);
    auto started = bench::DelayProxy::Start(proxy);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    proxy_ = std::move(started).value();
  }

  void StartSpoke(std::vector<std::string> extra_args) {
    SpokeProcessOptions options;
    options.hub_address = "127.0.0.1:" + std::to_string(proxy_->port());
    options.extra_args = std::move(extra_args);
    auto spoke = SpokeProcess::Create(options);
    ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
    spoke_ = std::move(spoke).value();
    ASSERT_TRUE(spoke_->Start().ok()) << spoke_->Log();
    auto nfs = NfsClient::Mount(spoke_->NfsUrl());
    ASSERT_TRUE(nfs.ok()) << nfs.status().ToString();
    nfs_ = std::move(nfs).value();
  }

  void TearDown() override {
    nfs_.reset();
    if (spoke_) EXPECT_TRUE(spoke_->Stop().ok()) << spoke_->Log();
    proxy_.reset();
    if (hub_ && hub_->running()) EXPECT_TRUE(hub_->Stop().ok()) << hub_->Log();
  }

  // Reads `names` one after another (one reader, one request at a time),
  // checking every byte.
  void ReadEach(const std::vector<std::string>& names) {
    for (const std::string& rel : names) {
      auto got = nfs_->ReadFile("/" + rel);
      ASSERT_TRUE(got.ok()) << rel << ": " << got.status().ToString();
      ASSERT_EQ(*got, files_.at(rel)) << rel;
    }
  }

  std::vector<std::string> ShuffledImages(size_t count) {
    std::vector<std::string> names;
    for (const auto& [rel, data] : files_) {
      if (rel.starts_with("train/")) names.push_back(rel);
    }
    std::shuffle(names.begin(), names.end(), std::mt19937(3));
    names.resize(std::min(count, names.size()));
    return names;
  }

  double Metric(const std::string& name) {
    auto v = spoke_->Metric(name);
    EXPECT_TRUE(v.ok()) << name << ": " << v.status().ToString();
    return v.ok() ? *v : -1;
  }

  TempDir src_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<HubProcess> hub_;
  std::unique_ptr<bench::DelayProxy> proxy_;
  std::unique_ptr<SpokeProcess> spoke_;
  std::unique_ptr<NfsClient> nfs_;
};

TEST_F(PrefetchTest, AShuffledEpochIsServedFromDataFetchedAhead) {
  StartSpoke({});
  const std::vector<std::string> epoch = ShuffledImages(SIZE_MAX);
  uint64_t bytes = 0;
  for (const std::string& rel : epoch) bytes += files_.at(rel).size();
  ReadEach(epoch);
  const double reads = Metric("geofs_spoke_reads_total");
  const double hits = Metric("geofs_spoke_read_hits_total");
  EXPECT_GE(reads, static_cast<double>(epoch.size()));
  // The first files of each directory are read before it is recognised as
  // an epoch; nearly all the rest are waiting in the cache.
  EXPECT_GE(hits / reads, 0.8) << "hits " << hits << " of " << reads << " READs";
  const double tree_used = Metric("geofs_spoke_prefetch_tree_used_bytes_total");
  EXPECT_GE(tree_used, 0.8 * static_cast<double>(bytes));
  EXPECT_GE(Metric("geofs_spoke_prefetch_dirs_described_total"), 1.0);
  // Nothing was fetched twice: the WAN carried about what was read.
  EXPECT_LE(Metric("geofs_spoke_bytes_from_hub_total"), 1.05 * static_cast<double>(bytes));
}

TEST_F(PrefetchTest, WithoutPrefetchEveryFileWaitsForTheHub) {
  StartSpoke({"--no-prefetch"});
  ReadEach(ShuffledImages(20));
  EXPECT_EQ(Metric("geofs_spoke_prefetch_issued_bytes_total"), 0.0);
  EXPECT_EQ(Metric("geofs_spoke_read_hits_total"), 0.0);
}

TEST_F(PrefetchTest, AShardReadFrontToBackIsFetchedAheadOfTheReader) {
  StartSpoke({});
  ReadEach({"shards/shard-0.tar"});
  const double used = Metric("geofs_spoke_prefetch_sequential_used_bytes_total");
  EXPECT_GE(used, 0.5 * (12 << 20)) << spoke_->Log();
}

}  // namespace
}  // namespace geofs::spoke::testing
