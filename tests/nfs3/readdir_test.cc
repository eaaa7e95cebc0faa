// READDIR and READDIRPLUS: exact byte budgets, paging over large
// directories, TOOSMALL, cookies and verifiers.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "nfs3/nfs_test_util.h"

namespace geofs::nfs3::testing {
namespace {

struct Entry {
  uint64_t fileid = 0;
  std::string name;
  uint64_t cookie = 0;
  std::optional<Fattr> attr;
  std::optional<Bytes> fh;
};

struct Page {
  NfsStat status = NfsStat::kServerFault;
  std::optional<Fattr> dir_attr;
  uint64_t verifier = 0;
  std::vector<Entry> entries;
  bool eof = false;
  size_t resok_bytes = 0;  // encoded size after the status word
};

Page ParsePage(const CallResult& r, bool plus) {
  Page page;
  page.status = r.status();
  if (page.status != NfsStat::kOk) return page;
  page.resok_bytes = r.body.size() - 4;
  xdr::Decoder d = r.After();
  page.dir_attr = ReadPostOpAttr(d);
  d.U64(&page.verifier);
  bool more = false;
  while (d.Bool(&more) && more) {
    Entry e;
    std::string_view name;
    d.U64(&e.fileid);
    d.String(1024, &name);
    e.name = name;
    d.U64(&e.cookie);
    if (plus) {
      e.attr = ReadPostOpAttr(d);
      e.fh = ReadPostOpFh(d);
    }
    page.entries.push_back(std::move(e));
  }
  d.Bool(&page.eof);
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
  return page;
}

class ReaddirTest : public NfsTest {
 protected:
  Page Readdir(const Bytes& dir, uint64_t cookie, uint64_t verf, uint32_t count) {
    return ParsePage(Call(NfsProc::kReaddir, Args().Fh(dir).U64(cookie).U64(verf).U32(count)),
                     false);
  }
  Page Readdirplus(const Bytes& dir, uint64_t cookie, uint64_t verf, uint32_t dircount,
                   uint32_t maxcount) {
    return ParsePage(Call(NfsProc::kReaddirplus,
                          Args().Fh(dir).U64(cookie).U64(verf).U32(dircount).U32(maxcount)),
                     true);
  }

