#include "cache/block_crc.h"

#include <cstring>

#include "cache/cache_file.h"
#include "common/crc32c.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace geofs::cache {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;
// A whole block as three streams: two of kPart bytes, then the rest. Each a
// multiple of 8 so that every stream runs on 8-byte words.
constexpr uint64_t kPart = (kBlockSize / 3 + 7) / 8 * 8;
constexpr uint64_t kLast = kBlockSize - 2 * kPart;
static_assert(kLast % 8 == 0 && kLast <= kPart);

// a * b modulo the CRC32C polynomial, both in the reflected representation
// (bit 31 is x^0).
uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPolyReflected : b >> 1;
  }
  return product;
}

// x^(8n) modulo the polynomial: the CRC register x^0 run over n zero bytes.
uint32_t ShiftConstant(uint64_t n) {
  uint32_t c = 1u << 31;
  for (uint64_t i = 0; i < 8 * n; ++i) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t WholeBlockCrc(const uint8_t* p) {
  static const uint32_t kShiftPart = ShiftConstant(kPart);
  static const uint32_t kShiftLast = ShiftConstant(kLast);
  const uint8_t* q = p + kPart;
  const uint8_t* r = p + 2 * kPart;
  // Register values without the CRC's final inversion; a starts inverted.
  uint64_t a = 0xFFFFFFFFu, b = 0, c = 0;
  uint64_t i = 0;
  for (; i < kLast; i += 8) {
    uint64_t wa, wb, wc;
    std::memcpy(&wa, p + i, 8);
    std::memcpy(&wb, q + i, 8);
    std::memcpy(&wc, r + i, 8);
    a = _mm_crc32_u64(a, wa);
    b = _mm_crc32_u64(b, wb);
    c = _mm_crc32_u64(c, wc);
  }
  for (; i < kPart; i += 8) {
    uint64_t wa, wb;
    std::memcpy(&wa, p + i, 8);
    std::memcpy(&wb, q + i, 8);
    a = _mm_crc32_u64(a, wa);
    b = _mm_crc32_u64(b, wb);
  }
  // The register over A then B is A's shifted past B's bytes, plus B's from
  // zero (the CRC is linear); likewise for C.
  uint32_t ab = MultiplyModP(static_cast<uint32_t>(a), kShiftPart) ^ static_cast<uint32_t>(b);
  uint32_t abc = MultiplyModP(ab, kShiftLast) ^ static_cast<uint32_t>(c);
  return ~abc;
}
#endif

}  // namespace

uint32_t BlockCrc(std::span<const uint8_t> block) {
#if defined(__x86_64__)
  static const bool kHardware = Crc32cIsHardware();
  if (kHardware && block.size() == kBlockSize) return WholeBlockCrc(block.data());
#endif
  return Crc32c(0, block);
}

}  // namespace geofs::cache
