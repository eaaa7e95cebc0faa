// JournalUploader against a geofs-hubd process.
#include "spoke/journal_uploader.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chunk/chunk_codec.h"
#include "chunk/chunk_id.h"
#include "hub/grpc_status.h"
#include "hub_process.h"
#include "test_bytes.h"
#include "tools/free_port.h"

namespace geofs::spoke {
namespace {

using hub::testing::Child;
using hub::testing::HubdPath;
using hub::testing::TempDir;
using namespace std::chrono_literals;

// Below the ephemeral range: nothing else takes it while the hub restarts.
uint16_t FreePort() {
  Result<uint16_t> port = geofs::testing::PickFreePort();
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  return port.ok() ? *port : 0;
}

// geofs-hubd on a fixed port, so that a restarted hub is found at the same
// address by the channel the uploader already holds.
class FixedPortHub {
 public:
  FixedPortHub() : port_(FreePort()) {}

  Status Start() {
    const std::string log = dir_.path() + "/hubd-" + std::to_string(++starts_) + ".log";
    Child::Options o;
    o.argv = {HubdPath(), "--data-dir", dir_.path() + "/data", "--listen", address()};
    o.stdout_path = o.stderr_path = log;
    GEOFS_ASSIGN_OR_RETURN(child_, Child::Start(o));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (child_->Stdout().find("listening grpc=") != std::string::npos) return Status::Ok();
      if (child_->Exited()) return Status::Unavailable("hubd exited: " + child_->Stdout());
      std::this_thread::sleep_for(10ms);
    }
    return Status::Unavailable("hubd did not listen: " + child_->Stdout());
  }
  void Kill() { child_->Kill(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  TempDir dir_;
  uint16_t port_;
  int starts_ = 0;
  std::unique_ptr<Child> child_;
};

class UploaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(hub_.Start().ok());
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    // Find a restarted hub quickly.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    channel_ = grpc::CreateCustomChannel(hub_.address(), grpc::InsecureChannelCredentials(), args);
    ASSERT_TRUE(channel_->WaitForConnected(std::chrono::system_clock::now() + 10s));
    stub_ = v1::Hub::NewStub(channel_);
    OpenJournal();
    options_.window_bytes = 1 << 20;
    options_.quiet_delay = 50ms;
    options_.first_backoff = 50ms;
    options_.max_backoff = 500ms;
  }

  void OpenJournal() {
    journal_.reset();
    WriteJournalOptions o;
    o.dir = journal_dir_.path() + "/journal";
    o.segment_bytes = 8 << 20;
    auto j = WriteJournal::Open(o);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    journal_ = std::move(j).value();
  }

  Status Check(const grpc::Status& s, const grpc::ClientContext& ctx) {
    return hub::FromGrpcStatus(s, &ctx);
  }

  FileKey CreateFile(const std::string& name) {
    v1::ResolvePathRequest rreq;
    rreq.set_path("/");
    v1::ResolvePathResponse root;
    {
      grpc::ClientContext ctx;
      EXPECT_TRUE(Check(stub_->ResolvePath(&ctx, rreq, &root), ctx).ok());
    }
    v1::CreateRequest req;
    *req.mutable_dir() = root.object().ref();
    req.set_name(name);
    req.set_type(v1::REGULAR);
    req.mutable_attrs()->set_mode(0644);
    v1::CreateResponse resp;
    grpc::ClientContext ctx;
    Status s = Check(stub_->Create(&ctx, req, &resp), ctx);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return {resp.object().ref().ino(), resp.object().ref().gen()};
  }

