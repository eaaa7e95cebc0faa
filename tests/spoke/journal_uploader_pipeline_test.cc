// JournalUploader's window pipeline against an in-process hub that records
// the order of uploads and commits: several windows upload at once, and
// commits stay in window order when a later window's upload finishes first
// or an earlier one fails.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "chunk/chunk_codec.h"
#include "chunk/chunk_id.h"
#include "hub.grpc.pb.h"
#include "spoke/journal_uploader.h"
#include "test_bytes.h"
#include "tools/temp_dir.h"

namespace geofs::spoke {
namespace {

using testutil::TempDir;
using namespace std::chrono_literals;

constexpr uint64_t kWindow = 512 << 10;
constexpr int kWindows = 6;

// One file (ino 1, gen 1) with a version check, chunks kept decoded, and a
// log of PutChunks ends and of commits. A PutChunks whose first chunk
// starts with `hold_prefix` is held before it answers until another
// PutChunks has succeeded and `hold` has passed (at most 5 s: an uploader
// that never overlaps uploads fails the test instead of hanging); one whose
// first chunk starts with `fail_prefix` fails (PERMISSION_DENIED) the first
// time.
class RecordingHub final : public v1::Hub::Service {
 public:
  struct Event {
    enum Kind { kPutDone, kPutFailed, kCommit } kind;
    uint64_t offset = 0;  // kCommit: the range committed
    bool marked = false;  // kPut*: the held or failing call
  };

  RecordingHub(std::string hold_prefix, std::chrono::milliseconds hold, std::string fail_prefix)
      : hold_prefix_(std::move(hold_prefix)), hold_(hold), fail_prefix_(std::move(fail_prefix)) {}

  grpc::Status GetChunkMap(grpc::ServerContext*, const v1::GetChunkMapRequest*,
                           v1::GetChunkMapResponse* resp) override {
    std::lock_guard lock(mu_);
    resp->set_version(version_);
    resp->mutable_attr()->set_size(content_.size());
    return grpc::Status::OK;
  }

  grpc::Status FindMissingChunks(grpc::ServerContext*, const v1::FindMissingChunksRequest* req,
                                 v1::FindMissingChunksResponse* resp) override {
    std::lock_guard lock(mu_);
    for (const v1::ChunkRef& c : req->chunks()) {
      if (!chunks_.contains(c.chunk_id())) resp->add_missing(c.chunk_id());
    }
    return grpc::Status::OK;
  }

  grpc::Status PutChunks(grpc::ServerContext*, grpc::ServerReader<v1::PutChunkRequest>* reader,
                         v1::PutChunksResponse* resp) override {
    {
      std::lock_guard lock(mu_);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    }
    std::map<std::string, std::string> got;
    std::string first;
    v1::PutChunkRequest req;
    while (reader->Read(&req)) {
      auto id = chunk::ChunkId::FromBytes(Bytes(req.chunk_id()));
      auto raw = id.ok() ? chunk::DecodeChunk(Buffer::CopyOf(req.data()), *id)
                         : Result<Buffer>(id.status());
      if (!raw.ok()) {
        std::lock_guard lock(mu_);
        --in_flight_;
        return {grpc::StatusCode::DATA_LOSS, raw.status().ToString()};
      }
      if (got.empty()) first = std::string(raw->view());
      got[req.chunk_id()] = std::string(raw->view());
    }
    const bool held = !hold_prefix_.empty() && first.starts_with(hold_prefix_);
    std::unique_lock lock(mu_);
    if (held) {
      others_done_before_held_ = std::max(others_done_before_held_, others_done_);
      const auto start = std::chrono::steady_clock::now();
      cv_.wait_until(lock, start + 5s, [&] { return others_done_ > 0; });
      cv_.wait_until(lock, start + hold_, [] { return false; });
    }
    const bool fail = !fail_prefix_.empty() && first.starts_with(fail_prefix_) && !failed_once_;
    failed_once_ = failed_once_ || fail;
    --in_flight_;
    if (fail) {
      events_.push_back({Event::kPutFailed, 0, true});
      return {grpc::StatusCode::PERMISSION_DENIED, "refused once by the test"};
    }
    for (auto& [id, raw] : got) chunks_[id] = std::move(raw);
    events_.push_back({Event::kPutDone, 0, held});
    if (!held) ++others_done_;
    cv_.notify_all();
    resp->set_received(got.size());
    return grpc::Status::OK;
  }