  // Creates `n` files named "file-<i>" straight in the backend (fast).
  Bytes Populate(size_t n) {
    Bytes dir = MakeDir(root_, "big");
    vfs::Handle dir_handle = codec_.Decode(dir)->handle;
    vfs::CreateRequest req;
    req.attrs.mode = 0644;
    for (size_t i = 0; i < n; ++i) {
      backend_->Create({}, dir_handle, "file-" + std::to_string(i), req,
                       [](Result<vfs::CreateReply> r) { ASSERT_TRUE(r.ok()); });
    }
    return dir;
  }
};

size_t EntryBytes(const Entry& e) { return DirEntryBytes(e.name.size()); }

TEST_F(ReaddirTest, SmallDirectoryInOnePage) {
  Bytes dir = MakeDir(root_, "d");
  CreateFile(dir, "a");
  MakeDir(dir, "b");
  Page page = Readdir(dir, 0, 0, 4096);
  ASSERT_EQ(page.status, NfsStat::kOk);
  EXPECT_TRUE(page.eof);
  EXPECT_TRUE(page.dir_attr);
  std::set<std::string> names;
  for (const Entry& e : page.entries) names.insert(e.name);
  EXPECT_EQ(names, (std::set<std::string>{".", "..", "a", "b"}));
}

TEST_F(ReaddirTest, TenThousandEntriesPagedWithSmallCounts) {
  constexpr size_t kFiles = 10000;
  Bytes dir = Populate(kFiles);
  std::map<std::string, int> seen;
  uint64_t cookie = 0, verf = 0;
  size_t pages = 0;
  for (bool eof = false; !eof;) {
    Page page = Readdir(dir, cookie, verf, 1024);
    ASSERT_EQ(page.status, NfsStat::kOk) << "after cookie " << cookie;
    ASSERT_FALSE(page.entries.empty());
    EXPECT_LE(page.resok_bytes, 1024u);
    for (const Entry& e : page.entries) ++seen[e.name];
    cookie = page.entries.back().cookie;
    verf = page.verifier;
    eof = page.eof;
    ++pages;
  }
  EXPECT_EQ(seen.size(), kFiles + 2);
  for (const auto& [name, times] : seen) EXPECT_EQ(times, 1) << name;
  EXPECT_GT(pages, kFiles / 50);
}

TEST_F(ReaddirTest, TenThousandEntriesPagedWithReaddirplus) {
  constexpr size_t kFiles = 10000;
  Bytes dir = Populate(kFiles);
  std::map<std::string, int> seen;
  uint64_t cookie = 0, verf = 0;
  for (bool eof = false; !eof;) {
    Page page = Readdirplus(dir, cookie, verf, 512, 4096);
    ASSERT_EQ(page.status, NfsStat::kOk) << "after cookie " << cookie;
    ASSERT_FALSE(page.entries.empty());
    EXPECT_LE(page.resok_bytes, 4096u);
    for (const Entry& e : page.entries) {
      ++seen[e.name];
      ASSERT_TRUE(e.attr && e.fh) << e.name;
      EXPECT_EQ(e.attr->fileid, e.fileid);
      EXPECT_EQ(e.attr->fsid, export_->id);
    }
    cookie = page.entries.back().cookie;
    verf = page.verifier;
    eof = page.eof;
  }
  EXPECT_EQ(seen.size(), kFiles + 2);
  for (const auto& [name, times] : seen) EXPECT_EQ(times, 1) << name;
}

TEST_F(ReaddirTest, ReaddirplusHandlesResolveToTheNamedObjects) {
  Bytes dir = MakeDir(root_, "d");
  Bytes a = CreateFile(dir, "a");
  Bytes sub = MakeDir(dir, "sub");
  Page page = Readdirplus(dir, 0, 0, 8192, 65536);
  ASSERT_EQ(page.status, NfsStat::kOk);
  std::map<std::string, Bytes> handles;
  for (const Entry& e : page.entries) {
    if (e.fh) handles[e.name] = *e.fh;
  }
  EXPECT_EQ(handles["a"], a);
  EXPECT_EQ(handles["sub"], sub);
  EXPECT_EQ(GetAttr(handles["a"]).fileid, GetAttr(a).fileid);
}

// Each page holds exactly as many entries as fit: the reply is within
// `count`, and the first entry of the next page would not have fitted.
TEST_F(ReaddirTest, PagesAreFilledExactlyToTheBudget) {
  Bytes dir = Populate(300);
  for (uint32_t count : {200u, 333u, 1000u, 4097u}) {
    uint64_t cookie = 0;
    for (bool eof = false; !eof;) {
      Page page = Readdir(dir, cookie, 0, count);
      ASSERT_EQ(page.status, NfsStat::kOk) << count;
      EXPECT_LE(page.resok_bytes, count);
      eof = page.eof;
      cookie = page.entries.back().cookie;
      if (!eof) {
        Page next = Readdir(dir, cookie, 0, count);
        ASSERT_FALSE(next.entries.empty());
        EXPECT_GT(page.resok_bytes + EntryBytes(next.entries.front()), count) << count;
      }
    }
  }
}

// dircount is a hint (as in Linux's knfsd): pages fill to maxcount.
TEST_F(ReaddirTest, PlusPagesAreFilledExactlyToMaxcount) {
  Bytes dir = Populate(200);
  struct Budget {
    uint32_t dircount, maxcount;
  } budgets[] = {{100000, 1000}, {300, 100000}, {700, 2500}};
  for (const Budget& b : budgets) {
    uint64_t cookie = 0;
    for (bool eof = false; !eof;) {
      CallResult r = Call(NfsProc::kReaddirplus,
                          Args().Fh(dir).U64(cookie).U64(0).U32(b.dircount).U32(b.maxcount));
      Page page = ParsePage(r, true);
      ASSERT_EQ(page.status, NfsStat::kOk);
      EXPECT_LE(page.resok_bytes, b.maxcount);
      eof = page.eof;
      cookie = page.entries.back().cookie;
      if (!eof) {
        Page next =
            ParsePage(Call(NfsProc::kReaddirplus,
                           Args().Fh(dir).U64(cookie).U64(0).U32(b.dircount).U32(b.maxcount)),
                      true);
        ASSERT_FALSE(next.entries.empty());
        const Entry& e = next.entries.front();
        size_t plus_bytes = EntryBytes(e) + 4 + kFattrBytes + 4 + 4 + xdr::Pad4(e.fh->size());
        EXPECT_GT(page.resok_bytes + plus_bytes, b.maxcount);
      }
    }
  }
}

TEST_F(ReaddirTest, TooSmallForOneEntry) {
  Bytes dir = MakeDir(root_, "d");
  CallResult r = Call(NfsProc::kReaddir, Args().Fh(dir).U64(0).U64(0).U32(100));
  EXPECT_EQ(r.status(), NfsStat::kTooSmall);
  xdr::Decoder d = r.After();
  EXPECT_TRUE(ReadPostOpAttr(d));
  EXPECT_EQ(Call(NfsProc::kReaddir, Args().Fh(dir).U64(0).U64(0).U32(0)).status(),
            NfsStat::kTooSmall);
  EXPECT_EQ(Call(NfsProc::kReaddirplus, Args().Fh(dir).U64(0).U64(0).U32(4096).U32(200)).status(),
            NfsStat::kTooSmall);
  // The smallest budget that holds the fixed part and "." works.
  uint32_t just_enough = static_cast<uint32_t>(kDirReplyFixedBytes + DirEntryBytes(1));
  Page page = Readdir(dir, 0, 0, just_enough);
  ASSERT_EQ(page.status, NfsStat::kOk);
  ASSERT_EQ(page.entries.size(), 1u);
  EXPECT_EQ(page.entries[0].name, ".");
}

TEST_F(ReaddirTest, CookieZeroAcceptsAnyVerifier) {
  Bytes dir = Populate(10);
  Page page = Readdir(dir, 0, 0xdeadbeefcafef00dULL, 4096);
  EXPECT_EQ(page.status, NfsStat::kOk);
  EXPECT_EQ(page.entries.size(), 12u);
  page = Readdirplus(dir, 0, 0x1234, 4096, 65536);
  EXPECT_EQ(page.status, NfsStat::kOk);
}

TEST_F(ReaddirTest, UnknownCookieIsBadCookie) {
  Bytes dir = Populate(3);
  Page first = Readdir(dir, 0, 0, 4096);
  CallResult r =
      Call(NfsProc::kReaddir, Args().Fh(dir).U64(1ull << 60).U64(first.verifier).U32(4096));
  EXPECT_EQ(r.status(), NfsStat::kBadCookie);
}

TEST_F(ReaddirTest, ListingAFileIsNotDir) {
  Bytes file = CreateFile(root_, "f");
  EXPECT_EQ(Call(NfsProc::kReaddir, Args().Fh(file).U64(0).U64(0).U32(4096)).status(),
            NfsStat::kNotDir);
  EXPECT_EQ(Call(NfsProc::kReaddirplus, Args().Fh(file).U64(0).U64(0).U32(4096).U32(8192)).status(),
            NfsStat::kNotDir);
}

TEST_F(ReaddirTest, HugeCountsAreCappedAtRtmax) {
  Bytes dir = Populate(40000);
  Page page = Readdir(dir, 0, 0, 0xffffffffu);
  ASSERT_EQ(page.status, NfsStat::kOk);
  EXPECT_LE(page.resok_bytes, options_.rtmax);
  EXPECT_FALSE(page.eof);
}

}  // namespace
}  // namespace geofs::nfs3::testing
