#include "hub/hub_service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <set>

#include <condition_variable>
#include <future>
#include <mutex>

#include "chunk/chunk_codec.h"
#include "hub/chunk_ids.h"
#include "hub/chunk_upload.h"
#include "hub/grpc_server.h"
#include "hub/grpc_status.h"
#include "hub_test_util.h"

namespace geofs::hub {
namespace {

using testing::MemoryHub;
using testing::RandomBytes;

std::string IdBytes(const chunk::ChunkId& id) {
  return std::string(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
}
chunk::ChunkId IdOf(const std::string& data) {
  return chunk::ChunkId::Of({reinterpret_cast<const uint8_t*>(data.data()), data.size()});
}

// What a failed call returned.
struct CallResult {
  grpc::Status status;
  std::string geofs_code;  // the trailing metadata, if any
  bool ok() const { return status.ok(); }
};

class HubServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HubServiceOptions options;
    options.object_store_description = "memory:";
    options.leases = Leases();
    service_ = std::make_unique<HubService>(&hub_.ns(), &hub_.chunks(), options);
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    builder.SetMaxReceiveMessageSize(16 << 20);
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = server_->InProcessChannel(args);
    stub_ = v1::Hub::NewStub(channel_);
    root_.set_ino(1);
    auto root = meta::Namespace::ParseHandle(hub_.ns().RootHandle());
    ASSERT_TRUE(root.ok());
    root_.set_ino(root->ino);
    root_.set_gen(root->generation);
  }
  void TearDown() override { server_->Shutdown(); }
  // The service's lease manager (none by default).
  virtual LeaseManager* Leases() { return nullptr; }

  template <typename Req, typename Resp>
  CallResult Call(grpc::Status (v1::Hub::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                  const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    CallResult out;
    out.status = (stub_.get()->*method)(&ctx, req, resp);
    auto it = ctx.GetServerTrailingMetadata().find(kGeofsCodeKey);
    if (it != ctx.GetServerTrailingMetadata().end()) {
      out.geofs_code = std::string(it->second.data(), it->second.size());
    }
    return out;
  }

  v1::Entry Create(const v1::FileRef& dir, const std::string& name, v1::FileType type,
                   const std::string& target = "") {
    v1::CreateRequest req;
    *req.mutable_dir() = dir;
    req.set_name(name);
    req.set_type(type);
    req.mutable_attrs()->set_mode(type == v1::DIRECTORY ? 0755 : 0644);
    req.set_symlink_target(target);
    v1::CreateResponse resp;
    auto r = Call(&v1::Hub::Stub::Create, req, &resp);
    EXPECT_TRUE(r.ok()) << r.status.error_message();
    return resp.object();
  }

  // Registers and uploads `data` as one chunk; returns its id bytes.
  std::string Upload(const std::string& data) {
    const chunk::ChunkId id = IdOf(data);
    v1::FindMissingChunksRequest find;
    auto* ref = find.add_chunks();
    ref->set_chunk_id(IdBytes(id));
    ref->set_raw_length(data.size());
    v1::FindMissingChunksResponse missing;
    EXPECT_TRUE(Call(&v1::Hub::Stub::FindMissingChunks, find, &missing).ok());
    auto put = PutChunks({{IdBytes(id), Encode(data)}});
    EXPECT_TRUE(put.ok()) << put.status.error_message();
    return IdBytes(id);
  }
  static std::string Encode(const std::string& data) {
    Buffer b = chunk::EncodeChunk({reinterpret_cast<const uint8_t*>(data.data()), data.size()},
                                  chunk::ChunkCodecOptions{})
                   .bytes;
    return std::string(b.view());
  }
  CallResult PutChunks(const std::vector<std::pair<std::string, std::string>>& chunks,
                       v1::PutChunksResponse* resp_out = nullptr) {
    grpc::ClientContext ctx;
    v1::PutChunksResponse resp;
    auto writer = stub_->PutChunks(&ctx, &resp);
    for (const auto& [id, data] : chunks) {
      v1::PutChunkRequest req;
      req.set_chunk_id(id);
      req.set_data(data);
      if (!writer->Write(req)) break;
    }
    writer->WritesDone();
    CallResult out;
    out.status = writer->Finish();
    auto it = ctx.GetServerTrailingMetadata().find(kGeofsCodeKey);
    if (it != ctx.GetServerTrailingMetadata().end()) {
      out.geofs_code = std::string(it->second.data(), it->second.size());
    }
    if (resp_out) *resp_out = resp;
    return out;
  }
  // Commits `data` as the whole content of `file` (one chunk).
  CallResult CommitWhole(const v1::FileRef& file, const std::string& data, uint64_t version,
                         v1::CommitFileResponse* resp) {
    v1::CommitFileRequest req;
    *req.mutable_ref() = file;
    req.set_expected_version(version);
    req.set_replace_all(true);
    req.set_new_size(data.size());
    auto* e = req.add_extents();
    e->set_offset(0);
    e->set_length(data.size());
    e->set_chunk_id(Upload(data));
    e->set_chunk_length(data.size());
    return Call(&v1::Hub::Stub::CommitFile, req, resp);
  }
  v1::GetChunkMapResponse ChunkMap(const v1::FileRef& file) {
    v1::GetChunkMapRequest req;
    *req.mutable_ref() = file;
    v1::GetChunkMapResponse resp;
    EXPECT_TRUE(Call(&v1::Hub::Stub::GetChunkMap, req, &resp).ok());
    return resp;
  }
  std::string ReadFile(const v1::FileRef& file) {
    v1::GetChunkMapResponse map = ChunkMap(file);
    std::string out(map.attr().size(), '\0');
    for (const auto& e : map.extents()) {
      grpc::ClientContext ctx;
      v1::ReadChunksRequest req;
      req.add_chunk_ids(e.chunk_id());
      req.add_accept(v1::ZSTD);
      auto reader = stub_->ReadChunks(&ctx, req);
      v1::ChunkData chunk;
      EXPECT_TRUE(reader->Read(&chunk));
      auto raw =
          chunk::DecodeChunk(Buffer::CopyOf(chunk.data()),
                             *chunk::ChunkId::FromBytes(std::span(
                                 reinterpret_cast<const uint8_t*>(e.chunk_id().data()), 32)));
      EXPECT_TRUE(raw.ok());
      if (raw.ok()) {
        out.replace(e.offset(), e.length(),
                    std::string(raw->view().substr(e.chunk_offset(), e.length())));
      }
      EXPECT_TRUE(reader->Finish().ok());
    }
    return out;
  }

  MemoryHub hub_;
  std::unique_ptr<HubService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Hub::Stub> stub_;
  v1::FileRef root_;
};

TEST_F(HubServiceTest, NamespaceOperations) {
  v1::Entry dir = Create(root_, "data", v1::DIRECTORY);
  EXPECT_EQ(dir.attr().type(), v1::DIRECTORY);
  v1::Entry file = Create(dir.ref(), "a.txt", v1::REGULAR);
  v1::Entry link = Create(dir.ref(), "l", v1::SYMLINK, "a.txt");

  v1::LookupRequest lookup;
  *lookup.mutable_dir() = dir.ref();
  lookup.set_name("a.txt");
  v1::LookupResponse looked;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Lookup, lookup, &looked).ok());
  EXPECT_EQ(looked.object().ref().ino(), file.ref().ino());
  lookup.set_name("..");
  ASSERT_TRUE(Call(&v1::Hub::Stub::Lookup, lookup, &looked).ok());
  EXPECT_EQ(looked.object().ref().ino(), root_.ino());
  lookup.set_name(".");
  ASSERT_TRUE(Call(&v1::Hub::Stub::Lookup, lookup, &looked).ok());
  EXPECT_EQ(looked.object().ref().ino(), dir.ref().ino());

