#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "spoke/write_journal.h"
#include "tools/temp_dir.h"

namespace geofs::spoke {
namespace {

namespace fs = std::filesystem;

using testutil::TempDir;

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// What a file's pending bytes should be: byte -> value, newest write wins.
using Model = std::map<uint64_t, char>;

void Apply(Model* m, uint64_t offset, const std::string& data) {
  for (size_t i = 0; i < data.size(); ++i) (*m)[offset + i] = data[i];
}

Model ReadAll(const WriteJournal& j, const FileKey& f) {
  Model m;
  uint64_t last_end = 0;
  bool first = true;
  for (const PendingRange& r : j.Read(f, 0, UINT64_MAX)) {
    // Sorted, non-overlapping, adjacent ranges merged.
    EXPECT_TRUE(first || r.offset > last_end) << r.offset << " after " << last_end;
    first = false;
    last_end = r.offset + r.data.size();
    Apply(&m, r.offset, std::string(r.data.view()));
  }
  return m;
}

std::unique_ptr<WriteJournal> OpenJournal(const std::string& dir, uint64_t max_bytes = 1ull << 30,
                                          uint64_t segment_bytes = 64ull << 20,
                                          std::shared_ptr<JournalIo> io = nullptr) {
  WriteJournalOptions o;
  o.dir = dir;
  o.max_bytes = max_bytes;
  o.segment_bytes = segment_bytes;
  o.io = std::move(io);
  auto j = WriteJournal::Open(o);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? std::move(j).value() : nullptr;
}

// The segment files (not the space reserve).
std::vector<std::string> Segments(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".log") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const FileKey kA{10, 1};
const FileKey kB{11, 7};

TEST(WriteJournalTest, NewestWriteWinsAndAdjacentRangesMerge) {
  TempDir dir;
  auto j = OpenJournal(dir.path());
  Model m;
  auto put = [&](uint64_t off, const std::string& s) -> uint64_t {
    auto seq = j->Append(kA, off, Bytes(s));
    EXPECT_TRUE(seq.ok()) << seq.status().ToString();
    Apply(&m, off, s);
    return seq.ok() ? *seq : 0;
  };
  const uint64_t s1 = put(0, std::string(100, 'a'));
  const uint64_t s2 = put(50, std::string(100, 'b'));
  put(20, std::string(10, 'c'));
  const uint64_t s4 = put(200, std::string(10, 'd'));
  EXPECT_LT(s1, s2);
  EXPECT_EQ(ReadAll(*j, kA), m);

  auto ranges = j->Read(kA, 0, 1000);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].offset, 0u);
  EXPECT_EQ(ranges[0].data.size(), 150u);
  EXPECT_EQ(ranges[1].offset, 200u);

  // Clipped reads.
  auto mid = j->Read(kA, 45, 10);
  ASSERT_EQ(mid.size(), 1u);
  EXPECT_EQ(mid[0].offset, 45u);
  EXPECT_EQ(std::string(mid[0].data.view()), "aaaaabbbbb");
  EXPECT_TRUE(j->Read(kA, 150, 50).empty());
  EXPECT_TRUE(j->Read(kB, 0, 100).empty());

  auto spans = j->Spans(kA);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].offset, 0u);
  EXPECT_EQ(spans[0].length, 150u);
  EXPECT_EQ(spans[1].offset, 200u);
  EXPECT_EQ(spans[1].length, 10u);

  auto p = j->Pending(kA);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->end, 210u);
  EXPECT_EQ(p->upto_seq, s4);
  EXPECT_EQ(p->bytes, 160u);
  EXPECT_FALSE(j->Pending(kB).has_value());
  EXPECT_EQ(j->Stats().pending_bytes, 160u);
}

