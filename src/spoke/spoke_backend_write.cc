// SpokeBackend: namespace changes, WRITE and COMMIT.
//
// Changes go to the hub as asynchronous calls, answered when the hub has
// committed them (tagged with the session, so the hub does not invalidate
// us for our own change), and drop the entries they affect. They run on
// the front end's network threads (QuickChanges), except the few that must
// first wait for journalled writes, which wait on flushers_. WRITE appends
// to the WriteJournal; FILE_SYNC/DATA_SYNC writes and COMMIT are answered
// once the journal is synced (durable on this spoke), and the
// JournalUploader commits the data at the hub in the background. Reads
// through this spoke see pending data at once (the journal overlays the
// hub's data and size); other spokes see it once it is committed at the
// hub. A change whose meaning depends on the data being at the hub first (a
// truncation) flushes the file's pending writes before it is sent.
#include <future>

#include "common/logging.h"
#include "common/worker_pool.h"
#include "hub/proto_convert.h"
#include "spoke/change_batcher.h"
#include "spoke/journal_uploader.h"
#include "spoke/local_creates.h"
#include "spoke/metadata_cache.h"
#include "spoke/spoke_backend.h"
#include "spoke/spoke_backend_internal.h"
#include "vfs/access.h"

namespace geofs::spoke {
namespace {

using v1::Hub;

// How long a change waits for the file's journalled writes to reach the hub
// before it is answered kUnavailable (NFS3ERR_JUKEBOX: the client retries).
constexpr std::chrono::seconds kFlushTimeout{30};
// Beyond a write's own bytes, what a journal append may need: a record
// header, and a new segment's first block.
constexpr uint64_t kJournalSlack = 1 << 20;
// Entries in the directory page fetched to learn which names are free.
constexpr uint32_t kListingPage = 512;
// Directories known to hold more than one such page (their names are
// looked up instead); forgotten all at once beyond this many.
constexpr size_t kMaxLargeDirs = 4096;
// How long shutdown waits for the journal to reach the hub; what is left
// is uploaded after the next start.
constexpr std::chrono::seconds kShutdownFlushTimeout{20};

Result<vfs::CreateReply> CreateReplyFrom(const v1::CreateResponse& r) {
  vfs::CreateReply out;
  GEOFS_ASSIGN_OR_RETURN(out.object, FromProto(r.object()));
  GEOFS_ASSIGN_OR_RETURN(out.dir_wcc, FromProto(r.dir_wcc()));
  return out;
}

// The CREATE-like request making `name` of `type` in `dir`.
v1::CreateRequest CreateRequestFor(const vfs::Credentials& cred, const FileKey& dir,
                                   std::string_view name, v1::FileType type,
                                   const vfs::SetAttrs& attrs) {
  auto req = WithCred<v1::CreateRequest>(cred);
  *req.mutable_dir() = ToProto(dir);
  req.set_name(std::string(name));
  req.set_type(type);
  ToProto(attrs, req.mutable_attrs());
  return req;
}

}  // namespace

Result<vfs::Attr> SpokeBackend::AttrSync(const vfs::Credentials& cred, const FileKey& key) {
  std::promise<Result<vfs::Attr>> promise;
  auto future = promise.get_future();
  FetchAttr(cred, key, [&promise](Result<vfs::Attr> a) { promise.set_value(std::move(a)); });
  return future.get();
}

void SpokeBackend::SetAttr(const vfs::Credentials& cred, const vfs::Handle& h,
                           const vfs::SetAttrs& attrs, std::optional<WallTime> guard_ctime,
                           vfs::Callback<vfs::Wcc> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  if (HasLocal(LocalScope::kFile, key->ino)) {
    if (TrySetAttrHere(cred, *key, attrs, guard_ctime, cb)) return;
    return local_->Flush(LocalScope::kFile, key->ino,
                         [this, cred, h, attrs, guard_ctime, cb](Status s) {
                           if (!s.ok()) return cb(s);
                           SetAttr(cred, h, attrs, guard_ctime, cb);
                         });
  }
  // Journalled writes came before this change: a truncation must cut them,
  // and an explicit mtime must not be overwritten when they reach the hub.
  if ((attrs.size || attrs.mtime_how != vfs::TimeUpdate::kDontChange) && uploader_ &&
      journal_->Pending(*key)) {
    flushers_->Submit([this, cred, key = *key, attrs, guard_ctime, cb = std::move(cb)]() mutable {
      if (Status s = uploader_->Flush(key, kFlushTimeout); !s.ok()) return cb(s);
      SetAttrAtHub(cred, key, attrs, guard_ctime, std::move(cb));
    });
    return;
  }
  SetAttrAtHub(cred, *key, attrs, guard_ctime, std::move(cb));
}

void SpokeBackend::SetAttrAtHub(const vfs::Credentials& cred, const FileKey& key,
                                const vfs::SetAttrs& attrs, std::optional<WallTime> guard_ctime,
                                vfs::Callback<vfs::Wcc> cb) {
  auto req = WithCred<v1::SetAttrRequest>(cred);
  *req.mutable_ref() = ToProto(key);
  ToProto(attrs, req.mutable_attrs());
  if (guard_ctime) *req.mutable_guard_ctime() = hub::ToProto(*guard_ctime);
  v1::Change change;
  *change.mutable_set_attr() = std::move(req);
  changes_->Submit(std::move(change), [this, key, cb = std::move(cb)](Result<v1::ChangeResult> r) {
    meta_->Invalidate(key.ino);
    if (!r.ok()) return cb(r.status());
    cb(FromProto(r->set_attr().wcc()));
  });
}

void SpokeBackend::CreateAtHub(const FileKey& dir, const v1::CreateRequest& req,
                               vfs::Callback<vfs::CreateReply> cb) {
  v1::Change change;
  *change.mutable_create() = req;
  changes_->Submit(std::move(change), [this, dir, cb = std::move(cb)](Result<v1::ChangeResult> r) {
    meta_->Invalidate(dir.ino);
    if (!r.ok()) return cb(r.status());
    const v1::CreateResponse& created = r->create();
    // CREATE may have truncated an existing file.
    meta_->Invalidate(created.object().ref().ino());
    cb(CreateReplyFrom(created));
  });
}

Status SpokeBackend::FlushBeforeTruncate(const vfs::Credentials& cred, const FileKey& dir,
                                         std::string_view name) {
  auto req = WithCred<v1::LookupRequest>(cred);
  *req.mutable_dir() = ToProto(dir);
  req.set_name(std::string(name));
  auto existing = link_->CallSync(&Hub::Stub::async::Lookup, std::move(req));
  if (!existing.ok()) {
    return existing.status() == StatusCode::kNotFound ? Status::Ok() : existing.status();
  }
  Status flushed = uploader_->Flush(FromProto(existing->object().ref()), kFlushTimeout);
  // A file gone meanwhile has nothing left to truncate: CREATE makes a new one.
  return flushed == StatusCode::kStale ? Status::Ok() : flushed;
}

void SpokeBackend::Create(const vfs::Credentials& cred, const vfs::Handle& dir,
                          std::string_view name, const vfs::CreateRequest& create,
                          vfs::Callback<vfs::CreateReply> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  if (local_) {
    if (auto ino = LocalInTheWay(*dkey, name)) {
      // The name (or the directory) is a file created here: the hub
      // decides, once it has it.
      return local_->Flush(LocalScope::kFile, *ino,
                           [this, cred, dir, name = std::string(name), create, cb](Status s) {
                             if (!s.ok()) return cb(s);
                             Create(cred, dir, name, create, cb);
                           });
    }
    const CreatedHere here = TryCreateHere(cred, *dkey, name, create, cb);
    if (here == CreatedHere::kAnswered) return;
    if (here == CreatedHere::kNameUnknown) {
      // Ask the hub (which leases the directory), so that this and the
      // next creates can be answered here.
      return LearnWhetherMissing(
          cred, dir, *dkey, name,
          [this, cred, dkey = *dkey, name = std::string(name), create, cb](bool missing) mutable {
            if (missing && TryCreateHere(cred, dkey, name, create, cb) == CreatedHere::kAnswered) {
              return;
            }
            CreateAfterChecks(cred, dkey, name, create, std::move(cb));
          });
    }
  }
  CreateAfterChecks(cred, *dkey, name, create, std::move(cb));
}

void SpokeBackend::LearnWhetherMissing(const vfs::Credentials& cred, const vfs::Handle& dir,
                                       const FileKey& dkey, std::string_view name,
                                       std::function<void(bool)> then) {
  auto look_up = [this, cred, dir, name = std::string(name), then]() {
    Lookup(cred, dir, name, [then](Result<vfs::LookupReply> found) {
      then(found.status().code() == StatusCode::kNotFound);
    });
  };
  {
    std::lock_guard lock(large_dirs_mu_);
    if (large_dirs_.count(dkey.ino) != 0) return look_up();
  }
  if (meta_->ReadDir(dkey.ino, 0, kListingPage, false)) return look_up();
  // A small directory's whole listing tells every name in one call (a job
  // creating many files in a fresh directory asks nothing more); a large
  // one is remembered, and its names are looked up one by one.
  vfs::ReadDirRequest rd;
  rd.max_entries = kListingPage;
  rd.with_attrs = true;
  ReadDir(
      cred, dir, rd,
      [this, dino = dkey.ino, name = std::string(name), then, look_up](Result<vfs::DirPage> page) {
        if (meta_->KnownMissing(dino, name, false)) return then(true);
        if (page.ok() && !page->eof) {
          std::lock_guard lock(large_dirs_mu_);
          if (large_dirs_.size() >= kMaxLargeDirs) large_dirs_.clear();
          large_dirs_.insert(dino);
        }
        look_up();
      });
}

void SpokeBackend::CreateAfterChecks(const vfs::Credentials& cred, const FileKey& dkey,
                                     std::string_view name, const vfs::CreateRequest& create,
                                     vfs::Callback<vfs::CreateReply> cb) {
  auto req = CreateRequestFor(cred, dkey, name, v1::REGULAR, create.attrs);
  req.set_mode(static_cast<v1::CreateMode>(create.mode));
  if (create.mode == vfs::CreateMode::kExclusive) {
    req.set_verifier(create.verifier.data(), create.verifier.size());
  }
  // A CREATE that truncates an existing file must first commit its
  // journalled writes: that may wait, so it waits on a flusher thread.
  if (create.mode != vfs::CreateMode::kExclusive && create.attrs.size && uploader_ &&
      journal_->Stats().pending_files > 0) {
    flushers_->Submit([this, cred, dkey, name = std::string(name), req = std::move(req),
                       cb = std::move(cb)]() mutable {
      if (Status s = FlushBeforeTruncate(cred, dkey, name); !s.ok()) return cb(s);
      CreateAtHub(dkey, req, std::move(cb));
    });
    return;
  }
  CreateAtHub(dkey, req, std::move(cb));
}

void SpokeBackend::Mkdir(const vfs::Credentials& cred, const vfs::Handle& dir,
                         std::string_view name, const vfs::SetAttrs& attrs,
                         vfs::Callback<vfs::CreateReply> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  if (auto ino = LocalInTheWay(*dkey, name)) {
    return local_->Flush(LocalScope::kFile, *ino,
                         [this, cred, dir, name = std::string(name), attrs, cb](Status s) {
                           if (!s.ok()) return cb(s);
                           Mkdir(cred, dir, name, attrs, cb);
                         });
  }
  CreateAtHub(*dkey, CreateRequestFor(cred, *dkey, name, v1::DIRECTORY, attrs), std::move(cb));
}

void SpokeBackend::Symlink(const vfs::Credentials& cred, const vfs::Handle& dir,
                           std::string_view name, std::string_view target,
                           const vfs::SetAttrs& attrs, vfs::Callback<vfs::CreateReply> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  if (auto ino = LocalInTheWay(*dkey, name)) {
    return local_->Flush(LocalScope::kFile, *ino,
                         [this, cred, dir, name = std::string(name), target = std::string(target),
                          attrs, cb](Status s) {
                           if (!s.ok()) return cb(s);
                           Symlink(cred, dir, name, target, attrs, cb);
                         });
  }
  auto req = CreateRequestFor(cred, *dkey, name, v1::SYMLINK, attrs);
  req.set_symlink_target(std::string(target));
  CreateAtHub(*dkey, req, std::move(cb));
}

void SpokeBackend::Mknod(const vfs::Credentials& cred, const vfs::Handle& dir,
                         std::string_view name, const vfs::MknodRequest& mknod,
                         vfs::Callback<vfs::CreateReply> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  if (auto ino = LocalInTheWay(*dkey, name)) {
    return local_->Flush(LocalScope::kFile, *ino,
                         [this, cred, dir, name = std::string(name), mknod, cb](Status s) {
                           if (!s.ok()) return cb(s);
                           Mknod(cred, dir, name, mknod, cb);
                         });
  }
  auto req = CreateRequestFor(cred, *dkey, name, hub::ToProto(mknod.type), mknod.attrs);
  req.set_rdev_major(mknod.rdev_major);
  req.set_rdev_minor(mknod.rdev_minor);
  CreateAtHub(*dkey, req, std::move(cb));
}

void SpokeBackend::Remove(const vfs::Credentials& cred, const vfs::Handle& dir,
                          std::string_view name, vfs::Callback<vfs::Wcc> cb) {
  if (local_) {
    auto dkey = KeyOr(dir, cb);
    if (!dkey) return;
    if (Status s = CheckWritable(); !s.ok()) return cb(s);
    if (auto ino = LocalInTheWay(*dkey, name)) {
      if (*ino != dkey->ino && TryRemoveHere(cred, *dkey, name, cb)) return;
      return local_->Flush(LocalScope::kFile, *ino,
                           [this, cred, dir, name = std::string(name), cb](Status s) {
                             if (!s.ok()) return cb(s);
                             Remove(cred, dir, name, cb);
                           });
    }
  }
  RemoveAtHub(cred, dir, name, /*directory=*/false, std::move(cb));
}

void SpokeBackend::Rmdir(const vfs::Credentials& cred, const vfs::Handle& dir,
                         std::string_view name, vfs::Callback<vfs::Wcc> cb) {
  // The directory removed may hold files created here.
  if (HasLocal(LocalScope::kAll, 0)) {
    return local_->Flush(LocalScope::kAll, 0,
                         [this, cred, dir, name = std::string(name), cb](Status s) {
                           if (!s.ok()) return cb(s);
                           Rmdir(cred, dir, name, cb);
                         });
  }
  RemoveAtHub(cred, dir, name, /*directory=*/true, std::move(cb));
}

void SpokeBackend::RemoveAtHub(const vfs::Credentials& cred, const vfs::Handle& dir,
                               std::string_view name, bool directory, vfs::Callback<vfs::Wcc> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  auto victim = meta_->Lookup(dkey->ino, name, true);
  auto req = WithCred<v1::RemoveRequest>(cred);
  *req.mutable_dir() = ToProto(*dkey);
  req.set_name(std::string(name));
  req.set_directory(directory);
  v1::Change change;
  *change.mutable_remove() = std::move(req);
  changes_->Submit(std::move(change),
                   [this, dkey = *dkey, victim, cb = std::move(cb)](Result<v1::ChangeResult> r) {
                     meta_->Invalidate(dkey.ino);
                     // The victim's link count changed (or it is gone).
                     if (victim) meta_->Invalidate(victim->ino);
                     if (!r.ok()) return cb(r.status());
                     cb(FromProto(r->remove().dir_wcc()));
                   });
}

void SpokeBackend::Rename(const vfs::Credentials& cred, const vfs::Handle& from_dir,
                          std::string_view from_name, const vfs::Handle& to_dir,
                          std::string_view to_name, vfs::Callback<vfs::RenameReply> cb) {
  auto from = KeyOr(from_dir, cb);
  if (!from) return;
  auto to = KeyOr(to_dir, cb);
  if (!to) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  // The object moved, the one replaced, or a directory moved may be or
  // hold files created here: the hub must have them first.
  if (HasLocal(LocalScope::kAll, 0)) {
    return local_->Flush(LocalScope::kAll, 0,
                         [this, cred, from_dir, from_name = std::string(from_name), to_dir,
                          to_name = std::string(to_name), cb](Status s) {
                           if (!s.ok()) return cb(s);
                           Rename(cred, from_dir, from_name, to_dir, to_name, cb);
                         });
  }
  // The moved object's ctime and the replaced one's link count change.
  std::vector<uint64_t> touched = {from->ino, to->ino};
  if (auto moved = meta_->Lookup(from->ino, from_name, true)) touched.push_back(moved->ino);
  if (auto replaced = meta_->Lookup(to->ino, to_name, true)) touched.push_back(replaced->ino);
  auto req = WithCred<v1::RenameRequest>(cred);
  *req.mutable_from_dir() = ToProto(*from);
  req.set_from_name(std::string(from_name));
  *req.mutable_to_dir() = ToProto(*to);
  req.set_to_name(std::string(to_name));
  v1::Change change;
  *change.mutable_rename() = std::move(req);
  changes_->Submit(std::move(change),
                   [this, touched, cb = std::move(cb)](Result<v1::ChangeResult> r) {
                     for (uint64_t ino : touched) meta_->Invalidate(ino);
                     if (!r.ok()) return cb(r.status());
                     auto from_wcc = FromProto(r->rename().from_dir_wcc());
                     auto to_wcc = FromProto(r->rename().to_dir_wcc());
                     if (!from_wcc.ok()) return cb(from_wcc.status());
                     if (!to_wcc.ok()) return cb(to_wcc.status());
                     cb(vfs::RenameReply{*from_wcc, *to_wcc});
                   });
}

void SpokeBackend::Link(const vfs::Credentials& cred, const vfs::Handle& file,
                        const vfs::Handle& dir, std::string_view name,
                        vfs::Callback<vfs::LinkReply> cb) {
  auto fkey = KeyOr(file, cb);
  if (!fkey) return;
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  if (HasLocal(LocalScope::kFile, fkey->ino) || HasLocal(LocalScope::kDir, dkey->ino) ||
      HasLocal(LocalScope::kFile, dkey->ino)) {
    return local_->Flush(LocalScope::kAll, 0,
                         [this, cred, file, dir, name = std::string(name), cb](Status s) {
                           if (!s.ok()) return cb(s);
                           Link(cred, file, dir, name, cb);
                         });
  }
  auto req = WithCred<v1::LinkRequest>(cred);
  *req.mutable_file() = ToProto(*fkey);
  *req.mutable_dir() = ToProto(*dkey);
  req.set_name(std::string(name));
  v1::Change change;
  *change.mutable_link() = std::move(req);
  changes_->Submit(std::move(change), [this, fkey = *fkey, dkey = *dkey,
                                       cb = std::move(cb)](Result<v1::ChangeResult> r) {
    meta_->Invalidate(fkey.ino);
    meta_->Invalidate(dkey.ino);
    if (!r.ok()) return cb(r.status());
    const v1::LinkResponse& linked = r->link();
    auto file_attr = OptionalAttr(linked.has_file_attr(), linked.file_attr());
    auto dir_wcc = FromProto(linked.dir_wcc());
    if (!file_attr.ok()) return cb(file_attr.status());
    if (!dir_wcc.ok()) return cb(dir_wcc.status());
    if (*file_attr) *file_attr = Patched(fkey, **file_attr);
    cb(vfs::LinkReply{*file_attr, *dir_wcc});
  });
}

void SpokeBackend::Write(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t offset,
                         Buffer data, vfs::Stability stability, vfs::Callback<vfs::WriteReply> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  if (!uploader_) return cb(Status::NotSupported("this spoke has no write journal"));
  auto attr = AttrSync(cred, *key);
  if (!attr.ok()) return cb(attr.status());
  if (Status s = vfs::CheckWrite(*attr, cred); !s.ok()) return cb(s);
  if (offset + data.size() < offset || offset + data.size() > GetCapabilities().max_file_size) {
    return cb(Status::FileTooLarge());
  }
  vfs::WriteReply reply;
  reply.wcc.before = vfs::ToWcc(*attr);
  const WallTime now = options_.clock->WallNow();
  auto seq = journal_->Append(*key, offset, data.span(), now);
  // The journal shares its file system with the chunk cache: cached chunks
  // can always be fetched again, journalled writes cannot, so make room.
  if (!seq.ok() && seq.status().code() == StatusCode::kNoSpace && cache_ != nullptr &&
      cache_->Shrink(2 * data.size() + kJournalSlack) > 0) {
    seq = journal_->Append(*key, offset, data.span(), now);
  }
  if (!seq.ok()) return cb(seq.status());
  reply.count = static_cast<uint32_t>(data.size());
  reply.committed = stability;
  if (stability != vfs::Stability::kUnstable) {
    if (Status s = journal_->Sync(); !s.ok()) return cb(s);
  }
  uploader_->Kick();
  vfs::Attr after = *attr;
  after.size = std::max(after.size, offset + data.size());
  after.mtime = after.ctime = now;
  reply.wcc.after = Patched(*key, after);
  cb(std::move(reply));
}

void SpokeBackend::Commit(const vfs::Credentials& cred, const vfs::Handle& h, uint64_t, uint32_t,
                          vfs::Callback<vfs::Wcc> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  if (Status s = CheckWritable(); !s.ok()) return cb(s);
  vfs::Wcc wcc;
  if (uploader_) {
    if (Status s = journal_->Sync(); !s.ok()) return cb(s);
    uploader_->Kick();
  }
  auto attr = AttrSync(cred, *key);
  if (!attr.ok()) return cb(attr.status());
  wcc.after = *attr;
  cb(std::move(wcc));
}

Status SpokeBackend::FlushAll() {
  if (local_ && !local_->FlushAndWait(LocalScope::kAll, 0, kShutdownFlushTimeout).ok()) {
    GetLogger("spoke")->warn("creates left for the next start: the hub did not take them");
  }
  if (!uploader_) return Status::Ok();
  Status status = uploader_->FlushAll(kShutdownFlushTimeout);
  uploader_->Stop();
  return status;
}

}  // namespace geofs::spoke
