#include "data_set.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace geofs::bench {
namespace {

namespace fs = std::filesystem;

class DataSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("geofs_data_set_test." + std::to_string(::getpid()) + "." +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    spec_.big_file_bytes = (3 << 20) + 123;  // not a multiple of the write chunk
    spec_.dataset_files = 25;
    spec_.files_per_dir = 10;
    spec_.min_file_bytes = 1000;
    spec_.max_file_bytes = 3000;
    spec_.listing_entries = 17;
  }
  void TearDown() override { fs::remove_all(root_); }

  static size_t CountEntries(const fs::path& dir) {
    return std::distance(fs::directory_iterator(dir), fs::directory_iterator());
  }

  fs::path root_;
  DataSetSpec spec_;
};

TEST_F(DataSetTest, LaysOutEveryWorkloadsFiles) {
  bool reused = true;
  ASSERT_TRUE(PrepareDataSet(root_.string(), spec_, &reused).ok());
  EXPECT_FALSE(reused);

  EXPECT_EQ(fs::file_size(root_ / kBigFileName), spec_.big_file_bytes);
  ASSERT_EQ(DataSetDirCount(spec_), 3u);
  EXPECT_EQ(CountEntries(root_ / kDataSetDirName), 3u);
  std::set<uintmax_t> sizes;
  for (uint32_t i = 0; i < spec_.dataset_files; ++i) {
    const fs::path file = root_ / kDataSetDirName / DataSetDirFor(spec_, i) / DataSetFileName(i);
    ASSERT_TRUE(fs::is_regular_file(file)) << file;
    const uintmax_t size = fs::file_size(file);
    EXPECT_GE(size, spec_.min_file_bytes);
    EXPECT_LE(size, spec_.max_file_bytes);
    sizes.insert(size);
  }
  EXPECT_GT(sizes.size(), 1u) << "sizes should vary";
  EXPECT_EQ(CountEntries(root_ / kDataSetDirName / DataSetDirName(2)), 5u);
  EXPECT_EQ(CountEntries(root_ / kListingDirName), spec_.listing_entries);
  EXPECT_TRUE(fs::is_directory(root_ / kMetaDirName));
  EXPECT_EQ(CountEntries(root_ / kMetaDirName), 0u);
}

TEST_F(DataSetTest, ContentsDoNotRepeatAcrossFiles) {
  bool reused = false;
  ASSERT_TRUE(PrepareDataSet(root_.string(), spec_, &reused).ok());
  auto head = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::string s(64, '\0');
    in.read(s.data(), s.size());
    return s;
  };
  const fs::path dir = root_ / kDataSetDirName / DataSetDirName(0);
  EXPECT_NE(head(dir / DataSetFileName(0)), head(dir / DataSetFileName(1)));
  EXPECT_NE(head(dir / DataSetFileName(0)), head(root_ / kBigFileName));
}

TEST_F(DataSetTest, ReusesAnEqualSpecAndReplacesADifferentOne) {
  bool reused = false;
  ASSERT_TRUE(PrepareDataSet(root_.string(), spec_, &reused).ok());
  std::ofstream(root_ / kMetaDirName / "leftover") << "x";

  ASSERT_TRUE(PrepareDataSet(root_.string(), spec_, &reused).ok());
  EXPECT_TRUE(reused);
  EXPECT_EQ(CountEntries(root_ / kMetaDirName), 0u) << "meta scratch is emptied";

  spec_.listing_entries = 5;
  ASSERT_TRUE(PrepareDataSet(root_.string(), spec_, &reused).ok());
  EXPECT_FALSE(reused);
  EXPECT_EQ(CountEntries(root_ / kListingDirName), 5u);
}

TEST_F(DataSetTest, FailsOnAMissingRoot) {
  bool reused = false;
  EXPECT_FALSE(PrepareDataSet((root_ / "absent").string(), spec_, &reused).ok());
}

}  // namespace
}  // namespace geofs::bench
