// Several clients at once, and a directory far larger than one READDIR page,
// against each server.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/daemon_test_base.h"

namespace geofs::testing {
namespace {

// Content that differs per client, file and position.
std::string Pattern(char client, int file, size_t size) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    s[i] = static_cast<char>(client + file * 7 + (i * 31) % 251);
  }
  return s;
}

std::string FileName(char client, int file) {
  return std::string("/shared/") + client + "-" + std::to_string(file);
}

// Writes `count` files and reads each back, from one thread.
Status WriteAndVerify(NfsClient* client, char id, int count, size_t size) {
  for (int i = 0; i < count; ++i) {
    std::string data = Pattern(id, i, size);
    GEOFS_RETURN_IF_ERROR(client->WriteFile(FileName(id, i), data));
    GEOFS_ASSIGN_OR_RETURN(std::string back, client->ReadFile(FileName(id, i)));
    if (back != data) return Status::Corruption(FileName(id, i) + " read back differently");
  }
  return Status::Ok();
}

class ClientsTest : public ServerTest {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "none"})); }
};

TEST_P(ClientsTest, TwoClientsWorkConcurrentlyAndSeeEachOthersChanges) {
  auto a = Mount();
  auto b = Mount();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(nfs_mkdir(a->ctx(), "/shared"), 0) << a->Error();

  constexpr int kFiles = 12;
  constexpr size_t kSize = 300 * 1024;
  Status a_status, b_status;
  std::thread ta([&] { a_status = WriteAndVerify(a.get(), 'a', kFiles, kSize); });
  std::thread tb([&] { b_status = WriteAndVerify(b.get(), 'b', kFiles, kSize); });
  ta.join();
  tb.join();
  GEOFS_ASSERT_OK(a_status);
  GEOFS_ASSERT_OK(b_status);

  // Each reads what the other wrote.
  for (int i = 0; i < kFiles; ++i) {
    GEOFS_ASSERT_OK_AND_ASSIGN(std::string from_b, a->ReadFile(FileName('b', i)));
    EXPECT_TRUE(from_b == Pattern('b', i, kSize)) << FileName('b', i);
    GEOFS_ASSERT_OK_AND_ASSIGN(std::string from_a, b->ReadFile(FileName('a', i)));
    EXPECT_TRUE(from_a == Pattern('a', i, kSize)) << FileName('a', i);
  }

  // Changes by one are visible to the other at once.
  GEOFS_ASSERT_OK(a->WriteFile(FileName('b', 0), "overwritten by a"));
  GEOFS_ASSERT_OK_AND_ASSIGN(std::string seen, b->ReadFile(FileName('b', 0)));
  EXPECT_EQ(seen, "overwritten by a");
  ASSERT_EQ(nfs_unlink(b->ctx(), FileName('a', 1).c_str()), 0) << b->Error();
  EXPECT_EQ(a->Stat(FileName('a', 1)).status().code(), StatusCode::kNotFound);
  ASSERT_EQ(nfs_mkdir(a->ctx(), "/shared/made-by-a"), 0) << a->Error();
  GEOFS_ASSERT_OK_AND_ASSIGN(auto names, b->ListNames("/shared"));
  EXPECT_EQ(std::count(names.begin(), names.end(), "made-by-a"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "a-1"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "b-5"), 1);
}

