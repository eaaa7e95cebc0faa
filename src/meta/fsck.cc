// Namespace::Fsck: checks every invariant of docs/namespace.md on one
// snapshot of the store.
#include <functional>
#include <map>
#include <unordered_map>

#include "meta/namespace.h"
#include "meta/schema.h"
#include "meta/txn.h"
#include "vfs/access.h"

namespace geofs::meta {
namespace {

using schema::InodeRecord;

// Beyond this many problems, only their number is reported.
constexpr size_t kMaxReported = 10000;
constexpr uint64_t kDirSize = 4096;

class Checker {
 public:
  Checker(KvReader& snap, std::function<uint64_t(uint64_t)> generation_of)
      : snap_(snap), generation_of_(std::move(generation_of)) {}

  Result<std::vector<std::string>> Run() {
    GEOFS_RETURN_IF_ERROR(CheckSingletons());
    GEOFS_RETURN_IF_ERROR(CheckUnknownKeys());
    GEOFS_RETURN_IF_ERROR(Scan(schema::kInodeTag, [this](auto k, auto v) { Inode(k, v); }));
    GEOFS_RETURN_IF_ERROR(Scan(schema::kDirentTag, [this](auto k, auto v) { Dirent(k, v); }));
    GEOFS_RETURN_IF_ERROR(Scan(schema::kCookieTag, [this](auto k, auto v) { Cookie(k, v); }));
    GEOFS_RETURN_IF_ERROR(Scan(schema::kExtentTag, [this](auto k, auto v) { ExtentRec(k, v); }));
    GEOFS_RETURN_IF_ERROR(Scan(schema::kChunkTag, [this](auto k, auto v) { Chunk(k, v); }));
    GEOFS_RETURN_IF_ERROR(Scan(schema::kGcTag, [this](auto k, auto v) { Gc(k, v); }));
    GEOFS_RETURN_IF_ERROR(Scan(schema::kReservedTag, [this](auto k, auto v) { Reserved(k, v); }));
    CheckLinkCounts();
    CheckUncountedChunks();
    CheckStats();
    if (dropped_ > 0) problems_.push_back(std::to_string(dropped_) + " more problems");
    return std::move(problems_);
  }

 private:
  struct InodeFacts {
    InodeRecord rec;
    uint64_t links = 0;    // entries naming it
    uint64_t subdirs = 0;  // directories: entries that are directories
    uint64_t listed = 0;   // directories: entries in it
    uint64_t covered = 0;  // regular files: bytes its extents cover
    uint64_t last_end = 0;
  };
  struct ChunkFacts {
    uint64_t refs = 0;
    uint64_t size = 0;
  };

  void Problem(std::string what) {
    if (problems_.size() < kMaxReported) {
      problems_.push_back(std::move(what));
    } else {
      ++dropped_;
    }
  }

  static std::string Hex(std::string_view key) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : key) {
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
    return out;
  }

  Status Scan(char tag, const std::function<void(std::string_view, std::string_view)>& visit) {
    std::unique_ptr<KvIterator> it =
        snap_.NewIterator(schema::TagStart(tag), schema::TagLimit(tag));
    for (it->Seek(""); it->Valid(); it->Next()) visit(it->key(), it->value());
    return it->status();
  }

  Status CheckSingletons() {
    for (const std::string& key :
         {schema::FormatKey(), schema::SaltKey(), schema::InoLimitKey(), schema::StatsKey()}) {
      GEOFS_ASSIGN_OR_RETURN(std::optional<std::string> v, snap_.Get(key));
      if (!v) {
        Problem("missing " + key);
        continue;
      }
      if (key == schema::StatsKey()) {
        Result<NamespaceStats> s = schema::DecodeStats(*v);
        if (s.ok()) {
          stored_stats_ = *s;
        } else {
          Problem("malformed " + key);
        }
        continue;
      }
      Result<uint64_t> n = schema::DecodeU64(*v);
      if (!n.ok()) {
        Problem("malformed " + key);
      } else if (key == schema::InoLimitKey()) {
        ino_limit_ = *n;
      }
    }
    return Status::Ok();
  }

