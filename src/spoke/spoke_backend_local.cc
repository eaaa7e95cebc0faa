// SpokeBackend: creates answered here and sent to the hub later
// (write-behind; docs/coherence.md, local_creates.h).
//
// A CREATE is answered here when all of this holds, else it goes to the hub
// as before:
//  - the option is on, the hub link is up, a reserved number is on hand;
//  - the directory's attributes are cached under a live lease, and the
//    name is known to be free there under that lease (a cached NOENT, or
//    a complete cached listing without it; a name never looked up is
//    looked up at the hub first, which leases the directory);
//  - an UNCHECKED or GUARDED create of an empty file, owner and group left
//    to the rules (NewObjectOwnership), the caller allowed to add names.
// The permission rules are the hub's own (vfs/access.h), so the answer is
// the one the hub would give. SETATTR of such a file (permission bits and
// times, by a caller the rules allow) and REMOVE of it before it was sent
// are answered here too, as are WRITE and COMMIT (the journal takes the data;
// the uploader sends the file before it); anything else touching it or its
// name first sends it. Every answer waits for the create log's fdatasync.
#include "common/worker_pool.h"
#include "hub/proto_convert.h"
#include "spoke/change_batcher.h"
#include "spoke/local_creates.h"
#include "spoke/metadata_cache.h"
#include "spoke/spoke_backend.h"
#include "spoke/spoke_backend_internal.h"
#include "vfs/access.h"