TEST(WriteJournalTest, RandomWritesSurviveReopen) {
  TempDir dir;
  std::mt19937_64 rng(42);
  Model ma, mb;
  {
    auto j = OpenJournal(dir.path(), 1ull << 30, 64 << 10);  // several segments
    for (int i = 0; i < 400; ++i) {
      const FileKey f = i % 3 ? kA : kB;
      const uint64_t off = rng() % 100000;
      std::string data(1 + rng() % 3000, static_cast<char>('A' + i % 26));
      ASSERT_TRUE(j->Append(f, off, Bytes(data)).ok());
      Apply(f == kA ? &ma : &mb, off, data);
    }
    ASSERT_TRUE(j->Sync().ok());
    EXPECT_EQ(ReadAll(*j, kA), ma);
    auto files = j->PendingFiles();
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0].file, kB);  // its first write came first
  }
  auto j = OpenJournal(dir.path(), 1ull << 30, 64 << 10);
  EXPECT_EQ(ReadAll(*j, kA), ma);
  EXPECT_EQ(ReadAll(*j, kB), mb);
  // Sequence numbers keep increasing after a restart.
  auto pa = j->Pending(kA);
  auto seq = j->Append(kA, 0, Bytes("x"));
  ASSERT_TRUE(seq.ok());
  EXPECT_GT(*seq, pa->upto_seq);
}

TEST(WriteJournalTest, TornTailIsDroppedAtAnyCut) {
  TempDir dir;
  // Records of known sizes in one segment; remember where each ends.
  std::vector<std::pair<uint64_t, std::string>> writes;
  std::vector<uint64_t> ends;
  {
    auto j = OpenJournal(dir.path());
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20; ++i) {
      std::string data(1 + rng() % 5000, static_cast<char>('a' + i));
      const uint64_t off = rng() % 20000;
      ASSERT_TRUE(j->Append(kA, off, Bytes(data)).ok());
      writes.emplace_back(off, data);
    }
    ASSERT_TRUE(j->Sync().ok());
  }
  auto segs = Segments(dir.path());
  ASSERT_EQ(segs.size(), 1u);
  const std::string seg = segs[0];
  uint64_t pos = 0;
  for (const auto& w : writes) ends.push_back(pos += 56 + w.second.size());
  ASSERT_EQ(fs::file_size(seg), ends.back());
  std::string original;
  {
    std::ifstream in(seg, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), {});
  }

  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 25; ++trial) {
    // Restore the whole log, then cut it somewhere (or flip a byte).
    for (const auto& p : Segments(dir.path())) fs::remove(p);
    {
      std::ofstream out(seg, std::ios::binary);
      out.write(original.data(), static_cast<std::streamsize>(original.size()));
    }
    const uint64_t cut = rng() % original.size();
    const bool flip = trial % 5 == 4;
    if (flip) {
      std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(cut));
      char c = original[cut] ^ 0x5a;
      f.write(&c, 1);
    } else {
      ASSERT_EQ(::truncate(seg.c_str(), static_cast<off_t>(cut)), 0);
    }
    // The records wholly before the damage survive, nothing else.
    size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    Model want;
    for (size_t i = 0; i < whole; ++i) Apply(&want, writes[i].first, writes[i].second);
    auto j = OpenJournal(dir.path());
    ASSERT_TRUE(j);
    EXPECT_EQ(ReadAll(*j, kA), want) << "cut at " << cut << (flip ? " (flipped)" : "");
    // Truncated to the last good record (deleted when nothing in it is left).
    const uint64_t kept = fs::exists(seg) ? fs::file_size(seg) : 0;
    EXPECT_EQ(kept, whole == 0 ? 0 : ends[whole - 1]) << "cut at " << cut;
    // It goes on appending after the repaired tail.
    ASSERT_TRUE(j->Append(kA, 0, Bytes("zz")).ok());
    ASSERT_TRUE(j->Sync().ok());
    j.reset();
    Apply(&want, 0, "zz");
    j = OpenJournal(dir.path());
    EXPECT_EQ(ReadAll(*j, kA), want);
  }
}

