// Runs every workload of the load generator against a real geofs-spoked over
// a small prepared data set, with exact op counts, and checks what the
// generator measured against what is on disk.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "data_set.h"
#include "load_run.h"
#include "tools/daemon.h"

namespace geofs::bench {
namespace {

namespace fs = std::filesystem;

DataSetSpec SmallSpec() {
  DataSetSpec spec;
  spec.big_file_bytes = 8 << 20;
  spec.dataset_files = 60;
  spec.files_per_dir = 25;  // three directories, the last one partly filled
  spec.min_file_bytes = 1000;
  spec.max_file_bytes = 300 << 10;  // some files need two 256 KiB READs
  spec.listing_entries = 400;
  return spec;
}

class NfsLoadSmokeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::DaemonOptions options;
    options.extra_args = {"--squash", "none"};
    auto daemon = testing::Daemon::Create(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
    daemon_ = std::move(daemon).value().release();
    bool reused = false;
    const Status prepared = PrepareDataSet(daemon_->export_dir(), SmallSpec(), &reused);
    ASSERT_TRUE(prepared.ok()) << prepared.ToString();
    const Status started = daemon_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(daemon_, nullptr); }

  static LoadConfig Config(const std::string& workload, uint64_t ops) {
    LoadConfig config;
    config.url = daemon_->Url();
    config.workload = workload;
    config.connections = 2;
    config.queue_depth = 4;
    config.ops = ops;
    config.load.data = SmallSpec();
    config.load.dataset_read_size = 256 << 10;
    config.load.readdir_maxcount = 8192;  // several pages per listing
    return config;
  }

  static LoadResult RunOk(const LoadConfig& config) {
    auto result = RunLoad(config);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    if (!result.ok()) return {};
    EXPECT_EQ(result->stats.errors, 0u) << result->stats.first_error;
    EXPECT_EQ(result->stats.ops, *config.ops);
    EXPECT_EQ(result->stats.op_latency.count(), *config.ops);
    return *result;
  }

  static testing::Daemon* daemon_;
};

testing::Daemon* NfsLoadSmokeTest::daemon_ = nullptr;

TEST_F(NfsLoadSmokeTest, SequentialAndRandomReadsReadFullBlocks) {
  for (const auto& [workload, block] : {std::pair<std::string, uint64_t>{"seq", 1 << 20},
                                        {"rand4k", 4 << 10},
                                        {"rand128k", 128 << 10}}) {
    const LoadResult r = RunOk(Config(workload, 100));
    EXPECT_EQ(r.stats.bytes, 100 * block) << workload;
    EXPECT_EQ(r.stats.call_latency[NFS3_READ].count(), 100u) << workload;
  }
}

TEST_F(NfsLoadSmokeTest, DataSetEpochReadsEveryFileWhole) {
  const DataSetSpec spec = SmallSpec();
  uint64_t total = 0;
  for (uint32_t i = 0; i < spec.dataset_files; ++i) {
    total += fs::file_size(fs::path(daemon_->export_dir()) / kDataSetDirName /
                           DataSetDirFor(spec, i) / DataSetFileName(i));
  }
  const LoadResult r = RunOk(Config("dataset", spec.dataset_files));
  EXPECT_EQ(r.stats.bytes, total);
  EXPECT_EQ(r.stats.items, spec.dataset_files);
  EXPECT_EQ(r.stats.call_latency[NFS3_LOOKUP].count(), spec.dataset_files);
  EXPECT_EQ(r.stats.call_latency[NFS3_GETATTR].count(), spec.dataset_files);
  EXPECT_GT(r.stats.call_latency[NFS3_READ].count(), spec.dataset_files) << "files > 256 KiB";
}

TEST_F(NfsLoadSmokeTest, MetaLeavesTheDirectoryEmpty) {
  const LoadResult r = RunOk(Config("meta", 50));
  for (int proc : {NFS3_CREATE, NFS3_SETATTR, NFS3_REMOVE}) {
    EXPECT_EQ(r.stats.call_latency[proc].count(), 50u) << Nfs3ProcName(proc);
  }
  const fs::path meta = fs::path(daemon_->export_dir()) / kMetaDirName;
  EXPECT_TRUE(fs::is_empty(meta));
}

TEST_F(NfsLoadSmokeTest, ProbesFindNothingAndAFoundNameIsAnError) {
  const LoadResult r = RunOk(Config("probe", 40));
  EXPECT_EQ(r.stats.items, 40u);
  EXPECT_EQ(r.stats.call_latency[NFS3_LOOKUP].count(), 40u);
  // A probed name that exists fails its op.
  const DataSetSpec spec = SmallSpec();
  const fs::path found = fs::path(daemon_->export_dir()) / kDataSetDirName /
                         DataSetDirFor(spec, 0) / (DataSetFileName(0) + ".missing");
  { std::ofstream(found) << "here"; }
  auto result = RunLoad(Config("probe", spec.dataset_files));
  fs::remove(found);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stats.errors, 1u);
  EXPECT_NE(result->stats.first_error.find("expected NFS3ERR_NOENT"), std::string::npos)
      << result->stats.first_error;
}

TEST_F(NfsLoadSmokeTest, ListingsSeeEveryEntry) {
  const LoadResult r = RunOk(Config("readdirplus", 6));
  EXPECT_EQ(r.stats.items, 6u * SmallSpec().listing_entries);
  EXPECT_GT(r.stats.call_latency[NFS3_READDIRPLUS].count(), 6u);
}

TEST_F(NfsLoadSmokeTest, ListingOfTheWrongSizeIsAnError) {
  LoadConfig config = Config("readdirplus", 2);
  config.load.data.listing_entries += 1;
  auto result = RunLoad(config);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stats.ops, 0u);
  EXPECT_EQ(result->stats.errors, 2u);
  EXPECT_NE(result->stats.first_error.find("expected"), std::string::npos);
}

TEST_F(NfsLoadSmokeTest, TimedRunMeasuresOnlyItsWindow) {
  LoadConfig config = Config("rand4k", 0);
  config.ops.reset();
  config.warmup_s = 0.2;
  config.duration_s = 0.5;
  auto result = RunLoad(config);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stats.errors, 0u) << result->stats.first_error;
  EXPECT_GT(result->stats.ops, 0u);
  EXPECT_DOUBLE_EQ(result->seconds, 0.5);
}

TEST_F(NfsLoadSmokeTest, UnknownExportFailsTheRun) {
  LoadConfig config = Config("seq", 1);
  const auto query = config.url.find("/?");
  ASSERT_NE(query, std::string::npos) << config.url;
  config.url.replace(query, 2, "/no-such-export?");
  auto result = RunLoad(config);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().ToString().find("MNT"), std::string::npos)
      << result.status().ToString();
}

}  // namespace
}  // namespace geofs::bench