namespace geofs::spoke {

using v1::Hub;

namespace {

// The time a SETATTR (or a create's attributes) asks for, or `keep`.
WallTime TimeAfter(vfs::TimeUpdate how, const WallTime& given, const WallTime& now,
                   const WallTime& keep) {
  switch (how) {
    case vfs::TimeUpdate::kServerTime:
      return now;
    case vfs::TimeUpdate::kClientTime:
      return given;
    case vfs::TimeUpdate::kDontChange:
      break;
  }
  return keep;
}

// Writes `attr`'s permission bits and times into `req`, so the hub records
// what this spoke answered (ctime too: clients guard SETATTRs with it).
void RecordAttrs(const vfs::Attr& attr, v1::CreateRequest* req) {
  vfs::SetAttrs a;
  a.mode = attr.mode;
  a.atime_how = vfs::TimeUpdate::kClientTime;
  a.atime = attr.atime;
  a.mtime_how = vfs::TimeUpdate::kClientTime;
  a.mtime = attr.mtime;
  req->clear_attrs();
  ToProto(a, req->mutable_attrs());
  *req->mutable_answered_ctime() = hub::ToProto(attr.ctime);
}

// Answers `cb` with `value` once what was logged is durable.
template <typename T>
void AnswerOnceDurable(LocalCreates& local, T value, const vfs::Callback<T>& cb) {
  local.SyncThen([value = std::move(value), cb](Status s) mutable {
    if (!s.ok()) return cb(s);
    cb(std::move(value));
  });
}

}  // namespace

vfs::Wcc SpokeBackend::DirChangedHere(const FileKey& dir, const vfs::Attr& dir_attr) {
  vfs::Wcc wcc;
  const vfs::Attr before = Patched(dir, dir_attr);
  wcc.before = vfs::ToWcc(before);
  vfs::Attr after = before;
  after.mtime = after.ctime = local_->TouchDir(dir.ino, dir_attr.ctime);
  wcc.after = after;
  return wcc;
}

void SpokeBackend::StartLocalCreates() {
  LocalCreatesHooks hooks;
  hooks.send = [this](const v1::CreateRequest& req,
                      std::function<void(Result<v1::CreateResponse>)> done) {
    v1::Change change;
    *change.mutable_create() = req;
    changes_->Submit(std::move(change), [done = std::move(done)](Result<v1::ChangeResult> r) {
      if (!r.ok()) return done(r.status());
      done(r->create());
    });
  };
  hooks.reserve = [this](uint32_t count,
                         std::function<void(Result<v1::ReserveInodesResponse>)> done) {
    v1::ReserveInodesRequest req;
    req.set_count(count);
    link_->Call(&Hub::Stub::async::ReserveInodes, std::move(req),
                [done = std::move(done)](Result<v1::ReserveInodesResponse> r, Grant) {
                  done(std::move(r));
                });
  };
  // Our own commits do not invalidate us: the directory's attributes and
  // listing, and anything known of the number, are out of date.
  hooks.committed = [this](const FileKey& dir, uint64_t ino) {
    meta_->Invalidate(dir.ino);
    meta_->Invalidate(ino);
  };
  hooks.run = [this](std::function<void()> task) { flushers_->Submit(std::move(task)); };
  LocalCreatesOptions options;
  options.delay = options_.local_create_delay;
  if (!options_.local_creates) options.reserve_batch = 0;
  options.clock = options_.clock;
  local_ = std::make_unique<LocalCreates>(options_.create_log, std::move(hooks), options,
                                          options_.recovered_creates);
}

bool SpokeBackend::HasLocal(LocalScope scope, uint64_t ino) const {
  if (!local_) return false;
  switch (scope) {
    case LocalScope::kFile:
      return local_->Holds(ino);
    case LocalScope::kDir:
      return local_->HasDir(ino);
    case LocalScope::kAll:
      return !local_->empty();
  }
  return false;
}

std::optional<uint64_t> SpokeBackend::LocalInTheWay(const FileKey& dir,
                                                    std::string_view name) const {
  if (!local_) return std::nullopt;
  if (local_->Holds(dir.ino)) return dir.ino;
  if (auto file = local_->FindName(dir.ino, name)) return file->key.ino;
  return std::nullopt;
}

SpokeBackend::CreatedHere SpokeBackend::TryCreateHere(const vfs::Credentials& cred,
                                                      const FileKey& dir, std::string_view name,
                                                      const vfs::CreateRequest& create,
                                                      vfs::Callback<vfs::CreateReply>& cb) {
  using enum CreatedHere;
  if (!local_ || !options_.local_creates) return kNo;
  if (create.mode == vfs::CreateMode::kExclusive) return kNo;
  const vfs::SetAttrs& asked = create.attrs;
  if ((asked.size && *asked.size != 0) || asked.uid || asked.gid) return kNo;
  if (asked.mode && (*asked.mode & ~0777u) != 0) return kNo;
  auto dir_attr = meta_->GetAttr(dir.ino, false);
  if (!dir_attr || dir_attr->type != vfs::FileType::kDirectory) return kNo;
  if (!vfs::ValidateName(name).ok() || !vfs::CheckDirWrite(*dir_attr, cred).ok()) return kNo;
  if (!link_->state().connected) return kNo;

  const vfs::NewOwnership own =
      vfs::NewObjectOwnership(*dir_attr, cred, vfs::FileType::kRegular, asked.mode.value_or(0));
  vfs::SetAttrs rest = asked;
  rest.mode.reset();
  vfs::Attr attr;
  attr.type = vfs::FileType::kRegular;
  attr.mode = own.mode;
  attr.uid = own.uid;
  attr.gid = own.gid;
  if (!vfs::CheckSetAttr(attr, rest, cred).ok()) return kNo;
  if (!meta_->KnownMissing(dir.ino, name, false)) {
    return meta_->Lookup(dir.ino, name, false) ? kNo : kNameUnknown;
  }
  auto number = local_->TakeNumber();
  if (!number) return kNo;
  const WallTime now = options_.clock->WallNow();
  attr.nlink = 1;
  attr.fileid = number->ino;
  attr.ctime = now;
  attr.atime = TimeAfter(rest.atime_how, rest.atime, now, now);
  attr.mtime = TimeAfter(rest.mtime_how, rest.mtime, now, now);

  LocalFile file;
  file.key = *number;
  file.dir = dir;
  file.name = std::string(name);
  file.attr = attr;
  file.request = WithCred<v1::CreateRequest>(cred);
  *file.request.mutable_dir() = ToProto(dir);
  file.request.set_name(file.name);
  file.request.set_type(v1::REGULAR);
  file.request.set_mode(static_cast<v1::CreateMode>(create.mode));
  file.request.set_reserved_ino(number->ino);
  RecordAttrs(attr, &file.request);
  Status added = local_->Add(file, [&] { return meta_->KnownMissing(dir.ino, name, false); });
  if (!added.ok()) return kNo;  // the hub decides (the name is ours: sent first)

  vfs::CreateReply reply{vfs::Entry{MakeHandle(*number), attr}, DirChangedHere(dir, *dir_attr)};
  local_->SyncThen([this, ino = number->ino, reply = std::move(reply), cb](Status s) mutable {
    if (!s.ok()) {
      // Not durable, so not answered: it must not reach the hub either.
      (void)local_->Cancel(ino, [](const LocalFile&) { return Status::Ok(); });
      return cb(s);
    }
    cb(std::move(reply));
  });
  return kAnswered;
}

bool SpokeBackend::LookupHere(const vfs::Credentials& cred, const FileKey& dir,
                              std::string_view name, vfs::Callback<vfs::LookupReply>& cb) {
  if (!local_) return false;
  auto file = local_->FindName(dir.ino, name);
  if (!file || !file->attr_known) return false;
  auto dir_attr = meta_->GetAttr(dir.ino, false);
  if (!dir_attr) return false;
  ++metadata_hits_;
  if (Status s = vfs::CheckSearch(*dir_attr, cred); !s.ok()) {
    cb(s);
    return true;
  }
  cb(vfs::LookupReply{vfs::Entry{MakeHandle(file->key), file->attr}, Patched(dir, *dir_attr)});
  return true;
}

bool SpokeBackend::TrySetAttrHere(const vfs::Credentials& cred, const FileKey& key,
                                  const vfs::SetAttrs& attrs, std::optional<WallTime> guard_ctime,
                                  vfs::Callback<vfs::Wcc>& cb) {
  // A truncation to 0 of the empty file (open with O_TRUNC) changes only
  // its times; other sizes go to the hub.
  if ((attrs.size && *attrs.size != 0) || attrs.uid || attrs.gid) return false;
  if (attrs.mode && (*attrs.mode & ~0777u) != 0) return false;
  // Journalled writes first reach the hub, then the change (SetAttr).
  if (journal_->Pending(key)) return false;
  vfs::Wcc wcc;
  Status answer;  // an error the rules give: the hub would give it too
  const WallTime now = options_.clock->WallNow();
  Status updated = local_->Update(key.ino, [&](LocalFile& file) {
    wcc.before = vfs::ToWcc(file.attr);
    if (guard_ctime && *guard_ctime != file.attr.ctime) {
      answer = Status::NotSync();
      return answer;
    }
    if (Status s = vfs::CheckSetAttr(file.attr, attrs, cred); !s.ok()) {
      answer = s;
      return s;
    }
    vfs::Attr& a = file.attr;
    if (attrs.mode) a.mode = *attrs.mode;
    a.atime = TimeAfter(attrs.atime_how, attrs.atime, now, a.atime);
    a.mtime = TimeAfter(attrs.mtime_how, attrs.mtime, now, attrs.size ? now : a.mtime);
    a.ctime = std::max(now, a.ctime);
    RecordAttrs(a, &file.request);
    wcc.after = a;
    return Status::Ok();
  });
  if (!answer.ok()) {
    cb(answer);
    return true;
  }
  if (!updated.ok()) return false;  // being sent (or I/O): the hub's way
  AnswerOnceDurable(*local_, std::move(wcc), cb);
  return true;
}

bool SpokeBackend::TryRemoveHere(const vfs::Credentials& cred, const FileKey& dir,
                                 std::string_view name, vfs::Callback<vfs::Wcc>& cb) {
  auto file = local_->FindName(dir.ino, name);
  if (!file || file->in_flight) return false;
  // Written to: the hub gets the file and its data, then the REMOVE.
  if (journal_->Pending(file->key)) return false;
  auto dir_attr = meta_->GetAttr(dir.ino, false);
  if (!dir_attr) return false;
  Status answer;
  Status cancelled = local_->Cancel(file->key.ino, [&](const LocalFile& f) {
    answer = vfs::CheckDelete(*dir_attr, f.attr, cred);
    return answer;
  });
  if (!answer.ok()) {
    cb(answer);
    return true;
  }
  if (!cancelled.ok()) return false;
  AnswerOnceDurable(*local_, DirChangedHere(dir, *dir_attr), cb);
  return true;
}

}  // namespace geofs::spoke
