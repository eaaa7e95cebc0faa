// libnfs's raw (wire-level) API, included in the order its headers require,
// and the conversion of our handle type to its argument type.
#pragma once

// clang-format off
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
// clang-format on

#include "rpc_connection.h"

namespace geofs::bench {

// A view of `fh` as a call argument. libnfs only reads argument handles while
// it encodes the call, so the view must not outlive that call; the const_cast
// only satisfies its C signature.
inline nfs_fh3 ToNfsFh3(const FileHandle& fh) {
  nfs_fh3 arg{};
  arg.data.data_len = fh.size;
  arg.data.data_val = const_cast<char*>(fh.bytes.data());
  return arg;
}

}  // namespace geofs::bench
