// What is particular to the local-directory store: its on-disk layout,
// temp-file handling and the limits of mapping keys to paths.
#include "object/local_object_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>

#include "common/mounted_tmpfs.h"
#include "object/object_store_test_util.h"

namespace geofs::object {
namespace {

namespace fs = std::filesystem;
using objtest::Bytes;
using objtest::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(LocalObjectStoreTest, KeysMapToFilesUnderObjects) {
  TempDir dir;
  auto store = LocalObjectStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Put("chunks/ab/abcdef", Bytes("chunk bytes")).ok());
  std::string path = dir.path() + "/objects/chunks/ab/abcdef";
  EXPECT_EQ((*store)->PathOf("chunks/ab/abcdef"), path);
  EXPECT_EQ(ReadFile(path), "chunk bytes");
  // Nothing is left behind in tmp/.
  EXPECT_TRUE(fs::is_empty(dir.path() + "/tmp"));
}

TEST(LocalObjectStoreTest, PutLeavesTheSpaceItIsToldToKeepFree) {
  // A file system of its own: free space that no concurrent test changes.
  geofs::testing::MountedTmpfs tmpfs("16m");
  if (!tmpfs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << tmpfs.error();
  // Keeping 8 of the 16 MiB free: a small object fits, a 12 MiB one does
  // not, and the refusal leaves nothing behind.
  LocalObjectStoreOptions options;
  options.keep_free_bytes = 8 << 20;
  auto store = LocalObjectStore::Open(tmpfs.path(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->Put("small", Bytes("fits")).ok());
  const std::string big(12 << 20, 'x');
  Status refused = (*store)->Put("big", Bytes(big));
  EXPECT_EQ(refused.code(), StatusCode::kNoSpace) << refused.ToString();
  EXPECT_NE(refused.ToString().find("kept free"), std::string::npos) << refused.ToString();
  EXPECT_EQ((*store)->Head("big").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(fs::is_empty(tmpfs.path() + "/tmp"));
  // Without a reserve the same object is stored.
  auto plain = LocalObjectStore::Open(tmpfs.path());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE((*plain)->Put("big", Bytes(big)).ok());
}

TEST(LocalObjectStoreTest, ReopeningSeesStoredObjects) {
  TempDir dir;
  {
    auto store = LocalObjectStore::Open(dir.path() + "/s");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put("a/b", Bytes("persisted")).ok());
  }
  auto store = LocalObjectStore::Open(dir.path() + "/s");
  ASSERT_TRUE(store.ok());
  auto got = (*store)->Get("a/b");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->view(), "persisted");
}

TEST(LocalObjectStoreTest, OpenRemovesOnlyStaleTempFiles) {
  TempDir dir;
  ASSERT_TRUE(LocalObjectStore::Open(dir.path()).ok());
  std::string stale = dir.path() + "/tmp/123.0.1";
  std::string fresh = dir.path() + "/tmp/456.0.2";
  std::ofstream(stale) << "left by a crash";
  std::ofstream(fresh) << "being written by another process";
  struct utimbuf old_times = {::time(nullptr) - 7200, ::time(nullptr) - 7200};
  ASSERT_EQ(::utime(stale.c_str(), &old_times), 0);
  ASSERT_TRUE(LocalObjectStore::Open(dir.path()).ok());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));
}

TEST(LocalObjectStoreTest, TempFilesAreNotListed) {
  TempDir dir;
  auto store = LocalObjectStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  std::ofstream(dir.path() + "/tmp/999.0.0") << "partial";
  ASSERT_TRUE((*store)->Put("k", Bytes("v")).ok());
  auto listed = (*store)->List("", "", 100);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->objects.size(), 1u);
  EXPECT_EQ(listed->objects[0].key, "k");
}

TEST(LocalObjectStoreTest, AKeyThatIsAlsoADirectoryOfAnotherIsRefused) {
  TempDir dir;
  auto store = LocalObjectStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Put("a", Bytes("file")).ok());
  Status below = (*store)->Put("a/b", Bytes("x"));
  EXPECT_EQ(below.code(), StatusCode::kInvalidArgument) << below.ToString();
  EXPECT_NE(below.message().find("a/b"), std::string_view::npos);
  EXPECT_EQ((*store)->Get("a/b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*store)->Head("a/b").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE((*store)->Put("x/y", Bytes("file")).ok());
  EXPECT_EQ((*store)->Put("x", Bytes("x")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*store)->Get("x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*store)->Head("x").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE((*store)->Delete("x").ok());
  // The refused Puts harmed nothing.
  EXPECT_EQ((*store)->Get("a")->view(), "file");
  EXPECT_EQ((*store)->Get("x/y")->view(), "file");
  EXPECT_TRUE(fs::is_empty(dir.path() + "/tmp"));
}

TEST(LocalObjectStoreTest, OverlongComponentIsNameTooLong) {
  TempDir dir;
  auto store = LocalObjectStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->Put(std::string(300, 'n'), Bytes("x")).code(), StatusCode::kNameTooLong);
}

TEST(LocalObjectStoreTest, AFileInPlaceOfTheRootIsAnError) {
  TempDir dir;
  std::ofstream(dir.path() + "/file") << "x";
  auto store = LocalObjectStore::Open(dir.path() + "/file");
  EXPECT_FALSE(store.ok());
  EXPECT_FALSE(LocalObjectStore::Open("").ok());
}

}  // namespace
}  // namespace geofs::object
