// Test helpers for src/meta: temporary directories, the store environments
// the typed suites run over, and KvStore wrappers that observe or break
// calls.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "meta/kv_store.h"
#include "meta/memory_kv_store.h"
#include "meta/rocks_kv_store.h"

namespace geofs::meta::testing {

// A fresh directory under the test temp dir, removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A store the typed suites run over. Reopen simulates a process restart:
// RocksDB is closed and opened again; memory keeps its contents.
class TestEnv {
 public:
  virtual ~TestEnv() = default;
  virtual KvStore* store() = 0;
  virtual void Reopen() = 0;
};

class MemoryEnv : public TestEnv {
 public:
  KvStore* store() override { return &store_; }
  void Reopen() override {}

 private:
  MemoryKvStore store_;
};

class RocksEnv : public TestEnv {
 public:
  RocksEnv() { Reopen(); }
  KvStore* store() override { return store_.get(); }
  void Reopen() override {
    store_.reset();
    auto opened = RocksKvStore::Open(dir_.path());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }

 private:
  TempDir dir_;
  std::unique_ptr<RocksKvStore> store_;
};

// Writes without waiting for durability: for tests that build large trees
// and do not test crashes.
class UnsyncedKvStore : public KvStoreWrapper {
 public:
  using KvStoreWrapper::KvStoreWrapper;
  Status Sync() override { return Status::Ok(); }

 protected:
  Status DoWrite(const WriteBatch& batch, bool) override { return target()->Write(batch, false); }
};

// Counts the store operations made through it (and its snapshots and
// iterators), to show that an operation's cost does not grow with the
// namespace.
class CountingKvStore : public KvStoreWrapper {
 public:
  using KvStoreWrapper::KvStoreWrapper;

  Result<std::optional<std::string>> Get(std::string_view key) override;
  std::unique_ptr<KvIterator> NewIterator(std::string_view start, std::string_view limit) override;
  std::unique_ptr<KvReader> NewSnapshot() override;

  void Reset();
  uint64_t gets() const { return gets_; }
  uint64_t seeks() const { return seeks_; }
  uint64_t steps() const { return steps_; }  // keys visited by iterators
  uint64_t written_ops() const { return written_ops_; }

  // Shared with the wrappers of snapshots and iterators.
  std::atomic<uint64_t> gets_{0}, seeks_{0}, steps_{0}, written_ops_{0};

 protected:
  Status DoWrite(const WriteBatch& batch, bool sync) override;
};

// Fails the next `n` writes with kIoError, without applying them.
class FailingKvStore : public KvStoreWrapper {
 public:
  using KvStoreWrapper::KvStoreWrapper;
  void FailNextWrites(int n) { fail_ = n; }

 protected:
  Status DoWrite(const WriteBatch& batch, bool sync) override {
    if (fail_ > 0) {
      --fail_;
      return Status::IoError("injected write failure");
    }
    return target()->Write(batch, sync);
  }

 private:
  std::atomic<int> fail_{0};
};

}  // namespace geofs::meta::testing
