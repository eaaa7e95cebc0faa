#include "nfs3/handle_codec.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "tools/temp_dir.h"

namespace geofs::nfs3 {
namespace {

vfs::Handle MakeHandle(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i);
  return vfs::Handle(bytes);
}

using testutil::TempDir;

TEST(HandleCodecTest, RoundTripsEverySize) {
  HandleCodec codec(HandleCodec::RandomKey());
  for (size_t n = 0; n <= vfs::kMaxHandleBytes; ++n) {
    vfs::Handle h = MakeHandle(n, static_cast<uint8_t>(n));
    FileHandle fh = codec.Encode(0xa1b2c3d4, h);
    EXPECT_LE(fh.size(), kMaxFhBytes);
    EXPECT_EQ(fh.size(), HandleCodec::kHeaderBytes + n + HandleCodec::kMacBytes);
    auto decoded = codec.Decode(fh.bytes());
    ASSERT_TRUE(decoded.ok()) << n;
    EXPECT_EQ(decoded->export_id, 0xa1b2c3d4u);
    EXPECT_TRUE(decoded->handle == h);
  }
}

TEST(HandleCodecTest, MacIsTruncatedHmacSha256) {
  HandleCodec::Key key = HandleCodec::RandomKey();
  HandleCodec codec(key);
  vfs::Handle h = MakeHandle(16, 9);
  for (int round = 0; round < 3; ++round) {  // the per-thread context is reused
    FileHandle fh = codec.Encode(7, h);
    size_t body = fh.size() - HandleCodec::kMacBytes;
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key.data(), key.size(), fh.bytes().data(), body, mac, &len);
    ASSERT_EQ(len, 32u);
    EXPECT_TRUE(std::equal(mac, mac + HandleCodec::kMacBytes, fh.bytes().data() + body));
  }
}

TEST(HandleCodecTest, RejectsMalformedAndForeignHandles) {
  HandleCodec codec(HandleCodec::RandomKey());
  HandleCodec other(HandleCodec::RandomKey());
  FileHandle fh = codec.Encode(1, MakeHandle(16, 1));
  EXPECT_EQ(other.Decode(fh.bytes()).status().code(), StatusCode::kBadHandle);
  std::vector<uint8_t> bytes(fh.bytes().begin(), fh.bytes().end());
  bytes[0] = 2;  // unknown version
  EXPECT_EQ(codec.Decode(bytes).status().code(), StatusCode::kBadHandle);
  EXPECT_EQ(codec.Decode({}).status().code(), StatusCode::kBadHandle);
  std::vector<uint8_t> too_long(
      HandleCodec::kHeaderBytes + vfs::kMaxHandleBytes + HandleCodec::kMacBytes + 1,
      HandleCodec::kVersion);
  EXPECT_EQ(codec.Decode(too_long).status().code(), StatusCode::kBadHandle);
  for (size_t bit = 0; bit < fh.size() * 8; ++bit) {
    std::vector<uint8_t> flipped(fh.bytes().begin(), fh.bytes().end());
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_EQ(codec.Decode(flipped).status().code(), StatusCode::kBadHandle) << bit;
  }
}

TEST(HandleCodecTest, SameKeyAcrossInstancesAndThreads) {
  HandleCodec::Key key = HandleCodec::RandomKey();
  HandleCodec a(key);
  HandleCodec b(key);
  FileHandle fh = a.Encode(3, MakeHandle(16, 3));
  EXPECT_TRUE(b.Decode(fh.bytes()).ok());
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        HandleCodec& codec = (i % 2) ? a : b;
        FileHandle mine =
            codec.Encode(static_cast<uint32_t>(t), MakeHandle(16, static_cast<uint8_t>(i)));
        auto d = (i % 2 ? b : a).Decode(mine.bytes());
        if (d.ok() && d->export_id == static_cast<uint32_t>(t)) ++ok[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int v : ok) EXPECT_EQ(v, 500);
}

// Encode and Decode answer from remembered MACs; with more handles than
// the memo holds, threads overwrite each other's slots while others read
// them, and every MAC must still be the true HMAC and every altered handle
// refused.
TEST(HandleCodecTest, RememberedMacsStayTrueUnderContention) {
  HandleCodec::Key key = HandleCodec::RandomKey();
  HandleCodec codec(key);
  constexpr int kThreads = 4;
  constexpr int kHandles = 24000;  // more than the memo's slots
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2; ++round) {
        for (int i = t; i < kHandles; i += 2) {  // pairs of threads share handles
          uint8_t bytes[12] = {};
          std::memcpy(bytes, &i, sizeof(i));
          FileHandle fh = codec.Encode(9, vfs::Handle(bytes));
          size_t body = fh.size() - HandleCodec::kMacBytes;
          uint8_t mac[EVP_MAX_MD_SIZE];
          unsigned int len = 0;
          HMAC(EVP_sha256(), key.data(), key.size(), fh.bytes().data(), body, mac, &len);
          if (!std::equal(mac, mac + HandleCodec::kMacBytes, fh.bytes().data() + body)) ++bad[t];
          auto decoded = codec.Decode(fh.bytes());
          if (!decoded.ok() || !(decoded->handle == vfs::Handle(bytes))) ++bad[t];
          std::vector<uint8_t> altered(fh.bytes().begin(), fh.bytes().end());
          altered[body + (i % HandleCodec::kMacBytes)] ^= 1;
          if (codec.Decode(altered).ok()) ++bad[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << t;
}

TEST(HandleKeyTest, CreatedOnceThenReloaded) {
  TempDir dir;
  std::string path = dir.path() + "/handle.key";
  auto first = HandleCodec::LoadOrCreateKey(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  auto again = HandleCodec::LoadOrCreateKey(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*first, *again);
  // No temporary files left behind.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  // Handles made before a "restart" decode after it.
  FileHandle fh = HandleCodec(*first).Encode(5, MakeHandle(16, 5));
  EXPECT_TRUE(HandleCodec(*again).Decode(fh.bytes()).ok());
}

TEST(HandleKeyTest, WrongSizeIsCorruptionNotReplaced) {
  TempDir dir;
  std::string path = dir.path() + "/handle.key";
  std::ofstream(path) << "short";
  EXPECT_EQ(HandleCodec::LoadOrCreateKey(path).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(std::filesystem::file_size(path), 5u);
}

TEST(HandleKeyTest, UnwritableDirectoryFails) {
  EXPECT_FALSE(HandleCodec::LoadOrCreateKey("/nonexistent-dir/geofs/handle.key").ok());
}

}  // namespace
}  // namespace geofs::nfs3