TEST_P(ClientsTest, ManyClientsReadOneFileWhileAnotherAppends) {
  auto writer = Mount();
  ASSERT_NE(writer, nullptr);
  std::string base = Pattern('w', 0, 1 << 20);
  GEOFS_ASSERT_OK(writer->WriteFile("/hot", base));

  constexpr int kReaders = 4;
  std::vector<Status> results(kReaders);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      auto client = NfsClient::Mount(daemon_->Url());
      if (!client.ok()) {
        results[r] = client.status();
        return;
      }
      for (int round = 0; round < 5; ++round) {
        auto data = (*client)->ReadFile("/hot");
        if (!data.ok()) {
          results[r] = data.status();
          return;
        }
        // Appends only ever extend the file: its first MiB never changes.
        if (data->size() < base.size() || data->compare(0, base.size(), base) != 0) {
          results[r] = Status::Corruption("reader " + std::to_string(r) + " saw a bad prefix");
          return;
        }
      }
    });
  }
  nfsfh* fh = nullptr;
  ASSERT_EQ(nfs_open(writer->ctx(), "/hot", O_WRONLY, &fh), 0) << writer->Error();
  for (int i = 0; i < 8; ++i) {
    std::string more(64 * 1024, static_cast<char>('0' + i));
    ASSERT_EQ(
        nfs_pwrite(writer->ctx(), fh, base.size() + i * more.size(), more.size(), more.data()),
        static_cast<int>(more.size()))
        << writer->Error();
  }
  ASSERT_EQ(nfs_fsync(writer->ctx(), fh), 0) << writer->Error();
  ASSERT_EQ(nfs_close(writer->ctx(), fh), 0);
  for (auto& t : readers) t.join();
  for (const Status& s : results) GEOFS_EXPECT_OK(s);
  GEOFS_ASSERT_OK_AND_ASSIGN(nfs_stat_64 st, writer->Stat("/hot"));
  EXPECT_EQ(st.nfs_size, base.size() + 8 * 64 * 1024);
}

// A 10,000-entry directory. The entries are made directly on disk (and
// imported into a hub): creating them is not what these tests are about, and
// through NFS it would cost most of the test's time (ext4 creates are slow on
// this kind of VM).
class LargeDirectoryTest : public ServerTest {
 protected:
  static constexpr int kEntries = 10000;

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartDaemon({"--squash", "none"}));
    std::string dir = Local("big");
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    for (int i = 0; i < kEntries; ++i) {
      std::string name = KeepName(i);
      int fd = open((dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0) << name;
      close(fd);
      expected_.insert(name);
    }
    ASSERT_NO_FATAL_FAILURE(Publish());
    raw_ = Raw();
    ASSERT_NE(raw_, nullptr);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto looked, raw_->Lookup(raw_->root(), "big"));
    ASSERT_NFS_STATUS(NFS3_OK, looked.status);
    dir_ = looked.fh;
  }

  static std::string KeepName(int i) { return "entry-with-a-longish-name-" + std::to_string(i); }

  // Drops "." and "..", counts every other name.
  static std::map<std::string, int> Count(const std::vector<std::string>& names) {
    std::map<std::string, int> counts;
    for (const auto& n : names) {
      if (n != "." && n != "..") ++counts[n];
    }
    return counts;
  }

  void ExpectEachExactlyOnce(const std::map<std::string, int>& counts) {
    int missing = 0;
    for (const auto& name : expected_) {
      auto it = counts.find(name);
      if (it == counts.end()) {
        if (++missing <= 5) ADD_FAILURE() << "missing " << name;
      } else {
        EXPECT_EQ(it->second, 1) << name << " listed " << it->second << " times";
      }
    }
    EXPECT_EQ(missing, 0);
  }

  std::unique_ptr<RawNfs> raw_;
  FileHandle dir_;
  std::set<std::string> expected_;
};

