// The namespace's key schema and record encodings (docs/namespace.md has
// the full picture and the reasons).
//
// Every key starts with a one-byte tag naming its family. Integers inside
// keys are fixed-width big-endian so that byte order is numeric order;
// integers inside values are fixed-width little-endian. Every value record
// starts with a format byte so that it can evolve.
//
//   M<name>                  store-wide singletons (format, salt, counters, stats)
//   I<ino:8>                 inode record
//   D<dir:8><name>           directory entry by name   -> child, type, cookie
//   C<dir:8><cookie:8>       directory entry by cookie -> child, type, name
//   X<ino:8><end:8>          extent of a regular file, keyed by its end offset
//   R<chunk id:32>           chunk record: refcount, size, GC state
//   G<since:12><chunk id:32> GC index: chunks with refcount 0, by age
//   N<end:8>                 inode numbers reserved and still unused: [start, end)
//
// Internal to src/meta (and its tests, which use it to plant bad records).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "geofs/clock.h"
#include "geofs/status.h"
#include "geofs/vfs.h"
#include "meta/types.h"

namespace geofs::meta::schema {

inline constexpr char kMetaTag = 'M';
inline constexpr char kInodeTag = 'I';
inline constexpr char kDirentTag = 'D';
inline constexpr char kCookieTag = 'C';
inline constexpr char kExtentTag = 'X';
inline constexpr char kChunkTag = 'R';
inline constexpr char kGcTag = 'G';
inline constexpr char kReservedTag = 'N';

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint64_t kRootIno = 1;
// READDIR cookies: "." and ".." come first; entries count up from 3.
inline constexpr uint64_t kDotCookie = 1;
inline constexpr uint64_t kDotDotCookie = 2;
inline constexpr uint64_t kFirstCookie = 3;

// Singletons.
std::string FormatKey();    // u64 format version
std::string SaltKey();      // u64 secret mixed into generations
std::string InoLimitKey();  // u64: every inode number ever handed out is below it
std::string StatsKey();     // NamespaceStats
// Optional singletons, written by Namespace::MarkRunning and friends.
std::string CleanStopKey();    // empty: the last run ended with MarkCleanStop
std::string OrphanSweepKey();  // time: sweep the objects stored before it

// A one-tag range [TagStart(t), TagStart(t + 1)).
std::string TagStart(char tag);
std::string TagLimit(char tag);

std::string InodeKey(uint64_t ino);
bool ParseInodeKey(std::string_view key, uint64_t* ino);

std::string DirentKey(uint64_t dir, std::string_view name);
std::string DirentPrefix(uint64_t dir);
bool ParseDirentKey(std::string_view key, uint64_t* dir, std::string_view* name);

std::string CookieKey(uint64_t dir, uint64_t cookie);
std::string CookiePrefix(uint64_t dir);
bool ParseCookieKey(std::string_view key, uint64_t* dir, uint64_t* cookie);

std::string ExtentKey(uint64_t ino, uint64_t end);
std::string ExtentPrefix(uint64_t ino);
bool ParseExtentKey(std::string_view key, uint64_t* ino, uint64_t* end);

std::string ChunkKey(const ChunkId& id);
bool ParseChunkKey(std::string_view key, ChunkId* id);

// GC keys sort by time, then id; GcLimit(t) bounds a scan to times < t.
std::string GcKey(WallTime since, const ChunkId& id);
std::string GcLimit(WallTime before);
bool ParseGcKey(std::string_view key, WallTime* since, ChunkId* id);

// A run of reserved inode numbers is keyed by its end, so that the run
// holding a number is the first one a seek to ReservedKey(number + 1) finds.
std::string ReservedKey(uint64_t end);
bool ParseReservedKey(std::string_view key, uint64_t* end);
// The value holds the run's start.
std::string EncodeReservedStart(uint64_t start);
Result<uint64_t> DecodeReservedStart(uint64_t end, std::string_view value);

struct InodeRecord {
  uint64_t ino = 0;  // from the key; not stored in the value
  vfs::FileType type = vfs::FileType::kRegular;
  uint32_t mode = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;  // regular files: bytes covered by extents
  WallTime atime, mtime, ctime;
  uint64_t generation = 0;
  uint64_t version = 0;  // content version, bumped on every data change
  uint32_t rdev_major = 0;
  uint32_t rdev_minor = 0;
  // Directories only.
  uint64_t parent = 0;       // the directory holding it (the root: itself)
  uint64_t next_cookie = 0;  // the cookie the next entry gets
  uint64_t entries = 0;      // number of entries, without "." and ".."
  // Regular files created EXCLUSIVE, until their attributes are set.
  std::optional<std::array<uint8_t, 8>> verifier;
  std::string target;  // symlinks

  bool is_dir() const { return type == vfs::FileType::kDirectory; }
  vfs::Attr ToAttr() const;
  bool operator==(const InodeRecord&) const = default;
};
std::string EncodeInode(const InodeRecord& rec);
Result<InodeRecord> DecodeInode(uint64_t ino, std::string_view value);

struct DirentValue {
  uint64_t child = 0;
  vfs::FileType type = vfs::FileType::kRegular;
  uint64_t cookie = 0;
};
std::string EncodeDirent(const DirentValue& v);
Result<DirentValue> DecodeDirent(std::string_view value);

struct CookieValue {
  uint64_t child = 0;
  vfs::FileType type = vfs::FileType::kRegular;
  std::string name;
};
std::string EncodeCookie(const CookieValue& v);
Result<CookieValue> DecodeCookie(std::string_view value);

// The extent's end is its key; the value holds the rest.
std::string EncodeExtent(const Extent& e);
Result<Extent> DecodeExtent(uint64_t end, std::string_view value);

// The chunk id is the key; the value holds the rest.
std::string EncodeChunk(const ChunkInfo& c);
Result<ChunkInfo> DecodeChunk(const ChunkId& id, std::string_view value);

std::string EncodeStats(const NamespaceStats& s);
Result<NamespaceStats> DecodeStats(std::string_view value);

std::string EncodeU64(uint64_t v);
Result<uint64_t> DecodeU64(std::string_view value);

std::string EncodeTime(WallTime t);
Result<WallTime> DecodeTime(std::string_view value);

}  // namespace geofs::meta::schema