  v1::ResolvePathRequest resolve;
  resolve.set_path("/data//./a.txt");
  v1::ResolvePathResponse resolved;
  ASSERT_TRUE(Call(&v1::Hub::Stub::ResolvePath, resolve, &resolved).ok());
  EXPECT_EQ(resolved.object().ref().ino(), file.ref().ino());
  resolve.set_path("/data/missing");
  auto missing = Call(&v1::Hub::Stub::ResolvePath, resolve, &resolved);
  EXPECT_EQ(missing.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(missing.status.error_message().find("missing"), std::string::npos);

  v1::ReadLinkRequest readlink;
  *readlink.mutable_ref() = link.ref();
  v1::ReadLinkResponse target;
  ASSERT_TRUE(Call(&v1::Hub::Stub::ReadLink, readlink, &target).ok());
  EXPECT_EQ(target.target(), "a.txt");

  v1::SetAttrRequest setattr;
  *setattr.mutable_ref() = file.ref();
  setattr.mutable_attrs()->set_mode(0600);
  setattr.mutable_attrs()->set_mtime_how(v1::CLIENT_TIME);
  setattr.mutable_attrs()->mutable_mtime()->set_sec(1234567);
  v1::SetAttrResponse set;
  ASSERT_TRUE(Call(&v1::Hub::Stub::SetAttr, setattr, &set).ok());
  EXPECT_EQ(set.wcc().after().mode(), 0600u);
  v1::GetAttrRequest getattr;
  *getattr.mutable_ref() = file.ref();
  v1::GetAttrResponse got;
  ASSERT_TRUE(Call(&v1::Hub::Stub::GetAttr, getattr, &got).ok());
  EXPECT_EQ(got.attr().mtime().sec(), 1234567);

  v1::AccessRequest access;
  *access.mutable_ref() = file.ref();
  access.mutable_cred()->set_uid(1000);
  access.set_requested(vfs::kAccessRead | vfs::kAccessModify);
  v1::AccessResponse granted;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Access, access, &granted).ok());
  EXPECT_EQ(granted.granted(), 0u);  // 0600 root's

  v1::LinkRequest link_req;
  *link_req.mutable_file() = file.ref();
  *link_req.mutable_dir() = root_;
  link_req.set_name("hard");
  v1::LinkResponse linked;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Link, link_req, &linked).ok());
  EXPECT_EQ(linked.file_attr().nlink(), 2u);

  v1::RenameRequest rename;
  *rename.mutable_from_dir() = dir.ref();
  rename.set_from_name("a.txt");
  *rename.mutable_to_dir() = root_;
  rename.set_to_name("b.txt");
  v1::RenameResponse renamed;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Rename, rename, &renamed).ok());

  // Paged listing: two pages of one entry after "." and "..".
  v1::ReadDirRequest readdir;
  *readdir.mutable_dir() = root_;
  readdir.set_max_entries(2);
  readdir.set_with_attrs(true);
  std::vector<std::string> names;
  for (;;) {
    v1::ReadDirResponse page;
    ASSERT_TRUE(Call(&v1::Hub::Stub::ReadDir, readdir, &page).ok());
    for (const auto& e : page.entries()) {
      names.push_back(e.name());
      readdir.set_cookie(e.cookie());
      if (e.name() == "b.txt") {
        EXPECT_EQ(e.entry().ref().ino(), file.ref().ino());
      }
    }
    readdir.set_verifier(page.verifier());
    if (page.eof()) break;
  }
  EXPECT_EQ(names, (std::vector<std::string>{".", "..", "data", "hard", "b.txt"}));

  v1::RemoveRequest remove;
  *remove.mutable_dir() = root_;
  remove.set_name("data");
  remove.set_directory(true);
  v1::RemoveResponse removed;
  auto not_empty = Call(&v1::Hub::Stub::Remove, remove, &removed);
  EXPECT_EQ(not_empty.geofs_code, "not_empty");
  EXPECT_EQ(not_empty.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  *remove.mutable_dir() = dir.ref();
  remove.set_name("l");
  remove.set_directory(false);
  ASSERT_TRUE(Call(&v1::Hub::Stub::Remove, remove, &removed).ok());
  *remove.mutable_dir() = root_;
  remove.set_name("data");
  remove.set_directory(true);
  ASSERT_TRUE(Call(&v1::Hub::Stub::Remove, remove, &removed).ok());

  v1::FsStatRequest fsstat;
  *fsstat.mutable_ref() = root_;
  v1::FsStatResponse fs;
  ASSERT_TRUE(Call(&v1::Hub::Stub::FsStat, fsstat, &fs).ok());
  EXPECT_GT(fs.avail_bytes(), 0u);
  EXPECT_GT(fs.free_files(), 0u);
}