  // Keys outside every known family.
  Status CheckUnknownKeys() {
    // In key order.
    const std::string tags = {schema::kCookieTag, schema::kDirentTag, schema::kGcTag,
                              schema::kInodeTag,  schema::kMetaTag,   schema::kReservedTag,
                              schema::kChunkTag,  schema::kExtentTag};
    std::string gap_start;
    for (size_t i = 0; i <= tags.size(); ++i) {
      const std::string gap_end = i < tags.size() ? schema::TagStart(tags[i]) : "";
      if (gap_end.empty() || gap_start < gap_end) {
        std::unique_ptr<KvIterator> it = snap_.NewIterator(gap_start, gap_end);
        for (it->Seek(""); it->Valid(); it->Next()) Problem("unknown key " + Hex(it->key()));
        GEOFS_RETURN_IF_ERROR(it->status());
      }
      if (i < tags.size()) gap_start = schema::TagLimit(tags[i]);
    }
    return Status::Ok();
  }

  void Inode(std::string_view key, std::string_view value) {
    uint64_t ino;
    if (!schema::ParseInodeKey(key, &ino)) return Problem("malformed inode key " + Hex(key));
    Result<InodeRecord> rec = schema::DecodeInode(ino, value);
    const std::string name = "inode " + std::to_string(ino);
    if (!rec.ok()) return Problem(name + ": " + rec.status().ToString());
    if (ino == 0 || ino >= ino_limit_) Problem(name + " is outside the allocated numbers");
    if (rec->generation != generation_of_(ino)) Problem(name + " has a foreign generation");
    if (rec->is_dir()) {
      if (rec->next_cookie < schema::kFirstCookie) Problem(name + " has a bad cookie counter");
      if (rec->size != kDirSize) Problem(name + " is a directory of size != 4096");
    } else {
      if (rec->entries != 0 || rec->next_cookie != 0) Problem(name + " has directory fields");
    }
    if (rec->type == vfs::FileType::kSymlink && rec->size != rec->target.size()) {
      Problem(name + ": symlink size differs from its target's");
    }
    if (ino == schema::kRootIno && (!rec->is_dir() || rec->parent != schema::kRootIno)) {
      Problem("the root is not a directory that is its own parent");
    }
    AccountInode(computed_, *rec, +1);
    inodes_.emplace(ino, InodeFacts{std::move(*rec)});
  }

  void Dirent(std::string_view key, std::string_view value) {
    uint64_t dir;
    std::string_view name;
    if (!schema::ParseDirentKey(key, &dir, &name))
      return Problem("malformed entry key " + Hex(key));
    const std::string where = "entry " + std::to_string(dir) + "/'" + std::string(name) + "'";
    Result<schema::DirentValue> v = schema::DecodeDirent(value);
    if (!v.ok()) return Problem(where + ": " + v.status().ToString());
    if (!vfs::ValidateName(name).ok()) Problem(where + " has an invalid name");
    auto parent = inodes_.find(dir);
    if (parent == inodes_.end() || !parent->second.rec.is_dir()) {
      Problem(where + " is in no directory");
    } else {
      ++parent->second.listed;
      const uint64_t next_cookie = parent->second.rec.next_cookie;
      if (v->cookie < schema::kFirstCookie || v->cookie >= next_cookie) {
        Problem(where + " has cookie " + std::to_string(v->cookie) + " never issued");
      }
    }
    auto child = inodes_.find(v->child);
    if (child == inodes_.end()) {
      Problem(where + " names missing inode " + std::to_string(v->child));
    } else {
      InodeFacts& c = child->second;
      ++c.links;
      if (c.rec.type != v->type) Problem(where + " records the wrong type");
      if (c.rec.is_dir()) {
        if (parent != inodes_.end()) ++parent->second.subdirs;
        if (c.rec.parent != dir)
          Problem(where + ": the directory's parent is not " + std::to_string(dir));
        if (c.links > 1)
          Problem(where + ": directory " + std::to_string(v->child) + " has several names");
      }
    }
    Result<std::optional<std::string>> by_cookie = snap_.Get(schema::CookieKey(dir, v->cookie));
    if (!by_cookie.ok() || !*by_cookie) return Problem(where + " has no cookie record");
    Result<schema::CookieValue> cv = schema::DecodeCookie(**by_cookie);
    if (!cv.ok() || cv->name != name || cv->child != v->child || cv->type != v->type) {
      Problem(where + " disagrees with its cookie record");
    }
  }

