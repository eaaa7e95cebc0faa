#include "meta_test_util.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace geofs::meta::testing {
namespace {

std::string NewTempPath() {
  static std::atomic<int> counter{0};
  std::string base = ::testing::TempDir();
  if (base.empty() || base.back() != '/') base += '/';
  return base + "geofs_meta_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter.fetch_add(1));
}

class CountingIterator : public KvIterator {
 public:
  CountingIterator(std::unique_ptr<KvIterator> it, CountingKvStore* counts)
      : it_(std::move(it)), counts_(counts) {}
  void Seek(std::string_view target) override {
    ++counts_->seeks_;
    it_->Seek(target);
    if (it_->Valid()) ++counts_->steps_;
  }
  bool Valid() const override { return it_->Valid(); }
  void Next() override {
    it_->Next();
    if (it_->Valid()) ++counts_->steps_;
  }
  std::string_view key() const override { return it_->key(); }
  std::string_view value() const override { return it_->value(); }
  Status status() const override { return it_->status(); }

 private:
  std::unique_ptr<KvIterator> it_;
  CountingKvStore* counts_;
};

class CountingSnapshot : public KvReader {
 public:
  CountingSnapshot(std::unique_ptr<KvReader> snap, CountingKvStore* counts)
      : snap_(std::move(snap)), counts_(counts) {}
  Result<std::optional<std::string>> Get(std::string_view key) override {
    ++counts_->gets_;
    return snap_->Get(key);
  }
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override {
    return std::make_unique<CountingIterator>(snap_->NewIterator(start, limit), counts_);
  }

 private:
  std::unique_ptr<KvReader> snap_;
  CountingKvStore* counts_;
};

}  // namespace

TempDir::TempDir() : path_(NewTempPath()) { std::filesystem::create_directories(path_); }

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Result<std::optional<std::string>> CountingKvStore::Get(std::string_view key) {
  ++gets_;
  return KvStoreWrapper::Get(key);
}

std::unique_ptr<KvIterator> CountingKvStore::NewIterator(std::string_view start,
                                                         std::string_view limit) {
  return std::make_unique<CountingIterator>(KvStoreWrapper::NewIterator(start, limit), this);
}

std::unique_ptr<KvReader> CountingKvStore::NewSnapshot() {
  return std::make_unique<CountingSnapshot>(KvStoreWrapper::NewSnapshot(), this);
}

Status CountingKvStore::DoWrite(const WriteBatch& batch, bool sync) {
  written_ops_ += batch.ops().size();
  return KvStoreWrapper::DoWrite(batch, sync);
}

void CountingKvStore::Reset() { gets_ = seeks_ = steps_ = written_ops_ = 0; }

}  // namespace geofs::meta::testing