TEST_F(HubServiceTest, ChunksCommitsAndReads) {
  v1::Entry file = Create(root_, "f", v1::REGULAR);
  const std::string text(300000, 'x');  // compresses well
  const std::string random = RandomBytes(200000, 1);
  const chunk::ChunkId text_id = IdOf(text), random_id = IdOf(random);

  v1::FindMissingChunksRequest find;
  for (const auto& [id, size] :
       {std::pair{text_id, text.size()}, {random_id, random.size()}, {text_id, text.size()}}) {
    auto* ref = find.add_chunks();
    ref->set_chunk_id(IdBytes(id));
    ref->set_raw_length(size);
  }
  v1::FindMissingChunksResponse missing;
  ASSERT_TRUE(Call(&v1::Hub::Stub::FindMissingChunks, find, &missing).ok());
  ASSERT_EQ(missing.missing_size(), 2);  // deduplicated, in request order
  EXPECT_EQ(missing.missing(0), IdBytes(text_id));

  v1::PutChunksResponse put;
  auto r =
      PutChunks({{IdBytes(text_id), Encode(text)}, {IdBytes(random_id), Encode(random)}}, &put);
  ASSERT_TRUE(r.ok()) << r.status.error_message();
  EXPECT_EQ(put.received(), 2u);
  EXPECT_EQ(put.stored(), 2u);
  EXPECT_EQ(put.raw_bytes_stored(), text.size() + random.size());
  EXPECT_LT(put.bytes_stored(), random.size() + 1000);  // the text compressed
  ASSERT_TRUE(Call(&v1::Hub::Stub::FindMissingChunks, find, &missing).ok());
  EXPECT_EQ(missing.missing_size(), 0);
  // Uploading again stores nothing new.
  ASSERT_TRUE(PutChunks({{IdBytes(text_id), Encode(text)}}, &put).ok());
  EXPECT_EQ(put.stored(), 0u);

  // A file of both chunks with a hole between them.
  v1::CommitFileRequest commit;
  *commit.mutable_ref() = file.ref();
  commit.set_expected_version(ChunkMap(file.ref()).version());
  commit.set_replace_all(true);
  auto* e1 = commit.add_extents();
  e1->set_offset(0);
  e1->set_length(text.size());
  e1->set_chunk_id(IdBytes(text_id));
  e1->set_chunk_length(text.size());
  auto* e2 = commit.add_extents();
  e2->set_offset(text.size() + 1000);
  e2->set_length(1000);
  e2->set_chunk_id(IdBytes(random_id));
  e2->set_chunk_offset(500);
  e2->set_chunk_length(random.size());
  commit.set_new_size(text.size() + 3000);
  commit.mutable_mtime()->set_sec(42);
  v1::CommitFileResponse committed;
  ASSERT_TRUE(Call(&v1::Hub::Stub::CommitFile, commit, &committed).ok());
  EXPECT_EQ(committed.wcc().after().size(), text.size() + 3000);
  EXPECT_EQ(committed.wcc().after().mtime().sec(), 42);

  v1::GetChunkMapResponse map = ChunkMap(file.ref());
  EXPECT_EQ(map.version(), committed.version());
  ASSERT_EQ(map.extents_size(), 2);
  const std::string expected =
      text + std::string(1000, '\0') + random.substr(500, 1000) + std::string(1000, '\0');
  EXPECT_TRUE(ReadFile(file.ref()) == expected);

  // ReadChunks sends the stored (compressed) form to readers that accept
  // zstd, and plain bytes to the others; both decode to the chunk.
  for (bool zstd : {true, false}) {
    grpc::ClientContext ctx;
    v1::ReadChunksRequest req;
    req.add_chunk_ids(IdBytes(text_id));
    req.add_chunk_ids(IdBytes(random_id));
    if (zstd) req.add_accept(v1::ZSTD);
    auto reader = stub_->ReadChunks(&ctx, req);
    v1::ChunkData chunk;
    ASSERT_TRUE(reader->Read(&chunk));
    EXPECT_EQ(chunk.compression(), zstd ? v1::ZSTD : v1::NONE);
    EXPECT_EQ(chunk.raw_length(), text.size());
    if (zstd) {
      EXPECT_LT(chunk.data().size(), 10000u);
    }
    auto raw = chunk::DecodeChunk(Buffer::CopyOf(chunk.data()), text_id);
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(raw->view(), text);
    ASSERT_TRUE(reader->Read(&chunk));
    EXPECT_EQ(chunk.compression(), v1::NONE);  // did not pay to compress
    EXPECT_FALSE(reader->Read(&chunk));
    EXPECT_TRUE(reader->Finish().ok());
  }

  v1::StatsResponse stats;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Stats, v1::StatsRequest(), &stats).ok());
  EXPECT_EQ(stats.files(), 1u);
  EXPECT_EQ(stats.logical_bytes(), text.size() + 3000);
  EXPECT_EQ(stats.chunks(), 2u);
  EXPECT_EQ(stats.referenced_raw_bytes(), text.size() + random.size());
  // From the namespace's counters: the object store was not listed.
  EXPECT_EQ(stats.stored_bytes(), hub_.StoredBytes());
  EXPECT_EQ(stats.unsized_chunks(), 0u);
  EXPECT_FALSE(stats.object_store_listed());
  EXPECT_EQ(stats.listed_objects(), 0u);
  EXPECT_EQ(stats.object_store(), "memory:");
  v1::StatsRequest listing;
  listing.set_list_object_store(true);
  ASSERT_TRUE(Call(&v1::Hub::Stub::Stats, listing, &stats).ok());
  EXPECT_TRUE(stats.object_store_listed());
  EXPECT_EQ(stats.listed_objects(), 2u);
  EXPECT_EQ(stats.listed_bytes(), hub_.StoredBytes());
  EXPECT_EQ(stats.stored_bytes(), hub_.StoredBytes());

  v1::FsckRequest fsck;
  fsck.set_verify_chunk_data(true);
  v1::FsckResponse clean;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Fsck, fsck, &clean).ok());
  EXPECT_EQ(clean.problems_size(), 0) << clean.problems(0);
  EXPECT_EQ(clean.chunks_checked(), 2u);
  EXPECT_EQ(clean.inodes_checked(), 2u);
}

TEST_F(HubServiceTest, FsckFindsMissingAndCorruptChunks) {
  v1::Entry a = Create(root_, "a", v1::REGULAR);
  v1::Entry b = Create(root_, "b", v1::REGULAR);
  v1::CommitFileResponse resp;
  const std::string da = RandomBytes(5000, 2), db = RandomBytes(6000, 3);
  ASSERT_TRUE(CommitWhole(a.ref(), da, ChunkMap(a.ref()).version(), &resp).ok());
  ASSERT_TRUE(CommitWhole(b.ref(), db, ChunkMap(b.ref()).version(), &resp).ok());
  ASSERT_TRUE(hub_.chunks().Delete(IdOf(da)).ok());
  ASSERT_TRUE(hub_.objects().CorruptForTesting(IdOf(db).ObjectKey(), 100, 0).ok());

  v1::FsckRequest fsck;
  v1::FsckResponse report;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Fsck, fsck, &report).ok());
  ASSERT_EQ(report.problems_size(), 1);  // the corruption needs the data read
  EXPECT_NE(report.problems(0).find(IdOf(da).ToHex()), std::string::npos);
  EXPECT_NE(report.problems(0).find("/a"), std::string::npos);
  fsck.set_verify_chunk_data(true);
  ASSERT_TRUE(Call(&v1::Hub::Stub::Fsck, fsck, &report).ok());
  ASSERT_EQ(report.problems_size(), 2);
  EXPECT_NE(report.problems(1).find(IdOf(db).ToHex()), std::string::npos);
  EXPECT_NE(report.problems(1).find("corruption"), std::string::npos);

  // And a corrupt chunk is never sent.
  grpc::ClientContext ctx;
  v1::ReadChunksRequest req;
  req.add_chunk_ids(IdBytes(IdOf(db)));
  auto reader = stub_->ReadChunks(&ctx, req);
  v1::ChunkData chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DATA_LOSS);
}

