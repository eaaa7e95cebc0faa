#include "vfs/dir_cache.h"

#include <functional>
#include <utility>

namespace geofs::vfs {
namespace {

int64_t Nanos(const timespec& ts) { return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec; }

}  // namespace

DirStamp DirStamp::Of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_ino), Nanos(st.st_mtim), Nanos(st.st_ctim),
          static_cast<uint64_t>(st.st_size)};
}

DirListing::DirListing(std::vector<Item> items)
    : items_(std::move(items)), memo_(std::make_unique<Memo[]>(items_.size())) {
  next_.reserve(items_.size());
  std::vector<uint64_t> ambiguous;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (!next_.emplace(items_[i].cookie, i + 1).second) ambiguous.push_back(items_[i].cookie);
  }
  for (uint64_t cookie : ambiguous) next_.erase(cookie);
}

std::optional<size_t> DirListing::StartAfter(uint64_t cookie) const {
  if (cookie == 0) return 0;
  auto it = next_.find(cookie);
  if (it == next_.end()) return std::nullopt;
  return it->second;
}

const Handle* DirListing::MemoisedHandle(size_t index) const {
  const Memo& m = memo_[index];
  if (m.state.load(std::memory_order_acquire) != Memo::kReady) return nullptr;
  return &m.handle;
}

void DirListing::Memoise(size_t index, const Handle& handle) const {
  Memo& m = memo_[index];
  uint8_t expected = Memo::kEmpty;
  if (!m.state.compare_exchange_strong(expected, Memo::kWriting, std::memory_order_acquire)) {
    return;
  }
  m.handle = handle;
  m.state.store(Memo::kReady, std::memory_order_release);
}

size_t DirCache::HandleHash::operator()(const Handle& h) const {
  auto bytes = h.bytes();
  return std::hash<std::string_view>()(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

DirCache::DirCache(size_t max_names) : max_names_(max_names) {}

DirCache::DirState* DirCache::StateLocked(const Handle& dir, const DirStamp& stamp, bool create) {
  auto it = dirs_.find(dir);
  if (it != dirs_.end() && !(it->second.stamp == stamp)) {
    DropLocked(dir);
    it = dirs_.end();
  }
  if (it == dirs_.end()) {
    if (!create) return nullptr;
    lru_.push_front(dir);
    it = dirs_.emplace(dir, DirState{stamp, nullptr, {}, lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  return &it->second;
}

void DirCache::DropLocked(const Handle& dir) {
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return;
  names_ -= it->second.cost();
  lru_.erase(it->second.lru);
  dirs_.erase(it);
}

void DirCache::TrimLocked(const Handle& keep) {
  if (auto it = dirs_.find(keep); it != dirs_.end() && it->second.cost() > max_names_ / 2) {
    DropLocked(keep);
  }
  while (names_ > max_names_ && !lru_.empty()) {
    const Handle victim = lru_.back();
    if (victim == keep) {
      if (lru_.size() == 1) break;
      lru_.splice(lru_.begin(), lru_, std::prev(lru_.end()));
      continue;
    }
    DropLocked(victim);
  }
}

std::shared_ptr<const DirListing> DirCache::FindListing(const Handle& dir, const DirStamp& stamp) {
  std::lock_guard lock(mu_);
  DirState* state = StateLocked(dir, stamp, /*create=*/false);
  return state ? state->listing : nullptr;
}

void DirCache::InsertListing(const Handle& dir, const DirStamp& stamp,
                             std::shared_ptr<const DirListing> listing) {
  if (listing->items().size() > max_names_ / 2) return;
  std::lock_guard lock(mu_);
  DirState* state = StateLocked(dir, stamp, /*create=*/true);
  names_ -= state->cost();
  state->listing = std::move(listing);
  names_ += state->cost();
  TrimLocked(dir);
}

std::optional<NameInfo> DirCache::FindName(const Handle& dir, const DirStamp& stamp,
                                           std::string_view name) {
  std::lock_guard lock(mu_);
  DirState* state = StateLocked(dir, stamp, /*create=*/false);
  if (!state) return std::nullopt;
  auto it = state->names.find(std::string(name));
  if (it == state->names.end()) return std::nullopt;
  return it->second;
}

void DirCache::InsertNames(const Handle& dir, const DirStamp& stamp,
                           std::span<const std::pair<std::string_view, NameInfo>> names) {
  if (names.empty()) return;
  std::lock_guard lock(mu_);
  DirState* state = StateLocked(dir, stamp, /*create=*/true);
  for (const auto& [name, info] : names) {
    if (state->names.insert_or_assign(std::string(name), info).second) ++names_;
  }
  TrimLocked(dir);
}

size_t DirCache::size() const {
  std::lock_guard lock(mu_);
  return names_;
}

AttrCache::AttrCache(size_t capacity, std::chrono::nanoseconds ttl)
    : capacity_(capacity), ttl_(ttl) {}

std::optional<Attr> AttrCache::Find(uint64_t fileid, Time now) {
  if (ttl_.count() <= 0) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = attrs_.find(fileid);
  if (it == attrs_.end() || now - it->second.read_at > ttl_) return std::nullopt;
  return it->second.attr;
}

void AttrCache::FindMany(std::span<const uint64_t> fileids, Time now,
                         std::span<std::optional<Attr>> out) {
  if (ttl_.count() <= 0) return;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < fileids.size(); ++i) {
    auto it = attrs_.find(fileids[i]);
    if (it != attrs_.end() && now - it->second.read_at <= ttl_) out[i] = it->second.attr;
  }
}

void AttrCache::Put(const Attr& attr, Time now) {
  if (ttl_.count() <= 0) return;
  std::lock_guard lock(mu_);
  auto [it, added] = attrs_.try_emplace(attr.fileid);
  Cached& c = it->second;
  // A slower reader must not replace what a later one stored.
  if (!added && c.read_at > now) return;
  c.attr = attr;
  c.read_at = now;
  if (added) {
    ages_.push_front(attr.fileid);
  } else {
    ages_.splice(ages_.begin(), ages_, c.age);
  }
  c.age = ages_.begin();
  while (attrs_.size() > capacity_) {
    attrs_.erase(ages_.back());
    ages_.pop_back();
  }
}

void AttrCache::Erase(uint64_t fileid) {
  std::lock_guard lock(mu_);
  auto it = attrs_.find(fileid);
  if (it == attrs_.end()) return;
  ages_.erase(it->second.age);
  attrs_.erase(it);
}

}  // namespace geofs::vfs
