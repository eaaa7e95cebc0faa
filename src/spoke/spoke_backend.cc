// SpokeBackend: construction, stats, and the metadata operations.
#include "spoke/spoke_backend.h"

#include <grpcpp/channel.h>

#include "common/logging.h"
#include "common/worker_pool.h"
#include "spoke/change_batcher.h"
#include "spoke/chunk_fetcher.h"
#include "spoke/journal_uploader.h"
#include "spoke/local_creates.h"
#include "spoke/metadata_cache.h"
#include "spoke/spoke_backend_internal.h"
#include "vfs/access.h"

namespace geofs::spoke {

using v1::Hub;

namespace {
// Changes waiting at once for files' journalled writes to reach the hub.
constexpr size_t kFlusherThreads = 4;
// How long an invalidation of a directory waits for the creates answered
// here in it to reach the hub before it is acknowledged anyway (the hub
// waits for the acknowledgement; a create of the same name elsewhere holds
// that name until then, so ours would wait for it: after this it is kept
// under another name instead, local_creates.h).
constexpr std::chrono::seconds kInvalidationFlushWait{2};
// How long the uploader waits for a file created here to reach the hub
// before its data may follow (then it tries again later).
constexpr std::chrono::seconds kLocalFlushWait{10};
}  // namespace

SpokeBackend::SpokeBackend(HubLink* link, cache::ChunkCache* cache, WriteJournal* journal,
                           SpokeBackendOptions options)
    : link_(link),
      cache_(cache),
      journal_(journal),
      options_(std::move(options)),
      meta_(std::make_unique<MetadataCache>(options_.clock, options_.max_cached_inodes)),
      fetcher_(std::make_unique<ChunkFetcher>(link, cache)),
      changes_(std::make_unique<ChangeBatcher>(link)) {}

SpokeBackend::~SpokeBackend() {
  // It fetches through everything else: stop it first.
  prefetcher_.reset();
  // Its sends call back into the flushers and the caches: stop it next.
  local_.reset();
}

Result<std::unique_ptr<SpokeBackend>> SpokeBackend::Open(HubLink* link, cache::ChunkCache* cache,
                                                         WriteJournal* journal,
                                                         SpokeBackendOptions options) {
  std::unique_ptr<SpokeBackend> backend(new SpokeBackend(link, cache, journal, std::move(options)));
  auto req = WithCred<v1::ResolvePathRequest>(vfs::Credentials{});
  req.set_path(backend->options_.portal);
  GEOFS_ASSIGN_OR_RETURN(v1::ResolvePathResponse resp,
                         link->CallSync(&Hub::Stub::async::ResolvePath, std::move(req)));
  if (resp.object().attr().type() != v1::DIRECTORY) {
    return Status::NotDirectory("portal " + backend->options_.portal);
  }
  backend->root_ = FromProto(resp.object().ref());
  if (backend->options_.prefetch) backend->StartPrefetch();
  if (journal) {
    backend->flushers_ = std::make_unique<WorkerPool>(kFlusherThreads);
    // Before the uploader: it sends recovered creates ahead of their data.
    if (backend->options_.create_log) backend->StartLocalCreates();
    backend->StartUploader();
  }
  return backend;
}

void SpokeBackend::StartUploader() {
  UploaderHooks hooks;
  hooks.acquire_write = [this](const FileKey& key) {
    // Data written to a file created here goes once the hub has the file.
    if (HasLocal(LocalScope::kFile, key.ino)) {
      GEOFS_RETURN_IF_ERROR(local_->FlushAndWait(LocalScope::kFile, key.ino, kLocalFlushWait));
    }
    return link_->AcquireWrite(ToProto(key)).status();
  };
  hooks.release_write = [this](const FileKey& key) { link_->ReleaseWrite(ToProto(key)); };
  // Our own commits do not invalidate us: drop what we cached of the file.
  hooks.committed = [this](const FileKey& key, uint64_t, const v1::Attr&) {
    meta_->Invalidate(key.ino);
  };
  hooks.decorate = [this](grpc::ClientContext* ctx) { link_->Decorate(ctx); };
  uploader_ = std::make_unique<JournalUploader>(journal_, link_->channel(), std::move(hooks));
}

void SpokeBackend::AttachSessionHandlers() {
  SessionHandlers handlers;
  handlers.invalidate = [this](const std::vector<uint64_t>& inos) {
    for (uint64_t ino : inos) {
      meta_->Invalidate(ino);
      // Another party changes the directory: what we created in it goes
      // first, before the acknowledgement lets that change through.
      if (HasLocal(LocalScope::kDir, ino)) {
        (void)local_->FlushAndWait(LocalScope::kDir, ino, kInvalidationFlushWait);
      }
    }
  };
  handlers.held = [this] { return meta_->Held(); };
  handlers.renewed = [this](const std::vector<uint64_t>& renewed, SteadyTime expiry,
                            const std::vector<uint64_t>& lost) {
    meta_->Renew(renewed, expiry);
    for (uint64_t ino : lost) {
      meta_->Invalidate(ino);
      if (HasLocal(LocalScope::kDir, ino)) local_->Flush(LocalScope::kDir, ino, [](Status) {});
    }
  };
  handlers.session_changed = [this] {
    meta_->Clear();
    // The old session's leases are gone: send what was created under them.
    if (HasLocal(LocalScope::kAll, 0)) local_->Flush(LocalScope::kAll, 0, [](Status) {});
  };
  link_->Start(std::move(handlers));
}

SpokeStats SpokeBackend::Stats() const {
  SpokeStats s;
  s.metadata_hits = metadata_hits_.load();
  s.metadata_misses = metadata_misses_.load();
  FetchStats f = fetcher_->Stats();
  s.chunk_hits = f.hits;
  s.chunk_misses = f.misses;
  s.bytes_from_hub = f.bytes_from_hub;
  s.bytes_from_cache = f.bytes_from_cache;
  s.leases_held = meta_->Held().size();
  LinkState link = link_->state();
  s.invalidations = link.invalidations;
  const ChangeBatcherStats changes = changes_->stats();
  s.hub_changes = changes.changes;
  s.hub_change_calls = changes.batches + changes.alone;
  s.changes_deferred = changes.deferred;
  s.hub_connected = link.connected;
  s.hub_state_seconds = std::chrono::duration<double>(options_.clock->Now() - link.since).count();
  s.session = link.session;
  s.immutable = options_.immutable;
  if (prefetcher_) {
    prefetcher_->Sync();  // every READ answered so far is counted
    s.prefetch = prefetcher_->Stats();
  }
  if (journal_) s.journal_bytes = journal_->Stats().pending_bytes;
  if (local_) {
    const LocalCreatesStats l = local_->Stats();
    s.local_creates = l.created;
    s.local_creates_pending = l.pending;
    s.local_creates_cancelled = l.cancelled;
    s.local_create_conflicts = l.conflicts;
    s.local_creates_lost = l.lost;
  }
  return s;
}

bool SpokeBackend::AllowExpired() const { return options_.immutable && !link_->state().connected; }

Status SpokeBackend::CheckWritable() const {
  if (options_.immutable) return Status::ReadOnly("portal " + options_.portal + " is immutable");
  return Status::Ok();
}

vfs::Attr SpokeBackend::Patched(const FileKey& key, vfs::Attr attr) const {
  if (local_ && attr.type == vfs::FileType::kDirectory) {
    // Creates and removes answered here changed it (not yet at the hub).
    if (auto t = local_->DirTime(key.ino, attr.ctime)) attr.mtime = attr.ctime = *t;
    return attr;
  }
  if (!journal_ || attr.type != vfs::FileType::kRegular) return attr;
  if (auto pending = journal_->Pending(key)) {
    attr.size = std::max(attr.size, pending->end);
    // mtime is what the writes' replies said and what the hub will record;
    // ctime stays the hub's, which SETATTR guards are checked against.
    attr.mtime = std::max(attr.mtime, pending->mtime);
  }
  return attr;
}

vfs::Capabilities SpokeBackend::GetCapabilities() const { return vfs::Capabilities{}; }

Result<vfs::Handle> SpokeBackend::Root() { return MakeHandle(root_); }

void SpokeBackend::FetchAttr(const vfs::Credentials& cred, const FileKey& key,
                             vfs::Callback<vfs::Attr> cb) {
  if (local_) {
    if (auto file = local_->Find(key.ino)) {
      if (file->attr_known) {
        ++metadata_hits_;
        return cb(Patched(key, file->attr));
      }
      return local_->Flush(LocalScope::kFile, key.ino,
                           [this, cred, key, cb = std::move(cb)](Status s) mutable {
                             if (!s.ok()) return cb(s);
                             FetchAttr(cred, key, std::move(cb));
                           });
    }
  }
  if (auto cached = meta_->GetAttr(key.ino, AllowExpired())) {
    ++metadata_hits_;
    return cb(Patched(key, *cached));
  }
  ++metadata_misses_;
  uint64_t epoch = meta_->Epoch();
  auto req = WithCred<v1::GetAttrRequest>(cred);
  *req.mutable_ref() = ToProto(key);
  link_->Call(&Hub::Stub::async::GetAttr, std::move(req),
              [this, key, epoch, cb = std::move(cb)](Result<v1::GetAttrResponse> r, Grant g) {
                if (!r.ok()) {
                  auto stale = AllowExpired() ? meta_->GetAttr(key.ino, true) : std::nullopt;
                  if (stale) return cb(Patched(key, *stale));
                  return cb(r.status());
                }
                auto attr = FromProto(r->attr());
                if (!attr.ok()) return cb(attr.status());
                meta_->PutAttr(key, *attr, ExpiryOf(g), epoch);
                cb(Patched(key, *attr));
              });
}

void SpokeBackend::GetAttr(const vfs::Credentials& cred, const vfs::Handle& h,
                           vfs::Callback<vfs::Attr> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  RecordOp(cred, prefetch::AccessOp::kGetAttr, *key);
  FetchAttr(cred, *key, std::move(cb));
}

void SpokeBackend::Lookup(const vfs::Credentials& cred, const vfs::Handle& dir,
                          std::string_view name, vfs::Callback<vfs::LookupReply> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (LookupHere(cred, *dkey, name, cb)) return;
  if (auto ino = LocalInTheWay(*dkey, name)) {
    // Not answerable here (recovered, or the directory is such a file):
    // the hub answers once it has it.
    return local_->Flush(LocalScope::kFile, *ino,
                         [this, cred, dir, name = std::string(name), cb](Status s) {
                           if (!s.ok()) return cb(s);
                           Lookup(cred, dir, name, cb);
                         });
  }
  const bool allow = AllowExpired();
  auto child = meta_->Lookup(dkey->ino, name, allow);
  auto dir_attr = meta_->GetAttr(dkey->ino, allow);
  if (child && dir_attr) {
    if (auto child_attr = meta_->GetAttr(child->ino, allow)) {
      ++metadata_hits_;
      if (Status s = vfs::CheckSearch(*dir_attr, cred); !s.ok()) return cb(s);
      RecordLookup(cred.uid, *dkey, *child, child_attr->type);
      return cb(
          vfs::LookupReply{vfs::Entry{MakeHandle(*child), Patched(*child, *child_attr)}, dir_attr});
    }
  }
  if (!child && dir_attr && meta_->KnownMissing(dkey->ino, name, allow)) {
    ++metadata_hits_;
    if (Status s = vfs::CheckSearch(*dir_attr, cred); !s.ok()) return cb(s);
    return cb(Status::NotFound());
  }
  ++metadata_misses_;
  uint64_t epoch = meta_->Epoch();
  auto req = WithCred<v1::LookupRequest>(cred);
  *req.mutable_dir() = ToProto(*dkey);
  req.set_name(std::string(name));
  link_->Call(&Hub::Stub::async::Lookup, std::move(req),
              [this, uid = cred.uid, dkey = *dkey, name = std::string(name), epoch,
               cb = std::move(cb)](
                  Result<v1::LookupResponse> r, Grant g) {
                if (!r.ok()) {
                  // The hub leased the directory before it found no such
                  // name (a create there will invalidate it).
                  if (r.status().code() == StatusCode::kNotFound && g.leased()) {
                    meta_->PutMissing(dkey, name, ExpiryOf(g), epoch);
                  }
                  return cb(r.status());
                }
                auto entry = FromProto(r->object());
                auto dir_attr = OptionalAttr(r->has_dir_attr(), r->dir_attr());
                if (!entry.ok()) return cb(entry.status());
                if (!dir_attr.ok()) return cb(dir_attr.status());
                FileKey child = FromProto(r->object().ref());
                SteadyTime expiry = ExpiryOf(g);
                meta_->PutAttr(child, entry->attr, expiry, epoch);
                if (*dir_attr) {
                  meta_->PutAttr(dkey, **dir_attr, expiry, epoch);
                  meta_->PutLookup(dkey, name, child, expiry, epoch);
                }
                entry->attr = Patched(child, entry->attr);
                RecordLookup(uid, dkey, child, entry->attr.type);
                cb(vfs::LookupReply{std::move(*entry), *dir_attr});
              });
}

prefetch::AccessEvent SpokeBackend::EventOf(uint32_t uid, prefetch::AccessOp op,
                                            const FileKey& key) const {
  prefetch::AccessEvent e;
  e.time_ns = NowNsOf(options_.clock);
  e.uid = uid;
  e.op = op;
  e.file = {key.ino, key.gen};
  return e;
}

void SpokeBackend::RecordOp(const vfs::Credentials& cred, prefetch::AccessOp op,
                            const FileKey& key) {
  if (ring_) Record(EventOf(cred.uid, op, key));
}

void SpokeBackend::RecordLookup(uint32_t uid, const FileKey& dir, const FileKey& child,
                                vfs::FileType type) {
  if (!ring_) return;
  prefetch::AccessEvent e = EventOf(uid, prefetch::AccessOp::kLookup, child);
  e.parent = {dir.ino, dir.gen};
  e.is_dir = type == vfs::FileType::kDirectory;
  Record(e);
}

void SpokeBackend::LookupParent(const vfs::Credentials& cred, const vfs::Handle& dir,
                                vfs::Callback<vfs::LookupReply> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (HasLocal(LocalScope::kFile, dkey->ino)) {
    return local_->Flush(LocalScope::kFile, dkey->ino, [this, cred, dir, cb](Status s) {
      if (!s.ok()) return cb(s);
      LookupParent(cred, dir, cb);
    });
  }
  if (*dkey == root_) {
    // The portal is the export's root: its parent is itself.
    return FetchAttr(cred, root_, [this, cb = std::move(cb)](Result<vfs::Attr> a) {
      if (!a.ok()) return cb(a.status());
      cb(vfs::LookupReply{vfs::Entry{MakeHandle(root_), *a}, *a});
    });
  }
  auto req = WithCred<v1::LookupRequest>(cred);
  *req.mutable_dir() = ToProto(*dkey);
  req.set_name("..");
  link_->Call(&Hub::Stub::async::Lookup, std::move(req),
              [cb = std::move(cb)](Result<v1::LookupResponse> r, Grant) {
                if (!r.ok()) return cb(r.status());
                auto entry = FromProto(r->object());
                auto dir_attr = OptionalAttr(r->has_dir_attr(), r->dir_attr());
                if (!entry.ok()) return cb(entry.status());
                if (!dir_attr.ok()) return cb(dir_attr.status());
                cb(vfs::LookupReply{std::move(*entry), *dir_attr});
              });
}

void SpokeBackend::Access(const vfs::Credentials& cred, const vfs::Handle& h, uint32_t requested,
                          vfs::Callback<vfs::AccessReply> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  // The permission rules are the hub's too (vfs/access.h), so cached
  // attributes answer ACCESS exactly as the hub would.
  FetchAttr(cred, *key, [cred, requested, cb = std::move(cb)](Result<vfs::Attr> a) {
    if (!a.ok()) return cb(a.status());
    cb(vfs::AccessReply{vfs::GrantedAccess(*a, cred, requested), *a});
  });
}

void SpokeBackend::ReadLink(const vfs::Credentials& cred, const vfs::Handle& h,
                            vfs::Callback<vfs::ReadLinkReply> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  if (HasLocal(LocalScope::kFile, key->ino)) {
    return local_->Flush(LocalScope::kFile, key->ino, [this, cred, h, cb](Status s) {
      if (!s.ok()) return cb(s);
      ReadLink(cred, h, cb);
    });
  }
  const bool allow = AllowExpired();
  auto target = meta_->ReadLink(key->ino, allow);
  auto attr = meta_->GetAttr(key->ino, allow);
  if (target && attr) {
    ++metadata_hits_;
    return cb(vfs::ReadLinkReply{*target, attr});
  }
  ++metadata_misses_;
  uint64_t epoch = meta_->Epoch();
  auto req = WithCred<v1::ReadLinkRequest>(cred);
  *req.mutable_ref() = ToProto(*key);
  link_->Call(
      &Hub::Stub::async::ReadLink, std::move(req),
      [this, key = *key, epoch, cb = std::move(cb)](Result<v1::ReadLinkResponse> r, Grant g) {
        if (!r.ok()) return cb(r.status());
        auto attr = OptionalAttr(r->has_attr(), r->attr());
        if (!attr.ok()) return cb(attr.status());
        SteadyTime expiry = ExpiryOf(g);
        if (*attr) {
          meta_->PutAttr(key, **attr, expiry, epoch);
          meta_->PutLink(key, r->target(), expiry, epoch);
        }
        cb(vfs::ReadLinkReply{r->target(), *attr});
      });
}

void SpokeBackend::ReadDir(const vfs::Credentials& cred, const vfs::Handle& dir,
                           const vfs::ReadDirRequest& rd, vfs::Callback<vfs::DirPage> cb) {
  auto dkey = KeyOr(dir, cb);
  if (!dkey) return;
  if (rd.cookie == 0) RecordOp(cred, prefetch::AccessOp::kReadDir, *dkey);
  const bool local_file = HasLocal(LocalScope::kFile, dkey->ino);
  if (local_file || HasLocal(LocalScope::kDir, dkey->ino)) {
    // A listing from the hub must hold what was created here (and a file
    // created here is not a directory: the hub says so once it has it).
    return local_->Flush(local_file ? LocalScope::kFile : LocalScope::kDir, dkey->ino,
                         [this, cred, dir, rd, cb](Status s) {
                           if (!s.ok()) return cb(s);
                           ReadDir(cred, dir, rd, cb);
                         });
  }
  const bool allow = AllowExpired();
  auto page = meta_->ReadDir(dkey->ino, rd.cookie, rd.max_entries, allow);
  auto dir_attr = meta_->GetAttr(dkey->ino, allow);
  if (page && dir_attr && (rd.cookie == 0 || rd.verifier == page->verifier)) {
    vfs::DirPage out{{}, page->eof, page->verifier, dir_attr};
    bool complete = true;
    for (const CachedDirEntry& e : page->entries) {
      vfs::DirEntry de{e.fileid, e.name, e.cookie, std::nullopt};
      if (rd.with_attrs) {
        auto attr = meta_->GetAttr(e.child.ino, allow);
        if (!attr) {
          complete = false;
          break;
        }
        de.entry = vfs::Entry{MakeHandle(e.child), Patched(e.child, *attr)};
      }
      out.entries.push_back(std::move(de));
    }
    if (complete) {
      ++metadata_hits_;
      if (Status s = vfs::CheckList(*dir_attr, cred); !s.ok()) return cb(s);
      return cb(std::move(out));
    }
  }
  ++metadata_misses_;
  uint64_t epoch = meta_->Epoch();
  auto req = WithCred<v1::ReadDirRequest>(cred);
  *req.mutable_dir() = ToProto(*dkey);
  req.set_cookie(rd.cookie);
  req.set_verifier(rd.verifier);
  req.set_max_entries(rd.max_entries);
  req.set_with_attrs(rd.with_attrs);
  link_->Call(
      &Hub::Stub::async::ReadDir, std::move(req),
      [this, dkey = *dkey, rd, epoch, cb = std::move(cb)](Result<v1::ReadDirResponse> r, Grant g) {
        if (!r.ok()) return cb(r.status());
        auto dir_attr = OptionalAttr(r->has_dir_attr(), r->dir_attr());
        if (!dir_attr.ok()) return cb(dir_attr.status());
        SteadyTime expiry = ExpiryOf(g);
        vfs::DirPage out{{}, r->eof(), r->verifier(), *dir_attr};
        CachedDirPage cached{{}, r->eof(), r->verifier()};
        bool cacheable = rd.with_attrs;  // entries without handles cannot be looked up again
        for (const v1::DirEntry& e : r->entries()) {
          vfs::DirEntry de{e.fileid(), e.name(), e.cookie(), std::nullopt};
          if (e.has_entry()) {
            auto entry = FromProto(e.entry());
            if (!entry.ok()) return cb(entry.status());
            FileKey child = FromProto(e.entry().ref());
            meta_->PutAttr(child, entry->attr, expiry, epoch);
            cached.entries.push_back(CachedDirEntry{e.name(), e.fileid(), e.cookie(), child});
            entry->attr = Patched(child, entry->attr);
            de.entry = std::move(*entry);
          } else {
            cacheable = false;
          }
          out.entries.push_back(std::move(de));
        }
        if (*dir_attr) meta_->PutAttr(dkey, **dir_attr, expiry, epoch);
        if (cacheable && *dir_attr) {
          meta_->PutDirPage(dkey, rd.cookie, rd.max_entries, std::move(cached), expiry, epoch);
        }
        cb(std::move(out));
      });
}

void SpokeBackend::FsStat(const vfs::Credentials& cred, const vfs::Handle& h,
                          vfs::Callback<vfs::FsStats> cb) {
  auto key = KeyOr(h, cb);
  if (!key) return;
  if (HasLocal(LocalScope::kFile, key->ino)) {
    return local_->Flush(LocalScope::kFile, key->ino, [this, cred, h, cb](Status s) {
      if (!s.ok()) return cb(s);
      FsStat(cred, h, cb);
    });
  }
  auto req = WithCred<v1::FsStatRequest>(cred);
  *req.mutable_ref() = ToProto(*key);
  link_->Call(&Hub::Stub::async::FsStat, std::move(req),
              [this, key = *key, cred, cb = std::move(cb)](Result<v1::FsStatResponse> r, Grant) {
                if (!r.ok()) return cb(r.status());
                vfs::FsStats out{r->total_bytes(),
                                 r->free_bytes(),
                                 r->avail_bytes(),
                                 r->total_files(),
                                 r->free_files(),
                                 r->avail_files(),
                                 meta_->GetAttr(key.ino, false)};
                cb(std::move(out));
              });
}

}  // namespace geofs::spoke