TEST_F(HubServiceTest, UnknownObjectsAreStale) {
  v1::FileRef unknown;
  unknown.set_ino(987654);
  unknown.set_gen(1);
  v1::GetAttrRequest getattr;
  *getattr.mutable_ref() = unknown;
  v1::GetAttrResponse attr;
  auto r = Call(&v1::Hub::Stub::GetAttr, getattr, &attr);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(r.geofs_code, "stale");
  EXPECT_NE(r.status.error_message().find("inode 987654"), std::string::npos);

  // A removed file's ref is stale too (its inode is never reused).
  v1::Entry file = Create(root_, "gone", v1::REGULAR);
  v1::RemoveRequest remove;
  *remove.mutable_dir() = root_;
  remove.set_name("gone");
  v1::RemoveResponse removed;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Remove, remove, &removed).ok());
  *getattr.mutable_ref() = file.ref();
  EXPECT_EQ(Call(&v1::Hub::Stub::GetAttr, getattr, &attr).geofs_code, "stale");

  v1::LookupRequest lookup;
  *lookup.mutable_dir() = unknown;
  lookup.set_name("x");
  v1::LookupResponse looked;
  EXPECT_EQ(Call(&v1::Hub::Stub::Lookup, lookup, &looked).geofs_code, "stale");
  v1::GetChunkMapRequest map;
  *map.mutable_ref() = unknown;
  v1::GetChunkMapResponse map_resp;
  EXPECT_EQ(Call(&v1::Hub::Stub::GetChunkMap, map, &map_resp).geofs_code, "stale");
  v1::CommitFileRequest commit;
  *commit.mutable_ref() = unknown;
  v1::CommitFileResponse committed;
  EXPECT_EQ(Call(&v1::Hub::Stub::CommitFile, commit, &committed).geofs_code, "stale");
  v1::CreateRequest create;
  *create.mutable_dir() = unknown;
  create.set_name("x");
  create.set_type(v1::REGULAR);
  v1::CreateResponse created;
  EXPECT_EQ(Call(&v1::Hub::Stub::Create, create, &created).geofs_code, "stale");
}

TEST_F(HubServiceTest, BadNamesAreRefusedAndNamed) {
  const std::string too_long(256, 'n');
  struct Case {
    std::string name;
    std::string code;
    std::string shown;  // what the message must contain
  };
  const std::vector<Case> cases = {
      {"a/b", "invalid_argument", "\"a/b\""},
      {std::string("a\0b", 3), "invalid_argument", "\"a\\x00b\""},
      {too_long, "name_too_long", "256 bytes"},
      {"", "invalid_argument", "empty name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shown);
    v1::CreateRequest create;
    *create.mutable_dir() = root_;
    create.set_name(c.name);
    create.set_type(v1::REGULAR);
    v1::CreateResponse created;
    auto r = Call(&v1::Hub::Stub::Create, create, &created);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(r.geofs_code, c.code);
    EXPECT_NE(r.status.error_message().find(c.shown), std::string::npos)
        << r.status.error_message();

    v1::LookupRequest lookup;
    *lookup.mutable_dir() = root_;
    lookup.set_name(c.name);
    v1::LookupResponse looked;
    EXPECT_EQ(Call(&v1::Hub::Stub::Lookup, lookup, &looked).status.error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    v1::RenameRequest rename;
    *rename.mutable_from_dir() = root_;
    rename.set_from_name("x");
    *rename.mutable_to_dir() = root_;
    rename.set_to_name(c.name);
    v1::RenameResponse renamed;
    EXPECT_EQ(Call(&v1::Hub::Stub::Rename, rename, &renamed).status.error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  // Nothing was created.
  v1::StatsResponse stats;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Stats, v1::StatsRequest(), &stats).ok());
  EXPECT_EQ(stats.inodes(), 1u);

  v1::GetAttrRequest getattr;
  *getattr.mutable_ref() = root_;
  for (int i = 0; i < 17; ++i) getattr.mutable_cred()->add_groups(i);
  v1::GetAttrResponse attr;
  EXPECT_EQ(Call(&v1::Hub::Stub::GetAttr, getattr, &attr).status.error_code(),
            grpc::StatusCode::OK);  // GetAttr ignores credentials
  v1::AccessRequest access;
  *access.mutable_ref() = root_;
  *access.mutable_cred() = getattr.cred();
  v1::AccessResponse granted;
  EXPECT_EQ(Call(&v1::Hub::Stub::Access, access, &granted).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// The pieces EncodeChunkParts makes of `data`, as UploadChunks sends them.
StoredChunk Pieces(const std::string& data) {
  chunk::EncodedParts parts = chunk::EncodeChunkParts(Buffer::CopyOf(data), {});
  return {IdBytes(IdOf(data)), parts.header, parts.payload};
}

TEST(FramePutChunkRequestTest, IsAPutChunkRequestInWireFormat) {
  for (const std::string& data : {RandomBytes(300000, 1), std::string(200000, 'x')}) {
    const StoredChunk chunk = Pieces(data);
    grpc::Slice whole;
    ASSERT_TRUE(FramePutChunkRequest(chunk).DumpToSingleSlice(&whole).ok());
    v1::PutChunkRequest parsed;
    ASSERT_TRUE(parsed.ParseFromArray(whole.begin(), static_cast<int>(whole.size())));
    EXPECT_EQ(parsed.chunk_id(), chunk.id);
    EXPECT_EQ(parsed.data(), std::string(chunk.head.view()) + std::string(chunk.body.view()));
  }
}

TEST_F(HubServiceTest, ZeroCopyUploadsStoreVerifiedChunks) {
  const std::string text(3 << 20, 'a');                // compresses: payload is a zstd frame
  const std::string random = RandomBytes(1 << 20, 6);  // stored raw: payload is the input
  std::vector<StoredChunk> chunks = {Pieces(text), Pieces(random)};
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::PutChunksResponse put;
  Status s = UploadChunks(channel_, &ctx, chunks, &put);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(put.received(), 2u);
  EXPECT_EQ(put.stored(), 2u);
  EXPECT_EQ(put.raw_bytes_stored(), text.size() + random.size());
  for (const std::string* data : {&text, &random}) {
    auto got = hub_.chunks().Get(IdOf(*data));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->view(), *data);
  }

  // Pieces that do not decode to their id: rejected, naming the chunk, and
  // nothing of the stream stored.
  const size_t objects_before = hub_.objects().object_count();
  const std::string other = RandomBytes(1 << 20, 7);
  StoredChunk wrong = Pieces(other);
  wrong.id = IdBytes(IdOf(RandomBytes(1 << 20, 8)));
  grpc::ClientContext bad_ctx;
  s = UploadChunks(channel_, &bad_ctx, std::vector<StoredChunk>{wrong}, &put);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.ToString().find(chunk::ChunkId::FromBytes(
                                  std::span(reinterpret_cast<const uint8_t*>(wrong.id.data()), 32))
                                  ->ToHex()),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(hub_.objects().object_count(), objects_before);
}

TEST_F(HubServiceTest, UploadsThatDoNotMatchTheirIdStoreNothing) {
  const std::string data = RandomBytes(50000, 4);
  const std::string other = RandomBytes(50000, 5);
  const size_t objects_before = hub_.objects().object_count();
  v1::PutChunksResponse put;
  auto r = PutChunks({{IdBytes(IdOf(data)), Encode(other)}}, &put);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.status.error_message().find(IdOf(data).ToHex()), std::string::npos)
      << r.status.error_message();
  EXPECT_EQ(hub_.objects().object_count(), objects_before);

  // Garbage that is not a stored chunk at all, and a malformed id.
  r = PutChunks({{IdBytes(IdOf(data)), "not a chunk"}});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = PutChunks({{"short", Encode(data)}});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(hub_.objects().object_count(), objects_before);

  // A batch that fails on one chunk: what it stored all the same is counted.
  const std::string good = RandomBytes(40000, 7);
  r = PutChunks({{IdBytes(IdOf(good)), Encode(good)}, {IdBytes(IdOf(data)), Encode(other)}});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::StatsResponse stats;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Stats, v1::StatsRequest(), &stats).ok());
  EXPECT_EQ(stats.stored_bytes(), hub_.StoredBytes());

  // A commit naming a chunk nobody registered or uploaded is refused.
  v1::Entry file = Create(root_, "f", v1::REGULAR);
  v1::CommitFileRequest commit;
  *commit.mutable_ref() = file.ref();
  commit.set_expected_version(ChunkMap(file.ref()).version());
  commit.set_replace_all(true);
  commit.set_new_size(10);
  auto* e = commit.add_extents();
  e->set_length(10);
  e->set_chunk_id(IdBytes(IdOf(RandomBytes(10, 6))));
  e->set_chunk_length(10);
  v1::CommitFileResponse committed;
  EXPECT_EQ(Call(&v1::Hub::Stub::CommitFile, commit, &committed).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ChunkMap(file.ref()).attr().size(), 0u);
}