  // The file's content at the hub, holes as zeros.
  std::string ReadHub(const FileKey& f) {
    v1::GetChunkMapRequest req;
    req.mutable_ref()->set_ino(f.ino);
    req.mutable_ref()->set_gen(f.gen);
    v1::GetChunkMapResponse map;
    {
      grpc::ClientContext ctx;
      Status s = Check(stub_->GetChunkMap(&ctx, req, &map), ctx);
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    std::string out(map.attr().size(), '\0');
    std::map<std::string, std::string> chunks;
    for (int begin = 0; begin < map.extents_size(); begin += 1024) {
      v1::ReadChunksRequest rc;
      for (int i = begin; i < std::min(map.extents_size(), begin + 1024); ++i) {
        rc.add_chunk_ids(map.extents(i).chunk_id());
      }
      rc.add_accept(v1::ZSTD);
      grpc::ClientContext ctx;
      auto reader = stub_->ReadChunks(&ctx, rc);
      v1::ChunkData cd;
      while (reader->Read(&cd)) {
        auto id = chunk::ChunkId::FromBytes(Bytes(cd.chunk_id()));
        EXPECT_TRUE(id.ok());
        auto raw = chunk::DecodeChunk(Buffer::CopyOf(cd.data()), *id);
        EXPECT_TRUE(raw.ok()) << raw.status().ToString();
        if (raw.ok()) chunks[cd.chunk_id()] = std::string(raw->view());
      }
      EXPECT_TRUE(Check(reader->Finish(), ctx).ok());
    }
    for (const v1::Extent& e : map.extents()) {
      const std::string& c = chunks[e.chunk_id()];
      EXPECT_GE(c.size(), e.chunk_offset() + e.length());
      EXPECT_LE(e.offset() + e.length(), out.size());
      if (c.size() >= e.chunk_offset() + e.length() && e.offset() + e.length() <= out.size()) {
        out.replace(e.offset(), e.length(), c, e.chunk_offset(), e.length());
      }
    }
    return out;
  }

  // Another writer replaces the whole file with `data`, outside the journal.
  Status CommitDirect(const FileKey& f, const std::string& data) {
    const auto id = chunk::ChunkId::Of(Bytes(data));
    const std::string id_bytes(reinterpret_cast<const char*>(id.bytes().data()), 32);
    {
      v1::FindMissingChunksRequest req;
      req.add_chunks()->set_chunk_id(id_bytes);
      req.mutable_chunks(0)->set_raw_length(data.size());
      v1::FindMissingChunksResponse resp;
      grpc::ClientContext ctx;
      GEOFS_RETURN_IF_ERROR(Check(stub_->FindMissingChunks(&ctx, req, &resp), ctx));
    }
    {
      v1::PutChunksResponse resp;
      grpc::ClientContext ctx;
      auto writer = stub_->PutChunks(&ctx, &resp);
      v1::PutChunkRequest req;
      req.set_chunk_id(id_bytes);
      const Buffer stored = chunk::EncodeChunk(Bytes(data), {}).bytes;
      req.set_data(stored.data(), stored.size());
      writer->Write(req);
      writer->WritesDone();
      GEOFS_RETURN_IF_ERROR(Check(writer->Finish(), ctx));
    }
    v1::GetChunkMapRequest mreq;
    mreq.mutable_ref()->set_ino(f.ino);
    mreq.mutable_ref()->set_gen(f.gen);
    v1::GetChunkMapResponse map;
    {
      grpc::ClientContext ctx;
      GEOFS_RETURN_IF_ERROR(Check(stub_->GetChunkMap(&ctx, mreq, &map), ctx));
    }
    v1::CommitFileRequest req;
    *req.mutable_ref() = mreq.ref();
    req.set_expected_version(map.version());
    req.set_replace_all(true);
    v1::Extent* e = req.add_extents();
    e->set_offset(0);
    e->set_length(data.size());
    e->set_chunk_id(id_bytes);
    e->set_chunk_length(data.size());
    req.set_new_size(data.size());
    v1::CommitFileResponse resp;
    grpc::ClientContext ctx;
    return Check(stub_->CommitFile(&ctx, req, &resp), ctx);
  }

  void Write(const FileKey& f, uint64_t offset, const std::string& data, std::string* model) {
    ASSERT_TRUE(journal_->Append(f, offset, Bytes(data)).ok());
    if (model->size() < offset + data.size()) model->resize(offset + data.size(), '\0');
    model->replace(offset, data.size(), data);
  }

  FixedPortHub hub_;
  TempDir journal_dir_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Hub::Stub> stub_;
  std::unique_ptr<WriteJournal> journal_;
  JournalUploaderOptions options_;
};

TEST_F(UploaderTest, PendingWritesLandByteForByte) {
  const FileKey f = CreateFile("a");
  std::string model;
  std::vector<uint64_t> versions;
  std::atomic<int> acquired{0}, released{0};
  UploaderHooks hooks;
  hooks.acquire_write = [&](const FileKey& k) {
    EXPECT_EQ(k, f);
    ++acquired;
    return Status::Ok();
  };
  hooks.release_write = [&](const FileKey&) { ++released; };
  hooks.committed = [&](const FileKey&, uint64_t version, const v1::Attr& attr) {
    versions.push_back(version);
    EXPECT_EQ(attr.type(), v1::REGULAR);
  };
  std::atomic<int> decorated{0};
  hooks.decorate = [&](grpc::ClientContext* ctx) {
    // (A real spoke adds geofs-session; the hub checks that one.)
    ctx->AddMetadata("x-geofs-test", "decorated");
    ++decorated;
  };
  JournalUploader uploader(journal_.get(), channel_, hooks, options_);

  // A first version of the file, then overlapping rewrites, a hole and an
  // extension past the end.
  Write(f, 0, RandomBytes(3 << 20, 1), &model);
  ASSERT_TRUE(uploader.Flush(f, 60s).ok());
  EXPECT_EQ(ReadHub(f), model);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 30; ++i) {
    const uint64_t off = rng() % (4 << 20);
    Write(f, off, RandomBytes(1 + rng() % 200000, 100 + i), &model);
  }
  Write(f, 6 << 20, "tail after a hole", &model);
  ASSERT_TRUE(uploader.Flush(f, 60s).ok());
  EXPECT_EQ(ReadHub(f), model);
  EXPECT_FALSE(journal_->Pending(f).has_value());
  EXPECT_GT(acquired.load(), 0);
  EXPECT_EQ(acquired.load(), released.load());
  EXPECT_GT(decorated.load(), 0);
  ASSERT_FALSE(versions.empty());
  EXPECT_TRUE(std::is_sorted(versions.begin(), versions.end()));
  EXPECT_EQ(uploader.Stats().aborted_commits, 0u);
}

TEST_F(UploaderTest, OnlyMissingChunksAreUploaded) {
  const FileKey a = CreateFile("a");
  const FileKey b = CreateFile("b");
  JournalUploader uploader(journal_.get(), channel_, {}, options_);
  const std::string data = RandomBytes(6 << 20, 2);
  std::string ma, mb;
  Write(a, 0, data, &ma);
  ASSERT_TRUE(uploader.Flush(a, 60s).ok());
  const UploaderStats first = uploader.Stats();
  EXPECT_GT(first.uploaded_chunks, 0u);
  EXPECT_GE(first.uploaded_bytes, data.size());  // random data does not compress

  // The same bytes again, to the same file and to another one.
  Write(a, 0, data, &ma);
  Write(b, 0, data, &mb);
  ASSERT_TRUE(uploader.FlushAll(60s).ok());
  const UploaderStats second = uploader.Stats();
  EXPECT_GT(second.chunks, first.chunks);
  EXPECT_EQ(second.uploaded_chunks, first.uploaded_chunks) << "no new chunk for known data";
  EXPECT_EQ(second.uploaded_bytes, first.uploaded_bytes);
  EXPECT_EQ(ReadHub(a), ma);
  EXPECT_EQ(ReadHub(b), mb);
}

TEST_F(UploaderTest, IncompressibleChunksGoRawCompressibleOnesCompressed) {
  // Random bytes (like trained weights) are sent as they are, a header per
  // chunk and nothing more; text-like bytes are compressed. The hub checks
  // both against their ids before it stores them, and both read back.
  const FileKey weights = CreateFile("weights");
  const FileKey text = CreateFile("text");
  JournalUploader uploader(journal_.get(), channel_, {}, options_);
  std::string mw, mt;
  Write(weights, 0, RandomBytes(4 << 20, 21), &mw);
  ASSERT_TRUE(uploader.Flush(weights, 60s).ok());
  const UploaderStats raw = uploader.Stats();
  EXPECT_EQ(raw.uploaded_bytes, mw.size() + chunk::kChunkHeaderSize * raw.uploaded_chunks);

  std::string letters = RandomBytes(4 << 20, 22);
  for (char& c : letters) c = static_cast<char>('a' + (static_cast<uint8_t>(c) & 15));
  Write(text, 0, letters, &mt);
  ASSERT_TRUE(uploader.Flush(text, 60s).ok());
  const UploaderStats both = uploader.Stats();
  EXPECT_GT(both.uploaded_chunks, raw.uploaded_chunks);
  EXPECT_LT(both.uploaded_bytes - raw.uploaded_bytes, mt.size() * 3 / 4);
  EXPECT_EQ(ReadHub(weights), mw);
  EXPECT_EQ(ReadHub(text), mt);
}

TEST_F(UploaderTest, ConcurrentCommitIsRetriedAsOneWriteOrder) {
  const FileKey f = CreateFile("a");
  const std::string theirs = RandomBytes(4 << 20, 3);
  std::atomic<bool> interfered{false};
  UploaderHooks hooks;
  // After our first window lands, another writer replaces the whole file.
  hooks.committed = [&](const FileKey&, uint64_t, const v1::Attr&) {
    if (!interfered.exchange(true)) {
      EXPECT_TRUE(CommitDirect(f, theirs).ok());
    }
  };
  std::string ours;
  Write(f, 0, RandomBytes(3 << 20, 4), &ours);  // three windows
  JournalUploader uploader(journal_.get(), channel_, hooks, options_);
  ASSERT_TRUE(uploader.Flush(f, 60s).ok());
  EXPECT_TRUE(interfered.load());
  EXPECT_GE(uploader.Stats().aborted_commits, 1u);
  // Their write, then all of ours: never our later windows over their
  // write over our first window.
  std::string want = theirs;
  want.replace(0, ours.size(), ours);
  EXPECT_EQ(ReadHub(f), want);
}

TEST_F(UploaderTest, HubKilledMidUploadThenRestarted) {
  const FileKey f = CreateFile("a");
  std::string model;
  Write(f, 0, RandomBytes(8 << 20, 6), &model);
  ASSERT_TRUE(journal_->Sync().ok());
  std::atomic<bool> killed{false};
  UploaderHooks hooks;
  hooks.committed = [&](const FileKey&, uint64_t, const v1::Attr&) {
    if (!killed.exchange(true)) hub_.Kill();  // kill -9 after the first window
  };
  {
    JournalUploaderOptions o = options_;
    o.stop_timeout = 500ms;
    JournalUploader uploader(journal_.get(), channel_, hooks, o);
    EXPECT_EQ(uploader.Flush(f, 2s).code(), StatusCode::kUnavailable);
    EXPECT_TRUE(killed.load());
    EXPECT_GT(uploader.Stats().retries, 0u);
  }
  // The spoke restarts too: the journal still holds what was not committed.
  ASSERT_TRUE(journal_->Pending(f).has_value());
  OpenJournal();
  ASSERT_TRUE(journal_->Pending(f).has_value());
  ASSERT_TRUE(hub_.Start().ok());
  JournalUploader uploader(journal_.get(), channel_, {}, options_);
  ASSERT_TRUE(uploader.Flush(f, 60s).ok());
  EXPECT_EQ(ReadHub(f), model);
  EXPECT_EQ(journal_->Stats().pending_files, 0u);
}

TEST_F(UploaderTest, RemovedFileIsDiscarded) {
  const FileKey f = CreateFile("gone");
  std::string model;
  Write(f, 0, "data for a file that is removed", &model);
  v1::ResolvePathRequest rreq;
  rreq.set_path("/");
  v1::ResolvePathResponse root;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(Check(stub_->ResolvePath(&ctx, rreq, &root), ctx).ok());
  }
  v1::RemoveRequest req;
  *req.mutable_dir() = root.object().ref();
  req.set_name("gone");
  v1::RemoveResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(Check(stub_->Remove(&ctx, req, &resp), ctx).ok());
  JournalUploader uploader(journal_.get(), channel_, {}, options_);
  EXPECT_EQ(uploader.Flush(f, 30s).code(), StatusCode::kStale);
  EXPECT_FALSE(journal_->Pending(f).has_value());
  EXPECT_EQ(uploader.Stats().discarded_files, 1u);
}