TEST(WriteJournalTest, ReleasePersistsAcrossReopen) {
  TempDir dir;
  uint64_t s2;
  {
    auto j = OpenJournal(dir.path());
    ASSERT_TRUE(j->Append(kA, 0, Bytes(std::string(100, 'a'))).ok());
    auto s = j->Append(kA, 1000, Bytes(std::string(100, 'b')));
    ASSERT_TRUE(s.ok());
    s2 = *s;
    ASSERT_TRUE(j->Append(kB, 0, Bytes(std::string(10, 'x'))).ok());
    ASSERT_TRUE(j->Sync().ok());
    // The uploader committed [0, 50) of kA's first two writes...
    ASSERT_TRUE(j->ReleaseRange(kA, s2, 0, 50).ok());
    // ...then a newer write came...
    ASSERT_TRUE(j->Append(kA, 1050, Bytes(std::string(10, 'c'))).ok());
    ASSERT_TRUE(j->Sync().ok());
    // ...and the rest of what it had read was committed.
    ASSERT_TRUE(j->ReleaseRange(kA, s2, 50, 2000).ok());
    ASSERT_TRUE(j->Discard(kB).ok());
  }
  auto j = OpenJournal(dir.path());
  Model want;
  Apply(&want, 1050, std::string(10, 'c'));
  EXPECT_EQ(ReadAll(*j, kA), want);
  EXPECT_FALSE(j->Pending(kB).has_value());
  ASSERT_TRUE(j->Release(kA, UINT64_MAX).ok());
  EXPECT_TRUE(j->PendingFiles().empty());
  j.reset();
  j = OpenJournal(dir.path());
  EXPECT_TRUE(j->PendingFiles().empty());
  EXPECT_EQ(j->Stats().pending_bytes, 0u);
}

TEST(WriteJournalTest, DeadSegmentsAreDeletedOldestFirst) {
  TempDir dir;
  auto j = OpenJournal(dir.path(), 1ull << 30, 16 << 10);
  const std::string block(4000, 'q');
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(j->Append(kA, i * 4000, Bytes(block)).ok());
  ASSERT_TRUE(j->Append(kB, 0, Bytes(block)).ok());
  ASSERT_TRUE(j->Sync().ok());
  const size_t before = Segments(dir.path()).size();
  EXPECT_GE(before, 8u);
  // kB's write sits in the newest segment: releasing kA frees the rest.
  ASSERT_TRUE(j->Release(kA, UINT64_MAX).ok());
  EXPECT_LE(Segments(dir.path()).size(), 2u);
  ASSERT_TRUE(j->Release(kB, UINT64_MAX).ok());
  ASSERT_TRUE(j->Append(kB, 0, Bytes(std::string(20000, 'r'))).ok());  // rotates
  ASSERT_TRUE(j->Append(kB, 0, Bytes("s")).ok());
  ASSERT_TRUE(j->Release(kB, UINT64_MAX).ok());
  EXPECT_EQ(Segments(dir.path()).size(), 1u);
  EXPECT_LT(j->Stats().log_bytes, 1000u);
}

TEST(WriteJournalTest, MaxBytesAnswersNoSpaceAndRecordsNothing) {
  TempDir dir;
  auto j = OpenJournal(dir.path(), 10000, 4096);
  const std::string block(1000, 'm');
  int accepted = 0;
  Status full;
  for (int i = 0; i < 20 && full.ok(); ++i) {
    auto s = j->Append(kA, i * 1000, Bytes(block));
    if (s.ok()) {
      ++accepted;
    } else {
      full = s.status();
    }
  }
  EXPECT_EQ(full.code(), StatusCode::kNoSpace) << full.ToString();
  EXPECT_EQ(accepted, 9);  // 9 * 1056 bytes fit in 10000, 10 do not
  EXPECT_EQ(j->Pending(kA)->bytes, 9000u);
  EXPECT_LE(j->Stats().log_bytes, 10000u);
  // Releasing makes room again.
  ASSERT_TRUE(j->Release(kA, UINT64_MAX).ok());
  EXPECT_TRUE(j->Append(kA, 0, Bytes(block)).ok());
}