TEST_F(HubServiceTest, CommitsAgainstAStaleVersionAreAborted) {
  v1::Entry file = Create(root_, "f", v1::REGULAR);
  const uint64_t v0 = ChunkMap(file.ref()).version();
  v1::CommitFileResponse first, second;
  ASSERT_TRUE(CommitWhole(file.ref(), "first writer", v0, &first).ok());
  auto r = CommitWhole(file.ref(), "second writer", v0, &second);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(r.geofs_code, "aborted");
  EXPECT_EQ(ReadFile(file.ref()), "first writer");
  // Retrying against the version it reads now succeeds.
  ASSERT_TRUE(CommitWhole(file.ref(), "second writer", first.version(), &second).ok());
  EXPECT_EQ(ReadFile(file.ref()), "second writer");
}

TEST_F(HubServiceTest, OversizedRequestsAreRefused) {
  v1::ReadChunksRequest read;
  for (int i = 0; i < 1025; ++i) read.add_chunk_ids(std::string(32, 'a'));
  grpc::ClientContext ctx;
  auto reader = stub_->ReadChunks(&ctx, read);
  v1::ChunkData chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::FindMissingChunksRequest find;
  auto* ref = find.add_chunks();
  ref->set_chunk_id(std::string(32, 'a'));
  ref->set_raw_length(uint64_t{1} << 40);
  v1::FindMissingChunksResponse missing;
  EXPECT_EQ(Call(&v1::Hub::Stub::FindMissingChunks, find, &missing).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(GrpcStatusTest, RoundTripsEveryCode) {
  for (int c = 1; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    const auto code = static_cast<StatusCode>(c);
    grpc::Status wire = ToGrpcStatus(Status(code, "inode 7"), nullptr);
    EXPECT_FALSE(wire.ok());
    EXPECT_EQ(wire.error_code(), GrpcCodeFor(code));
    EXPECT_EQ(CodeFromToken(CodeToken(code)), code);
    // Without the trailing metadata the code is derived from gRPC's.
    Status back = FromGrpcStatus(wire, nullptr);
    EXPECT_FALSE(back.ok());
    EXPECT_NE(back.message().find("inode 7"), std::string_view::npos);
  }
  EXPECT_TRUE(ToGrpcStatus(Status::Ok(), nullptr).ok());
  EXPECT_FALSE(CodeFromToken("no such token"));
}

TEST(GrpcStatusTest, GrpcsOwnResourceExhaustionIsRetryableNotAFullDisk) {
  // What the sync server answers when every thread is busy: no geofs-code.
  grpc::Status busy(grpc::StatusCode::RESOURCE_EXHAUSTED, "Server Threadpool Exhausted");
  EXPECT_EQ(FromGrpcStatus(busy, nullptr).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace geofs::hub

namespace geofs::hub {
namespace {

TEST(HubGrpcServerTest, OversizedMessagesAreRefusedAndTheServerGoesOn) {
  testing::MemoryHub hub;
  HubService service(&hub.ns(), &hub.chunks());
  auto server = StartGrpcServer(&service, GrpcServerOptions{});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(64 << 20);
  auto stub = v1::Hub::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(server->port), grpc::InsecureChannelCredentials(), args));
  {
    grpc::ClientContext ctx;
    v1::PutChunksResponse resp;
    auto writer = stub->PutChunks(&ctx, &resp);
    v1::PutChunkRequest req;
    req.set_chunk_id(std::string(32, 'x'));
    req.set_data(std::string(17 << 20, 'y'));
    writer->Write(req);
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  grpc::ClientContext ctx;
  v1::StatsResponse stats;
  v1::StatsRequest listing;
  listing.set_list_object_store(true);
  EXPECT_TRUE(stub->Stats(&ctx, listing, &stats).ok());
  EXPECT_EQ(stats.listed_objects(), 0u);
  EXPECT_EQ(stats.stored_bytes(), 0u);
  server->server->Shutdown();
}

// With coherence: a change that must wait for another session's
// acknowledgement leaves the commit pipeline free for the others.
class HubServiceLeasedTest : public HubServiceTest {
 protected:
  LeaseManager* Leases() override { return &leases_; }

  // Waits for the n-th invalidation sent to the session; nullopt on timeout.
  std::optional<Invalidation> Received(size_t n) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return received_.size() > n; })) {
      return std::nullopt;
    }
    return received_[n];
  }
  uint64_t OpenSession() {
    return leases_.OpenSession("spoke-a", "/", 0, [this](const Invalidation& inv) {
      std::lock_guard lock(mu_);
      received_.push_back(inv);
      cv_.notify_all();
    });
  }

  LeaseManager leases_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Invalidation> received_;
};

TEST_F(HubServiceLeasedTest, AChangeWaitingForAnAckDoesNotHoldUpOthers) {
  const v1::Entry a = Create(root_, "a", v1::DIRECTORY);
  const v1::Entry b = Create(root_, "b", v1::DIRECTORY);
  const uint64_t session = OpenSession();
  ASSERT_TRUE(leases_.Grant(session, std::vector<uint64_t>{a.ref().ino()}).ok());

  auto waiting = std::async(std::launch::async, [&] {
    v1::CreateRequest req;
    *req.mutable_dir() = a.ref();
    req.set_name("x");
    req.set_type(v1::REGULAR);
    v1::CreateResponse resp;
    return Call(&v1::Hub::Stub::Create, req, &resp);
  });
  const auto inv = Received(0);
  ASSERT_TRUE(inv) << "the holder of a is told";

  // Changes elsewhere go ahead while that one waits.
  for (int i = 0; i < 20; ++i) Create(b.ref(), "y" + std::to_string(i), v1::REGULAR);
  v1::SetAttrRequest chmod;
  *chmod.mutable_ref() = b.ref();
  chmod.mutable_attrs()->set_mode(0700);
  v1::SetAttrResponse chmodded;
  EXPECT_TRUE(Call(&v1::Hub::Stub::SetAttr, chmod, &chmodded).ok());
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);

  leases_.Ack(session, inv->seq);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const CallResult created = waiting.get();
  EXPECT_TRUE(created.ok()) << created.status.error_message();
  vfs::Credentials root_cred;
  EXPECT_TRUE(hub_.ns()
                  .Lookup(root_cred, meta::Namespace::MakeHandle(a.ref().ino(), a.ref().gen()), "x")
                  .ok());
  EXPECT_TRUE(
      hub_.ns()
          .Lookup(root_cred, meta::Namespace::MakeHandle(b.ref().ino(), b.ref().gen()), "y19")
          .ok());
}

