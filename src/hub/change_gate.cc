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

void ChangeGate::AddChild(const vfs::Credentials& cred, const vfs::Handle& dir,
                          std::string_view name, Inos* out) {
  auto found = ns_->Lookup(cred, dir, name);
  if (found.ok()) AddIno(found->object.handle, out);
}

template <typename T>
Result<T> ChangeGate::Gated(uint64_t origin, const std::function<Inos()>& affected,
                            const Names& names, const std::function<Result<T>()>& op,
                            const std::function<Inos(const T&)>& leased) {
  if (leases_ == nullptr) return op();
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    Inos inos = affected();
    GEOFS_ASSIGN_OR_RETURN(LeaseManager::ChangeGuard guard,
                           leases_->BeginChange(inos, origin, names));
    std::sort(inos.begin(), inos.end());
    const Inos now = affected();
    const bool covered = std::all_of(now.begin(), now.end(), [&](uint64_t ino) {
      return std::binary_search(inos.begin(), inos.end(), ino);
    });
    if (!covered) continue;
    Result<T> reply = op();
    if (reply.ok() && origin != 0) guard.GrantToOrigin(leased(*reply));
    return reply;
  }
  return Status::Unavailable("the names this change involves keep changing; retry");
}

Result<vfs::Wcc> ChangeGate::SetAttr(uint64_t origin, const vfs::Credentials& cred,
                                     const vfs::Handle& h, const vfs::SetAttrs& attrs,
                                     std::optional<WallTime> guard_ctime) {
  Inos file;
  AddIno(h, &file);
  return Gated<vfs::Wcc>(
      origin, [&] { return file; }, {}, [&] { return ns_->SetAttr(cred, h, attrs, guard_ctime); },
      [&](const vfs::Wcc&) { return file; });
}

Result<meta::CommitReply> ChangeGate::CommitChunkMap(uint64_t origin, const vfs::Credentials& cred,
                                                     const vfs::Handle& h,
                                                     const meta::ChunkMapUpdate& update) {
  Inos file;
  AddIno(h, &file);
  return Gated<meta::CommitReply>(
      origin, [&] { return file; }, {}, [&] { return ns_->CommitChunkMap(cred, h, update); },
      [&](const meta::CommitReply&) { return file; });
}

Result<vfs::CreateReply> ChangeGate::CreateLike(
    uint64_t origin, const vfs::Handle& dir, std::string_view name,
    const std::function<Inos()>& affected, const std::function<Result<vfs::CreateReply>()>& op) {
  const Names names{EntryKey(dir, name)};
  return Gated<vfs::CreateReply>(origin, affected, names, op, [&](const vfs::CreateReply& reply) {
    Inos inos;
    AddIno(dir, &inos);
    AddIno(reply.object.handle, &inos);
    return inos;
  });
}

Result<vfs::CreateReply> ChangeGate::Create(uint64_t origin, const vfs::Credentials& cred,
                                            const vfs::Handle& dir, std::string_view name,
                                            const vfs::CreateRequest& req) {
  return CreateLike(
      origin, dir, name,
      [&] {
        Inos inos;
        AddIno(dir, &inos);
        AddChild(cred, dir, name, &inos);
        return inos;
      },
      [&] { return ns_->Create(cred, dir, name, req); });
}

Result<vfs::CreateReply> ChangeGate::Mkdir(uint64_t origin, const vfs::Credentials& cred,
                                           const vfs::Handle& dir, std::string_view name,
                                           const vfs::SetAttrs& attrs) {
  Inos inos;
  AddIno(dir, &inos);
  return CreateLike(
      origin, dir, name, [&] { return inos; }, [&] { return ns_->Mkdir(cred, dir, name, attrs); });
}

Result<vfs::CreateReply> ChangeGate::Symlink(uint64_t origin, const vfs::Credentials& cred,
                                             const vfs::Handle& dir, std::string_view name,
                                             std::string_view target, const vfs::SetAttrs& attrs) {
  Inos inos;
  AddIno(dir, &inos);
  return CreateLike(
      origin, dir, name, [&] { return inos; },
      [&] { return ns_->Symlink(cred, dir, name, target, attrs); });
}

Result<vfs::CreateReply> ChangeGate::Mknod(uint64_t origin, const vfs::Credentials& cred,
                                           const vfs::Handle& dir, std::string_view name,
                                           const vfs::MknodRequest& req) {
  Inos inos;
  AddIno(dir, &inos);
  return CreateLike(
      origin, dir, name, [&] { return inos; }, [&] { return ns_->Mknod(cred, dir, name, req); });
}

Result<vfs::Wcc> ChangeGate::Remove(uint64_t origin, const vfs::Credentials& cred,
                                    const vfs::Handle& dir, std::string_view name) {
  return RemoveLike(origin, cred, dir, name, [&] { return ns_->Remove(cred, dir, name); });
}

Result<vfs::Wcc> ChangeGate::Rmdir(uint64_t origin, const vfs::Credentials& cred,
                                   const vfs::Handle& dir, std::string_view name) {
  return RemoveLike(origin, cred, dir, name, [&] { return ns_->Rmdir(cred, dir, name); });
}

Result<vfs::Wcc> ChangeGate::RemoveLike(uint64_t origin, const vfs::Credentials& cred,
                                        const vfs::Handle& dir, std::string_view name,
                                        const std::function<Result<vfs::Wcc>()>& op) {
  Inos dir_ino;
  AddIno(dir, &dir_ino);
  return Gated<vfs::Wcc>(
      origin,
      [&] {
        Inos inos = dir_ino;
        AddChild(cred, dir, name, &inos);
        return inos;
      },
      {EntryKey(dir, name)}, op, [&](const vfs::Wcc&) { return dir_ino; });
}

Result<vfs::RenameReply> ChangeGate::Rename(uint64_t origin, const vfs::Credentials& cred,
                                            const vfs::Handle& from_dir, std::string_view from_name,
                                            const vfs::Handle& to_dir, std::string_view to_name) {
  Inos dirs;
  AddIno(from_dir, &dirs);
  AddIno(to_dir, &dirs);
  return Gated<vfs::RenameReply>(
      origin,
      [&] {
        Inos inos = dirs;
        AddChild(cred, from_dir, from_name, &inos);
        AddChild(cred, to_dir, to_name, &inos);
        return inos;
      },
      {EntryKey(from_dir, from_name), EntryKey(to_dir, to_name)},
      [&] { return ns_->Rename(cred, from_dir, from_name, to_dir, to_name); },
      [&](const vfs::RenameReply&) { return dirs; });
}

Result<vfs::LinkReply> ChangeGate::Link(uint64_t origin, const vfs::Credentials& cred,
                                        const vfs::Handle& file, const vfs::Handle& dir,
                                        std::string_view name) {
  Inos inos;
  AddIno(file, &inos);
  AddIno(dir, &inos);
  return Gated<vfs::LinkReply>(
      origin, [&] { return inos; }, {EntryKey(dir, name)},
      [&] { return ns_->Link(cred, file, dir, name); },
      [&](const vfs::LinkReply&) { return inos; });
}

}  // namespace geofs::hub
