#include "hub/gc_runner.h"

#include <gtest/gtest.h>

#include "hub/chunk_ids.h"
#include "hub/hub_fsck.h"
#include "hub_test_util.h"

namespace geofs::hub {
namespace {

using testing::Await;
using testing::MemoryHub;
using testing::RandomBytes;

TEST(GcRunnerTest, DeletesOnlyChunksUnreferencedForTheGracePeriod) {
  MemoryHub hub;
  HubBackendOptions backend_options;
  backend_options.dirty_expire = std::chrono::milliseconds(0);
  HubBackend backend(&hub.ns(), &hub.chunks(), backend_options);
  vfs::CreateRequest create;
  create.attrs.mode = 0644;
  auto file = Await<vfs::CreateReply>(
      [&](auto cb) { backend.Create({}, hub.ns().RootHandle(), "f", create, cb); });
  ASSERT_TRUE(file.ok());
  const vfs::Handle h = file->object.handle;
  auto write = [&](const std::string& data) {
    return Await<vfs::WriteReply>([&](auto cb) {
      backend.Write({}, h, 0, Buffer::CopyOf(data), vfs::Stability::kFileSync, cb);
    });
  };
  const std::string v2 = RandomBytes(200000, 2);
  ASSERT_TRUE(write(RandomBytes(200000, 1)).ok());
  ASSERT_TRUE(write(v2).ok());  // the first version's chunk is now garbage
  ASSERT_EQ(hub.objects().object_count(), 2u);

  ManualClock clock(Clock::Real()->WallNow());
  GcOptions options;
  options.grace = std::chrono::hours(1);
  options.clock = &clock;
  GcRunner gc(&hub.ns(), &hub.chunks(), options);
  auto early = gc.RunOnce();
  ASSERT_TRUE(early.ok()) << early.status().ToString();
  EXPECT_EQ(early->deleted, 0u);
  EXPECT_EQ(hub.objects().object_count(), 2u);

  clock.Advance(std::chrono::hours(2));
  auto late = gc.RunOnce();
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_EQ(late->deleted, 1u);
  EXPECT_EQ(hub.objects().object_count(), 1u);

  auto read = Await<vfs::ReadReply>([&](auto cb) { backend.Read({}, h, 0, 300000, cb); });
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->data.view() == v2);
  FsckOptions fsck;
  fsck.verify_chunk_data = true;
  auto report = CheckHub(hub.ns(), hub.chunks(), fsck);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->problems.empty()) << report->problems.front();
}

std::span<const uint8_t> SpanOf(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A hub with one committed file, for the orphan sweep tests.
class OrphanSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_options_.dirty_expire = std::chrono::milliseconds(0);
    backend_ = std::make_unique<HubBackend>(&hub_.ns(), &hub_.chunks(), backend_options_);
    vfs::CreateRequest create;
    create.attrs.mode = 0644;
    auto file = Await<vfs::CreateReply>(
        [&](auto cb) { backend_->Create({}, hub_.ns().RootHandle(), "f", create, cb); });
    ASSERT_TRUE(file.ok());
    file_ = file->object.handle;
    auto written = Await<vfs::WriteReply>([&](auto cb) {
      backend_->Write({}, file_, 0, Buffer::CopyOf(content_), vfs::Stability::kFileSync, cb);
    });
    ASSERT_TRUE(written.ok());
    // Started as after a crash: a sweep is due for what was stored before.
    ASSERT_TRUE(hub_.ns().MarkRunning(clock_.WallNow()).ok());
  }

  // The hub stops and starts again, cleanly or as after a crash.
  void Restart(bool clean) {
    if (clean) ASSERT_TRUE(hub_.ns().MarkCleanStop().ok());
    ASSERT_TRUE(hub_.ns().MarkRunning(clock_.WallNow()).ok());
  }

  // What a crash between upload and commit leaves when the registration
  // (not synced on its own) is lost: a stored chunk the namespace does not
  // know.
  chunk::ChunkId StoreOrphan(const std::string& raw) {
    auto put = hub_.chunks().Put(SpanOf(raw));
    EXPECT_TRUE(put.ok() && put->uploaded);
    EXPECT_FALSE(hub_.ns().GetChunk(ToMetaId(put->id))->has_value());
    return put->id;
  }

  void ExpectFileIntactAndHubClean() {
    auto read = Await<vfs::ReadReply>([&](auto cb) { backend_->Read({}, file_, 0, 300000, cb); });
    ASSERT_TRUE(read.ok());
    EXPECT_TRUE(read->data.view() == content_);
    FsckOptions fsck;
    fsck.verify_chunk_data = true;
    auto report = CheckHub(hub_.ns(), hub_.chunks(), fsck);
    ASSERT_TRUE(report.ok());
    EXPECT_TRUE(report->problems.empty()) << report->problems.front();
  }

  // GC on the fixture's clock, with a grace period of an hour.
  GcOptions HourOfGrace() {
    GcOptions options;
    options.grace = std::chrono::hours(1);
    options.clock = &clock_;
    return options;
  }

  MemoryHub hub_;
  HubBackendOptions backend_options_;
  std::unique_ptr<HubBackend> backend_;
  vfs::Handle file_;
  const std::string content_ = RandomBytes(200000, 1);
  ManualClock clock_{Clock::Real()->WallNow()};
};

