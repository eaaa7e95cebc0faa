// SyncBackend: calls a vfs::Backend and waits for its callback, so tests can
// write `auto r = fs.Lookup(cred, dir, "a");`. Works with backends that call
// back inline or later on another thread; fails the test if a callback runs
// twice.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "geofs/vfs.h"

namespace geofs::vfs {

class SyncBackend {
 public:
  explicit SyncBackend(Backend* backend = nullptr) : b_(backend) {}

  Result<Attr> GetAttr(const Credentials& c, const Handle& h) {
    return Call<Attr>([&](auto cb) { b_->GetAttr(c, h, cb); });
  }
  Result<Wcc> SetAttr(const Credentials& c, const Handle& h, const SetAttrs& a,
                      std::optional<WallTime> guard = std::nullopt) {
    return Call<Wcc>([&](auto cb) { b_->SetAttr(c, h, a, guard, cb); });
  }
  Result<LookupReply> Lookup(const Credentials& c, const Handle& dir, std::string_view name) {
    return Call<LookupReply>([&](auto cb) { b_->Lookup(c, dir, name, cb); });
  }
  Result<LookupReply> LookupParent(const Credentials& c, const Handle& dir) {
    return Call<LookupReply>([&](auto cb) { b_->LookupParent(c, dir, cb); });
  }
  Result<AccessReply> Access(const Credentials& c, const Handle& h, uint32_t requested) {
    return Call<AccessReply>([&](auto cb) { b_->Access(c, h, requested, cb); });
  }
  Result<ReadLinkReply> ReadLink(const Credentials& c, const Handle& h) {
    return Call<ReadLinkReply>([&](auto cb) { b_->ReadLink(c, h, cb); });
  }
  // The reply as the backend gave it: data in memory, or a file range.
  Result<ReadReply> ReadRaw(const Credentials& c, const Handle& h, uint64_t offset,
                            uint32_t count) {
    return Call<ReadReply>([&](auto cb) { b_->Read(c, h, offset, count, cb); });
  }
  // The reply with a file range read into `data`, as the client receives it.
  Result<ReadReply> Read(const Credentials& c, const Handle& h, uint64_t offset, uint32_t count) {
    Result<ReadReply> r = ReadRaw(c, h, offset, count);
    if (r.ok() && r->file) {
      std::vector<uint8_t> bytes;
      AppendFileRange(*r->file, bytes);
      r->data = Buffer::CopyOf(std::span<const uint8_t>(bytes));
      r->file.reset();
    }
    return r;
  }
  Result<WriteReply> Write(const Credentials& c, const Handle& h, uint64_t offset,
                           std::string_view data, Stability s = Stability::kUnstable) {
    return Call<WriteReply>([&](auto cb) { b_->Write(c, h, offset, Buffer::CopyOf(data), s, cb); });
  }
  Result<CreateReply> Create(const Credentials& c, const Handle& dir, std::string_view name,
                             const CreateRequest& req) {
    return Call<CreateReply>([&](auto cb) { b_->Create(c, dir, name, req, cb); });
  }
  Result<CreateReply> Mkdir(const Credentials& c, const Handle& dir, std::string_view name,
                            const SetAttrs& a) {
    return Call<CreateReply>([&](auto cb) { b_->Mkdir(c, dir, name, a, cb); });
  }
  Result<CreateReply> Symlink(const Credentials& c, const Handle& dir, std::string_view name,
                              std::string_view target, const SetAttrs& a = {}) {
    return Call<CreateReply>([&](auto cb) { b_->Symlink(c, dir, name, target, a, cb); });
  }
  Result<CreateReply> Mknod(const Credentials& c, const Handle& dir, std::string_view name,
                            const MknodRequest& req) {
    return Call<CreateReply>([&](auto cb) { b_->Mknod(c, dir, name, req, cb); });
  }
  Result<Wcc> Remove(const Credentials& c, const Handle& dir, std::string_view name) {
    return Call<Wcc>([&](auto cb) { b_->Remove(c, dir, name, cb); });
  }
  Result<Wcc> Rmdir(const Credentials& c, const Handle& dir, std::string_view name) {
    return Call<Wcc>([&](auto cb) { b_->Rmdir(c, dir, name, cb); });
  }
  Result<RenameReply> Rename(const Credentials& c, const Handle& from, std::string_view from_name,
                             const Handle& to, std::string_view to_name) {
    return Call<RenameReply>([&](auto cb) { b_->Rename(c, from, from_name, to, to_name, cb); });
  }
  Result<LinkReply> Link(const Credentials& c, const Handle& file, const Handle& dir,
                         std::string_view name) {
    return Call<LinkReply>([&](auto cb) { b_->Link(c, file, dir, name, cb); });
  }
  Result<DirPage> ReadDir(const Credentials& c, const Handle& dir, const ReadDirRequest& req) {
    return Call<DirPage>([&](auto cb) { b_->ReadDir(c, dir, req, cb); });
  }
  Result<FsStats> FsStat(const Credentials& c, const Handle& h) {
    return Call<FsStats>([&](auto cb) { b_->FsStat(c, h, cb); });
  }
  Result<Wcc> Commit(const Credentials& c, const Handle& h, uint64_t offset = 0,
                     uint32_t count = 0) {
    return Call<Wcc>([&](auto cb) { b_->Commit(c, h, offset, count, cb); });
  }

 private:
  template <typename T, typename Start>
  static Result<T> Call(Start start) {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto calls = std::make_shared<std::atomic<int>>(0);
    std::future<Result<T>> future = promise->get_future();
    start([promise, calls](Result<T> r) {
      if (calls->fetch_add(1) != 0) {
        ADD_FAILURE() << "backend callback invoked twice";
        return;
      }
      promise->set_value(std::move(r));
    });
    return future.get();
  }

  Backend* b_;
};

}  // namespace geofs::vfs
