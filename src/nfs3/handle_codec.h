// NFS file handles: authenticated wrappers around backend handles.
//
// Layout (at most 61 bytes, within NFSv3's 64):
//   version (1) | export id (4, big-endian) | backend handle (0..40) | MAC (16)
// MAC = HMAC-SHA256 under a 32-byte server key over everything before it,
// truncated to 16 bytes. A handle that was not made with the key (forged,
// altered, truncated) fails the MAC check and is NFS3ERR_BADHANDLE; it can
// never name another object. Handles stay valid across restarts as long as
// the key does (see LoadOrCreateKey).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "geofs/status.h"
#include "geofs/vfs.h"

namespace geofs::nfs3 {

inline constexpr size_t kMaxFhBytes = 64;  // NFS3_FHSIZE

// An encoded NFS file handle.
class FileHandle {
 public:
  FileHandle() = default;
  std::span<const uint8_t> bytes() const { return {bytes_.data(), size_}; }
  size_t size() const { return size_; }

 private:
  friend class HandleCodec;
  std::array<uint8_t, kMaxFhBytes> bytes_{};
  uint8_t size_ = 0;
};

struct DecodedHandle {
  uint32_t export_id = 0;
  vfs::Handle handle;
};

// Thread-safe: Encode and Decode may be called from any thread at once.
//
// Both remember recently computed MACs (a fixed-size, lock-free table of
// about 1.3 MB), so encoding the same objects again (every READDIRPLUS page
// of a directory listed before, LOOKUP replies) and authenticating the
// handles clients send back cost a table probe instead of an HMAC. Only
// MACs computed here with the key enter the table, and a presented MAC is
// compared with a remembered one in constant time.
class HandleCodec {
 public:
  using Key = std::array<uint8_t, 32>;

  static constexpr uint8_t kVersion = 1;
  static constexpr size_t kMacBytes = 16;
  static constexpr size_t kHeaderBytes = 5;  // version + export id

  // Reads the key stored at `path`, or creates a random one there (mode
  // 0600, written to a temporary file, synced and renamed into place, so a
  // crash never leaves a partial key). A file of the wrong size is
  // kCorruption: silently replacing it would invalidate every handle.
  static Result<Key> LoadOrCreateKey(const std::string& path);
  // A fresh random key (tests, or servers whose handles need not survive).
  static Key RandomKey();

  explicit HandleCodec(const Key& key);
  ~HandleCodec();
  HandleCodec(const HandleCodec&) = delete;
  HandleCodec& operator=(const HandleCodec&) = delete;

  FileHandle Encode(uint32_t export_id, const vfs::Handle& handle) const;
  // kBadHandle unless `fh` is a well-formed handle made under this key.
  Result<DecodedHandle> Decode(std::span<const uint8_t> fh) const;

 private:
  // HMAC-SHA256(key, data) truncated to kMacBytes.
  void Mac(std::span<const uint8_t> data, uint8_t* out) const;

  class MacMemo;

  // The MAC of `body` (version, export id, backend handle) into `out`,
  // from the memo or computed (and remembered).
  void MacOf(std::span<const uint8_t> body, uint8_t* out) const;

  const std::unique_ptr<MacMemo> memo_;
  // Keyed HMAC state that threads clone their per-thread context from
  // (an EVP_MAC_CTX; kept opaque so that OpenSSL stays out of this header).
  void* keyed_ctx_ = nullptr;
  // Distinguishes this codec's per-thread contexts from those of codecs that
  // lived at the same address before.
  uint64_t serial_;
};

}  // namespace geofs::nfs3