v1::Change CreateChange(const v1::FileRef& dir, const std::string& name, v1::FileType type) {
  v1::Change change;
  v1::CreateRequest* create = change.mutable_create();
  *create->mutable_dir() = dir;
  create->set_name(name);
  create->set_type(type);
  create->mutable_attrs()->set_mode(type == v1::DIRECTORY ? 0755 : 0644);
  return change;
}

bool Exists(meta::Namespace& ns, const v1::FileRef& dir, const std::string& name) {
  return ns.Lookup(vfs::Credentials{}, meta::Namespace::MakeHandle(dir.ino(), dir.gen()), name)
      .ok();
}

TEST_F(HubServiceTest, ApplyChangesAnswersEachChangeInOrder) {
  const v1::Entry dir = Create(root_, "d", v1::DIRECTORY);
  Create(dir.ref(), "old", v1::REGULAR);
  v1::ApplyChangesRequest req;
  *req.add_changes() = CreateChange(dir.ref(), "new", v1::REGULAR);
  *req.add_changes() = CreateChange(dir.ref(), "bad/name", v1::REGULAR);
  v1::RemoveRequest* remove = req.add_changes()->mutable_remove();
  *remove->mutable_dir() = dir.ref();
  remove->set_name("old");
  v1::RemoveRequest* missing = req.add_changes()->mutable_remove();
  *missing->mutable_dir() = dir.ref();
  missing->set_name("never-was");
  req.add_changes();  // names no operation
  v1::SetAttrRequest* chmod = req.add_changes()->mutable_set_attr();
  *chmod->mutable_ref() = dir.ref();
  chmod->mutable_attrs()->set_mode(0700);
  // Applied in order: the file just created can be renamed in the same batch.
  v1::RenameRequest* rename = req.add_changes()->mutable_rename();
  *rename->mutable_from_dir() = dir.ref();
  rename->set_from_name("new");
  *rename->mutable_to_dir() = dir.ref();
  rename->set_to_name("renamed");

  v1::ApplyChangesResponse resp;
  auto r = Call(&v1::Hub::Stub::ApplyChanges, req, &resp);
  ASSERT_TRUE(r.ok()) << r.status.error_message();
  ASSERT_EQ(resp.results_size(), 7);
  const auto& created = resp.results(0);
  EXPECT_TRUE(created.code().empty()) << created.message();
  ASSERT_TRUE(created.has_create());
  EXPECT_NE(created.create().object().ref().ino(), 0u);
  EXPECT_EQ(created.create().object().attr().type(), v1::REGULAR);

  EXPECT_EQ(resp.results(1).code(), "invalid_argument");
  EXPECT_NE(resp.results(1).message().find("bad/name"), std::string::npos)
      << resp.results(1).message();
  EXPECT_FALSE(resp.results(1).has_create()) << "a failed change has no reply";

  EXPECT_TRUE(resp.results(2).code().empty()) << resp.results(2).message();
  EXPECT_TRUE(resp.results(2).has_remove());
  EXPECT_EQ(resp.results(3).code(), "not_found");
  EXPECT_NE(resp.results(3).message().find("never-was"), std::string::npos)
      << resp.results(3).message();
  EXPECT_EQ(resp.results(4).code(), "invalid_argument");
  EXPECT_TRUE(resp.results(5).code().empty()) << resp.results(5).message();
  EXPECT_EQ(resp.results(5).set_attr().wcc().after().mode() & 07777, 0700u);
  EXPECT_TRUE(resp.results(6).code().empty()) << resp.results(6).message();
  for (const auto& result : resp.results()) EXPECT_FALSE(result.deferred());

  EXPECT_TRUE(Exists(hub_.ns(), dir.ref(), "renamed"));
  EXPECT_FALSE(Exists(hub_.ns(), dir.ref(), "new"));
  EXPECT_FALSE(Exists(hub_.ns(), dir.ref(), "old"));
  EXPECT_FALSE(Exists(hub_.ns(), dir.ref(), "bad"));
}

