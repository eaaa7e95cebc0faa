// Helpers for the hub's unit tests: a whole hub (namespace, chunk store,
// backend) in memory, synchronous wrappers of the callback API, and data.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <string>

#include "chunk/chunk_store.h"
#include "hub/hub_backend.h"
#include "meta/memory_kv_store.h"
#include "meta/namespace.h"
#include "object/fault_injection_object_store.h"
#include "object/memory_object_store.h"

namespace geofs::hub::testing {

// Runs a callback-style backend call and returns what its callback got.
template <typename T, typename Fn>
Result<T> Await(Fn call) {
  std::optional<Result<T>> out;
  call([&](Result<T> r) { out.emplace(std::move(r)); });
  if (!out) return Status::Internal("callback not invoked before return");
  return std::move(*out);
}

// `n` pseudo-random bytes, the same for the same seed.
inline std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<char>(rng());
  return out;
}

// A namespace and chunk store in memory; the state survives a restart of
// whatever sits on top (like the hub's RocksDB and object store would). The
// chunk store reaches the objects through a fault injector (no faults until
// a test adds some).
class MemoryHub {
 public:
  MemoryHub() {
    auto ns = meta::Namespace::Open(&kv_);
    EXPECT_TRUE(ns.ok()) << ns.status().ToString();
    ns_ = std::move(ns).value();
    chunks_ = std::make_unique<chunk::ChunkStore>(&faults_);
  }

  meta::Namespace& ns() { return *ns_; }
  chunk::ChunkStore& chunks() { return *chunks_; }
  object::MemoryObjectStore& objects() { return objects_; }
  object::FaultInjectionObjectStore& faults() { return faults_; }

  // Stored-form bytes of every chunk in the store.
  uint64_t StoredBytes() {
    uint64_t total = 0;
    Status s = chunks_->ForEachChunk([&](const chunk::ChunkInfo& c) {
      total += c.stored_size;
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return total;
  }

 private:
  meta::MemoryKvStore kv_;
  object::MemoryObjectStore objects_;
  object::FaultInjectionObjectStore faults_{&objects_};
  std::unique_ptr<meta::Namespace> ns_;
  std::unique_ptr<chunk::ChunkStore> chunks_;
};

}  // namespace geofs::hub::testing
