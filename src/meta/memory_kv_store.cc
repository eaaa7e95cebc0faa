#include "meta/memory_kv_store.h"

#include <map>
#include <string>

namespace geofs::meta {

struct MemoryKvStore::Data {
  std::map<std::string, std::string, std::less<>> map;
};

namespace {

using Map = std::map<std::string, std::string, std::less<>>;

class MemoryIterator : public KvIterator {
 public:
  MemoryIterator(std::shared_ptr<const void> owner, const Map* map, std::string_view start,
                 std::string_view limit)
      : owner_(std::move(owner)), map_(map), start_(start), limit_(limit), it_(map->end()) {}

  void Seek(std::string_view target) override {
    it_ = map_->lower_bound(target < start_ ? std::string_view(start_) : target);
  }
  bool Valid() const override {
    return it_ != map_->end() && (limit_.empty() || it_->first < limit_);
  }
  void Next() override { ++it_; }
  std::string_view key() const override { return it_->first; }
  std::string_view value() const override { return it_->second; }
  Status status() const override { return Status::Ok(); }

 private:
  std::shared_ptr<const void> owner_;  // keeps *map_ alive
  const Map* map_;
  std::string start_;
  std::string limit_;
  Map::const_iterator it_;
};

Result<std::optional<std::string>> Lookup(const Map& map, std::string_view key) {
  auto it = map.find(key);
  if (it == map.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

}  // namespace

// A frozen version of the map; writers copy before changing a shared one.
class MemorySnapshot : public KvReader {
 public:
  explicit MemorySnapshot(std::shared_ptr<const Map> map) : map_(std::move(map)) {}

  Result<std::optional<std::string>> Get(std::string_view key) override {
    return Lookup(*map_, key);
  }
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override {
    return std::make_unique<MemoryIterator>(map_, map_.get(), start, limit);
  }

 private:
  std::shared_ptr<const Map> map_;
};

MemoryKvStore::MemoryKvStore() : data_(std::make_shared<Data>()) {}
MemoryKvStore::~MemoryKvStore() = default;

std::shared_ptr<const MemoryKvStore::Data> MemoryKvStore::Current() const {
  std::lock_guard lock(mu_);
  return data_;
}

Result<std::optional<std::string>> MemoryKvStore::Get(std::string_view key) {
  std::lock_guard lock(mu_);
  return Lookup(data_->map, key);
}

std::unique_ptr<KvIterator> MemoryKvStore::NewIterator(std::string_view start,
                                                       std::string_view limit) {
  std::shared_ptr<const Data> data = Current();
  const Map* map = &data->map;
  return std::make_unique<MemoryIterator>(std::move(data), map, start, limit);
}

Status MemoryKvStore::Sync() { return Status::Ok(); }

std::unique_ptr<KvReader> MemoryKvStore::NewSnapshot() {
  std::shared_ptr<const Data> data = Current();
  const Map* map = &data->map;
  return std::make_unique<MemorySnapshot>(std::shared_ptr<const Map>(std::move(data), map));
}

Status MemoryKvStore::DoWrite(const WriteBatch& batch, bool) {
  std::lock_guard lock(mu_);
  // Holders of the current version only ever add references under mu_, so a
  // count of 1 seen here cannot grow before the writes below.
  if (data_.use_count() > 1) data_ = std::make_shared<Data>(*data_);
  for (const WriteBatch::Op& op : batch.ops()) {
    if (op.kind == WriteBatch::Op::Kind::kPut) {
      data_->map.insert_or_assign(op.key, op.value);
    } else {
      auto it = data_->map.find(op.key);
      if (it != data_->map.end()) data_->map.erase(it);
    }
  }
  return Status::Ok();
}

}  // namespace geofs::meta
