// MetadataCache: lease expiry on a manual clock, invalidation races,
// renewal, immutable fallback, bounds.
#include "spoke/metadata_cache.h"

#include <gtest/gtest.h>

namespace geofs::spoke {
namespace {

using std::chrono::seconds;

vfs::Attr FileAttr(uint64_t ino, uint64_t size) {
  vfs::Attr a;
  a.fileid = ino;
  a.size = size;
  return a;
}

class MetadataCacheTest : public ::testing::Test {
 protected:
  SteadyTime In(seconds s) const { return clock_.Now() + s; }

  ManualClock clock_;
  MetadataCache cache_{&clock_};
  const FileKey file_{10, 1};
  const FileKey dir_{2, 7};
};

TEST_F(MetadataCacheTest, EntriesServeUntilTheLeaseEnds) {
  cache_.PutAttr(file_, FileAttr(10, 5), In(seconds(10)), cache_.Epoch());
  ASSERT_TRUE(cache_.GetAttr(10, false));
  EXPECT_EQ(cache_.GetAttr(10, false)->size, 5u);
  clock_.Advance(seconds(9));
  EXPECT_TRUE(cache_.GetAttr(10, false));
  clock_.Advance(seconds(1));
  EXPECT_FALSE(cache_.GetAttr(10, false));
  // An immutable portal cut off from its hub may still use it.
  ASSERT_TRUE(cache_.GetAttr(10, true));
  EXPECT_EQ(cache_.GetAttr(10, true)->size, 5u);
}

TEST_F(MetadataCacheTest, UnleasedRepliesAreStoredExpired) {
  // Without a session the expiry is the time the request was sent.
  cache_.PutAttr(file_, FileAttr(10, 5), clock_.Now(), cache_.Epoch());
  EXPECT_FALSE(cache_.GetAttr(10, false));
  EXPECT_TRUE(cache_.GetAttr(10, true));
  EXPECT_TRUE(cache_.Held().empty());
}

TEST_F(MetadataCacheTest, InvalidationDropsEverythingOfTheInode) {
  uint64_t epoch = cache_.Epoch();
  cache_.PutAttr(dir_, FileAttr(2, 0), In(seconds(10)), epoch);
  cache_.PutLookup(dir_, "a", file_, In(seconds(10)), epoch);
  cache_.PutLink(dir_, "target", In(seconds(10)), epoch);
  CachedDirPage page{{{"a", 10, 1, file_}}, true, 42};
  cache_.PutDirPage(dir_, 0, 100, page, In(seconds(10)), epoch);
  ASSERT_TRUE(cache_.Lookup(2, "a", false));
  ASSERT_TRUE(cache_.ReadDir(2, 0, 100, false));

  cache_.Invalidate(2);
  EXPECT_FALSE(cache_.GetAttr(2, false));
  EXPECT_FALSE(cache_.GetAttr(2, true));
  EXPECT_FALSE(cache_.Lookup(2, "a", true));
  EXPECT_FALSE(cache_.ReadDir(2, 0, 100, true));
  EXPECT_FALSE(cache_.ReadLink(2, true));
}

TEST_F(MetadataCacheTest, MissingNamesServeUnderTheDirectorysLeaseUntilInvalidated) {
  const uint64_t epoch = cache_.Epoch();
  cache_.PutMissing(dir_, "nope", In(seconds(10)), epoch);
  EXPECT_TRUE(cache_.KnownMissing(2, "nope", false));
  EXPECT_FALSE(cache_.KnownMissing(2, "other", false));
  EXPECT_FALSE(cache_.KnownMissing(3, "nope", false));
  // The lease ends: no longer trusted (an immutable portal still may).
  clock_.Advance(seconds(10));
  EXPECT_FALSE(cache_.KnownMissing(2, "nope", false));
  EXPECT_TRUE(cache_.KnownMissing(2, "nope", true));

  // Found later (a lookup or a listing naming it): no longer missing.
  cache_.PutMissing(dir_, "a", In(seconds(20)), cache_.Epoch());
  cache_.PutMissing(dir_, "b", In(seconds(20)), cache_.Epoch());
  cache_.PutLookup(dir_, "a", file_, In(seconds(20)), cache_.Epoch());
  EXPECT_FALSE(cache_.KnownMissing(2, "a", false));
  cache_.PutDirPage(dir_, 0, 10, CachedDirPage{{{"b", 11, 3, {11, 1}}}, true, 1}, In(seconds(20)),
                    cache_.Epoch());
  EXPECT_FALSE(cache_.KnownMissing(2, "b", false));

  // A create in the directory invalidates it, and an answer that left the
  // hub before that is not kept.
  cache_.PutMissing(dir_, "c", In(seconds(20)), cache_.Epoch());
  const uint64_t before = cache_.Epoch();
  cache_.Invalidate(2);
  EXPECT_FALSE(cache_.KnownMissing(2, "c", true));
  cache_.PutMissing(dir_, "c", In(seconds(20)), before);
  EXPECT_FALSE(cache_.KnownMissing(2, "c", true));
}

TEST_F(MetadataCacheTest, ACompleteListingTellsWhichNamesAreMissing) {
  const uint64_t epoch = cache_.Epoch();
  const FileKey b{11, 1}, c{12, 1};
  // Two pages of two entries: incomplete until the eof page is in.
  cache_.PutDirPage(dir_, 0, 2, CachedDirPage{{{"a", 10, 3, file_}, {"b", 11, 4, b}}, false, 1},
                    In(seconds(10)), epoch);
  EXPECT_FALSE(cache_.KnownMissing(2, "zzz", false));
  // A page of another size does not continue the chain.
  cache_.PutDirPage(dir_, 4, 3, CachedDirPage{{{"c", 12, 5, c}}, true, 1}, In(seconds(10)), epoch);
  EXPECT_FALSE(cache_.KnownMissing(2, "zzz", false));
  cache_.PutDirPage(dir_, 4, 2, CachedDirPage{{{"c", 12, 5, c}}, true, 1}, In(seconds(10)), epoch);
  EXPECT_TRUE(cache_.KnownMissing(2, "zzz", false));
  for (const char* listed : {"a", "b", "c", ".", ".."}) {
    EXPECT_FALSE(cache_.KnownMissing(2, listed, false)) << listed;
  }
  // Only under the lease; a new lease does not bring back pages of the old
  // one; an invalidation forgets it.
  clock_.Advance(seconds(10));
  EXPECT_FALSE(cache_.KnownMissing(2, "zzz", false));
  cache_.PutDirPage(dir_, 0, 2, CachedDirPage{{{"a", 10, 3, file_}, {"b", 11, 4, b}}, false, 1},
                    In(seconds(20)), cache_.Epoch());
  EXPECT_FALSE(cache_.KnownMissing(2, "zzz", false));
  cache_.PutDirPage(dir_, 4, 2, CachedDirPage{{{"c", 12, 5, c}}, true, 1}, In(seconds(20)),
                    cache_.Epoch());
  EXPECT_TRUE(cache_.KnownMissing(2, "zzz", false));
  cache_.Invalidate(2);
  EXPECT_FALSE(cache_.KnownMissing(2, "zzz", true));
  // A listing of a newer verifier replaces the older pages: incomplete again.
  cache_.PutDirPage(dir_, 0, 2, CachedDirPage{{{"a", 10, 3, file_}}, true, 1}, In(seconds(20)),
                    cache_.Epoch());
  EXPECT_TRUE(cache_.KnownMissing(2, "zzz", false));
  cache_.PutDirPage(dir_, 0, 5, CachedDirPage{{{"a", 10, 3, file_}}, false, 2}, In(seconds(20)),
                    cache_.Epoch());
  EXPECT_FALSE(cache_.KnownMissing(2, "zzz", false));
}

TEST_F(MetadataCacheTest, MissingNamesAreBoundedInAll) {
  // Spread over two directories; the names an invalidation drops make room.
  const FileKey other{3, 1};
  const size_t half = MetadataCache::kMaxMissingNames / 2;
  for (size_t i = 0; i < half; ++i) {
    cache_.PutMissing(dir_, "n" + std::to_string(i), In(seconds(20)), cache_.Epoch());
    cache_.PutMissing(other, "n" + std::to_string(i), In(seconds(20)), cache_.Epoch());
  }
  cache_.PutMissing(dir_, "over", In(seconds(20)), cache_.Epoch());
  EXPECT_FALSE(cache_.KnownMissing(2, "over", false)) << "past the bound";
  EXPECT_TRUE(cache_.KnownMissing(2, "n0", false));
  // Found names and invalidated directories give their room back.
  cache_.PutLookup(dir_, "n0", file_, In(seconds(20)), cache_.Epoch());
  cache_.PutMissing(dir_, "over", In(seconds(20)), cache_.Epoch());
  EXPECT_TRUE(cache_.KnownMissing(2, "over", false));
  cache_.Invalidate(3);
  cache_.PutMissing(dir_, "after", In(seconds(20)), cache_.Epoch());
  EXPECT_TRUE(cache_.KnownMissing(2, "after", false));
  cache_.Clear();
  cache_.PutMissing(dir_, "cleared", In(seconds(20)), cache_.Epoch());
  EXPECT_TRUE(cache_.KnownMissing(2, "cleared", false));
}

// Once a lease ended the hub no longer tells us of changes; a later lease
// on the inode must not make what the old one covered servable again.
TEST_F(MetadataCacheTest, ANewLeaseDoesNotReviveWhatAnEndedOneCovered) {
  cache_.PutAttr(dir_, FileAttr(2, 1), In(seconds(10)), cache_.Epoch());
  cache_.PutLookup(dir_, "a", file_, In(seconds(10)), cache_.Epoch());
  cache_.PutMissing(dir_, "gone", In(seconds(10)), cache_.Epoch());
  clock_.Advance(seconds(11));
  // A fresh answer about one part of the directory.
  cache_.PutAttr(dir_, FileAttr(2, 2), In(seconds(10)), cache_.Epoch());
  ASSERT_TRUE(cache_.GetAttr(2, false));
  EXPECT_EQ(cache_.GetAttr(2, false)->size, 2u);
  EXPECT_FALSE(cache_.Lookup(2, "a", true)) << "a name from the ended lease";
  EXPECT_FALSE(cache_.KnownMissing(2, "gone", true));
  // Renewals and further answers under a live lease keep what it covers.
  cache_.PutLookup(dir_, "b", file_, In(seconds(10)), cache_.Epoch());
  cache_.Renew({2}, In(seconds(20)));
  clock_.Advance(seconds(15));
  EXPECT_TRUE(cache_.Lookup(2, "b", false));
  EXPECT_EQ(cache_.GetAttr(2, false)->size, 2u);
}

TEST_F(MetadataCacheTest, ReplyStartedBeforeAnInvalidationIsNotCached) {
  uint64_t before = cache_.Epoch();
  cache_.Invalidate(10);  // the hub changed the file while our fetch was in flight
  cache_.PutAttr(file_, FileAttr(10, 1), In(seconds(10)), before);
  EXPECT_FALSE(cache_.GetAttr(10, false));

  uint64_t after = cache_.Epoch();
  cache_.PutAttr(file_, FileAttr(10, 2), In(seconds(10)), after);
  ASSERT_TRUE(cache_.GetAttr(10, false));
  EXPECT_EQ(cache_.GetAttr(10, false)->size, 2u);
}

TEST_F(MetadataCacheTest, InvalidationOfAnotherInodeDoesNotBlockPuts) {
  uint64_t before = cache_.Epoch();
  cache_.Invalidate(99);
  cache_.PutAttr(file_, FileAttr(10, 1), In(seconds(10)), before);
  EXPECT_TRUE(cache_.GetAttr(10, false));
}

TEST_F(MetadataCacheTest, ClearRejectsRepliesInFlight) {
  uint64_t before = cache_.Epoch();
  cache_.PutAttr(file_, FileAttr(10, 1), In(seconds(10)), before);
  cache_.Clear();
  EXPECT_FALSE(cache_.GetAttr(10, true));
  cache_.PutAttr(FileKey{11, 1}, FileAttr(11, 1), In(seconds(10)), before);
  EXPECT_FALSE(cache_.GetAttr(11, true));
}

TEST_F(MetadataCacheTest, RenewalExtendsAndNeverShortens) {
  cache_.PutAttr(file_, FileAttr(10, 1), In(seconds(3)), cache_.Epoch());
  cache_.PutAttr(FileKey{11, 1}, FileAttr(11, 1), In(seconds(30)), cache_.Epoch());
  auto held = cache_.Held();
  std::sort(held.begin(), held.end());
  EXPECT_EQ(held, (std::vector<uint64_t>{10, 11}));

  cache_.Renew({10, 11}, In(seconds(6)));
  clock_.Advance(seconds(5));
  EXPECT_TRUE(cache_.GetAttr(10, false));
  EXPECT_TRUE(cache_.GetAttr(11, false));
  clock_.Advance(seconds(1));
  EXPECT_FALSE(cache_.GetAttr(10, false));
  EXPECT_TRUE(cache_.GetAttr(11, false));
  EXPECT_EQ(cache_.Held(), (std::vector<uint64_t>{11}));
}

TEST_F(MetadataCacheTest, ChunkMapCarriesItsAttributes) {
  auto map = std::make_shared<ChunkMap>();
  map->version = 3;
  map->attr = FileAttr(10, 1234);
  map->extents.push_back(MapExtent{0, 1234, chunk::ChunkId::Of({}), 0, 1234});
  cache_.PutChunkMap(file_, map, In(seconds(10)), cache_.Epoch());
  auto got = cache_.GetChunkMap(10, false);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->version, 3u);
  EXPECT_EQ(cache_.GetAttr(10, false)->size, 1234u);
}

TEST_F(MetadataCacheTest, NewerListingReplacesPagesOfAnOlderVerifier) {
  uint64_t epoch = cache_.Epoch();
  cache_.PutDirPage(dir_, 0, 2, CachedDirPage{{{"a", 10, 1, file_}}, false, 1}, In(seconds(10)),
                    epoch);
  cache_.PutDirPage(dir_, 1, 2, CachedDirPage{{{"b", 11, 2, {11, 1}}}, true, 1}, In(seconds(10)),
                    epoch);
  cache_.PutDirPage(dir_, 0, 2, CachedDirPage{{{"c", 12, 5, {12, 1}}}, true, 2}, In(seconds(10)),
                    epoch);
  EXPECT_FALSE(cache_.ReadDir(2, 1, 2, false));
  auto first = cache_.ReadDir(2, 0, 2, false);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->entries.at(0).name, "c");
  // Listed names answer lookups too.
  EXPECT_EQ(cache_.Lookup(2, "c", false)->ino, 12u);
}

