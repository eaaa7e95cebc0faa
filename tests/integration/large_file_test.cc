// A 1 GiB file written through NFS and read back, checked end to end against
// a deterministic pattern (never held in memory whole), on each server.
#include <fcntl.h>

#include <cstring>
#include <string>
#include <vector>

#include "integration/daemon_test_base.h"

namespace geofs::testing {
namespace {

constexpr uint64_t kFileSize = uint64_t{1} << 30;
// Large calls let libnfs keep several 1 MiB WRITE/READ calls in flight.
constexpr size_t kBlock = 16 << 20;

// Fills `out` with the bytes that belong at file offset `offset`: each 8-byte
// word is a hash of its own position, so a misplaced, stale or zeroed block
// cannot match. REQUIRES: offset and out.size() are multiples of 8.
void FillPattern(uint64_t offset, std::vector<char>& out) {
  auto* words = reinterpret_cast<uint64_t*>(out.data());
  for (size_t i = 0; i < out.size() / 8; ++i) {
    uint64_t x = (offset / 8 + i) * 0x9E3779B97F4A7C15ULL;  // splitmix64 finaliser
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    words[i] = x ^ (x >> 31);
  }
}

class LargeFileTest : public ServerTest {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "none"})); }
};

TEST_P(LargeFileTest, OneGibibyteRoundTrip) {
  auto client = Mount();
  ASSERT_NE(client, nullptr);
  nfs_context* nfs = client->ctx();
  std::vector<char> block(kBlock);
  std::vector<char> expected(kBlock);

  nfsfh* fh = nullptr;
  ASSERT_EQ(nfs_open2(nfs, "/large", O_WRONLY | O_CREAT | O_TRUNC, 0644, &fh), 0)
      << client->Error();
  for (uint64_t offset = 0; offset < kFileSize; offset += kBlock) {
    FillPattern(offset, block);
    ASSERT_EQ(nfs_pwrite(nfs, fh, offset, kBlock, block.data()), static_cast<int>(kBlock))
        << "at offset " << offset << ": " << client->Error();
  }
  ASSERT_EQ(nfs_fsync(nfs, fh), 0) << client->Error();
  ASSERT_EQ(nfs_close(nfs, fh), 0) << client->Error();

  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, client->Stat("/large"));
  EXPECT_EQ(st.nfs_size, kFileSize);
  GEOFS_ASSERT_OK_AND_ASSIGN(ServerStat local, ServerLstat("large"));
  EXPECT_EQ(local.size, kFileSize);

  ASSERT_EQ(nfs_open(nfs, "/large", O_RDONLY, &fh), 0) << client->Error();
  for (uint64_t offset = 0; offset < kFileSize; offset += kBlock) {
    std::memset(block.data(), 0, kBlock);
    ASSERT_EQ(nfs_pread(nfs, fh, offset, kBlock, block.data()), static_cast<int>(kBlock))
        << "at offset " << offset << ": " << client->Error();
    FillPattern(offset, expected);
    if (std::memcmp(block.data(), expected.data(), kBlock) != 0) {
      size_t at = 0;
      while (block[at] == expected[at]) ++at;
      FAIL() << "content differs at byte " << offset + at;
    }
  }
  EXPECT_EQ(nfs_pread(nfs, fh, kFileSize, 4096, block.data()), 0) << "read at EOF";
  ASSERT_EQ(nfs_close(nfs, fh), 0);
}

GEOFS_INSTANTIATE_FOR_EACH_SERVER(LargeFileTest);

}  // namespace
}  // namespace geofs::testing