// Fails the next write after letting half of it reach the file, or the next
// fdatasync, with a chosen errno.
class FailingIo : public JournalIo {
 public:
  std::atomic<int> write_errno{0};
  std::atomic<int> sync_errno{0};

  ssize_t Pwritev(int fd, const struct iovec* iov, int count, off_t offset) override {
    const int err = write_errno.exchange(0);
    if (err == 0) return JournalIo::Pwritev(fd, iov, count, offset);
    // A torn write: some bytes land, then the disk fails.
    const size_t half = iov[0].iov_len / 2;
    EXPECT_GT(::pwrite(fd, iov[0].iov_base, half, offset), 0);
    errno = err;
    return -1;
  }
  int Fdatasync(int fd) override {
    const int err = sync_errno.exchange(0);
    if (err == 0) return JournalIo::Fdatasync(fd);
    errno = err;
    return -1;
  }
};

TEST(WriteJournalTest, DiskErrorsLeaveNothingHalfRecorded) {
  TempDir dir;
  auto io = std::make_shared<FailingIo>();
  Model want;
  {
    auto j = OpenJournal(dir.path(), 1ull << 30, 64 << 20, io);
    ASSERT_TRUE(j->Append(kA, 0, Bytes("first")).ok());
    Apply(&want, 0, "first");
    io->write_errno = ENOSPC;
    auto s = j->Append(kA, 100, Bytes(std::string(500, 'n')));
    EXPECT_EQ(s.status().code(), StatusCode::kNoSpace);
    io->write_errno = EIO;
    s = j->Append(kA, 200, Bytes(std::string(500, 'e')));
    EXPECT_EQ(s.status().code(), StatusCode::kIoError);
    EXPECT_EQ(ReadAll(*j, kA), want);
    // Writes after the failures are replayed: no torn record hides them.
    ASSERT_TRUE(j->Append(kA, 300, Bytes("after")).ok());
    Apply(&want, 300, "after");
    ASSERT_TRUE(j->Sync().ok());
  }
  auto j = OpenJournal(dir.path(), 1ull << 30, 64 << 20, io);
  EXPECT_EQ(ReadAll(*j, kA), want);

  // A failed sync is sticky: nothing after it claims durability.
  ASSERT_TRUE(j->Append(kB, 0, Bytes("x")).ok());
  io->sync_errno = EIO;
  EXPECT_EQ(j->Sync().code(), StatusCode::kIoError);
  EXPECT_EQ(j->Sync().code(), StatusCode::kIoError);
  EXPECT_FALSE(j->Append(kB, 0, Bytes("y")).ok());
}

TEST(WriteJournalTest, ReadsIntoCallersStorage) {
  TempDir dir;
  auto j = OpenJournal(dir.path());
  ASSERT_TRUE(j->Append(kA, 0, Bytes("abcd")).ok());
  ASSERT_TRUE(j->Append(kA, 4, Bytes("efgh")).ok());
  ASSERT_TRUE(j->Append(kA, 100, Bytes("xyz")).ok());
  std::vector<uint8_t> storage(64);
  size_t used = 0;
  int calls = 0;
  auto carve = [&](size_t n, uint8_t** out) {
    ++calls;
    *out = storage.data() + used;
    used += n;
    return Buffer(nullptr, *out, n);
  };
  const std::vector<PendingRange> ranges = j->Read(kA, 2, 200, carve);
  // One allocation per returned range, adjacent writes merged into one.
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(ranges[0].offset, 2u);
  EXPECT_EQ(ranges[0].data.view(), "cdefgh");
  EXPECT_EQ(ranges[0].data.data(), storage.data());
  EXPECT_EQ(ranges[1].offset, 100u);
  EXPECT_EQ(ranges[1].data.view(), "xyz");
  EXPECT_EQ(ranges[1].data.data(), storage.data() + 6);
}

