#include "spoke/metadata_cache.h"

namespace geofs::spoke {

MetadataCache::MetadataCache(Clock* clock, size_t max_inodes)
    : clock_(clock), max_inodes_(std::max<size_t>(max_inodes, 1)) {}

uint64_t MetadataCache::Epoch() const {
  std::lock_guard lock(mu_);
  return epoch_;
}

const MetadataCache::Record* MetadataCache::FindLocked(uint64_t ino, bool allow_expired) const {
  auto it = records_.find(ino);
  if (it == records_.end()) return nullptr;
  if (!allow_expired && it->second.expiry <= clock_->Now()) return nullptr;
  return &it->second;
}

MetadataCache::Record* MetadataCache::ForPutLocked(const FileKey& key, SteadyTime expiry,
                                                   uint64_t epoch) {
  auto it = records_.find(key.ino);
  if (it == records_.end()) {
    if (epoch < evicted_floor_) return nullptr;
    if (records_.size() >= max_inodes_) EvictLocked();
    it = records_.emplace(key.ino, Record{}).first;
    it->second.gen = key.gen;
  }
  Record& rec = it->second;
  if (rec.invalidated_at > epoch) return nullptr;
  const SteadyTime now = clock_->Now();
  // Start afresh if the inode number now names another object (cannot
  // happen with a correct hub: numbers are never reused), or if a new lease
  // follows one that ended: in between, the hub changed the inode without
  // telling us, so nothing the old lease covered may be served again.
  if (rec.gen != key.gen || (rec.expiry <= now && expiry > now)) {
    uint64_t invalidated_at = rec.invalidated_at;
    ForgetMissingLocked(rec);
    rec = Record{};
    rec.gen = key.gen;
    rec.invalidated_at = invalidated_at;
  }
  rec.expiry = std::max(rec.expiry, expiry);
  return &rec;
}

void MetadataCache::ForgetMissingLocked(Record& rec) {
  missing_names_ -= rec.missing.size();
  rec.missing.clear();
}

void MetadataCache::ForgetMissingLocked(Record& rec, std::string_view name) {
  if (auto it = rec.missing.find(name); it != rec.missing.end()) {
    rec.missing.erase(it);
    --missing_names_;
  }
}

void MetadataCache::EvictLocked() {
  const SteadyTime now = clock_->Now();
  const size_t target = max_inodes_ - max_inodes_ / 8 - 1;
  for (int pass = 0; pass < 2 && records_.size() > target; ++pass) {
    for (auto it = records_.begin(); it != records_.end() && records_.size() > target;) {
      if (pass == 0 && it->second.expiry > now) {
        ++it;
        continue;
      }
      evicted_floor_ = std::max(evicted_floor_, it->second.invalidated_at);
      ForgetMissingLocked(it->second);
      it = records_.erase(it);
    }
  }
}

std::optional<vfs::Attr> MetadataCache::GetAttr(uint64_t ino, bool allow_expired) const {
  std::lock_guard lock(mu_);
  const Record* rec = FindLocked(ino, allow_expired);
  if (!rec) return std::nullopt;
  return rec->attr;
}

std::optional<FileKey> MetadataCache::Lookup(uint64_t dir, std::string_view name,
                                             bool allow_expired) const {
  std::lock_guard lock(mu_);
  const Record* rec = FindLocked(dir, allow_expired);
  if (!rec) return std::nullopt;
  auto it = rec->names.find(name);
  if (it == rec->names.end()) return std::nullopt;
  return it->second;
}

bool MetadataCache::KnownMissing(uint64_t dir, std::string_view name, bool allow_expired) const {
  std::lock_guard lock(mu_);
  const Record* rec = FindLocked(dir, allow_expired);
  if (!rec) return false;
  if (rec->missing.contains(name)) return true;
  return rec->complete_listing && name != "." && name != ".." && !rec->names.contains(name);
}

std::optional<CachedDirPage> MetadataCache::ReadDir(uint64_t dir, uint64_t cookie,
                                                    uint32_t max_entries,
                                                    bool allow_expired) const {
  std::lock_guard lock(mu_);
  const Record* rec = FindLocked(dir, allow_expired);
  if (!rec) return std::nullopt;
  auto it = rec->pages.find(PageKey{cookie, max_entries});
  if (it == rec->pages.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> MetadataCache::ReadLink(uint64_t ino, bool allow_expired) const {
  std::lock_guard lock(mu_);
  const Record* rec = FindLocked(ino, allow_expired);
  if (!rec) return std::nullopt;
  return rec->link;
}

std::shared_ptr<const ChunkMap> MetadataCache::GetChunkMap(uint64_t ino, bool allow_expired) const {
  std::lock_guard lock(mu_);
  const Record* rec = FindLocked(ino, allow_expired);
  return rec ? rec->map : nullptr;
}

void MetadataCache::PutAttr(const FileKey& key, const vfs::Attr& attr, SteadyTime expiry,
                            uint64_t epoch) {
  std::lock_guard lock(mu_);
  if (Record* rec = ForPutLocked(key, expiry, epoch)) rec->attr = attr;
}

void MetadataCache::PutLookup(const FileKey& dir, std::string_view name, const FileKey& child,
                              SteadyTime expiry, uint64_t epoch) {
  std::lock_guard lock(mu_);
  if (Record* rec = ForPutLocked(dir, expiry, epoch)) {
    rec->names[std::string(name)] = child;
    ForgetMissingLocked(*rec, name);
  }
}

void MetadataCache::PutMissing(const FileKey& dir, std::string_view name, SteadyTime expiry,
                               uint64_t epoch) {
  std::lock_guard lock(mu_);
  Record* rec = ForPutLocked(dir, expiry, epoch);
  if (!rec) return;
  if (missing_names_ >= kMaxMissingNames) return;
  if (rec->missing.emplace(name).second) ++missing_names_;
}

void MetadataCache::PutDirPage(const FileKey& dir, uint64_t cookie, uint32_t max_entries,
                               CachedDirPage page, SteadyTime expiry, uint64_t epoch) {
  std::lock_guard lock(mu_);
  Record* rec = ForPutLocked(dir, expiry, epoch);
  if (!rec) return;
  // Pages of another verifier belong to an older listing.
  for (auto it = rec->pages.begin(); it != rec->pages.end();) {
    if (it->second.verifier != page.verifier) {
      it = rec->pages.erase(it);
      rec->complete_listing = false;
    } else {
      ++it;
    }
  }
  for (const CachedDirEntry& e : page.entries) {
    rec->names[e.name] = e.child;
    ForgetMissingLocked(*rec, e.name);
  }
  rec->pages[PageKey{cookie, max_entries}] = std::move(page);
  if (!rec->complete_listing) rec->complete_listing = ListingCompleteLocked(*rec, max_entries);
}

bool MetadataCache::ListingCompleteLocked(const Record& rec, uint32_t max_entries) {
  uint64_t cookie = 0;
  // Every page advances the cookie, so a chain is at most as long as the map.
  for (size_t step = 0; step < rec.pages.size(); ++step) {
    auto it = rec.pages.find(PageKey{cookie, max_entries});
    if (it == rec.pages.end()) return false;
    if (it->second.eof) return true;
    if (it->second.entries.empty() || it->second.entries.back().cookie <= cookie) return false;
    cookie = it->second.entries.back().cookie;
  }
  return false;
}

void MetadataCache::PutLink(const FileKey& key, std::string target, SteadyTime expiry,
                            uint64_t epoch) {
  std::lock_guard lock(mu_);
  if (Record* rec = ForPutLocked(key, expiry, epoch)) rec->link = std::move(target);
}

void MetadataCache::PutChunkMap(const FileKey& key, std::shared_ptr<const ChunkMap> map,
                                SteadyTime expiry, uint64_t epoch) {
  std::lock_guard lock(mu_);
  Record* rec = ForPutLocked(key, expiry, epoch);
  if (!rec) return;
  rec->attr = map->attr;
  rec->map = std::move(map);
}

void MetadataCache::Invalidate(uint64_t ino) {
  std::lock_guard lock(mu_);
  ++epoch_;
  auto it = records_.find(ino);
  if (it == records_.end()) {
    // Remember it (a fetch may be in flight) unless that would overflow.
    if (records_.size() >= max_inodes_) {
      evicted_floor_ = epoch_;
      return;
    }
    it = records_.emplace(ino, Record{}).first;
  }
  ForgetMissingLocked(it->second);
  Record fresh;
  fresh.gen = it->second.gen;
  fresh.invalidated_at = epoch_;
  it->second = std::move(fresh);
}

void MetadataCache::Clear() {
  std::lock_guard lock(mu_);
  ++epoch_;
  evicted_floor_ = epoch_;
  records_.clear();
  missing_names_ = 0;
}

std::vector<uint64_t> MetadataCache::Held() const {
  std::lock_guard lock(mu_);
  const SteadyTime now = clock_->Now();
  std::vector<uint64_t> out;
  for (const auto& [ino, rec] : records_) {
    if (rec.expiry > now) out.push_back(ino);
  }
  return out;
}

void MetadataCache::Renew(const std::vector<uint64_t>& inos, SteadyTime expiry) {
  std::lock_guard lock(mu_);
  for (uint64_t ino : inos) {
    auto it = records_.find(ino);
    if (it != records_.end()) it->second.expiry = std::max(it->second.expiry, expiry);
  }
}

size_t MetadataCache::size() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

}  // namespace geofs::spoke
