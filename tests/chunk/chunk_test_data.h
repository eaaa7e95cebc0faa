// Deterministic test data for chunking and compression tests and the chunk
// benchmark.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace geofs::chunk::testdata {

// Incompressible bytes: splitmix64 output.
inline std::vector<uint8_t> Random(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t state = seed;
  for (size_t i = 0; i < n; i += 8) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (size_t j = 0; j < 8 && i + j < n; ++j) out[i + j] = static_cast<uint8_t>(z >> (8 * j));
  }
  return out;
}

// Text-like bytes: words from a small vocabulary with spaces, punctuation
// and line breaks, chosen pseudo-randomly (compresses roughly 3-4x, like
// tokenised text shards).
inline std::vector<uint8_t> TextLike(size_t n, uint64_t seed) {
  static constexpr std::string_view kWords[] = {
      "the",    "model",  "of",      "data",   "training", "a",       "gradient",  "to",
      "loss",   "and",    "batch",   "epoch",  "in",       "layer",   "weights",   "is",
      "for",    "token",  "sample",  "with",   "network",  "on",      "shard",     "that",
      "cache",  "spoke",  "hub",     "chunk",  "read",     "write",   "file",      "system",
      "learns", "update", "storage", "object", "fast",     "latency", "bandwidth", "GPU"};
  std::vector<uint8_t> out;
  out.reserve(n + 16);
  uint64_t state = seed;
  while (out.size() < n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = state >> 33;
    std::string_view w = kWords[r % std::size(kWords)];
    out.insert(out.end(), w.begin(), w.end());
    uint64_t p = (r >> 8) % 20;
    out.push_back(p == 0 ? '\n' : p == 1 ? '.' : p == 2 ? ',' : ' ');
  }
  out.resize(n);
  return out;
}

}  // namespace geofs::chunk::testdata