TEST_F(UploaderTest, SequentialStreamThroughput) {
  const FileKey f = CreateFile("checkpoint");
  constexpr size_t kTotal = 256u << 20;
  constexpr size_t kWrite = 1u << 20;
  const std::string pattern = RandomBytes(kTotal, 8);
  JournalUploaderOptions o = options_;
  o.window_bytes = 32 << 20;
  JournalUploader uploader(journal_.get(), channel_, {}, o);
  const auto start = std::chrono::steady_clock::now();
  for (size_t off = 0; off < kTotal; off += kWrite) {
    ASSERT_TRUE(journal_->Append(f, off, Bytes(pattern.substr(off, kWrite))).ok());
    if ((off / kWrite) % 8 == 7) {
      ASSERT_TRUE(journal_->Sync().ok());
    }
    uploader.Kick();
  }
  ASSERT_TRUE(journal_->Sync().ok());
  const auto written = std::chrono::steady_clock::now();
  ASSERT_TRUE(uploader.Flush(f, 300s).ok());
  const auto done = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(done - start).count();
  const UploaderStats st = uploader.Stats();
  std::printf(
      "256 MiB sequential stream: journalled in %.2f s, committed at the hub after %.2f s: "
      "%.1f MB/s (%llu commits, %llu chunks)\n",
      std::chrono::duration<double>(written - start).count(), secs, kTotal / secs / 1e6,
      static_cast<unsigned long long>(st.commits), static_cast<unsigned long long>(st.chunks));
  // Big batches, not a round trip per write.
  EXPECT_LE(st.commits, 2 * kTotal / o.window_bytes);
  EXPECT_EQ(ReadHub(f), pattern);
}

}  // namespace
}  // namespace geofs::spoke
