// The hub over an object store that fails or stalls: errors surface as
// clean errors, nothing is lost or corrupted, and the hub keeps serving.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <random>

#include "chunk/chunk_codec.h"
#include "hub/hub_backend.h"
#include "hub/hub_service.h"
#include "hub_test_util.h"

namespace geofs::hub {
namespace {

using object::ObjectOp;
using object::OpBit;
using testing::Await;
using testing::MemoryHub;
using testing::RandomBytes;

constexpr size_t kKiB = 1 << 10;

class HubFaultTest : public ::testing::Test {
 protected:
  HubFaultTest() { Restart(); }
  void Restart() {
    HubBackendOptions options;
    options.dirty_expire = std::chrono::milliseconds(0);
    backend_.reset();
    backend_ = std::make_unique<HubBackend>(&hub_.ns(), &hub_.chunks(), options);
  }
  vfs::Handle Create(const std::string& name) {
    vfs::CreateRequest req;
    req.attrs.mode = 0644;
    auto r = Await<vfs::CreateReply>(
        [&](auto cb) { backend_->Create({}, hub_.ns().RootHandle(), name, req, cb); });
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->object.handle : vfs::Handle();
  }
  Status Write(const vfs::Handle& h, uint64_t offset, const std::string& data,
               vfs::Stability stability) {
    return Await<vfs::WriteReply>([&](auto cb) {
             backend_->Write({}, h, offset, Buffer::CopyOf(data), stability, cb);
           })
        .status();
  }
  Status Commit(const vfs::Handle& h) {
    return Await<vfs::Wcc>([&](auto cb) { backend_->Commit({}, h, 0, 0, cb); }).status();
  }
  Result<std::string> ReadAll(const vfs::Handle& h) {
    std::string out;
    for (;;) {
      auto r =
          Await<vfs::ReadReply>([&](auto cb) { backend_->Read({}, h, out.size(), 1 << 20, cb); });
      if (!r.ok()) return r.status();
      out.append(r->data.view());
      if (r->eof) return out;
    }
  }