TEST_F(OrphanSweepTest, AnOrphanIsSweptOnceOlderThanTheGrace) {
  const chunk::ChunkId orphan = StoreOrphan(RandomBytes(100000, 7));
  ASSERT_EQ(hub_.objects().object_count(), 2u);
  GcRunner gc(&hub_.ns(), &hub_.chunks(), HourOfGrace());

  clock_.Advance(std::chrono::minutes(59));
  auto young = gc.RunOnce();
  ASSERT_TRUE(young.ok()) << young.status().ToString();
  EXPECT_EQ(young->orphans, 0u);
  EXPECT_TRUE(*hub_.chunks().Has(orphan));

  clock_.Advance(std::chrono::minutes(2));
  auto old = gc.RunOnce();
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->orphans, 1u);
  EXPECT_EQ(old->deleted, 0u);
  EXPECT_FALSE(*hub_.chunks().Has(orphan));
  EXPECT_FALSE(hub_.ns().GetChunk(ToMetaId(orphan))->has_value());
  EXPECT_EQ(hub_.objects().object_count(), 1u);  // the committed chunk stays
  ExpectFileIntactAndHubClean();

  auto again = gc.RunOnce();  // nothing left to do
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->orphans + again->deleted + again->failed, 0u);
}

TEST_F(OrphanSweepTest, AFreshUploadIsNotSwept) {
  // The crash was two hours ago, so the first pass sweeps; meanwhile a
  // writer is between upload and commit, following the protocol (register,
  // store), and an orphan was stored just now.
  const WallTime now = clock_.WallNow();
  ASSERT_TRUE(hub_.ns().MarkRunning({now.sec - 7200, now.nsec}).ok());
  const std::string pending_raw = RandomBytes(100000, 8);
  const chunk::ChunkId pending = chunk::ChunkId::Of(SpanOf(pending_raw));
  ASSERT_TRUE(hub_.ns()
                  .RegisterChunks(std::vector<meta::ChunkRef>{{ToMetaId(pending), 100000}},
                                  /*sync=*/false)
                  .ok());
  ASSERT_TRUE(hub_.chunks().Put(SpanOf(pending_raw)).ok());
  const chunk::ChunkId orphan = StoreOrphan(RandomBytes(100000, 9));

  GcRunner gc(&hub_.ns(), &hub_.chunks(), HourOfGrace());
  auto r = gc.RunOnce();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->orphans + r->deleted + r->failed, 0u);
  EXPECT_TRUE(*hub_.chunks().Has(pending));
  EXPECT_TRUE(*hub_.chunks().Has(orphan));
  EXPECT_EQ(hub_.objects().object_count(), 3u);
  EXPECT_EQ(hub_.ns().OrphanSweepDue()->has_value(), false);

  // Another crash. Long after, a registered chunk is the namespace's
  // business (collected when unreferenced past the grace), never the
  // sweep's.
  Restart(/*clean=*/false);
  clock_.Advance(std::chrono::hours(2));
  r = gc.RunOnce();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->orphans, 1u);
  EXPECT_EQ(r->deleted, 1u);
  EXPECT_EQ(hub_.objects().object_count(), 1u);
  ExpectFileIntactAndHubClean();
}