TEST_P(LargeDirectoryTest, ListedCompletelyByEveryMethod) {
  {
    SCOPED_TRACE("libnfs opendir (READDIRPLUS)");
    auto client = Mount();
    ASSERT_NE(client, nullptr);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto names, client->ListNames("/big"));
    auto counts = Count(names);
    ExpectEachExactlyOnce(counts);
    EXPECT_EQ(counts.size(), expected_.size());
  }
  {
    SCOPED_TRACE("raw READDIR, count 1024");
    std::vector<std::string> names;
    uint64_t cookie = 0;
    Verifier verf{};
    int pages = 0;
    bool eof = false;
    while (!eof) {
      ASSERT_LT(++pages, 20000) << "listing does not terminate";
      GEOFS_ASSERT_OK_AND_ASSIGN(auto page, raw_->ReadDir(dir_, cookie, verf, 1024));
      ASSERT_NFS_STATUS(NFS3_OK, page.status) << "page " << pages << " cookie " << cookie;
      ASSERT_TRUE(!page.entries.empty() || page.eof) << "empty page without eof";
      for (const auto& e : page.entries) {
        EXPECT_NE(e.cookie, 0u) << e.name;
        names.push_back(e.name);
      }
      if (!page.entries.empty()) cookie = page.entries.back().cookie;
      verf = page.verf;
      eof = page.eof;
    }
    EXPECT_GT(pages, 100) << "a 1 KiB count must not fit so many entries per page";
    auto counts = Count(names);
    ExpectEachExactlyOnce(counts);
    EXPECT_EQ(counts.size(), expected_.size());
  }
  {
    SCOPED_TRACE("raw READDIRPLUS, dircount 512, maxcount 4096");
    std::vector<std::string> names;
    uint64_t cookie = 0;
    Verifier verf{};
    int pages = 0;
    bool eof = false;
    FileHandle sample;
    while (!eof) {
      ASSERT_LT(++pages, 20000) << "listing does not terminate";
      GEOFS_ASSERT_OK_AND_ASSIGN(auto page, raw_->ReadDirPlus(dir_, cookie, verf, 512, 4096));
      ASSERT_NFS_STATUS(NFS3_OK, page.status) << "page " << pages << " cookie " << cookie;
      ASSERT_TRUE(!page.entries.empty() || page.eof) << "empty page without eof";
      for (const auto& e : page.entries) {
        names.push_back(e.name);
        if (e.name == KeepName(4321)) sample = e.fh;
      }
      if (!page.entries.empty()) cookie = page.entries.back().cookie;
      verf = page.verf;
      eof = page.eof;
    }
    auto counts = Count(names);
    ExpectEachExactlyOnce(counts);
    EXPECT_EQ(counts.size(), expected_.size());
    ASSERT_FALSE(sample.empty()) << "READDIRPLUS entries must carry handles";
    GEOFS_ASSERT_OK_AND_ASSIGN(auto looked, raw_->Lookup(dir_, KeepName(4321)));
    GEOFS_ASSERT_OK_AND_ASSIGN(auto a, raw_->Getattr(sample));
    GEOFS_ASSERT_OK_AND_ASSIGN(auto b, raw_->Getattr(looked.fh));
    EXPECT_EQ(a.attr.fileid, b.attr.fileid);
  }
}

TEST_P(LargeDirectoryTest, PagingSurvivesConcurrentChanges) {
  // Another client removes and adds entries between pages; every entry that
  // exists throughout must be seen exactly once.
  auto other = Raw();
  ASSERT_NE(other, nullptr);
  std::vector<std::string> names;
  uint64_t cookie = 0;
  Verifier verf{};
  int pages = 0;
  int churn = 0;
  bool eof = false;
  while (!eof) {
    ASSERT_LT(++pages, 20000) << "listing does not terminate";
    GEOFS_ASSERT_OK_AND_ASSIGN(auto page, raw_->ReadDir(dir_, cookie, verf, 2048));
    ASSERT_NFS_STATUS(NFS3_OK, page.status) << "page " << pages << " cookie " << cookie;
    for (const auto& e : page.entries) names.push_back(e.name);
    if (!page.entries.empty()) cookie = page.entries.back().cookie;
    verf = page.verf;
    eof = page.eof;

    std::string added = "churn-" + std::to_string(churn);
    GEOFS_ASSERT_OK_AND_ASSIGN(auto c, other->Create(dir_, added, GUARDED, ModeAttrs(0644)));
    ASSERT_NFS_STATUS(NFS3_OK, c.status);
    if (churn > 0) {
      GEOFS_ASSERT_OK_AND_ASSIGN(nfsstat3 r,
                                 other->Remove(dir_, "churn-" + std::to_string(churn - 1)));
      ASSERT_NFS_STATUS(NFS3_OK, r);
    }
    ++churn;
  }
  auto counts = Count(names);
  ExpectEachExactlyOnce(counts);
  for (const auto& [name, n] : counts) {
    EXPECT_EQ(n, 1) << name << " listed " << n << " times";
  }
}

GEOFS_INSTANTIATE_FOR_EACH_SERVER(ClientsTest);
GEOFS_INSTANTIATE_FOR_EACH_SERVER(LargeDirectoryTest);

}  // namespace
}  // namespace geofs::testing
