// A thin owner of a libnfs (sync API) context mounted on one export, plus the
// whole-file helpers tests repeat. Tests call libnfs's nfs_* functions on
// ctx() directly: that is the real client under test.
//
// libnfs 4.0 facts this relies on (see NOTES.md): writes go out UNSTABLE
// unless the file is opened O_SYNC, and close does not COMMIT, so the helpers
// call nfs_fsync.
#pragma once

#include <nfsc/libnfs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "geofs/status.h"

namespace geofs::testing {

// One mounted libnfs context. Not thread-safe (neither is the context): use
// one NfsClient per thread.
class NfsClient {
 public:
  // Mounts the export named by `url` (nfs://host/path?nfsport=..&uid=..).
  static Result<std::unique_ptr<NfsClient>> Mount(const std::string& url);
  ~NfsClient();

  NfsClient(const NfsClient&) = delete;
  NfsClient& operator=(const NfsClient&) = delete;

  nfs_context* ctx() const { return nfs_; }
  // libnfs's description of the last failure.
  std::string Error() const;

  // Creates (or truncates) `path` with `mode`, writes `data`, COMMITs and
  // closes it. `open_flags` adds to O_WRONLY|O_CREAT|O_TRUNC (e.g. O_SYNC).
  Status WriteFile(const std::string& path, std::string_view data, int mode = 0644,
                   int open_flags = 0);
  // The whole content of `path`.
  Result<std::string> ReadFile(const std::string& path);
  // The names a full listing of `path` returns (nfs_opendir: READDIRPLUS),
  // in server order, "." and ".." included if the server sends them.
  Result<std::vector<std::string>> ListNames(const std::string& path);
  // lstat(path).
  Result<nfs_stat_64> Stat(const std::string& path);

 private:
  explicit NfsClient(nfs_context* nfs) : nfs_(nfs) {}
  // OK for rc >= 0; otherwise the errno libnfs returned (-rc) with the
  // context's error text.
  Status Check(int rc, std::string_view what) const;

  nfs_context* nfs_;
};

}  // namespace geofs::testing
