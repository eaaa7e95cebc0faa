// The libnfs-style URL that names an NFSv3 export on explicit ports:
//   nfs://HOST/EXPORT?version=3&nfsport=P&mountport=M[&autoreconnect=0][&uid=U][&gid=G]
#pragma once

#include <string>
#include <string_view>

#include "geofs/status.h"

namespace geofs::bench {

struct NfsUrl {
  std::string host;
  std::string export_path;  // what MNT is asked for, e.g. "/" or "/srv/data"
  int nfs_port = 0;
  int mount_port = 0;
  int uid = -1;  // AUTH_SYS uid; -1 keeps libnfs's default (the caller's)
  int gid = -1;
};

// Parses `url`. Both ports are required: the load generator never asks a
// portmapper, so that a stray rpcbind cannot redirect it to another server.
// `autoreconnect` is accepted and ignored (connections are never re-made).
Result<NfsUrl> ParseNfsUrl(std::string_view url);

}  // namespace geofs::bench
