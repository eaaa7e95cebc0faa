#include "meta/schema.h"

#include <cstring>

namespace geofs::meta::schema {
namespace {

// Each record's first byte; bump it when a record's layout changes.
constexpr uint8_t kRecordV1 = 1;
// Chunk and statistics records with stored sizes; their V1 forms (written
// before stored sizes were recorded) still decode, as "not recorded".
constexpr uint8_t kRecordV2 = 2;
// Signed seconds shifted so that unsigned byte order is time order.
constexpr uint64_t kSecondsBias = uint64_t{1} << 63;

void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t ReadBigEndian(std::string_view in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

std::string TagAnd64(char tag, uint64_t a) {
  std::string key(1, tag);
  AppendBigEndian(&key, a, 8);
  return key;
}

std::string TagAnd64x2(char tag, uint64_t a, uint64_t b) {
  std::string key = TagAnd64(tag, a);
  AppendBigEndian(&key, b, 8);
  return key;
}

// Appends fixed-width little-endian fields and length-prefixed strings.
class Encoder {
 public:
  explicit Encoder(uint8_t format) { out_.push_back(static_cast<char>(format)); }
  Encoder& U8(uint8_t v) {
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  Encoder& U32(uint32_t v) { return Fixed(v, 4); }
  Encoder& U64(uint64_t v) { return Fixed(v, 8); }
  Encoder& Time(WallTime t) { return U64(static_cast<uint64_t>(t.sec)).U32(t.nsec); }
  Encoder& Raw(std::string_view bytes) {
    out_.append(bytes);
    return *this;
  }
  Encoder& String(std::string_view s) { return U32(static_cast<uint32_t>(s.size())).Raw(s); }
  std::string Take() { return std::move(out_); }

 private:
  Encoder& Fixed(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  std::string out_;
};

// Reads what Encoder wrote. Failure is sticky: once a read runs past the
// end, every later read yields zero and ok() is false.
class Decoder {
 public:
  Decoder(std::string_view in, uint8_t format) : Decoder(in, format, format) {}
  // A record in any format from `oldest` to `newest`; format() tells which.
  Decoder(std::string_view in, uint8_t oldest, uint8_t newest) : in_(in), format_(U8()) {
    if (format_ < oldest || format_ > newest) ok_ = false;
  }
  uint8_t format() const { return format_; }
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  WallTime Time() {
    WallTime t;
    t.sec = static_cast<int64_t>(U64());
    t.nsec = U32();
    if (t.nsec >= 1'000'000'000) ok_ = false;
    return t;
  }
  std::string_view Raw(size_t n) {
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return {};
    }
    std::string_view v = in_.substr(0, n);
    in_.remove_prefix(n);
    return v;
  }
  std::string_view String() { return Raw(U32()); }
  void Fail() { ok_ = false; }
  // OK if every read succeeded and nothing is left over.
  Status Finish(std::string_view what) const {
    if (ok_ && in_.empty()) return Status::Ok();
    return Status::Corruption(std::string("malformed ") + std::string(what) + " record");
  }

 private:
  uint64_t Fixed(int bytes) {
    if (!ok_ || in_.size() < static_cast<size_t>(bytes)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(bytes);
    return v;
  }
  std::string_view in_;
  bool ok_ = true;
  uint8_t format_;
};

bool ValidType(uint8_t t) {
  return t >= static_cast<uint8_t>(vfs::FileType::kRegular) &&
         t <= static_cast<uint8_t>(vfs::FileType::kFifo);
}

vfs::FileType DecodeType(Decoder& d) {
  const uint8_t t = d.U8();
  if (!ValidType(t)) d.Fail();
  return static_cast<vfs::FileType>(t);
}

void CopyId(std::string_view bytes, ChunkId* id) { std::memcpy(id->data(), bytes.data(), 32); }

std::string_view IdBytes(const ChunkId& id) {
  return {reinterpret_cast<const char*>(id.data()), id.size()};
}

}  // namespace

std::string FormatKey() { return "Mformat"; }
std::string SaltKey() { return "Msalt"; }
std::string InoLimitKey() { return "Mino_limit"; }
std::string StatsKey() { return "Mstats"; }
std::string CleanStopKey() { return "Mclean_stop"; }
std::string OrphanSweepKey() { return "Morphan_sweep"; }

std::string TagStart(char tag) { return std::string(1, tag); }
std::string TagLimit(char tag) { return std::string(1, static_cast<char>(tag + 1)); }

std::string InodeKey(uint64_t ino) { return TagAnd64(kInodeTag, ino); }

bool ParseInodeKey(std::string_view key, uint64_t* ino) {
  if (key.size() != 9 || key[0] != kInodeTag) return false;
  *ino = ReadBigEndian(key.substr(1), 8);
  return true;
}

std::string DirentKey(uint64_t dir, std::string_view name) {
  std::string key = TagAnd64(kDirentTag, dir);
  key.append(name);
  return key;
}

std::string DirentPrefix(uint64_t dir) { return TagAnd64(kDirentTag, dir); }

bool ParseDirentKey(std::string_view key, uint64_t* dir, std::string_view* name) {
  if (key.size() < 10 || key[0] != kDirentTag) return false;
  *dir = ReadBigEndian(key.substr(1), 8);
  *name = key.substr(9);
  return true;
}

std::string CookieKey(uint64_t dir, uint64_t cookie) { return TagAnd64x2(kCookieTag, dir, cookie); }

std::string CookiePrefix(uint64_t dir) { return TagAnd64(kCookieTag, dir); }

bool ParseCookieKey(std::string_view key, uint64_t* dir, uint64_t* cookie) {
  if (key.size() != 17 || key[0] != kCookieTag) return false;
  *dir = ReadBigEndian(key.substr(1), 8);
  *cookie = ReadBigEndian(key.substr(9), 8);
  return true;
}

std::string ExtentKey(uint64_t ino, uint64_t end) { return TagAnd64x2(kExtentTag, ino, end); }

std::string ExtentPrefix(uint64_t ino) { return TagAnd64(kExtentTag, ino); }

bool ParseExtentKey(std::string_view key, uint64_t* ino, uint64_t* end) {
  if (key.size() != 17 || key[0] != kExtentTag) return false;
  *ino = ReadBigEndian(key.substr(1), 8);
  *end = ReadBigEndian(key.substr(9), 8);
  return true;
}

std::string ReservedKey(uint64_t end) { return TagAnd64(kReservedTag, end); }

bool ParseReservedKey(std::string_view key, uint64_t* end) {
  if (key.size() != 9 || key[0] != kReservedTag) return false;
  *end = ReadBigEndian(key.substr(1), 8);
  return true;
}

std::string EncodeReservedStart(uint64_t start) { return Encoder(kRecordV1).U64(start).Take(); }

Result<uint64_t> DecodeReservedStart(uint64_t end, std::string_view value) {
  Decoder d(value, kRecordV1);
  const uint64_t start = d.U64();
  GEOFS_RETURN_IF_ERROR(d.Finish("reserved inode numbers"));
  if (start >= end) return Status::Corruption("reserved inode numbers end before they start");
  return start;
}

std::string ChunkKey(const ChunkId& id) {
  std::string key(1, kChunkTag);
  key.append(IdBytes(id));
  return key;
}

bool ParseChunkKey(std::string_view key, ChunkId* id) {
  if (key.size() != 33 || key[0] != kChunkTag) return false;
  CopyId(key.substr(1), id);
  return true;
}

std::string GcLimit(WallTime before) {
  std::string key(1, kGcTag);
  AppendBigEndian(&key, static_cast<uint64_t>(before.sec) + kSecondsBias, 8);
  AppendBigEndian(&key, before.nsec, 4);
  return key;
}

std::string GcKey(WallTime since, const ChunkId& id) {
  std::string key = GcLimit(since);
  key.append(IdBytes(id));
  return key;
}

bool ParseGcKey(std::string_view key, WallTime* since, ChunkId* id) {
  if (key.size() != 45 || key[0] != kGcTag) return false;
  since->sec = static_cast<int64_t>(ReadBigEndian(key.substr(1), 8) - kSecondsBias);
  since->nsec = static_cast<uint32_t>(ReadBigEndian(key.substr(9), 4));
  CopyId(key.substr(13), id);
  return since->nsec < 1'000'000'000;
}

vfs::Attr InodeRecord::ToAttr() const {
  vfs::Attr a;
  a.type = type;
  a.mode = mode;
  a.nlink = nlink;
  a.uid = uid;
  a.gid = gid;
  a.size = size;
  a.used = used;
  a.rdev_major = rdev_major;
  a.rdev_minor = rdev_minor;
  a.fileid = ino;
  a.atime = atime;
  a.mtime = mtime;
  a.ctime = ctime;
  return a;
}

std::string EncodeInode(const InodeRecord& r) {
  Encoder e(kRecordV1);
  e.U8(static_cast<uint8_t>(r.type)).U32(r.mode).U32(r.nlink).U32(r.uid).U32(r.gid);
  e.U64(r.size).U64(r.used).Time(r.atime).Time(r.mtime).Time(r.ctime);
  e.U64(r.generation).U64(r.version).U32(r.rdev_major).U32(r.rdev_minor);
  e.U64(r.parent).U64(r.next_cookie).U64(r.entries);
  e.U8(r.verifier ? 1 : 0);
  if (r.verifier) {
    e.Raw(std::string_view(reinterpret_cast<const char*>(r.verifier->data()), 8));
  }
  e.String(r.target);
  return e.Take();
}

Result<InodeRecord> DecodeInode(uint64_t ino, std::string_view value) {
  Decoder d(value, kRecordV1);
  InodeRecord r;
  r.ino = ino;
  r.type = DecodeType(d);
  r.mode = d.U32();
  r.nlink = d.U32();
  r.uid = d.U32();
  r.gid = d.U32();
  r.size = d.U64();
  r.used = d.U64();
  r.atime = d.Time();
  r.mtime = d.Time();
  r.ctime = d.Time();
  r.generation = d.U64();
  r.version = d.U64();
  r.rdev_major = d.U32();
  r.rdev_minor = d.U32();
  r.parent = d.U64();
  r.next_cookie = d.U64();
  r.entries = d.U64();
  const uint8_t has_verifier = d.U8();
  if (has_verifier > 1) d.Fail();
  if (has_verifier == 1) {
    std::string_view v = d.Raw(8);
    if (v.size() == 8) {
      r.verifier.emplace();
      std::memcpy(r.verifier->data(), v.data(), 8);
    }
  }
  r.target = std::string(d.String());
  GEOFS_RETURN_IF_ERROR(d.Finish("inode"));
  return r;
}

std::string EncodeDirent(const DirentValue& v) {
  return Encoder(kRecordV1).U64(v.child).U8(static_cast<uint8_t>(v.type)).U64(v.cookie).Take();
}

Result<DirentValue> DecodeDirent(std::string_view value) {
  Decoder d(value, kRecordV1);
  DirentValue v;
  v.child = d.U64();
  v.type = DecodeType(d);
  v.cookie = d.U64();
  GEOFS_RETURN_IF_ERROR(d.Finish("directory entry"));
  return v;
}

std::string EncodeCookie(const CookieValue& v) {
  return Encoder(kRecordV1).U64(v.child).U8(static_cast<uint8_t>(v.type)).String(v.name).Take();
}

Result<CookieValue> DecodeCookie(std::string_view value) {
  Decoder d(value, kRecordV1);
  CookieValue v;
  v.child = d.U64();
  v.type = DecodeType(d);
  v.name = std::string(d.String());
  GEOFS_RETURN_IF_ERROR(d.Finish("directory cookie"));
  return v;
}

std::string EncodeExtent(const Extent& e) {
  return Encoder(kRecordV1)
      .U64(e.offset)
      .Raw(IdBytes(e.chunk))
      .U64(e.chunk_offset)
      .U64(e.chunk_size)
      .Take();
}

Result<Extent> DecodeExtent(uint64_t end, std::string_view value) {
  Decoder d(value, kRecordV1);
  Extent e;
  e.offset = d.U64();
  std::string_view id = d.Raw(32);
  if (id.size() == 32) CopyId(id, &e.chunk);
  e.chunk_offset = d.U64();
  e.chunk_size = d.U64();
  GEOFS_RETURN_IF_ERROR(d.Finish("extent"));
  if (e.offset >= end) return Status::Corruption("extent ends before it starts");
  e.length = end - e.offset;
  return e;
}

std::string EncodeChunk(const ChunkInfo& c) {
  return Encoder(kRecordV2)
      .U64(c.refs)
      .U64(c.size)
      .Time(c.unreferenced_since)
      .U8(c.collecting ? 1 : 0)
      .U64(c.stored_size)
      .Take();
}

Result<ChunkInfo> DecodeChunk(const ChunkId& id, std::string_view value) {
  Decoder d(value, kRecordV1, kRecordV2);
  const bool v1 = d.format() == kRecordV1;
  ChunkInfo c;
  c.id = id;
  c.refs = d.U64();
  c.size = d.U64();
  c.unreferenced_since = d.Time();
  const uint8_t collecting = d.U8();
  if (collecting > 1) d.Fail();
  c.collecting = collecting == 1;
  if (!v1) c.stored_size = d.U64();
  GEOFS_RETURN_IF_ERROR(d.Finish("chunk"));
  return c;
}

std::string EncodeStats(const NamespaceStats& s) {
  return Encoder(kRecordV2)
      .U64(s.inodes)
      .U64(s.directories)
      .U64(s.files)
      .U64(s.symlinks)
      .U64(s.specials)
      .U64(s.logical_bytes)
      .U64(s.extents)
      .U64(s.chunks)
      .U64(s.referenced_bytes)
      .U64(s.unreferenced_chunks)
      .U64(s.unreferenced_bytes)
      .U64(s.stored_bytes)
      .U64(s.unsized_chunks)
      .Take();
}

Result<NamespaceStats> DecodeStats(std::string_view value) {
  Decoder d(value, kRecordV1, kRecordV2);
  const bool v1 = d.format() == kRecordV1;
  NamespaceStats s;
  s.inodes = d.U64();
  s.directories = d.U64();
  s.files = d.U64();
  s.symlinks = d.U64();
  s.specials = d.U64();
  s.logical_bytes = d.U64();
  s.extents = d.U64();
  s.chunks = d.U64();
  s.referenced_bytes = d.U64();
  s.unreferenced_chunks = d.U64();
  s.unreferenced_bytes = d.U64();
  if (v1) {
    // Every chunk record of that time is V1 too: none has a stored size.
    s.unsized_chunks = s.chunks + s.unreferenced_chunks;
  } else {
    s.stored_bytes = d.U64();
    s.unsized_chunks = d.U64();
  }
  GEOFS_RETURN_IF_ERROR(d.Finish("stats"));
  return s;
}

std::string EncodeU64(uint64_t v) { return Encoder(kRecordV1).U64(v).Take(); }

Result<uint64_t> DecodeU64(std::string_view value) {
  Decoder d(value, kRecordV1);
  const uint64_t v = d.U64();
  GEOFS_RETURN_IF_ERROR(d.Finish("counter"));
  return v;
}

std::string EncodeTime(WallTime t) { return Encoder(kRecordV1).Time(t).Take(); }

Result<WallTime> DecodeTime(std::string_view value) {
  Decoder d(value, kRecordV1);
  const WallTime t = d.Time();
  GEOFS_RETURN_IF_ERROR(d.Finish("time"));
  return t;
}

}  // namespace geofs::meta::schema
