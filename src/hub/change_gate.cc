#include "hub/change_gate.h"

#include <algorithm>

namespace geofs::hub {

namespace {

// Starting over more often than this means the names involved are being
// changed continuously; the caller retries later.
constexpr int kMaxAttempts = 8;

}  // namespace

void AddIno(const vfs::Handle& h, std::vector<uint64_t>* out) {
  auto parts = meta::Namespace::ParseHandle(h);
  if (parts.ok()) out->push_back(parts->ino);
}

std::string EntryKey(const vfs::Handle& dir, std::string_view name) {
  auto parts = meta::Namespace::ParseHandle(dir);
  std::string key =
      parts.ok() ? std::to_string(parts->ino) : std::string(dir.bytes().begin(), dir.bytes().end());
  key += '/';
  key += name;
  return key;
}

void ChangeGate::AddChild(const vfs::Handle& dir, std::string_view name, Inos* out) {
  auto found = ns_->EntryIno(dir, name);
  if (found.ok() && *found) out->push_back(**found);
}

template <typename T>
Result<T> ChangeGate::Gated(uint64_t origin, const std::function<Inos()>& affected,
                            const Names& names, const std::function<Result<T>()>& op,
                            const std::function<Inos(const T&)>& leased, NoWaitChange* no_wait) {
  if (leases_ == nullptr) return op();
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    Inos inos = affected();
    LeaseManager::ChangeGuard guard;
    if (no_wait != nullptr) {
      std::optional<LeaseManager::ChangeGuard> began = leases_->TryBeginChange(inos, origin, names);
      if (!began) {
        no_wait->would_wait = true;
        return Status::Unavailable("the change would wait");
      }
      guard = std::move(*began);
    } else {
      GEOFS_ASSIGN_OR_RETURN(guard, leases_->BeginChange(inos, origin, names));
    }
    std::sort(inos.begin(), inos.end());
    const Inos now = affected();
    const bool covered = std::all_of(now.begin(), now.end(), [&](uint64_t ino) {
      return std::binary_search(inos.begin(), inos.end(), ino);
    });
    if (!covered) continue;
    Result<T> reply = op();
    if (reply.ok() && origin != 0) guard.GrantToOrigin(leased(*reply));
    if (no_wait != nullptr) no_wait->guard = std::move(guard);
    return reply;
  }
  return Status::Unavailable("the names this change involves keep changing; retry");
}

Result<vfs::Wcc> ChangeGate::SetAttr(uint64_t origin, const vfs::Credentials& cred,
                                     const vfs::Handle& h, const vfs::SetAttrs& attrs,
                                     std::optional<WallTime> guard_ctime, NoWaitChange* no_wait) {
  Inos file;
  AddIno(h, &file);
  return Gated<vfs::Wcc>(
      origin, [&] { return file; }, {}, [&] { return ns_->SetAttr(cred, h, attrs, guard_ctime); },
      [&](const vfs::Wcc&) { return file; }, no_wait);
}

Result<meta::CommitReply> ChangeGate::CommitChunkMap(uint64_t origin, const vfs::Credentials& cred,
                                                     const vfs::Handle& h,
                                                     const meta::ChunkMapUpdate& update,
                                                     NoWaitChange* no_wait) {
  Inos file;
  AddIno(h, &file);
  return Gated<meta::CommitReply>(
      origin, [&] { return file; }, {}, [&] { return ns_->CommitChunkMap(cred, h, update); },
      [&](const meta::CommitReply&) { return file; }, no_wait);
}

Result<vfs::CreateReply> ChangeGate::CreateLike(uint64_t origin, const vfs::Handle& dir,
                                                std::string_view name,
                                                const std::function<Inos()>& affected,
                                                const std::function<Result<vfs::CreateReply>()>& op,
                                                NoWaitChange* no_wait) {
  const Names names{EntryKey(dir, name)};
  return Gated<vfs::CreateReply>(
      origin, affected, names, op,
      [&](const vfs::CreateReply& reply) {
        Inos inos;
        AddIno(dir, &inos);
        AddIno(reply.object.handle, &inos);
        return inos;
      },
      no_wait);
}

Result<vfs::CreateReply> ChangeGate::Create(uint64_t origin, const vfs::Credentials& cred,
                                            const vfs::Handle& dir, std::string_view name,
                                            const vfs::CreateRequest& req, NoWaitChange* no_wait,
                                            uint64_t reserved_ino,
                                            std::optional<WallTime> answered_ctime) {
  return CreateLike(
      origin, dir, name,
      [&] {
        Inos inos;
        AddIno(dir, &inos);
        AddChild(dir, name, &inos);
        return inos;
      },
      [&] {
        return reserved_ino != 0
                   ? ns_->CreateReserved(cred, dir, name, req, reserved_ino, answered_ctime)
                   : ns_->Create(cred, dir, name, req);
      },
      no_wait);
}

