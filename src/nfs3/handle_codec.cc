#include "nfs3/handle_codec.h"

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string_view>

namespace geofs::nfs3 {
namespace {

std::atomic<uint64_t> next_serial{1};
// Serialises cloning of keyed contexts (rare: once per thread and codec).
std::mutex clone_mu;

// One HMAC context per thread, re-keyed only when the thread switches codec.
struct ThreadMac {
  uint64_t serial = 0;
  EVP_MAC_CTX* ctx = nullptr;
  ~ThreadMac() { EVP_MAC_CTX_free(ctx); }
};
thread_local ThreadMac thread_mac;

void StoreBe32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, what);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Result<HandleCodec::Key> ReadKey(int fd, const std::string& path) {
  HandleCodec::Key key;
  uint8_t buf[sizeof(key) + 1];
  size_t got = 0;
  while (got < sizeof(buf)) {
    ssize_t r = ::read(fd, buf + got, sizeof(buf) - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno(errno, path);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  if (got != sizeof(key)) {
    return Status::Corruption("handle key file " + path + " is not exactly 32 bytes");
  }
  std::memcpy(key.data(), buf, sizeof(key));
  return key;
}

Result<HandleCodec::Key> ReadKeyFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  auto key = ReadKey(fd, path);
  ::close(fd);
  return key;
}

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

// A direct-mapped table of (handle body, MAC) pairs, each slot guarded by a
// sequence lock: a reader that overlaps a writer sees a changed sequence
// and treats the slot as a miss; a writer that finds a slot being written
// skips it. Every field is an atomic accessed relaxed between the sequence
// loads and stores, as a seqlock needs to be free of data races.
class HandleCodec::MacMemo {
 public:
  static constexpr size_t kSlots = 1 << 14;
  static constexpr size_t kBodyWords = (kHeaderBytes + vfs::kMaxHandleBytes + 7) / 8;
  static constexpr size_t kMacWords = kMacBytes / 8;

  // Copies the remembered MAC of `body` into `mac`; false if none is.
  bool Find(std::span<const uint8_t> body, uint8_t* mac) const {
    const Slot& slot = slots_[SlotOf(body)];
    const uint64_t seq = slot.seq.load(std::memory_order_acquire);
    if ((seq & 1) != 0 || slot.body_bytes.load(std::memory_order_relaxed) != body.size()) {
      return false;
    }
    uint64_t words[kBodyWords + kMacWords];
    const size_t body_words = (body.size() + 7) / 8;
    for (size_t i = 0; i < body_words; ++i) words[i] = slot.body[i].load(std::memory_order_relaxed);
    for (size_t i = 0; i < kMacWords; ++i) {
      words[kBodyWords + i] = slot.mac[i].load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.seq.load(std::memory_order_relaxed) != seq) return false;
    if (std::memcmp(words, body.data(), body.size()) != 0) return false;
    std::memcpy(mac, words + kBodyWords, kMacBytes);
    return true;
  }

  // Remembers that `mac` is the MAC of `body`.
  void Store(std::span<const uint8_t> body, const uint8_t* mac) {
    Slot& slot = slots_[SlotOf(body)];
    uint64_t seq = slot.seq.load(std::memory_order_relaxed);
    if ((seq & 1) != 0 ||
        !slot.seq.compare_exchange_strong(seq, seq + 1, std::memory_order_relaxed)) {
      return;  // another thread is writing it
    }
    std::atomic_thread_fence(std::memory_order_release);
    uint64_t words[kBodyWords + kMacWords] = {};
    std::memcpy(words, body.data(), body.size());
    std::memcpy(words + kBodyWords, mac, kMacBytes);
    slot.body_bytes.store(body.size(), std::memory_order_relaxed);
    for (size_t i = 0; i < kBodyWords; ++i) slot.body[i].store(words[i], std::memory_order_relaxed);
    for (size_t i = 0; i < kMacWords; ++i) {
      slot.mac[i].store(words[kBodyWords + i], std::memory_order_relaxed);
    }
    slot.seq.store(seq + 2, std::memory_order_release);
  }

 private:
  struct Slot {
    std::atomic<uint64_t> seq{0};  // odd while being written
    std::atomic<uint64_t> body_bytes{0};
    std::atomic<uint64_t> body[kBodyWords] = {};
    std::atomic<uint64_t> mac[kMacWords] = {};
  };

  static size_t SlotOf(std::span<const uint8_t> body) {
    const std::string_view bytes(reinterpret_cast<const char*>(body.data()), body.size());
    return std::hash<std::string_view>()(bytes) & (kSlots - 1);
  }

  std::unique_ptr<Slot[]> slots_ = std::make_unique<Slot[]>(kSlots);
};

HandleCodec::Key HandleCodec::RandomKey() {
  Key key;
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    // OpenSSL's CSPRNG failing means the system cannot produce secrets at
    // all; serving with a guessable key would defeat handle authentication.
    std::abort();
  }
  return key;
}

Result<HandleCodec::Key> HandleCodec::LoadOrCreateKey(const std::string& path) {
  auto existing = ReadKeyFile(path);
  if (existing.ok() || existing.status().code() != StatusCode::kNotFound) return existing;

  Key key = RandomKey();
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, tmp);
  Status st = WriteAll(fd, key.data(), key.size(), tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Status::FromErrno(errno, tmp);
  ::close(fd);
  // link() rather than rename(): if another process created the key
  // meanwhile, keep theirs so both use the same key.
  if (st.ok() && ::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    st = Status::FromErrno(errno, path);
  }
  ::unlink(tmp.c_str());
  GEOFS_RETURN_IF_ERROR(st);
  std::string dir = DirectoryOf(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return ReadKeyFile(path);
}

HandleCodec::HandleCodec(const Key& key)
    : memo_(std::make_unique<MacMemo>()), serial_(next_serial.fetch_add(1)) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
  EVP_MAC_free(mac);  // the context holds its own reference
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (ctx == nullptr || EVP_MAC_init(ctx, key.data(), key.size(), params) != 1) {
    std::abort();  // HMAC-SHA256 is part of every OpenSSL 3 build
  }
  keyed_ctx_ = ctx;
}

HandleCodec::~HandleCodec() { EVP_MAC_CTX_free(static_cast<EVP_MAC_CTX*>(keyed_ctx_)); }

void HandleCodec::Mac(std::span<const uint8_t> data, uint8_t* out) const {
  ThreadMac& tm = thread_mac;
  if (tm.serial != serial_) {
    EVP_MAC_CTX_free(tm.ctx);
    std::lock_guard lock(clone_mu);
    tm.ctx = EVP_MAC_CTX_dup(static_cast<const EVP_MAC_CTX*>(keyed_ctx_));
    if (tm.ctx == nullptr) std::abort();
    tm.serial = serial_;
  }
  uint8_t full[EVP_MAX_MD_SIZE];
  size_t len = 0;
  // A null key restarts the MAC under the key already set.
  if (EVP_MAC_init(tm.ctx, nullptr, 0, nullptr) != 1 ||
      EVP_MAC_update(tm.ctx, data.data(), data.size()) != 1 ||
      EVP_MAC_final(tm.ctx, full, &len, sizeof(full)) != 1 || len < kMacBytes) {
    std::abort();
  }
  std::memcpy(out, full, kMacBytes);
}

void HandleCodec::MacOf(std::span<const uint8_t> body, uint8_t* out) const {
  if (memo_->Find(body, out)) return;
  Mac(body, out);
  memo_->Store(body, out);
}

FileHandle HandleCodec::Encode(uint32_t export_id, const vfs::Handle& handle) const {
  FileHandle fh;
  uint8_t* p = fh.bytes_.data();
  p[0] = kVersion;
  StoreBe32(p + 1, export_id);
  std::memcpy(p + kHeaderBytes, handle.bytes().data(), handle.size());
  size_t body = kHeaderBytes + handle.size();
  MacOf({p, body}, p + body);
  fh.size_ = static_cast<uint8_t>(body + kMacBytes);
  return fh;
}

Result<DecodedHandle> HandleCodec::Decode(std::span<const uint8_t> fh) const {
  if (fh.size() < kHeaderBytes + kMacBytes ||
      fh.size() > kHeaderBytes + vfs::kMaxHandleBytes + kMacBytes || fh[0] != kVersion) {
    return Status::BadHandle("malformed file handle");
  }
  size_t body = fh.size() - kMacBytes;
  uint8_t expected[kMacBytes];
  MacOf(fh.first(body), expected);
  if (CRYPTO_memcmp(expected, fh.data() + body, kMacBytes) != 0) {
    return Status::BadHandle("file handle failed authentication");
  }
  DecodedHandle out;
  out.export_id = LoadBe32(fh.data() + 1);
  out.handle = vfs::Handle(fh.subspan(kHeaderBytes, body - kHeaderBytes));
  return out;
}

}  // namespace geofs::nfs3
