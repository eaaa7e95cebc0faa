// Deterministic test data for the spoke's write-back tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>

namespace geofs::spoke {

// `n` pseudo-random (incompressible) bytes, the same for the same seed.
inline std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&s[i], &v, 8);
  }
  return s;
}

inline std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace geofs::spoke