// Records the writeback hints.
class WritebackIo : public JournalIo {
 public:
  int StartWriteback(int fd, off_t offset, off_t length) override {
    std::lock_guard lock(mu);
    ranges.emplace_back(offset, length);
    return JournalIo::StartWriteback(fd, offset, length);
  }
  std::mutex mu;
  std::vector<std::pair<off_t, off_t>> ranges;
};

TEST(WriteJournalTest, StartsWritebackEveryBytesPerSync) {
  TempDir dir;
  auto io = std::make_shared<WritebackIo>();
  WriteJournalOptions o;
  o.dir = dir.path();
  o.segment_bytes = 1 << 20;
  o.bytes_per_sync = 100 << 10;
  o.io = io;
  auto opened = WriteJournal::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto& j = *opened;
  const std::string block(30 << 10, 'w');
  Model want;
  // 40 records of 30 KiB + header: every 4th crosses another 100 KiB. The
  // first segment takes 35 records (it is full past 1 MiB), the second
  // counts from its own start.
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(j->Append(kA, static_cast<uint64_t>(i) * block.size(), Bytes(block)).ok());
    Apply(&want, static_cast<uint64_t>(i) * block.size(), block);
  }
  const off_t record = static_cast<off_t>(block.size()) + 56;
  std::vector<std::pair<off_t, off_t>> expected;
  for (int n = 4; n <= 32; n += 4) expected.emplace_back((n - 4) * record, 4 * record);
  // Records 33..35 make less than 100 KiB: no hint before the segment ends.
  expected.emplace_back(0, 4 * record);  // the second segment's first four
  {
    std::lock_guard lock(io->mu);
    EXPECT_EQ(io->ranges, expected);
  }
  // Hints change nothing about what is pending or replayed.
  EXPECT_EQ(ReadAll(*j, kA), want);
  ASSERT_TRUE(j->Sync().ok());
  j.reset();
  EXPECT_EQ(ReadAll(*OpenJournal(dir.path(), 1ull << 30, 1 << 20), kA), want);
}

TEST(WriteJournalTest, ConcurrentAppendsAndGroupedSyncs) {
  TempDir dir;
  constexpr int kThreads = 4;
  constexpr int kWrites = 200;
  {
    auto j = OpenJournal(dir.path(), 1ull << 30, 256 << 10);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const FileKey f{100 + static_cast<uint64_t>(t), 1};
        for (int i = 0; i < kWrites; ++i) {
          std::string data(1000, static_cast<char>('a' + t));
          data[0] = static_cast<char>(i);
          ASSERT_TRUE(j->Append(f, static_cast<uint64_t>(i) * 1000, Bytes(data)).ok());
          ASSERT_TRUE(j->Sync().ok());
        }
      });
    }
    for (auto& t : threads) t.join();
    const WriteJournalStats st = j->Stats();
    EXPECT_EQ(st.appends, static_cast<uint64_t>(kThreads * kWrites));
    EXPECT_EQ(st.pending_files, static_cast<uint64_t>(kThreads));
    // Concurrent callers share fdatasyncs.
    EXPECT_LE(st.syncs, static_cast<uint64_t>(kThreads * kWrites));
    std::printf("%d Sync calls took %llu fdatasync rounds\n", kThreads * kWrites,
                static_cast<unsigned long long>(st.syncs));
  }
  auto j = OpenJournal(dir.path(), 1ull << 30, 256 << 10);
  for (int t = 0; t < kThreads; ++t) {
    const FileKey f{100 + static_cast<uint64_t>(t), 1};
    auto ranges = j->Read(f, 0, UINT64_MAX);
    ASSERT_EQ(ranges.size(), 1u);
    ASSERT_EQ(ranges[0].data.size(), static_cast<size_t>(kWrites) * 1000);
    for (int i = 0; i < kWrites; ++i) {
      EXPECT_EQ(ranges[0].data.data()[i * 1000], static_cast<uint8_t>(static_cast<char>(i)));
      EXPECT_EQ(ranges[0].data.data()[i * 1000 + 1], static_cast<uint8_t>('a' + t));
    }
  }
}

}  // namespace
}  // namespace geofs::spoke