  grpc::Status CommitFile(grpc::ServerContext*, const v1::CommitFileRequest* req,
                          v1::CommitFileResponse* resp) override {
    std::lock_guard lock(mu_);
    if (req->expected_version() != version_) return {grpc::StatusCode::ABORTED, "version moved"};
    std::string next = content_;
    next.resize(req->new_size(), '\0');
    for (const v1::Extent& e : req->extents()) {
      auto it = chunks_.find(e.chunk_id());
      if (it == chunks_.end()) {
        return {grpc::StatusCode::FAILED_PRECONDITION, "commit names a chunk never uploaded"};
      }
      if (e.offset() + e.length() > next.size() ||
          e.chunk_offset() + e.length() > it->second.size()) {
        return {grpc::StatusCode::INVALID_ARGUMENT, "extent out of range"};
      }
      next.replace(e.offset(), e.length(), it->second, e.chunk_offset(), e.length());
    }
    content_ = std::move(next);
    events_.push_back({Event::kCommit, req->offset(), false});
    resp->set_version(++version_);
    resp->mutable_wcc()->mutable_after()->set_size(content_.size());
    return grpc::Status::OK;
  }

  std::vector<Event> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::vector<uint64_t> commits() const {
    std::vector<uint64_t> out;
    for (const Event& e : events()) {
      if (e.kind == Event::kCommit) out.push_back(e.offset);
    }
    return out;
  }
  // Unheld PutChunks that had finished when a held one arrived.
  int others_done_before_held() const {
    std::lock_guard lock(mu_);
    return others_done_before_held_;
  }
  int max_in_flight() const {
    std::lock_guard lock(mu_);
    return max_in_flight_;
  }
  std::string content() const {
    std::lock_guard lock(mu_);
    return content_;
  }

 private:
  const std::string hold_prefix_;
  const std::chrono::milliseconds hold_;
  const std::string fail_prefix_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t version_ = 1;                       // guarded by mu_
  std::string content_;                        // guarded by mu_
  std::map<std::string, std::string> chunks_;  // guarded by mu_: id -> raw bytes
  std::vector<Event> events_;                  // guarded by mu_
  int in_flight_ = 0;                          // guarded by mu_
  int max_in_flight_ = 0;                      // guarded by mu_
  bool failed_once_ = false;                   // guarded by mu_
  int others_done_ = 0;                        // guarded by mu_: unheld PutChunks done
  int others_done_before_held_ = 0;            // guarded by mu_: ... when a held one arrived
};

class PipelineTest : public ::testing::Test {
 protected:
  // Journals kWindows windows of distinct data for file 1/1 and starts
  // `hub` on a free port.
  void Start(RecordingHub* hub) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(hub);
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ != nullptr);
    ASSERT_GT(port, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials());
    WriteJournalOptions o;
    o.dir = dir_.path() + "/journal";
    auto j = WriteJournal::Open(o);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    journal_ = std::move(j).value();
    for (uint64_t off = 0; off < data_.size(); off += 64 << 10) {
      ASSERT_TRUE(journal_->Append(kFile, off, Bytes(data_.substr(off, 64 << 10))).ok());
    }
    ASSERT_TRUE(journal_->Sync().ok());
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + 1s);
  }

  JournalUploaderOptions Options() const {
    JournalUploaderOptions o;
    o.chunker.min_size = 16 << 10;
    o.chunker.avg_size = 64 << 10;
    o.chunker.max_size = 256 << 10;
    o.window_bytes = kWindow;
    o.windows_in_flight = 4;
    o.workers = 1;
    o.first_backoff = 20ms;
    o.max_backoff = 100ms;
    return o;
  }

  std::string WindowPrefix(int i) const { return data_.substr(i * kWindow, 32); }

  std::vector<uint64_t> AllWindows() const {
    std::vector<uint64_t> out;
    for (int i = 0; i < kWindows; ++i) out.push_back(i * kWindow);
    return out;
  }

  static constexpr FileKey kFile{1, 1};
  const std::string data_ = RandomBytes(kWindows * kWindow, 4);
  TempDir dir_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<WriteJournal> journal_;
};