TEST_F(OrphanSweepTest, TheSweepRecordsTheStoredSizesTheNamespaceLacks) {
  // Chunks stored without their size recorded, as a hub from before sizes
  // were recorded left them.
  auto store_unsized = [&](uint64_t seed) {
    const std::string raw = RandomBytes(100000, seed);
    const chunk::ChunkId id = chunk::ChunkId::Of(SpanOf(raw));
    ASSERT_TRUE(
        hub_.ns().RegisterChunks(std::vector<meta::ChunkRef>{{ToMetaId(id), raw.size()}}).ok());
    ASSERT_TRUE(hub_.chunks().Put(SpanOf(raw)).ok());
  };
  store_unsized(10);
  EXPECT_EQ(hub_.ns().Stats()->unsized_chunks, 1u);
  GcRunner gc(&hub_.ns(), &hub_.chunks(), HourOfGrace());
  clock_.Advance(std::chrono::hours(2));
  ASSERT_TRUE(gc.RunOnce().ok());  // the sweep the fixture's start called for
  EXPECT_EQ(hub_.ns().Stats()->unsized_chunks, 0u);
  EXPECT_EQ(hub_.ns().Stats()->stored_bytes, hub_.StoredBytes());

  // Even after a clean stop, a start that finds sizes missing makes a
  // sweep due.
  store_unsized(11);
  Restart(/*clean=*/true);
  EXPECT_TRUE(hub_.ns().OrphanSweepDue()->has_value());
  clock_.Advance(std::chrono::hours(2));
  ASSERT_TRUE(gc.RunOnce().ok());
  EXPECT_FALSE(hub_.ns().OrphanSweepDue()->has_value());
  EXPECT_EQ(hub_.ns().Stats()->unsized_chunks, 0u);
  EXPECT_EQ(hub_.ns().Stats()->stored_bytes, hub_.StoredBytes());
  ExpectFileIntactAndHubClean();
}

TEST_F(OrphanSweepTest, TheObjectStoreIsListedOnlyWhenASweepIsDue) {
  GcRunner gc(&hub_.ns(), &hub_.chunks(), HourOfGrace());
  clock_.Advance(std::chrono::hours(2));
  ASSERT_TRUE(gc.RunOnce().ok());  // the sweep the fixture's start called for
  Restart(/*clean=*/true);

  // After a clean restart no pass lists the store (a listing would fail).
  const chunk::ChunkId orphan = StoreOrphan(RandomBytes(100000, 10));
  hub_.faults().FailNext(object::OpBit(object::ObjectOp::kList), 100,
                         Status::IoError("listing refused"));
  for (int pass = 0; pass < 3; ++pass) {
    clock_.Advance(std::chrono::hours(2));
    auto r = gc.RunOnce();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->orphans, 0u);
  }

  // After a crash the pass past the grace lists, and a failed listing
  // leaves the sweep due for the next pass.
  Restart(/*clean=*/false);
  clock_.Advance(std::chrono::hours(2));
  EXPECT_EQ(gc.RunOnce().status().code(), StatusCode::kIoError);
  EXPECT_TRUE(*hub_.chunks().Has(orphan));
  hub_.faults().ClearFaults();
  auto r = gc.RunOnce();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->orphans, 1u);
  EXPECT_FALSE(*hub_.chunks().Has(orphan));
  ExpectFileIntactAndHubClean();
}

}  // namespace
}  // namespace geofs::hub
