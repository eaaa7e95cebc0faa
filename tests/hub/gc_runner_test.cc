#include "hub/gc_runner.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace geofs::hub