TEST_F(MetadataCacheTest, StaysWithinItsBoundPreferringLiveLeases) {
  MetadataCache small(&clock_, 16);
  for (uint64_t ino = 1; ino <= 8; ++ino) {
    small.PutAttr({ino, 1}, FileAttr(ino, 0), In(seconds(100)), small.Epoch());
  }
  for (uint64_t ino = 100; ino < 200; ++ino) {
    small.PutAttr({ino, 1}, FileAttr(ino, 0), clock_.Now(), small.Epoch());
  }
  EXPECT_LE(small.size(), 16u);
  for (uint64_t ino = 1; ino <= 8; ++ino) EXPECT_TRUE(small.GetAttr(ino, false)) << ino;
}

TEST_F(MetadataCacheTest, ReplyForAnEvictedInvalidatedInodeIsNotCached) {
  MetadataCache small(&clock_, 4);
  uint64_t before = small.Epoch();
  small.Invalidate(10);
  for (uint64_t ino = 100; ino < 110; ++ino) {
    small.PutAttr({ino, 1}, FileAttr(ino, 0), clock_.Now(), small.Epoch());
  }
  small.PutAttr(file_, FileAttr(10, 1), In(seconds(10)), before);
  EXPECT_FALSE(small.GetAttr(10, true));
}

}  // namespace
}  // namespace geofs::spoke