TEST_F(PipelineTest, WindowsUploadTogetherAndCommitInOrder) {
  // Window 0's upload answers only after another window's: windows 1.. are
  // at the hub first and must wait for it.
  RecordingHub hub(WindowPrefix(0), 200ms, "");
  Start(&hub);
  JournalUploader uploader(journal_.get(), channel_, {}, Options());
  ASSERT_TRUE(uploader.Flush(kFile, 30s).ok());

  // Windows overlapped: two uploads were at the hub at once, or (when the
  // machine delays window 0's staging) a later window's upload was done
  // before window 0's even reached the hub.
  EXPECT_TRUE(hub.max_in_flight() >= 2 || hub.others_done_before_held() > 0) << hub.max_in_flight();
  EXPECT_EQ(hub.commits(), AllWindows());
  const std::vector<RecordingHub::Event> events = hub.events();
  auto held_done = std::find_if(events.begin(), events.end(), [](const auto& e) {
    return e.kind == RecordingHub::Event::kPutDone && e.marked;
  });
  ASSERT_NE(held_done, events.end());
  // A later window's upload finished while window 0's was held...
  EXPECT_TRUE(std::any_of(events.begin(), held_done, [](const auto& e) {
    return e.kind == RecordingHub::Event::kPutDone && !e.marked;
  }));
  // ...and nothing was committed before window 0's chunks were all there.
  EXPECT_TRUE(std::none_of(events.begin(), held_done,
                           [](const auto& e) { return e.kind == RecordingHub::Event::kCommit; }));
  EXPECT_EQ(hub.content(), data_);
  EXPECT_FALSE(journal_->Pending(kFile).has_value());
}

TEST_F(PipelineTest, StagedWindowsDoNotHoldUpLaterOnes) {
  // Window 0's upload is held for a long time. Windows that finished
  // staging wait for their commit without data, so they must not count
  // against windows_in_flight: every later window (more than
  // windows_in_flight - 1 of them) is uploaded while window 0 is held, and
  // the link would not idle during a slow window or commit.
  RecordingHub hub(WindowPrefix(0), 2000ms, "");
  Start(&hub);
  JournalUploader uploader(journal_.get(), channel_, {}, Options());
  ASSERT_TRUE(uploader.Flush(kFile, 30s).ok());

  const std::vector<RecordingHub::Event> events = hub.events();
  auto held_done = std::find_if(events.begin(), events.end(), [](const auto& e) {
    return e.kind == RecordingHub::Event::kPutDone && e.marked;
  });
  ASSERT_NE(held_done, events.end());
  EXPECT_EQ(std::count_if(events.begin(), held_done,
                          [](const auto& e) { return e.kind == RecordingHub::Event::kPutDone; }),
            kWindows - 1);
  EXPECT_GT(kWindows - 1, Options().windows_in_flight);
  EXPECT_EQ(hub.commits(), AllWindows());
  EXPECT_EQ(hub.content(), data_);
}

TEST_F(PipelineTest, FailedWindowStopsLaterCommitsUntilItLands) {
  // Window 2's first upload is refused; windows 3.. may be uploaded in the
  // meantime but are committed only after window 2, on the next pass.
  RecordingHub hub("", 0ms, WindowPrefix(2));
  Start(&hub);
  JournalUploader uploader(journal_.get(), channel_, {}, Options());
  ASSERT_TRUE(uploader.Flush(kFile, 30s).ok());

  EXPECT_EQ(hub.commits(), AllWindows());
  const std::vector<RecordingHub::Event> events = hub.events();
  auto failed = std::find_if(events.begin(), events.end(), [](const auto& e) {
    return e.kind == RecordingHub::Event::kPutFailed;
  });
  ASSERT_NE(failed, events.end());
  EXPECT_EQ(uploader.Stats().commits, static_cast<uint64_t>(kWindows));
  EXPECT_EQ(hub.content(), data_);
  EXPECT_FALSE(journal_->Pending(kFile).has_value());
}

TEST_F(PipelineTest, CrashBeforeCommitLeavesWindowsInTheJournal) {
  // The hub holds window 0's upload past the uploader's stop deadline: no
  // later window may be committed instead, nothing may be released, and a
  // reopened journal (as after kill -9) still holds every byte.
  RecordingHub hub(WindowPrefix(0), 1000ms, "");
  Start(&hub);
  JournalUploaderOptions o = Options();
  o.stop_timeout = 200ms;
  {
    JournalUploader uploader(journal_.get(), channel_, {}, o);
    EXPECT_EQ(uploader.Flush(kFile, 300ms).code(), StatusCode::kUnavailable);
    uploader.Stop();
  }
  const std::vector<uint64_t> committed = hub.commits();
  journal_.reset();
  WriteJournalOptions jo;
  jo.dir = dir_.path() + "/journal";
  auto reopened = WriteJournal::Open(jo);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  uint64_t pending = 0;
  for (const PendingRange& r : (*reopened)->Read(kFile, 0, data_.size())) {
    EXPECT_EQ(std::string(r.data.view()), data_.substr(r.offset, r.data.size()));
    pending += r.data.size();
  }
  // The stop came while window 0 was held: nothing committed, nothing
  // released, although windows 1.. were uploaded.
  EXPECT_TRUE(committed.empty());
  EXPECT_EQ(pending, data_.size());
}

}  // namespace
}  // namespace geofs::spoke