  MemoryHub hub_;
  std::unique_ptr<HubBackend> backend_;
};

TEST_F(HubFaultTest, AFailedFlushKeepsTheDataBufferedUntilItSucceeds) {
  vfs::Handle h = Create("f");
  hub_.faults().FailNext(OpBit(ObjectOp::kPut), 100, Status::IoError("disk on fire"));
  Status s = Write(h, 0, "precious", vfs::Stability::kFileSync);
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_EQ(*ReadAll(h), "precious");  // still buffered, still served
  EXPECT_EQ(Commit(h).code(), StatusCode::kIoError);
  hub_.faults().ClearFaults();
  ASSERT_TRUE(Commit(h).ok());
  Restart();
  EXPECT_EQ(*ReadAll(h), "precious");
  auto problems = hub_.ns().Fsck();
  ASSERT_TRUE(problems.ok());
  EXPECT_TRUE(problems->empty());
}

TEST_F(HubFaultTest, ReadErrorsAreReportedAndNotCached) {
  vfs::Handle h = Create("f");
  ASSERT_TRUE(Write(h, 0, "data", vfs::Stability::kFileSync).ok());
  Restart();  // empty chunk cache
  hub_.faults().FailNext(OpBit(ObjectOp::kGet), 1, Status::Unavailable("throttled"));
  EXPECT_EQ(ReadAll(h).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(*ReadAll(h), "data");
}

TEST_F(HubFaultTest, LostPutRepliesDoNotCorruptAnything) {
  vfs::Handle h = Create("f");
  object::ObjectFault lost;
  lost.ops = OpBit(ObjectOp::kPut);
  lost.count = 1;
  lost.after_call = true;  // stored, but the caller hears of a failure
  hub_.faults().AddFault(lost);
  EXPECT_FALSE(Write(h, 0, "stored twice?", vfs::Stability::kFileSync).ok());
  ASSERT_TRUE(Commit(h).ok());
  Restart();
  EXPECT_EQ(*ReadAll(h), "stored twice?");
}

TEST_F(HubFaultTest, RandomFaultsLoseNothingThatWasWritten) {
  std::mt19937_64 rng(7);
  hub_.faults().FailFraction(OpBit(ObjectOp::kPut) | OpBit(ObjectOp::kGet) | OpBit(ObjectOp::kHead),
                             0.3, Status::IoError("flaky"));
  vfs::Handle h = Create("f");
  std::string expected;
  int failures = 0;
  for (int i = 0; i < 40; ++i) {
    const uint64_t offset = rng() % (2 << 20);
    const std::string data = RandomBytes(1 + rng() % (300 * kKiB), i);
    if (expected.size() < offset + data.size()) expected.resize(offset + data.size(), '\0');
    expected.replace(offset, data.size(), data);
    // A failed write is still buffered (an NFS client would resend it).
    const auto stability = i % 3 == 0 ? vfs::Stability::kFileSync : vfs::Stability::kUnstable;
    if (!Write(h, offset, data, stability).ok()) ++failures;
    auto back = ReadAll(h);
    if (back.ok()) {
      EXPECT_TRUE(*back == expected) << "after write " << i;
    } else {
      ++failures;
      EXPECT_TRUE(back.status().code() == StatusCode::kIoError) << back.status().ToString();
    }
  }
  EXPECT_GT(failures, 0);
  hub_.faults().ClearFaults();
  ASSERT_TRUE(Commit(h).ok());
  Restart();
  auto back = ReadAll(h);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == expected);
  auto problems = hub_.ns().Fsck();
  ASSERT_TRUE(problems.ok());
  EXPECT_TRUE(problems->empty()) << problems->front();
}

TEST_F(HubFaultTest, TheServiceReportsStoreFailuresAndKeepsServing) {
  HubService service(&hub_.ns(), &hub_.chunks());
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  auto stub = v1::Hub::NewStub(server->InProcessChannel(grpc::ChannelArguments()));

  const std::string data = RandomBytes(100 * kKiB, 1);
  const chunk::ChunkId id =
      chunk::ChunkId::Of({reinterpret_cast<const uint8_t*>(data.data()), data.size()});
  const std::string id_bytes(reinterpret_cast<const char*>(id.bytes().data()), 32);
  auto put = [&] {
    grpc::ClientContext ctx;
    v1::PutChunksResponse resp;
    auto writer = stub->PutChunks(&ctx, &resp);
    v1::PutChunkRequest req;
    req.set_chunk_id(id_bytes);
    req.set_data(std::string(
        chunk::EncodeChunk({reinterpret_cast<const uint8_t*>(data.data()), data.size()}, {})
            .bytes.view()));
    writer->Write(req);
    writer->WritesDone();
    return writer->Finish();
  };
  hub_.faults().FailNext(OpBit(ObjectOp::kPut), 1, Status::IoError("disk full"));
  grpc::Status failed = put();
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(failed.error_message().find(id.ToHex()), std::string::npos) << failed.error_message();
  EXPECT_EQ(hub_.objects().object_count(), 0u);
  EXPECT_TRUE(put().ok());

  // A stalled store meets the caller's deadline; the next call is served.
  hub_.faults().StallNext(OpBit(ObjectOp::kGet), 1, std::chrono::milliseconds(600));
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    v1::ReadChunksRequest req;
    req.add_chunk_ids(id_bytes);
    auto reader = stub->ReadChunks(&ctx, req);
    v1::ChunkData chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  grpc::ClientContext ctx;
  v1::ReadChunksRequest req;
  req.add_chunk_ids(id_bytes);
  auto reader = stub->ReadChunks(&ctx, req);
  v1::ChunkData chunk;
  EXPECT_TRUE(reader->Read(&chunk));
  EXPECT_TRUE(reader->Finish().ok());
  server->Shutdown();
}

}  // namespace
}  // namespace geofs::hub
