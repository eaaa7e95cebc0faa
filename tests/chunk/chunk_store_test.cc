#include "chunk/chunk_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "chunk/chunk_test_data.h"
#include "object/fault_injection_object_store.h"
#include "object/local_object_store.h"
#include "object/memory_object_store.h"

namespace geofs::chunk {
namespace {

using namespace std::chrono_literals;
using object::FaultInjectionObjectStore;
using object::ObjectOp;
using object::OpBit;

std::span<const uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

bool SameBytes(const Buffer& b, std::span<const uint8_t> expected) {
  return b.size() == expected.size() && std::equal(expected.begin(), expected.end(), b.data());
}

class ChunkStoreTest : public ::testing::Test {
 protected:
  object::MemoryObjectStore memory_;
  FaultInjectionObjectStore faulty_{&memory_};
  ChunkStore store_{&faulty_};
};

TEST_F(ChunkStoreTest, PutThenGetReturnsTheRawBytes) {
  auto text = testdata::TextLike(1 << 20, 1);
  auto put = store_.Put(text);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_TRUE(put->uploaded);
  EXPECT_EQ(put->id, ChunkId::Of(text));
  EXPECT_EQ(put->raw_size, text.size());
  EXPECT_LT(put->stored_size, text.size() / 2);  // compressed
  EXPECT_EQ(memory_.Head(put->id.ObjectKey())->size, put->stored_size);

  auto got = store_.Get(put->id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(SameBytes(*got, text));

  auto random = testdata::Random(300000, 2);
  auto put2 = store_.Put(random);
  ASSERT_TRUE(put2.ok());
  EXPECT_EQ(put2->stored_size, random.size() + kChunkHeaderSize);  // kept raw
  EXPECT_TRUE(SameBytes(*store_.Get(put2->id), random));
}

TEST_F(ChunkStoreTest, DuplicatePutsStoreOneObject) {
  auto data = testdata::TextLike(100000, 3);
  auto first = store_.Put(data);
  auto second = store_.Put(data);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(first->uploaded);
  EXPECT_FALSE(second->uploaded);
  EXPECT_EQ(first->id, second->id);
  EXPECT_EQ(second->stored_size, first->stored_size);
  EXPECT_EQ(memory_.object_count(), 1u);
  EXPECT_EQ(faulty_.calls(ObjectOp::kPut), 1u);
}

TEST_F(ChunkStoreTest, CorruptStoredBytesAreDetected) {
  auto data = testdata::TextLike(200000, 4);
  auto put = store_.Put(data);
  ASSERT_TRUE(put.ok());
  std::string key = put->id.ObjectKey();
  // Flip a byte in the middle of the compressed payload.
  size_t offset = put->stored_size / 2;
  uint8_t old = memory_.Get(key)->data()[offset];
  ASSERT_TRUE(memory_.CorruptForTesting(key, offset, old ^ 0x10).ok());
  auto got = store_.Get(put->id);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kCorruption);
  EXPECT_NE(got.status().message().find(put->id.ToHex()), std::string_view::npos)
      << got.status().ToString();
  // The encoded form is handed out as is; decoding it catches the damage too.
  auto encoded = store_.GetEncoded(put->id);
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(DecodeChunk(*encoded, put->id).status().code(), StatusCode::kCorruption);
}

TEST(ChunkStoreLocalTest, CorruptionOnDiskIsDetected) {
  std::string dir = (std::filesystem::temp_directory_path() / "geofs-chunk-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  {
    auto local = object::LocalObjectStore::Open(dir);
    ASSERT_TRUE(local.ok());
    ChunkStore store(local->get());
    auto data = testdata::Random(100000, 5);
    auto put = store.Put(data);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_TRUE(SameBytes(*store.Get(put->id), data));
    {
      std::fstream f((*local)->PathOf(put->id.ObjectKey()),
                     std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(5000);
      f.put('\x42');
    }
    EXPECT_EQ(store.Get(put->id).status().code(), StatusCode::kCorruption);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(ChunkStoreTest, MissingReportsUnstoredIdsInOrderWithoutDuplicates) {
  std::vector<ChunkId> stored;
  std::vector<ChunkId> absent;
  for (int i = 0; i < 40; ++i) {
    auto data = testdata::Random(1000 + i, 100 + i);
    if (i % 2 == 0) {
      auto put = store_.Put(data);
      ASSERT_TRUE(put.ok());
      stored.push_back(put->id);
    } else {
      absent.push_back(ChunkId::Of(data));
    }
  }
  std::vector<ChunkId> query;
  for (size_t i = 0; i < absent.size(); ++i) {
    query.push_back(stored[i]);
    query.push_back(absent[i]);
    query.push_back(absent[i]);  // duplicates are reported once
  }
  for (int parallelism : {1, 4, 16}) {
    SCOPED_TRACE(parallelism);
    ChunkStoreOptions o;
    o.missing_parallelism = parallelism;
    ChunkStore store(&faulty_, o);
    auto missing = store.Missing(query);
    ASSERT_TRUE(missing.ok()) << missing.status().ToString();
    EXPECT_EQ(*missing, absent);
  }
  auto none = store_.Missing({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(*store_.Has(stored[0]));
  EXPECT_FALSE(*store_.Has(absent[0]));
}

TEST_F(ChunkStoreTest, StoreErrorsSurfaceCleanlyAndLoseNothing) {
  auto data = testdata::TextLike(50000, 6);
  faulty_.FailNext(OpBit(ObjectOp::kPut), 1, Status::Unavailable("s3 down"));
  auto failed = store_.Put(data);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(memory_.object_count(), 0u);
  auto retried = store_.Put(data);
  ASSERT_TRUE(retried.ok());
  EXPECT_TRUE(retried->uploaded);

  faulty_.FailNext(OpBit(ObjectOp::kHead), 1, Status::IoError("head failed"));
  EXPECT_EQ(store_.Put(data).status().code(), StatusCode::kIoError);
  faulty_.FailNext(OpBit(ObjectOp::kGet), 1, Status::Unavailable("get failed"));
  EXPECT_EQ(store_.Get(retried->id).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(SameBytes(*store_.Get(retried->id), data));

  // One failing existence check fails the whole batch rather than guessing.
  std::vector<ChunkId> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(ChunkId::Of(testdata::Random(10, i)));
  faulty_.FailNext(OpBit(ObjectOp::kHead), 1, Status::Unavailable("flaky"));
  EXPECT_EQ(store_.Missing(ids).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(store_.Missing(ids).ok());

  EXPECT_EQ(store_.Get(ChunkId::Of(AsBytes("never stored"))).status().code(),
            StatusCode::kNotFound);
}

// The batch forms: each chunk gets its own result; what is stored already is
// not stored again; a failed object-store write fails only its chunk.
TEST_F(ChunkStoreTest, PutManyFormsAnswerPerChunk) {
  std::vector<std::vector<uint8_t>> raws;
  for (int i = 0; i < 6; ++i) raws.push_back(testdata::TextLike(40000 + 1000 * i, 20 + i));
  ASSERT_TRUE(store_.Put(raws[0]).ok());  // stored before
  std::vector<NamedChunk> named;
  for (const auto& raw : raws) named.push_back({ChunkId::Of(raw), raw});
  faulty_.FailNext(OpBit(ObjectOp::kPut), 1, Status::Unavailable("s3 down"));
  auto puts = store_.PutNamedMany(named, 3);
  ASSERT_EQ(puts.size(), raws.size());
  ASSERT_TRUE(puts[0].ok());
  EXPECT_FALSE(puts[0]->uploaded);
  int failed = 0;
  for (size_t i = 1; i < raws.size(); ++i) {
    if (!puts[i].ok()) {
      EXPECT_EQ(puts[i].status().code(), StatusCode::kUnavailable);
      ++failed;
      continue;
    }
    EXPECT_TRUE(puts[i]->uploaded);
    EXPECT_EQ(puts[i]->id, named[i].id);
    EXPECT_EQ(puts[i]->raw_size, raws[i].size());
    EXPECT_LT(puts[i]->stored_size, raws[i].size());  // compressed
    EXPECT_TRUE(SameBytes(*store_.Get(named[i].id), raws[i]));
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(memory_.object_count(), raws.size() - 1);

  // Stored form: checked before anything is stored, per chunk.
  const std::vector<uint8_t> good = testdata::Random(5000, 30);
  const std::vector<uint8_t> other = testdata::Random(5000, 31);
  auto encode = [](const std::vector<uint8_t>& raw) {
    return EncodeChunk(raw, ChunkCodecOptions{}).bytes;
  };
  const std::vector<EncodedUpload> uploads = {{ChunkId::Of(good), encode(good)},
                                              {ChunkId::Of(good), encode(other)}};
  auto encoded = store_.PutEncodedMany(uploads, 2);
  ASSERT_EQ(encoded.size(), 2u);
  ASSERT_TRUE(encoded[0].ok()) << encoded[0].status().ToString();
  EXPECT_TRUE(encoded[0]->uploaded);
  EXPECT_EQ(encoded[1].status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(SameBytes(*store_.Get(ChunkId::Of(good)), good));
}

TEST_F(ChunkStoreTest, APutWhoseReplyWasLostIsDeduplicatedOnRetry) {
  auto data = testdata::TextLike(70000, 7);
  faulty_.AddFault({.ops = OpBit(ObjectOp::kPut),
                    .status = Status(StatusCode::kDeadlineExceeded, "reply lost"),
                    .count = 1,
                    .after_call = true});
  EXPECT_EQ(store_.Put(data).status().code(), StatusCode::kDeadlineExceeded);
  auto retry = store_.Put(data);
  ASSERT_TRUE(retry.ok());
  EXPECT_FALSE(retry->uploaded);
  EXPECT_TRUE(SameBytes(*store_.Get(retry->id), data));
}

TEST_F(ChunkStoreTest, StalledReadsStillReturnVerifiedBytes) {
  auto data = testdata::Random(10000, 8);
  auto put = store_.Put(data);
  ASSERT_TRUE(put.ok());
  faulty_.StallNext(OpBit(ObjectOp::kGet), 1, 100ms);
  auto start = std::chrono::steady_clock::now();
  auto got = store_.Get(put->id);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(SameBytes(*got, data));
}

TEST_F(ChunkStoreTest, PutEncodedVerifiesBeforeStoring) {
  auto data = testdata::TextLike(80000, 9);
  ChunkId id = ChunkId::Of(data);
  Buffer encoded = EncodeChunk(data, {}).bytes;

  // Claimed id does not match the bytes.
  ChunkId other = ChunkId::Of(AsBytes("other"));
  auto wrong = store_.PutEncoded(other, encoded);
  EXPECT_EQ(wrong.status().code(), StatusCode::kCorruption);
  // Damaged encoding.
  std::vector<uint8_t> damaged(encoded.data(), encoded.data() + encoded.size());
  damaged[damaged.size() / 2] ^= 1;
  EXPECT_EQ(store_.PutEncoded(id, Buffer::CopyOf(damaged)).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(memory_.object_count(), 0u);

  auto ok = store_.PutEncoded(id, encoded);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->uploaded);
  EXPECT_EQ(ok->raw_size, data.size());
  EXPECT_EQ(ok->stored_size, encoded.size());
  EXPECT_TRUE(SameBytes(*store_.Get(id), data));
  auto again = store_.PutEncoded(id, encoded);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->uploaded);
  // A damaged upload of a chunk already stored is still refused.
  EXPECT_EQ(store_.PutEncoded(id, Buffer::CopyOf(damaged)).status().code(),
            StatusCode::kCorruption);
  EXPECT_TRUE(SameBytes(*store_.Get(id), data));
}

TEST_F(ChunkStoreTest, ListsChunksForGarbageCollectionAndDeletes) {
  std::vector<ChunkId> ids;
  for (int i = 0; i < 30; ++i) {
    auto put = store_.Put(testdata::Random(100 + i, 200 + i));
    ASSERT_TRUE(put.ok());
    ids.push_back(put->id);
  }
  // Objects that are not chunks are skipped.
  ASSERT_TRUE(memory_.Put("chunks/zz/not-a-chunk", AsBytes("x")).ok());
  ASSERT_TRUE(memory_.Put("other/thing", AsBytes("x")).ok());

  std::vector<ChunkId> listed;
  ASSERT_TRUE(store_
                  .ForEachChunk([&](const ChunkInfo& info) {
                    listed.push_back(info.id);
                    EXPECT_GT(info.stored_size, kChunkHeaderSize);
                    EXPECT_GT(info.modified.sec, 0);
                    return Status::Ok();
                  })
                  .ok());
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(listed, ids);

  ASSERT_TRUE(store_.Delete(ids[0]).ok());
  ASSERT_TRUE(store_.Delete(ids[0]).ok());
  EXPECT_FALSE(*store_.Has(ids[0]));
  EXPECT_EQ(store_.Get(ids[0]).status().code(), StatusCode::kNotFound);
  int count = 0;
  Status stop = store_.ForEachChunk(
      [&](const ChunkInfo&) { return ++count == 5 ? Status::Aborted("enough") : Status::Ok(); });
  EXPECT_EQ(stop.code(), StatusCode::kAborted);
  EXPECT_EQ(count, 5);
}

TEST_F(ChunkStoreTest, RefusesOversizedChunksAndValidatesOptions) {
  ChunkStoreOptions o;
  o.max_chunk_size = 1000;
  ChunkStore small(&faulty_, o);
  EXPECT_EQ(small.Put(testdata::Random(1001, 1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(small.Put(testdata::Random(1000, 1)).ok());

  EXPECT_TRUE(ChunkStoreOptions().Validate().ok());
  o = {};
  o.missing_parallelism = 0;
  EXPECT_FALSE(o.Validate().ok());
  o = {};
  o.max_chunk_size = kMaxChunkSizeLimit + 1;
  EXPECT_FALSE(o.Validate().ok());
  o = {};
  o.codec.zstd_level = 1000;
  EXPECT_FALSE(o.Validate().ok());
}

TEST_F(ChunkStoreTest, ConcurrentWritersOfOverlappingChunks) {
  std::vector<std::vector<uint8_t>> chunks;
  for (int i = 0; i < 24; ++i) chunks.push_back(testdata::TextLike(20000 + i * 100, 300 + i));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < chunks.size(); ++i) {
        const auto& c = chunks[(i + t * 4) % chunks.size()];
        auto put = store_.Put(c);
        if (!put.ok() || !SameBytes(*store_.Get(put->id), c)) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(memory_.object_count(), chunks.size());
}

}  // namespace
}  // namespace geofs::chunk