// A spoke reserves inode numbers, answers its creates with them, and sends
// the creates later in a batch: each makes the file it promised, once.
TEST_F(HubServiceTest, CreatesUseReservedInodeNumbersOnce) {
  const v1::Entry dir = Create(root_, "d", v1::DIRECTORY);
  v1::ReserveInodesRequest too_many;
  too_many.set_count(1'000'000);
  v1::ReserveInodesResponse reserved;
  auto refused = Call(&v1::Hub::Stub::ReserveInodes, too_many, &reserved);
  EXPECT_EQ(refused.geofs_code, "invalid_argument") << refused.status.error_message();
  v1::ReserveInodesRequest want;
  want.set_count(3);
  auto r = Call(&v1::Hub::Stub::ReserveInodes, want, &reserved);
  ASSERT_TRUE(r.ok()) << r.status.error_message();
  ASSERT_EQ(reserved.generations_size(), 3);

  auto reserved_create = [&](const std::string& name, int i, v1::FileType type = v1::REGULAR) {
    v1::Change change = CreateChange(dir.ref(), name, type);
    change.mutable_create()->set_reserved_ino(reserved.first() + i);
    return change;
  };
  v1::ApplyChangesRequest batch;
  *batch.add_changes() = reserved_create("a", 1);
  *batch.add_changes() = reserved_create("a", 1);  // a replay
  *batch.add_changes() = reserved_create("b", 1);  // the number is used
  *batch.add_changes() = reserved_create("sub", 0, v1::DIRECTORY);
  *batch.add_changes() = reserved_create("c", 0);
  v1::ApplyChangesResponse resp;
  r = Call(&v1::Hub::Stub::ApplyChanges, batch, &resp);
  ASSERT_TRUE(r.ok()) << r.status.error_message();
  ASSERT_EQ(resp.results_size(), 5);
  for (int i : {0, 1}) {
    const v1::ChangeResult& made = resp.results(i);
    ASSERT_TRUE(made.code().empty()) << made.message();
    EXPECT_EQ(made.create().object().ref().ino(), reserved.first() + 1);
    EXPECT_EQ(made.create().object().ref().gen(), reserved.generations(1));
  }
  EXPECT_EQ(resp.results(2).code(), "invalid_argument");
  EXPECT_NE(resp.results(2).message().find("not a reserved number"), std::string::npos)
      << resp.results(2).message();
  EXPECT_EQ(resp.results(3).code(), "invalid_argument");
  EXPECT_NE(resp.results(3).message().find("only regular files"), std::string::npos)
      << resp.results(3).message();
  ASSERT_TRUE(resp.results(4).code().empty()) << resp.results(4).message();
  EXPECT_EQ(resp.results(4).create().object().ref().ino(), reserved.first());
  EXPECT_TRUE(Exists(hub_.ns(), dir.ref(), "a"));
  EXPECT_FALSE(Exists(hub_.ns(), dir.ref(), "b"));
  EXPECT_FALSE(Exists(hub_.ns(), dir.ref(), "sub"));

  // The file answers to the handle the spoke built from the reservation.
  v1::GetAttrRequest get;
  get.mutable_ref()->set_ino(reserved.first() + 1);
  get.mutable_ref()->set_gen(reserved.generations(1));
  v1::GetAttrResponse attr;
  ASSERT_TRUE(Call(&v1::Hub::Stub::GetAttr, get, &attr).ok());
  EXPECT_EQ(attr.attr().type(), v1::REGULAR);
  // Ordinary creates never take reserved numbers.
  EXPECT_GE(Create(dir.ref(), "plain", v1::REGULAR).ref().ino(), reserved.first() + 3);
  v1::FsckResponse fsck;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Fsck, v1::FsckRequest{}, &fsck).ok());
  EXPECT_EQ(fsck.problems_size(), 0) << fsck.problems(0);
}

// What `geofsctl import` sends for small files: each created from a
// reserved number and committed in the same batch, made durable together.
TEST_F(HubServiceTest, ApplyChangesCreatesAndCommitsFilesInOneBatch) {
  const v1::Entry dir = Create(root_, "d", v1::DIRECTORY);
  v1::ReserveInodesRequest want;
  want.set_count(3);
  v1::ReserveInodesResponse reserved;
  ASSERT_TRUE(Call(&v1::Hub::Stub::ReserveInodes, want, &reserved).ok());
  ASSERT_EQ(reserved.generations_size(), 3);
  auto ref_of = [&](int i) {
    v1::FileRef ref;
    ref.set_ino(reserved.first() + i);
    ref.set_gen(reserved.generations(i));
    return ref;
  };
  auto commit_change = [&](const v1::FileRef& ref, const std::string& data, uint64_t version) {
    v1::Change change;
    v1::CommitFileRequest* commit = change.mutable_commit_file();
    *commit->mutable_ref() = ref;
    commit->set_expected_version(version);
    commit->set_replace_all(true);
    commit->set_new_size(data.size());
    v1::Extent* e = commit->add_extents();
    e->set_length(data.size());
    e->set_chunk_id(Upload(data));
    e->set_chunk_length(data.size());
    return change;
  };
  v1::ApplyChangesRequest batch;
  for (int i : {0, 1}) {
    v1::Change create = CreateChange(dir.ref(), "f" + std::to_string(i), v1::REGULAR);
    create.mutable_create()->set_reserved_ino(ref_of(i).ino());
    *batch.add_changes() = create;
  }
  *batch.add_changes() = commit_change(ref_of(0), "zero", 1);   // a new file's first version
  *batch.add_changes() = commit_change(ref_of(1), "one", 5);    // a stale version
  *batch.add_changes() = commit_change(ref_of(2), "never", 1);  // reserved, never created
  v1::ApplyChangesResponse resp;
  auto r = Call(&v1::Hub::Stub::ApplyChanges, batch, &resp);
  ASSERT_TRUE(r.ok()) << r.status.error_message();
  ASSERT_EQ(resp.results_size(), 5);
  for (int i : {0, 1}) ASSERT_TRUE(resp.results(i).code().empty()) << resp.results(i).message();
  const v1::ChangeResult& committed = resp.results(2);
  ASSERT_TRUE(committed.code().empty()) << committed.message();
  ASSERT_TRUE(committed.has_commit_file());
  EXPECT_EQ(committed.commit_file().version(), 2u);
  EXPECT_EQ(committed.commit_file().wcc().after().size(), 4u);
  EXPECT_EQ(resp.results(3).code(), "aborted") << resp.results(3).message();
  EXPECT_FALSE(resp.results(3).has_commit_file()) << "a failed change has no reply";
  EXPECT_FALSE(resp.results(4).code().empty());
  EXPECT_FALSE(resp.results(4).deferred());

  EXPECT_EQ(ReadFile(ref_of(0)), "zero");
  EXPECT_EQ(ChunkMap(ref_of(1)).extents_size(), 0) << "the stale commit changed nothing";
  v1::FsckResponse fsck;
  ASSERT_TRUE(Call(&v1::Hub::Stub::Fsck, v1::FsckRequest{}, &fsck).ok());
  EXPECT_EQ(fsck.problems_size(), 0) << fsck.problems(0);
}

TEST_F(HubServiceTest, ApplyChangesRefusesOversizedBatchesWhole) {
  v1::ApplyChangesRequest req;
  for (int i = 0; i <= kMaxChangesPerBatch; ++i) {
    *req.add_changes() = CreateChange(root_, "n" + std::to_string(i), v1::REGULAR);
  }
  v1::ApplyChangesResponse resp;
  auto r = Call(&v1::Hub::Stub::ApplyChanges, req, &resp);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(r.geofs_code, "invalid_argument");
  EXPECT_FALSE(Exists(hub_.ns(), root_, "n0"));

  v1::ApplyChangesRequest empty;
  r = Call(&v1::Hub::Stub::ApplyChanges, empty, &resp);
  EXPECT_TRUE(r.ok()) << r.status.error_message();
  EXPECT_EQ(resp.results_size(), 0);
}