Result<vfs::CreateReply> ChangeGate::Mkdir(uint64_t origin, const vfs::Credentials& cred,
                                           const vfs::Handle& dir, std::string_view name,
                                           const vfs::SetAttrs& attrs, NoWaitChange* no_wait) {
  Inos inos;
  AddIno(dir, &inos);
  return CreateLike(
      origin, dir, name, [&] { return inos; }, [&] { return ns_->Mkdir(cred, dir, name, attrs); },
      no_wait);
}

Result<vfs::CreateReply> ChangeGate::Symlink(uint64_t origin, const vfs::Credentials& cred,
                                             const vfs::Handle& dir, std::string_view name,
                                             std::string_view target, const vfs::SetAttrs& attrs,
                                             NoWaitChange* no_wait) {
  Inos inos;
  AddIno(dir, &inos);
  return CreateLike(
      origin, dir, name, [&] { return inos; },
      [&] { return ns_->Symlink(cred, dir, name, target, attrs); }, no_wait);
}

Result<vfs::CreateReply> ChangeGate::Mknod(uint64_t origin, const vfs::Credentials& cred,
                                           const vfs::Handle& dir, std::string_view name,
                                           const vfs::MknodRequest& req, NoWaitChange* no_wait) {
  Inos inos;
  AddIno(dir, &inos);
  return CreateLike(
      origin, dir, name, [&] { return inos; }, [&] { return ns_->Mknod(cred, dir, name, req); },
      no_wait);
}

Result<vfs::Wcc> ChangeGate::Remove(uint64_t origin, const vfs::Credentials& cred,
                                    const vfs::Handle& dir, std::string_view name,
                                    NoWaitChange* no_wait) {
  return RemoveLike(
      origin, cred, dir, name, [&] { return ns_->Remove(cred, dir, name); }, no_wait);
}

Result<vfs::Wcc> ChangeGate::Rmdir(uint64_t origin, const vfs::Credentials& cred,
                                   const vfs::Handle& dir, std::string_view name,
                                   NoWaitChange* no_wait) {
  return RemoveLike(
      origin, cred, dir, name, [&] { return ns_->Rmdir(cred, dir, name); }, no_wait);
}

Result<vfs::Wcc> ChangeGate::RemoveLike(uint64_t origin, const vfs::Credentials& cred,
                                        const vfs::Handle& dir, std::string_view name,
                                        const std::function<Result<vfs::Wcc>()>& op,
                                        NoWaitChange* no_wait) {
  Inos dir_ino;
  AddIno(dir, &dir_ino);
  return Gated<vfs::Wcc>(
      origin,
      [&] {
        Inos inos = dir_ino;
        AddChild(dir, name, &inos);
        return inos;
      },
      {EntryKey(dir, name)}, op, [&](const vfs::Wcc&) { return dir_ino; }, no_wait);
}

Result<vfs::RenameReply> ChangeGate::Rename(uint64_t origin, const vfs::Credentials& cred,
                                            const vfs::Handle& from_dir, std::string_view from_name,
                                            const vfs::Handle& to_dir, std::string_view to_name,
                                            NoWaitChange* no_wait) {
  Inos dirs;
  AddIno(from_dir, &dirs);
  AddIno(to_dir, &dirs);
  return Gated<vfs::RenameReply>(
      origin,
      [&] {
        Inos inos = dirs;
        AddChild(from_dir, from_name, &inos);
        AddChild(to_dir, to_name, &inos);
        return inos;
      },
      {EntryKey(from_dir, from_name), EntryKey(to_dir, to_name)},
      [&] { return ns_->Rename(cred, from_dir, from_name, to_dir, to_name); },
      [&](const vfs::RenameReply&) { return dirs; }, no_wait);
}

Result<vfs::LinkReply> ChangeGate::Link(uint64_t origin, const vfs::Credentials& cred,
                                        const vfs::Handle& file, const vfs::Handle& dir,
                                        std::string_view name, NoWaitChange* no_wait) {
  Inos inos;
  AddIno(file, &inos);
  AddIno(dir, &inos);
  return Gated<vfs::LinkReply>(
      origin, [&] { return inos; }, {EntryKey(dir, name)},
      [&] { return ns_->Link(cred, file, dir, name); }, [&](const vfs::LinkReply&) { return inos; },
      no_wait);
}

}  // namespace geofs::hub