  void Cookie(std::string_view key, std::string_view value) {
    uint64_t dir, cookie;
    if (!schema::ParseCookieKey(key, &dir, &cookie))
      return Problem("malformed cookie key " + Hex(key));
    const std::string where = "cookie " + std::to_string(dir) + "#" + std::to_string(cookie);
    Result<schema::CookieValue> v = schema::DecodeCookie(value);
    if (!v.ok()) return Problem(where + ": " + v.status().ToString());
    Result<std::optional<std::string>> by_name = snap_.Get(schema::DirentKey(dir, v->name));
    if (!by_name.ok() || !*by_name) return Problem(where + " has no entry record");
    Result<schema::DirentValue> dv = schema::DecodeDirent(**by_name);
    if (!dv.ok() || dv->cookie != cookie) Problem(where + " disagrees with its entry record");
  }

  void ExtentRec(std::string_view key, std::string_view value) {
    uint64_t ino, end;
    if (!schema::ParseExtentKey(key, &ino, &end))
      return Problem("malformed extent key " + Hex(key));
    const std::string where = "extent " + std::to_string(ino) + "@" + std::to_string(end);
    Result<Extent> e = schema::DecodeExtent(end, value);
    if (!e.ok()) return Problem(where + ": " + e.status().ToString());
    ++computed_.extents;
    ChunkFacts& chunk = chunks_[e->chunk];
    ++chunk.refs;
    if (chunk.size != 0 && chunk.size != e->chunk_size) {
      Problem(where + " gives chunk " + ChunkIdHex(e->chunk) + " another size");
    }
    chunk.size = e->chunk_size;
    if (e->chunk_offset > e->chunk_size || e->length > e->chunk_size - e->chunk_offset) {
      Problem(where + " runs past the end of its chunk");
    }
    auto file = inodes_.find(ino);
    if (file == inodes_.end() || file->second.rec.type != vfs::FileType::kRegular) {
      return Problem(where + " belongs to no regular file");
    }
    InodeFacts& f = file->second;
    if (e->offset < f.last_end) Problem(where + " overlaps the previous extent");
    if (end > f.rec.size) Problem(where + " runs past the file's size");
    f.last_end = end;
    f.covered += e->length;
  }

  void Chunk(std::string_view key, std::string_view value) {
    ChunkId id;
    if (!schema::ParseChunkKey(key, &id)) return Problem("malformed chunk key " + Hex(key));
    const std::string where = "chunk " + ChunkIdHex(id);
    Result<ChunkInfo> c = schema::DecodeChunk(id, value);
    if (!c.ok()) return Problem(where + ": " + c.status().ToString());
    ChunkFacts facts;
    if (auto it = chunks_.find(id); it != chunks_.end()) {
      facts = it->second;
      chunks_.erase(it);
    }
    if (c->refs != facts.refs) {
      Problem(where + " has refcount " + std::to_string(c->refs) + " but " +
              std::to_string(facts.refs) + " extents");
    }
    if (facts.refs > 0 && facts.size != c->size) Problem(where + " has another size in extents");
    if (c->stored_size == 0) {
      ++computed_.unsized_chunks;
    } else {
      computed_.stored_bytes += c->stored_size;
    }
    if (c->refs > 0) {
      ++computed_.chunks;
      computed_.referenced_bytes += c->size;
      if (c->collecting) Problem(where + " is referenced but being collected");
      return;
    }
    ++computed_.unreferenced_chunks;
    computed_.unreferenced_bytes += c->size;
    Result<std::optional<std::string>> gc = snap_.Get(schema::GcKey(c->unreferenced_since, id));
    if (!gc.ok() || !*gc) Problem(where + " is unreferenced but not in the GC index");
  }

  void Gc(std::string_view key, std::string_view) {
    WallTime since;
    ChunkId id;
    if (!schema::ParseGcKey(key, &since, &id)) return Problem("malformed GC key " + Hex(key));
    const std::string where = "GC entry of chunk " + ChunkIdHex(id);
    Result<std::optional<std::string>> v = snap_.Get(schema::ChunkKey(id));
    if (!v.ok() || !*v) return Problem(where + " names an unknown chunk");
    Result<ChunkInfo> c = schema::DecodeChunk(id, **v);
    if (!c.ok()) return;  // reported by the chunk scan
    if (c->refs != 0) Problem(where + ": the chunk is referenced");
    if (c->unreferenced_since != since) Problem(where + " has another time than the chunk");
  }