TEST_F(HubServiceLeasedTest, ApplyChangesDefersAChangeThatWouldWait) {
  const v1::Entry a = Create(root_, "a", v1::DIRECTORY);
  const v1::Entry b = Create(root_, "b", v1::DIRECTORY);
  const uint64_t session = OpenSession();
  ASSERT_TRUE(leases_.Grant(session, std::vector<uint64_t>{a.ref().ino()}).ok());

  // Answered without the lease holder acknowledging anything: the change
  // in a comes back deferred and not applied, the one in b is done.
  v1::ApplyChangesRequest req;
  *req.add_changes() = CreateChange(a.ref(), "x", v1::REGULAR);
  *req.add_changes() = CreateChange(b.ref(), "y", v1::REGULAR);
  v1::ApplyChangesResponse resp;
  auto r = Call(&v1::Hub::Stub::ApplyChanges, req, &resp);
  ASSERT_TRUE(r.ok()) << r.status.error_message();
  ASSERT_EQ(resp.results_size(), 2);
  EXPECT_TRUE(resp.results(0).deferred());
  EXPECT_TRUE(resp.results(0).code().empty());
  EXPECT_FALSE(resp.results(0).has_create());
  EXPECT_FALSE(resp.results(1).deferred());
  EXPECT_TRUE(resp.results(1).code().empty()) << resp.results(1).message();
  EXPECT_FALSE(Exists(hub_.ns(), a.ref(), "x"));
  EXPECT_TRUE(Exists(hub_.ns(), b.ref(), "y"));

  // Sent alone, it waits for the holder as any change does.
  auto alone = std::async(std::launch::async, [&] {
    v1::CreateResponse created;
    return Call(&v1::Hub::Stub::Create, req.changes(0).create(), &created);
  });
  const auto inv = Received(0);
  ASSERT_TRUE(inv) << "the holder of a is told";
  leases_.Ack(session, inv->seq);
  ASSERT_EQ(alone.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(alone.get().ok());
  EXPECT_TRUE(Exists(hub_.ns(), a.ref(), "x"));
}

}  // namespace
}  // namespace geofs::hub

namespace geofs::hub {
namespace {

// DescribeDir: a page of a directory with each file's attributes and chunk
// map, what the spoke's prefetcher asks for in one round trip.
TEST_F(HubServiceTest, DescribeDirSendsEachFilesMapWithItsEntry) {
  const v1::Entry dir = Create(root_, "train", v1::DIRECTORY);
  const v1::Entry sub = Create(dir.ref(), "sub", v1::DIRECTORY);
  std::vector<v1::Entry> files;
  for (int i = 0; i < 5; ++i) {
    files.push_back(Create(dir.ref(), "f" + std::to_string(i), v1::REGULAR));
    v1::CommitFileResponse committed;
    ASSERT_TRUE(CommitWhole(files.back().ref(), RandomBytes(1000 + i, i), ChunkMap(files.back().ref()).version(), &committed).ok());
  }
  v1::DescribeDirRequest req;
  *req.mutable_dir() = dir.ref();
  v1::DescribeDirResponse resp;
  ASSERT_TRUE(Call(&v1::Hub::Stub::DescribeDir, req, &resp).ok());
  EXPECT_TRUE(resp.eof());
  ASSERT_EQ(resp.entries_size(), 6);  // no "." or ".."
  int maps = 0;
  for (const v1::DescribedEntry& d : resp.entries()) {
    const v1::Entry& e = d.entry().entry();
    if (d.entry().name() == "sub") {
      EXPECT_FALSE(d.has_map());
      EXPECT_EQ(e.ref().ino(), sub.ref().ino());
      continue;
    }
    ASSERT_TRUE(d.has_map()) << d.entry().name();
    ++maps;
    const v1::GetChunkMapResponse map = ChunkMap(e.ref());
    EXPECT_EQ(d.version(), map.version());
    EXPECT_EQ(e.attr().size(), map.attr().size());
    ASSERT_EQ(d.extents_size(), map.extents_size());
    EXPECT_EQ(d.extents(0).chunk_id(), map.extents(0).chunk_id());
  }
  EXPECT_EQ(maps, 5);
}

TEST_F(HubServiceTest, DescribeDirPagesStopAtTheExtentLimitAndContinue) {
  const v1::Entry dir = Create(root_, "d", v1::DIRECTORY);
  for (int i = 0; i < 6; ++i) {
    v1::Entry f = Create(dir.ref(), "f" + std::to_string(i), v1::REGULAR);
    v1::CommitFileResponse committed;
    ASSERT_TRUE(CommitWhole(f.ref(), RandomBytes(100, 10 + i), ChunkMap(f.ref()).version(), &committed).ok());
  }
  std::set<std::string> seen;
  v1::DescribeDirRequest req;
  *req.mutable_dir() = dir.ref();
  req.set_max_extents(2);
  for (int page = 0; page < 10; ++page) {
    v1::DescribeDirResponse resp;
    ASSERT_TRUE(Call(&v1::Hub::Stub::DescribeDir, req, &resp).ok());
    EXPECT_LE(resp.entries_size(), 2);
    for (const v1::DescribedEntry& d : resp.entries()) {
      EXPECT_TRUE(seen.insert(d.entry().name()).second) << d.entry().name();
    }
    if (resp.eof()) break;
    ASSERT_GT(resp.entries_size(), 0);
    req.set_cookie(resp.entries(resp.entries_size() - 1).entry().cookie());
    req.set_verifier(resp.verifier());
  }
  EXPECT_EQ(seen.size(), 6u);
}

TEST_F(HubServiceTest, DescribeDirLeavesOutMapsTheCallerMayNotRead) {
  const v1::Entry dir = Create(root_, "d", v1::DIRECTORY);
  v1::Entry f = Create(dir.ref(), "secret", v1::REGULAR);  // 0644, root's
  v1::SetAttrRequest chmod;
  *chmod.mutable_ref() = f.ref();
  chmod.mutable_attrs()->set_mode(0600);
  v1::SetAttrResponse chmodded;
  ASSERT_TRUE(Call(&v1::Hub::Stub::SetAttr, chmod, &chmodded).ok());
  v1::DescribeDirRequest req;
  *req.mutable_dir() = dir.ref();
  req.mutable_cred()->set_uid(1000);
  req.mutable_cred()->set_gid(1000);
  v1::DescribeDirResponse resp;
  ASSERT_TRUE(Call(&v1::Hub::Stub::DescribeDir, req, &resp).ok());
  ASSERT_EQ(resp.entries_size(), 1);
  EXPECT_FALSE(resp.entries(0).has_map());
  // A stale directory is refused, as ReadDir refuses it.
  v1::FileRef gone = dir.ref();
  gone.set_gen(gone.gen() + 1);
  *req.mutable_dir() = gone;
  EXPECT_FALSE(Call(&v1::Hub::Stub::DescribeDir, req, &resp).ok());
}

}  // namespace
}  // namespace geofs::hub
