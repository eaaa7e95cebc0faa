// chunk_bench: throughput of the chunk pipeline's stages on this machine.
// Not a test (not registered with CTest); run by hand:
//   chunk_bench [MiB]        (default 256)
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "chunk/chunk_codec.h"
#include "chunk/chunk_store.h"
#include "chunk/chunk_test_data.h"
#include "chunk/chunker.h"
#include "object/local_object_store.h"
#include "object/memory_object_store.h"

namespace geofs::chunk {
namespace {

struct Timing {
  double wall = 0;
  double cpu = 0;  // this thread's CPU time: meaningful on a busy machine
};

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

Timing SecondsOf(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  double cpu_start = ThreadCpuSeconds();
  fn();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          ThreadCpuSeconds() - cpu_start};
}

void Report(const char* what, size_t bytes, Timing t, const char* extra = "") {
  std::printf("%-48s %7.0f MB/s wall %7.0f MB/s cpu %s\n", what, bytes / t.wall / 1e6,
              bytes / t.cpu / 1e6, extra);
}

// Chunks `data` into `store` through a ChunkSplitter, like an importer.
void Import(ChunkStore& store, const std::vector<uint8_t>& data, size_t* stored) {
  ChunkSplitter splitter(ChunkerOptions{}, [&](std::span<const uint8_t> chunk) {
    auto put = store.Put(chunk);
    if (!put.ok()) {
      std::fprintf(stderr, "put: %s\n", put.status().ToString().c_str());
      std::exit(1);
    }
    *stored += put->uploaded ? put->stored_size : 0;
    return Status::Ok();
  });
  for (size_t pos = 0; pos < data.size(); pos += 1 << 20) {
    (void)splitter.Write(
        std::span(data).subspan(pos, std::min<size_t>(1 << 20, data.size() - pos)));
  }
  (void)splitter.Finish();
}

int Main(int argc, char** argv) {
  size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  size_t n = mib << 20;
  auto random = testdata::Random(n, 1);
  auto text = testdata::TextLike(n, 2);
  std::printf("%zu MiB per run\n", mib);

  size_t chunks = 0;
  Timing t = SecondsOf([&] { chunks = ChunkLengths(random, ChunkerOptions{}).size(); });
  char extra[64];
  std::snprintf(extra, sizeof(extra), "(%zu chunks, avg %.0f KiB)", chunks, n / 1024.0 / chunks);
  Report("chunker (FastCDC, 256K/1M/4M)", n, t, extra);

  t = SecondsOf([&] { (void)ChunkId::Of(random); });
  Report("SHA-256", n, t);

  std::vector<Buffer> encoded;
  std::vector<std::span<const uint8_t>> pieces;
  for (size_t pos = 0; pos < n; pos += 1 << 20)
    pieces.push_back(std::span(text).subspan(pos, 1 << 20));
  size_t compressed = 0;
  t = SecondsOf([&] {
    for (auto p : pieces) {
      encoded.push_back(EncodeChunk(p, {}).bytes);
      compressed += encoded.back().size();
    }
  });
  std::snprintf(extra, sizeof(extra), "(ratio %.2f)", static_cast<double>(n) / compressed);
  Report("zstd-3 encode, text-like, 1 MiB chunks", n, t, extra);
  t = SecondsOf([&] {
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!DecodeChunk(encoded[i], ChunkId::Of(pieces[i])).ok()) std::exit(1);
    }
  });
  Report("decode + verify (incl. SHA-256 of original)", n, t);
  t = SecondsOf([&] {
    for (auto p : pieces)
      (void)EncodeChunk(std::span(random).subspan(p.data() - text.data(), p.size()), {});
  });
  Report("encode, incompressible (64 KiB probe, dropped)", n, t);
  ChunkCodecOptions unprobed;
  unprobed.probe_bytes = 0;
  t = SecondsOf([&] {
    for (auto p : pieces)
      (void)EncodeChunk(std::span(random).subspan(p.data() - text.data(), p.size()), unprobed);
  });
  Report("encode, incompressible (zstd on all, dropped)", n, t);
  for (int level : {1, 3}) {
    for (size_t probe : {size_t{0}, size_t{64} << 10}) {
      ChunkCodecOptions o;
      o.zstd_level = level;
      o.probe_bytes = probe;
      t = SecondsOf([&] {
        for (auto p : pieces) (void)EncodeChunk(p, o);
      });
      std::snprintf(extra, sizeof(extra), "(zstd-%d, probe %zu KiB)", level, probe >> 10);
      Report("encode, text-like", n, t, extra);
      t = SecondsOf([&] {
        for (auto p : pieces)
          (void)EncodeChunk(std::span(random).subspan(p.data() - text.data(), p.size()), o);
      });
      Report("encode, incompressible", n, t, extra);
    }
  }

  {
    object::MemoryObjectStore memory;
    ChunkStore store(&memory);
    size_t stored = 0;
    t = SecondsOf([&] { Import(store, text, &stored); });
    std::snprintf(extra, sizeof(extra), "(stored %.1f%% of logical)", 100.0 * stored / n);
    Report("import text-like into memory store", n, t, extra);
    t = SecondsOf([&] { Import(store, text, &stored); });
    Report("re-import same data (all dedup hits)", n, t);
  }
  {
    std::string dir = (std::filesystem::temp_directory_path() / "geofs-bench-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) return 1;
    auto local = object::LocalObjectStore::Open(dir);
    if (!local.ok()) return 1;
    ChunkStore store(local->get());
    size_t stored = 0;
    t = SecondsOf([&] { Import(store, random, &stored); });
    Report("import incompressible into local store (fsync)", n, t);
    std::filesystem::remove_all(dir);
  }
  return 0;
}

}  // namespace
}  // namespace geofs::chunk

int main(int argc, char** argv) { return geofs::chunk::Main(argc, argv); }