  // A run of reserved numbers lies below the counter, holds no inode (a
  // create takes its number out of the run), and overlaps no other run.
  void Reserved(std::string_view key, std::string_view value) {
    uint64_t end;
    if (!schema::ParseReservedKey(key, &end)) {
      return Problem("malformed reservation key " + Hex(key));
    }
    const std::string where = "reserved inode numbers ending at " + std::to_string(end);
    Result<uint64_t> start = schema::DecodeReservedStart(end, value);
    if (!start.ok()) return Problem(where + ": " + start.status().ToString());
    if (end > ino_limit_) Problem(where + " run past the allocated numbers");
    if (*start < last_reserved_end_) Problem(where + " overlap the run before");
    last_reserved_end_ = end;
    std::unique_ptr<KvIterator> it =
        snap_.NewIterator(schema::InodeKey(*start), schema::InodeKey(end));
    it->Seek("");
    uint64_t ino;
    if (it->Valid() && schema::ParseInodeKey(it->key(), &ino)) {
      Problem(where + " include existing inode " + std::to_string(ino));
    }
  }

  void CheckLinkCounts() {
    for (const auto& [ino, f] : inodes_) {
      const std::string name = "inode " + std::to_string(ino);
      if (ino == schema::kRootIno) {
        if (f.links != 0) Problem("the root has a name");
      } else if (f.links == 0) {
        Problem(name + " is an orphan (no entry names it)");
      }
      if (f.rec.is_dir()) {
        if (f.rec.nlink != 2 + f.subdirs) {
          Problem(name + " has nlink " + std::to_string(f.rec.nlink) + ", expected " +
                  std::to_string(2 + f.subdirs));
        }
        if (f.rec.entries != f.listed) {
          Problem(name + " counts " + std::to_string(f.rec.entries) + " entries, holds " +
                  std::to_string(f.listed));
        }
      } else if (f.rec.nlink != f.links) {
        Problem(name + " has nlink " + std::to_string(f.rec.nlink) + " but " +
                std::to_string(f.links) + " names");
      }
      if (f.rec.type == vfs::FileType::kRegular && f.rec.used != f.covered) {
        Problem(name + " uses " + std::to_string(f.rec.used) + " bytes, extents cover " +
                std::to_string(f.covered));
      }
    }
  }

  void CheckUncountedChunks() {
    for (const auto& [id, facts] : chunks_) {
      Problem("chunk " + ChunkIdHex(id) + " is named by " + std::to_string(facts.refs) +
              " extents but has no refcount");
    }
  }

  void CheckStats() {
    const NamespaceStats& s = stored_stats_;
    const NamespaceStats& c = computed_;
    auto check = [&](const char* what, uint64_t stored, uint64_t actual) {
      if (stored != actual) {
        Problem(std::string("statistics: ") + what + " is " + std::to_string(stored) +
                ", actually " + std::to_string(actual));
      }
    };
    check("inodes", s.inodes, c.inodes);
    check("directories", s.directories, c.directories);
    check("files", s.files, c.files);
    check("symlinks", s.symlinks, c.symlinks);
    check("specials", s.specials, c.specials);
    check("logical_bytes", s.logical_bytes, c.logical_bytes);
    check("extents", s.extents, c.extents);
    check("chunks", s.chunks, c.chunks);
    check("referenced_bytes", s.referenced_bytes, c.referenced_bytes);
    check("unreferenced_chunks", s.unreferenced_chunks, c.unreferenced_chunks);
    check("unreferenced_bytes", s.unreferenced_bytes, c.unreferenced_bytes);
    check("stored_bytes", s.stored_bytes, c.stored_bytes);
    check("unsized_chunks", s.unsized_chunks, c.unsized_chunks);
  }

  KvReader& snap_;
  const std::function<uint64_t(uint64_t)> generation_of_;
  uint64_t ino_limit_ = 0;
  uint64_t last_reserved_end_ = 0;
  NamespaceStats stored_stats_;
  NamespaceStats computed_;
  std::unordered_map<uint64_t, InodeFacts> inodes_;
  std::map<ChunkId, ChunkFacts> chunks_;
  std::vector<std::string> problems_;
  size_t dropped_ = 0;
};

}  // namespace

Result<std::vector<std::string>> Namespace::Fsck() {
  std::unique_ptr<KvReader> snap = store_->NewSnapshot();
  Checker checker(*snap, [this](uint64_t ino) { return GenerationOf(ino); });
  return checker.Run();
}

}  // namespace geofs::meta
