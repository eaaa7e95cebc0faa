#include "tools/nfs_client.h"

#include <fcntl.h>

#include <cstring>

namespace geofs::testing {

Result<std::unique_ptr<NfsClient>> NfsClient::Mount(const std::string& url) {
  nfs_context* nfs = nfs_init_context();
  if (nfs == nullptr) return Status::Internal("nfs_init_context failed");
  std::unique_ptr<NfsClient> client(new NfsClient(nfs));
  // Every listing must reach the server: these clients test the server.
  nfs_set_dircache(nfs, 0);
  // A server that stops answering fails the test instead of hanging it.
  nfs_set_timeout(nfs, 60000);
  nfs_url* parsed = nfs_parse_url_dir(nfs, url.c_str());
  if (parsed == nullptr) return Status::InvalidArgument(url + ": " + client->Error());
  int rc = nfs_mount(nfs, parsed->server, parsed->path);
  nfs_destroy_url(parsed);
  GEOFS_RETURN_IF_ERROR(client->Check(rc, "mount " + url));
  return client;
}

NfsClient::~NfsClient() { nfs_destroy_context(nfs_); }

std::string NfsClient::Error() const {
  const char* e = nfs_get_error(nfs_);
  return e != nullptr ? e : "";
}

Status NfsClient::Check(int rc, std::string_view what) const {
  if (rc >= 0) return Status::Ok();
  return Status::FromErrno(-rc, std::string(what) + ": " + Error());
}

Status NfsClient::WriteFile(const std::string& path, std::string_view data, int mode,
                            int open_flags) {
  nfsfh* fh = nullptr;
  GEOFS_RETURN_IF_ERROR(
      Check(nfs_open2(nfs_, path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | open_flags, mode, &fh),
            "open " + path));
  Status status;
  uint64_t done = 0;
  while (status.ok() && done < data.size()) {
    int n = nfs_pwrite(nfs_, fh, done, data.size() - done, data.data() + done);
    status = Check(n, "write " + path);
    if (n == 0) status = Status::IoError("write " + path + " made no progress");
    if (n > 0) done += n;
  }
  if (status.ok()) status = Check(nfs_fsync(nfs_, fh), "fsync " + path);
  Status closed = Check(nfs_close(nfs_, fh), "close " + path);
  return status.ok() ? closed : status;
}

Result<std::string> NfsClient::ReadFile(const std::string& path) {
  nfsfh* fh = nullptr;
  GEOFS_RETURN_IF_ERROR(Check(nfs_open(nfs_, path.c_str(), O_RDONLY, &fh), "open " + path));
  std::string out;
  Status status;
  constexpr size_t kChunk = 1 << 20;
  while (status.ok()) {
    size_t at = out.size();
    out.resize(at + kChunk);
    int n = nfs_pread(nfs_, fh, at, kChunk, out.data() + at);
    status = Check(n, "read " + path);
    out.resize(at + (n > 0 ? n : 0));
    if (n <= 0) break;
  }
  nfs_close(nfs_, fh);
  if (!status.ok()) return status;
  return out;
}

Result<std::vector<std::string>> NfsClient::ListNames(const std::string& path) {
  nfsdir* dir = nullptr;
  GEOFS_RETURN_IF_ERROR(Check(nfs_opendir(nfs_, path.c_str(), &dir), "opendir " + path));
  std::vector<std::string> names;
  while (nfsdirent* e = nfs_readdir(nfs_, dir)) names.emplace_back(e->name);
  nfs_closedir(nfs_, dir);
  return names;
}

Result<nfs_stat_64> NfsClient::Stat(const std::string& path) {
  nfs_stat_64 st;
  std::memset(&st, 0, sizeof(st));
  GEOFS_RETURN_IF_ERROR(Check(nfs_lstat64(nfs_, path.c_str(), &st), "lstat " + path));
  return st;
}

}  // namespace geofs::testing
